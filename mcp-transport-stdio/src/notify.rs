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

use futures::FutureExt;
use mcp_protocol::Notification;
use mcp_runtime::registry::ChangeFeed;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::state::Shared;

/// Starts the handler of client notifications; returns its bounded queue.
pub(crate) fn spawn_inbound(shared: Arc<Shared>, capacity: usize) -> (mpsc::Sender<Notification>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Notification>(capacity.max(1));
    let task = mcp_runtime::background::spawn(async move {
        while let Some(note) = rx.recv().await {
            let handled = AssertUnwindSafe(async {
                shared.engine.notification(&shared.peer(), &note).await;
            })
            .catch_unwind()
            .await;
            if handled.is_err() {
                tracing::error!(method = %note.method, "notification handler panicked");
            }
        }
    });
    (tx, task)
}

/// Forwards registry changes to the legacy session, until the registry or
/// the writer goes away.
pub(crate) async fn forward_changes(shared: Arc<Shared>, mut changes: ChangeFeed) {
    while let Some(batch) = changes.next().await {
        for change in batch {
            if !shared.session().is_some_and(|s| s.wants(&change)) {
                continue;
            }
            if !shared.out.notify(change.frame(None)).await {
                return;
            }
        }
    }
}
