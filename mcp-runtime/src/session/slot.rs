//! The session slot of a transport that holds one legacy session per connection or process
//! (stdio, a held stream), with the requests in flight on it.

use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use super::inflight::InFlight;
use super::{Session, SessionHandle};

/// One connection's (or process's) session, once `initialize` ran, and its requests in flight.
///
/// Request ids are unique per connection, so every request of the connection, in either era and
/// before or after `initialize`, is registered in the slot's [`InFlight`] set: a reused id is
/// refused, and `notifications/cancelled` finds the request it names. Every request's
/// cancellation token is a child of the slot's root token: cancelling it (the connection ended,
/// the drain timeout passed) cancels all of them.
#[derive(Debug)]
pub struct SessionSlot {
    session: Mutex<Option<Arc<Session>>>,
    in_flight: InFlight,
    root: CancellationToken,
}

impl SessionSlot {
    /// An empty slot whose requests are cancelled with `root`.
    pub fn new(root: CancellationToken) -> Self {
        SessionSlot {
            session: Mutex::new(None),
            in_flight: InFlight::new(),
            root,
        }
    }

    /// The session, once `initialize` succeeded.
    pub fn session(&self) -> Option<SessionHandle> {
        self.current().map(SessionHandle)
    }

    /// The session, as the runtime serves it.
    pub(crate) fn current(&self) -> Option<Arc<Session>> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Stores the session; `false` (and nothing stored) when one is already there.
    pub(crate) fn fill(&self, session: Arc<Session>) -> bool {
        let mut slot = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return false;
        }
        *slot = Some(session);
        true
    }

    /// The requests in flight on this connection.
    pub fn in_flight(&self) -> &InFlight {
        &self.in_flight
    }

    /// The token every request's own token descends from.
    pub fn root(&self) -> &CancellationToken {
        &self.root
    }
}
