//! The server-to-client notifications the library emits on its own, written once: list
//! changes and resource updates (the same frame for a legacy session's stream and a modern
//! `subscriptions/listen` stream, which adds its subscription id), task status changes on a
//! subscription, the server's cancellation of a request it answers with a stream, and the
//! replay-truncation notice of a resumed SSE stream.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::jsonrpc::{RequestId, encode_notification};
use crate::meta::SUBSCRIPTION_ID;

/// What changed in a server's catalog, or a resource update to announce.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Change {
    /// The tool list changed.
    Tools,
    /// The resource or template list changed.
    Resources,
    /// The prompt list changed.
    Prompts,
    /// A resource's contents changed.
    ResourceUpdated(Arc<str>),
}

impl Change {
    /// Every list, announced when a subscriber may have missed changes: after a lag a stream
    /// re-announces them all, so that no change is ever lost silently (a client re-lists).
    pub const EVERY_LIST: [Change; 3] = [Change::Tools, Change::Resources, Change::Prompts];

    /// The notification method announcing the change.
    pub fn method(&self) -> &'static str {
        match self {
            Change::Tools => "notifications/tools/list_changed",
            Change::Resources => "notifications/resources/list_changed",
            Change::Prompts => "notifications/prompts/list_changed",
            Change::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }

    /// The encoded notification. `subscription` is the id of the `subscriptions/listen`
    /// request the notification answers (modern streams), `None` on a legacy session.
    pub fn frame(&self, subscription: Option<&RequestId>) -> Vec<u8> {
        let mut params = Map::new();
        if let Some(id) = subscription {
            params.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
        }
        if let Change::ResourceUpdated(uri) = self {
            params.insert("uri".into(), Value::String(uri.to_string()));
        }
        let params = (!params.is_empty()).then_some(Value::Object(params));
        encode_notification(self.method(), params.as_ref())
    }
}

/// `notifications/tasks` (tasks extension) on a `subscriptions/listen` stream: a task's
/// `DetailedTask` (see [`crate::model::task::task_notification`]) tagged with the id of the
/// subscription (`subscription`) in `_meta`.
pub fn task_status(detailed: &Map<String, Value>, subscription: &RequestId) -> Vec<u8> {
    let mut params = detailed.clone();
    params.insert("_meta".into(), json!({ SUBSCRIPTION_ID: subscription }));
    encode_notification("notifications/tasks", Some(&Value::Object(params)))
}

/// `notifications/cancelled` naming `request_id`, with an optional human-readable `reason`:
/// how a stdio server ends a request it answers with a stream (a `subscriptions/listen`).
pub fn cancelled(request_id: &RequestId, reason: Option<&str>) -> Vec<u8> {
    let mut params = Map::new();
    params.insert("requestId".into(), json!(request_id));
    if let Some(reason) = reason {
        params.insert("reason".into(), Value::String(reason.to_owned()));
    }
    encode_notification("notifications/cancelled", Some(&Value::Object(params)))
}

/// `notifications/replay_truncated`: some events after `last_event_id` were lost before a
/// stream resumed (the client should re-read what it cares about).
pub fn replay_truncated(last_event_id: &str) -> Vec<u8> {
    encode_notification(
        "notifications/replay_truncated",
        Some(&json!({ "lastEventId": last_event_id })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Vec<u8>) -> String {
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn frames() {
        assert_eq!(
            text(Change::Prompts.frame(None)),
            r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#
        );
        let updated = Change::ResourceUpdated(Arc::from("file:///a"));
        assert_eq!(
            text(updated.frame(None)),
            r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}"#
        );
        let id = RequestId::Number(7);
        assert_eq!(
            text(Change::Tools.frame(Some(&id))),
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}"#
        );
        let v: Value = serde_json::from_slice(&updated.frame(Some(&id))).unwrap();
        assert_eq!(v["params"]["uri"], "file:///a");
        assert_eq!(v["params"]["_meta"][SUBSCRIPTION_ID], 7);
        assert_eq!(
            text(replay_truncated("3-1")),
            r#"{"jsonrpc":"2.0","method":"notifications/replay_truncated","params":{"lastEventId":"3-1"}}"#
        );
    }

    #[test]
    fn cancelled_frames() {
        assert_eq!(
            text(cancelled(&RequestId::Number(9), Some("The server is shutting down"))),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"The server is shutting down"}}"#
        );
        assert_eq!(
            text(cancelled(&RequestId::String("l".into()), None)),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l"}}"#
        );
    }

    #[test]
    fn task_status_is_tagged() {
        let detailed = json!({"taskId": "t", "status": "working"});
        let v: Value =
            serde_json::from_slice(&task_status(detailed.as_object().unwrap(), &RequestId::Number(4))).unwrap();
        assert_eq!(v["method"], "notifications/tasks");
        assert_eq!(
            v["params"],
            json!({"taskId": "t", "status": "working", "_meta": {SUBSCRIPTION_ID: 4}})
        );
    }
}
