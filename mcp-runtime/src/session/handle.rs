//! [`SessionHandle`]: a legacy session as a transport holds it.
//!
//! A transport needs few things of a session: its id and revision, its end, its activity, where
//! the notifications meant for it alone go, which changes it wants, and its logs in the shared
//! store. The handle offers those and nothing else; what handlers see of a session is
//! [`Session`], through [`Ctx::session`](crate::Ctx::session).

use std::any::Any;
use std::sync::Arc;

use mcp_protocol::Revision;
use mcp_protocol::notifications::Change;
use tokio_util::sync::CancellationToken;

use super::Session;
use super::logs::LogWatcher;
use crate::sink::Frame;

/// A legacy session as a transport holds it (cheap to clone).
#[derive(Debug, Clone)]
pub struct SessionHandle(pub(crate) Arc<Session>);

impl SessionHandle {
    /// The session id.
    pub fn id(&self) -> &Arc<str> {
        self.0.id()
    }

    /// The negotiated revision.
    pub fn revision(&self) -> Revision {
        self.0.revision()
    }

    /// Whether the session's record is shared by several instances (its logs are in the
    /// shared store).
    pub fn is_shared(&self) -> bool {
        self.0.is_shared()
    }

    /// A token cancelled when the session ends.
    pub fn closed(&self) -> &CancellationToken {
        self.0.closed()
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// Ends the session here (its calls are cancelled, its pending requests fail, its streams
    /// end). To end it everywhere, and forget its record, use
    /// [`Engine::end_session`](crate::Engine::end_session).
    pub fn close(&self) {
        self.0.close();
    }

    /// Records activity: the session's expiry is pushed back.
    pub fn touch(&self) {
        self.0.touch();
    }

    /// Connects the session to the stream that carries the notifications meant for it alone
    /// (a later call replaces the outlet).
    pub fn set_outlet(&self, outlet: impl Fn(Frame) -> bool + Send + Sync + 'static) {
        self.0.set_outlet(outlet);
    }

    /// Sends a notification to this session only (see [`Session::notify`]).
    pub fn notify(&self, frame: Frame) -> bool {
        self.0.notify(frame)
    }

    /// Whether the session is told about a change.
    pub fn wants(&self, change: &Change) -> bool {
        self.0.wants(change)
    }

    /// Appends a message to the session's log `stream` in the shared store (in order, stored
    /// before it is announced); `false` when the session is not shared or the queue is full.
    /// Every instance's [`LogWatcher`] of the session hears of it.
    pub fn log_event(&self, stream: u64, frame: Frame) -> bool {
        self.0
            .replication()
            .is_some_and(|r| r.append(&self.0.id, stream, frame))
    }

    /// Claims the session's own stream (log `0`) for a reader here: the watchers of the other
    /// instances hear [`LogNews::Claimed`](super::LogNews::Claimed).
    pub fn claim_stream(&self) {
        if let Some(r) = self.0.replication() {
            r.claim_stream(&self.0.id);
        }
    }

    /// The session's [`LogWatcher`], installed by `make` on first use. `None` when a watcher
    /// of another type was installed first (one transport serves a session).
    pub fn watch_logs<W: LogWatcher>(&self, make: impl FnOnce() -> W) -> Option<Arc<W>> {
        let watcher: Arc<dyn LogWatcher> = self.0.watcher.get_or_init(|| Arc::new(make())).clone();
        let any: Arc<dyn Any + Send + Sync> = watcher;
        any.downcast().ok()
    }
}
