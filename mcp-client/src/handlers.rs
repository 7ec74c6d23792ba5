//! What the client answers when the server asks: elicitation, sampling and roots, from handlers
//! the user gives. The same handlers answer a legacy server-to-client request and a modern
//! `input_required` round, and the capabilities the client declares follow from which are set.

use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_protocol::RpcError;
use serde_json::{Map, Value, json};

/// A handler of one kind of server request: its params in, its result (or error) out.
pub type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// The handlers a client was built with.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) elicit: Option<Handler>,
    pub(crate) elicit_url: bool,
    pub(crate) sample: Option<Handler>,
    pub(crate) roots: Option<Handler>,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("elicit", &self.elicit.is_some())
            .field("elicit_url", &self.elicit_url)
            .field("sample", &self.sample.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl Handlers {
    /// The client capabilities these handlers make true: `elicitation` (form, and URL when
    /// asked), `sampling`, `roots`.
    pub(crate) fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        if self.elicit.is_some() {
            let mut modes = json!({"form": {}});
            if self.elicit_url {
                modes["url"] = json!({});
            }
            caps.insert("elicitation".into(), modes);
        }
        if self.sample.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({"listChanged": true}));
        }
        Value::Object(caps)
    }

    /// Answers one request of the server (legacy) or one input request (modern).
    pub(crate) async fn answer(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let handler = match method {
            "ping" => return Ok(json!({})),
            "elicitation/create" => &self.elicit,
            "sampling/createMessage" => &self.sample,
            "roots/list" => &self.roots,
            _ => &None,
        };
        match handler {
            Some(h) => h(params).await,
            None => Err(RpcError::method_not_found(method)),
        }
    }
}
