//! Scripted client replies: what the test client answers when the server asks it for input
//! (elicitation, sampling, roots), in either era.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::RpcError;
use serde_json::{Value, json};

/// A scripted answer to one server request: its result, or the JSON-RPC error the client
/// answers with.
pub(crate) type Responder = Arc<dyn Fn(&Value) -> Result<Value, RpcError> + Send + Sync>;

/// The client's scripted replies, by method: first the queued replies (in order, each used
/// once), then the method's handler.
#[derive(Default)]
pub(crate) struct Script {
    queued: Mutex<HashMap<String, VecDeque<Value>>>,
    handlers: HashMap<String, Responder>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut methods: Vec<&str> = self.handlers.keys().map(String::as_str).collect();
        methods.sort_unstable();
        f.debug_struct("Script")
            .field("handlers", &methods)
            .finish_non_exhaustive()
    }
}

impl Script {
    /// Sets the handler of `method` (replacing an earlier one).
    pub(crate) fn handle(&mut self, method: &str, responder: Responder) {
        self.handlers.insert(method.to_owned(), responder);
    }

    /// Queues a reply for the next request of `method`.
    pub(crate) fn queue(&mut self, method: &str, reply: Value) {
        self.queued
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(method.to_owned())
            .or_default()
            .push_back(reply);
    }

    /// Whether anything answers `method`.
    pub(crate) fn answers(&self, method: &str) -> bool {
        self.handlers.contains_key(method)
            || self
                .queued
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(method)
    }

    /// The reply to a server request, or `None` when nothing is scripted for its method (or
    /// its queue ran dry and it has no handler).
    pub(crate) fn reply(&self, method: &str, params: &Value) -> Option<Result<Value, RpcError>> {
        let queued = self
            .queued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(method)
            .and_then(VecDeque::pop_front);
        if let Some(reply) = queued {
            return Some(Ok(reply));
        }
        self.handlers.get(method).map(|h| h(params))
    }
}

/// The `ElicitResult` of a user who accepted and filled in `content`.
///
/// ```
/// use mcp_server::testing::accept;
/// use serde_json::json;
///
/// assert_eq!(accept(json!({"name": "Ada"})), json!({"action": "accept", "content": {"name": "Ada"}}));
/// ```
pub fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

/// The `ElicitResult` of a user who declined.
pub fn decline() -> Value {
    json!({ "action": "decline" })
}

/// The `ElicitResult` of a user who dismissed the request.
pub fn cancel() -> Value {
    json!({ "action": "cancel" })
}

/// A `CreateMessageResult`: the assistant's text reply from `model`.
///
/// ```
/// use mcp_server::testing::sampled_text;
///
/// let reply = sampled_text("test-model", "Paris");
/// assert_eq!(reply["content"]["text"], "Paris");
/// assert_eq!(reply["role"], "assistant");
/// ```
pub fn sampled_text(model: &str, text: &str) -> Value {
    json!({
        "role": "assistant",
        "content": { "type": "text", "text": text },
        "model": model,
        "stopReason": "endTurn",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_replies_come_first_then_the_handler() {
        let mut s = Script::default();
        s.queue("elicitation/create", accept(json!({"n": 1})));
        s.handle("elicitation/create", Arc::new(|_| Ok(decline())));
        let p = json!({});
        assert_eq!(s.reply("elicitation/create", &p), Some(Ok(accept(json!({"n": 1})))));
        assert_eq!(s.reply("elicitation/create", &p), Some(Ok(decline())));
        assert_eq!(s.reply("roots/list", &p), None);
        assert!(s.answers("elicitation/create"));
        assert!(!s.answers("roots/list"));
    }
}
