//! What every part of one stdio server shares: the engine, the caller's
//! identity, the process's session slot (its legacy session and the
//! requests in flight), and the way to the writer.

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_runtime::observe::Network;
use mcp_runtime::{Engine, Peer, SessionHandle, SessionSlot, Sessions};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::writer::Outlets;

/// State shared by the coordinator, the workers and the helper tasks.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The message pipeline.
    pub(crate) engine: Engine,
    /// The caller: a stdio peer is the local process that started us.
    pub(crate) auth: Arc<AuthInfo>,
    /// The process's legacy session and its requests in flight; cancelling
    /// its root token cancels every request.
    pub(crate) slot: SessionSlot,
    /// The writer's inputs.
    pub(crate) out: Outlets,
    /// Cancelled when the input ends: open listen streams stop.
    pub(crate) input_closed: CancellationToken,
    /// Cancelled when a graceful shutdown begins: open listen streams end with
    /// `notifications/cancelled` and their completion result.
    pub(crate) shutdown: CancellationToken,
    /// The listen streams' tasks, awaited (briefly) before the output is closed.
    pub(crate) listens: TaskTracker,
}

impl Shared {
    /// State for a new server.
    pub(crate) fn new(engine: Engine, out: Outlets) -> Self {
        Shared {
            engine,
            auth: Arc::new(AuthInfo::anonymous()),
            slot: SessionSlot::new(CancellationToken::new()),
            out,
            input_closed: CancellationToken::new(),
            shutdown: CancellationToken::new(),
            listens: TaskTracker::new(),
        }
    }

    /// The legacy session of the process, once `initialize` succeeded.
    pub(crate) fn session(&self) -> Option<SessionHandle> {
        self.slot.session()
    }

    /// What the engine knows of the stdio peer: one session per process, no
    /// declared revision, no headers, streaming on the writer, over a pipe.
    pub(crate) fn peer(&self) -> Peer<'_> {
        Peer::new(self.auth.clone(), Sessions::Slot(&self.slot)).with_network(Network::PIPE)
    }
}
