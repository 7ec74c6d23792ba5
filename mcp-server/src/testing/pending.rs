//! A request started without waiting for it: to cancel it while it runs.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::RequestId;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::client::TestClient;
use super::exchange::{ClientError, Exchange};

/// A request in flight (see [`TestClient::start`]).
///
/// ```
/// use std::time::Duration;
/// use mcp_server::prelude::*;
/// use mcp_server::testing::{ClientError, TestClient};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::builder()
///     .name("s")
///     .version("1")
///     .tool(Tool::new("wait", "Waits until cancelled", |_args, ctx: Ctx| async move {
///         ctx.progress(0.0, None, Some("waiting")).await;
///         ctx.cancellation().cancelled().await;
///         "cancelled"
///     }))
///     .build()?;
/// let client = TestClient::legacy(&server).await?;
/// let call = client.start_call_tool("wait", json!({}));
/// // The handler is running once its first progress arrived.
/// client.wait_for_notification("notifications/progress", Duration::from_secs(5)).await.unwrap();
/// call.cancel(Some("enough")).await?;
/// assert_eq!(call.outcome().await, Err(ClientError::Cancelled));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct PendingRequest {
    client: TestClient,
    current: Arc<Mutex<RequestId>>,
    task: JoinHandle<Result<Exchange<Value>, ClientError>>,
}

impl TestClient {
    /// Starts a request without waiting for it: the handle tells its id, cancels it, and
    /// waits for its outcome.
    pub fn start(&self, method: &str, params: Value) -> PendingRequest {
        PendingRequest::spawn(self.clone(), method.to_owned(), params)
    }

    /// Starts a `tools/call` without waiting (see [`start`](Self::start)).
    pub fn start_call_tool(&self, name: &str, arguments: impl serde::Serialize) -> PendingRequest {
        let arguments = serde_json::to_value(arguments).unwrap_or(Value::Null);
        self.start("tools/call", serde_json::json!({"name": name, "arguments": arguments}))
    }
}

impl PendingRequest {
    pub(crate) fn spawn(client: TestClient, method: String, params: Value) -> Self {
        let first = client.next_id();
        let current = Arc::new(Mutex::new(first.clone()));
        let task = {
            let (client, current) = (client.clone(), current.clone());
            tokio::spawn(async move { client.exchange_tracked(&method, params, &current, first).await })
        };
        PendingRequest { client, current, task }
    }

    /// The id of the request as sent now (a modern retry gets a new id each round).
    pub fn id(&self) -> RequestId {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Sends `notifications/cancelled` for the request. A cancelled request gets no answer:
    /// [`outcome`](Self::outcome) is then [`ClientError::Cancelled`]. Cancel once the handler
    /// runs (e.g. after its first progress, see [`TestClient::wait_for_notification`]): a
    /// cancellation naming a request not yet received is ignored, as on every transport.
    pub async fn cancel(&self, reason: Option<&str>) -> Result<(), ClientError> {
        self.client.cancel(&self.id(), reason).await
    }

    /// Whether the request has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the outcome.
    pub async fn outcome(self) -> Result<Exchange<Value>, ClientError> {
        self.task
            .await
            .unwrap_or_else(|e| Err(ClientError::Unexpected(format!("the request task failed: {e}"))))
    }
}
