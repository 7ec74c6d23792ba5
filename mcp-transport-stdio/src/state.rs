//! What every part of one stdio server shares: the runtime, the caller's
//! identity, the process's legacy session, the requests in flight, and the
//! way to the writer.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::auth::AuthInfo;
use mcp_runtime::{InFlight, Runtime, Session};
use tokio_util::sync::CancellationToken;

use crate::writer::Outlets;

/// State shared by the coordinator, the workers and the helper tasks.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The protocol engine.
    pub(crate) runtime: Arc<Runtime>,
    /// The caller: a stdio peer is the local process that started us.
    pub(crate) auth: Arc<AuthInfo>,
    /// Requests in flight, for the duplicate-id check and cancellation.
    pub(crate) in_flight: InFlight,
    /// The writer's inputs.
    pub(crate) out: Outlets,
    /// Cancelled when the input ends: open listen streams stop.
    pub(crate) input_closed: CancellationToken,
    session: Mutex<Option<Arc<Session>>>,
}

impl Shared {
    /// State for a new server.
    pub(crate) fn new(runtime: Arc<Runtime>, out: Outlets) -> Self {
        Shared {
            runtime,
            auth: Arc::new(AuthInfo::anonymous()),
            in_flight: InFlight::new(),
            out,
            input_closed: CancellationToken::new(),
            session: Mutex::new(None),
        }
    }

    /// The legacy session of the process, once `initialize` succeeded.
    pub(crate) fn session(&self) -> Option<Arc<Session>> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Stores the process's session; `false` (and nothing stored) when one
    /// already exists.
    pub(crate) fn set_session(&self, session: Arc<Session>) -> bool {
        let mut slot = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return false;
        }
        *slot = Some(session);
        true
    }
}
