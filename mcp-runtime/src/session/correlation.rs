//! [`Correlation`]: a session's server-to-client requests waiting for the client's response.
//!
//! Ids are minted here (`s2c-<n>`, or `s2c-<instance>-<n>` when the session is shared, so that
//! ids stay unique across instances and a response reaching another instance can be sent to
//! the one that asked: [`Correlation::asker`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_protocol::{RequestId, RpcError};
use serde_json::Value;
use tokio::sync::oneshot;

/// Where a pending request's response goes.
pub(crate) type Pending = oneshot::Sender<Result<Value, RpcError>>;

/// What the ids of server-to-client requests start with.
const S2C: &str = "s2c-";

/// The pending server-to-client requests of one session.
#[derive(Debug)]
pub(crate) struct Correlation {
    next: AtomicU64,
    pending: Mutex<HashMap<RequestId, Pending>>,
}

impl Correlation {
    pub(crate) fn new() -> Self {
        Correlation {
            next: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// A new pending request: its id (naming `instance` when the session is shared) and the
    /// receiver of its response.
    pub(crate) fn register(&self, instance: Option<&str>) -> (RequestId, oneshot::Receiver<Result<Value, RpcError>>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = match instance {
            Some(i) => RequestId::String(Arc::from(format!("{S2C}{i}-{n}"))),
            None => RequestId::String(Arc::from(format!("{S2C}{n}"))),
        };
        let (tx, rx) = oneshot::channel();
        self.pending().insert(id.clone(), tx);
        (id, rx)
    }

    /// Takes a pending request (to answer it, or to forget it).
    pub(crate) fn take(&self, id: &RequestId) -> Option<Pending> {
        self.pending().remove(id)
    }

    /// Takes every pending request (the session ended).
    pub(crate) fn drain(&self) -> Vec<Pending> {
        self.pending().drain().map(|(_, tx)| tx).collect()
    }

    /// The instance that sent a server-to-client request of a shared session, from its id;
    /// `None` for any other id.
    #[cfg(feature = "shared-store")]
    pub(crate) fn asker(id: &RequestId) -> Option<&str> {
        let RequestId::String(s) = id else { return None };
        s.strip_prefix(S2C)?.rsplit_once('-').map(|(instance, _)| instance)
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<RequestId, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
