//! The open sessions of the 2024-11-05 HTTP+SSE transport ([`mod@crate::pair`]): each [`Pair`]
//! (its principal, its stream's outlet, its session slot) in the endpoint's [`Pairs`] table,
//! by id, from the GET that opened its stream until that stream ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_runtime::{Frame, SessionHandle, SessionSlot};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::streams::hub::Channel;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One open HTTP+SSE session.
#[derive(Debug)]
pub(crate) struct Pair {
    /// Who opened it: only they may post to it.
    pub(crate) principal: Arc<str>,
    /// Replies and call frames, written to the stream by its pump.
    pub(crate) out: mpsc::Sender<Frame>,
    /// The engine's session once `initialize` ran, and the pair's requests in flight. Its
    /// root token is cancelled when the stream ends: every call of the pair is cancelled.
    pub(crate) slot: SessionSlot,
    /// The session's event channel, once `initialize` ran.
    pub(crate) joined: watch::Sender<Option<Arc<Channel>>>,
}

impl Pair {
    /// The engine's session, once `initialize` ran.
    pub(crate) fn session(&self) -> Option<SessionHandle> {
        self.slot.session()
    }

    /// Cancelled when the pair's stream has ended.
    pub(crate) fn ended(&self) -> &CancellationToken {
        self.slot.root()
    }

    /// Queues a message for the pair's stream (dropped when the stream is gone).
    pub(crate) async fn push(&self, frame: Frame) {
        if self.out.send(frame).await.is_err() {
            tracing::debug!("HTTP+SSE stream gone; message dropped");
        }
    }
}

/// The open pairs of an endpoint, by id.
#[derive(Debug, Default)]
pub(crate) struct Pairs {
    map: Mutex<HashMap<Arc<str>, Arc<Pair>>>,
}

impl Pairs {
    /// The pair `id` if `principal` opened it.
    pub(crate) fn get(&self, id: &str, principal: &str) -> Option<Arc<Pair>> {
        lock(&self.map)
            .get(id)
            .filter(|p| *p.principal == *principal && !p.ended().is_cancelled())
            .cloned()
    }

    /// Adds a pair whose stream is opening.
    pub(crate) fn insert(&self, id: Arc<str>, pair: Arc<Pair>) {
        lock(&self.map).insert(id, pair);
    }

    /// Removes a pair (its stream has ended, or could not start).
    pub(crate) fn remove(&self, id: &str) {
        lock(&self.map).remove(id);
    }
}
