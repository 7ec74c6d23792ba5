//! Notifications in both directions, apart from requests.
//!
//! - Inbound: client notifications (other than `notifications/cancelled`,
//!   which the coordinator handles at once) are handled in arrival order by
//!   one task fed through a bounded queue.
//! - Outbound: registry changes become the legacy list-changed
//!   notifications (and `notifications/resources/updated` for subscribed
//!   URIs), sent only while the process has a legacy session. Modern
//!   clients never receive them (they use `subscriptions/listen`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use mcp_protocol::Notification;
use mcp_protocol::jsonrpc::encode_notification;
use mcp_runtime::registry::Change;
use mcp_runtime::{Frame, Session};
use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

use crate::state::Shared;

/// Starts the handler of client notifications; returns its bounded queue.
pub(crate) fn spawn_inbound(shared: Arc<Shared>, capacity: usize) -> (mpsc::Sender<Notification>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Notification>(capacity.max(1));
    let task = tokio::spawn(async move {
        while let Some(note) = rx.recv().await {
            let session = shared.session();
            let handled = std::panic::catch_unwind(AssertUnwindSafe(|| {
                shared.runtime.notification(&note, session.as_ref(), &shared.in_flight);
            }));
            if handled.is_err() {
                tracing::error!(method = %note.method, "notification handler panicked");
            }
        }
    });
    (tx, task)
}

/// Forwards registry changes to the legacy session, until the registry or
/// the writer goes away.
pub(crate) async fn forward_changes(shared: Arc<Shared>, mut changes: broadcast::Receiver<Change>) {
    loop {
        let batch = match changes.recv().await {
            Ok(change) => vec![change],
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "registry changes missed; announcing every list");
                vec![Change::Tools, Change::Resources, Change::Prompts]
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        for change in batch {
            let session = shared.session();
            let Some(frame) = change_frame(session.as_deref(), &change) else {
                continue;
            };
            if !shared.out.notify(frame).await {
                return;
            }
        }
    }
}

/// The notification announcing `change` to `session`, if it wants one.
fn change_frame(session: Option<&Session>, change: &Change) -> Option<Frame> {
    let session = session.filter(|s| !s.is_closed())?;
    let method = match change {
        Change::Tools => "notifications/tools/list_changed",
        Change::Resources => "notifications/resources/list_changed",
        Change::Prompts => "notifications/prompts/list_changed",
        Change::ResourceUpdated(uri) => {
            return session.is_subscribed(uri).then(|| {
                encode_notification("notifications/resources/updated", Some(&json!({ "uri": uri.as_ref() })))
            });
        }
    };
    Some(encode_notification(method, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_protocol::Revision;
    use mcp_protocol::model::ClientCapabilities;
    use serde_json::Value;

    fn text(f: Option<Frame>) -> Option<String> {
        f.map(|f| String::from_utf8(f).unwrap())
    }

    #[test]
    fn changes_reach_legacy_sessions_only() {
        assert_eq!(change_frame(None, &Change::Tools), None);
        let s = Session::new(
            Arc::from("s"),
            Arc::from("anonymous"),
            Revision::V2025_06_18,
            ClientCapabilities::default(),
            Value::Null,
        );
        assert_eq!(
            text(change_frame(Some(&s), &Change::Prompts)).as_deref(),
            Some(r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#)
        );
        let updated = Change::ResourceUpdated(Arc::from("file:///a"));
        assert_eq!(change_frame(Some(&s), &updated), None);
        s.subscribe("file:///a");
        assert_eq!(
            text(change_frame(Some(&s), &updated)).as_deref(),
            Some(r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}"#)
        );
        s.close();
        assert_eq!(change_frame(Some(&s), &Change::Tools), None);
    }
}
