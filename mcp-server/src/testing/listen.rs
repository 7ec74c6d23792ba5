//! A modern `subscriptions/listen` stream of a test client.

use std::time::Duration;

use mcp_protocol::RequestId;
use mcp_runtime::{InFlightGuard, Listener, Listening};
use serde_json::Value;

use mcp_protocol::client::ServerNotification;

/// An open `subscriptions/listen` stream (modern era): its acknowledgement, then the
/// notifications the filter asked for. Dropping it ends the subscription.
///
/// ```
/// use std::time::Duration;
/// use mcp_server::prelude::*;
/// use mcp_server::testing::TestClient;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::builder().name("s").version("1").build()?;
/// let client = TestClient::modern(&server).await?;
/// let mut sub = client.listen(json!({"toolsListChanged": true})).await?;
/// assert!(sub.ack().is_some());
/// server.add_tool(Tool::new("late", "Added later", |_args, _ctx| async { "hi" }))?;
/// let note = sub.next(Duration::from_secs(5)).await.expect("a list change");
/// assert_eq!(note.method, "notifications/tools/list_changed");
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Subscription {
    id: RequestId,
    ack: Option<ServerNotification>,
    listener: Listener,
    _guard: Option<InFlightGuard>,
}

impl Subscription {
    pub(crate) fn new(id: RequestId, listening: Listening) -> Self {
        let Listening { mut listener, guard } = listening;
        let ack = listener.take_ack().and_then(|f| notification(&f));
        Subscription {
            id,
            ack,
            listener,
            _guard: guard,
        }
    }

    /// The id of the `subscriptions/listen` request (the notifications name it in `_meta`).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The acknowledgement the stream started with.
    pub fn ack(&self) -> Option<&ServerNotification> {
        self.ack.as_ref()
    }

    /// The next notification of the stream; `None` after `timeout` or once the stream ended.
    pub async fn next(&mut self, timeout: Duration) -> Option<ServerNotification> {
        loop {
            let frame = tokio::time::timeout(timeout, self.listener.next()).await.ok()??;
            if let Some(note) = notification(&frame) {
                return Some(note);
            }
        }
    }
}

fn notification(frame: &[u8]) -> Option<ServerNotification> {
    let v: Value = serde_json::from_slice(frame).ok()?;
    Some(ServerNotification {
        method: v.get("method")?.as_str()?.to_owned(),
        params: v.get("params").cloned().unwrap_or(Value::Null),
    })
}
