//! [`Replica`]: a session's link to its shared record, when sessions are shared by several
//! instances, and the clocks that keep the record fresh without a store call per request.
//!
//! Activity pushes the record's expiry back at most every [`Replication::touch_every`]; a copy
//! held here is checked against the record at most every so often
//! ([`Replica::check_due`]), one request of many doing it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::Replication;

/// A session's replication state (none until the session is attached to a shared record).
#[derive(Debug, Default)]
pub(crate) struct Replica {
    link: OnceLock<Arc<dyn Replication>>,
    /// When the shared record's expiry was last pushed back (ms of the session's epoch).
    stored_touch_ms: AtomicU64,
    /// When this copy was last checked against the shared record (ms of the session's epoch).
    checked_ms: AtomicU64,
}

impl Replica {
    #[cfg(feature = "shared-store")]
    /// Links the session to its shared record (once).
    pub(crate) fn attach(&self, replication: Arc<dyn Replication>) {
        let _ = self.link.set(replication);
    }

    /// Where the record is replicated, when it is shared.
    pub(crate) fn link(&self) -> Option<&Arc<dyn Replication>> {
        self.link.get()
    }

    /// Whether activity at `ms` should push the record's expiry back (claimed when it should,
    /// so that one request of many does it).
    pub(crate) fn touch_due(&self, ms: u64, every: Duration) -> bool {
        claim(&self.stored_touch_ms, ms, every)
    }

    /// Whether the copy is due to be checked against the record at `ms` (claimed when it is).
    pub(crate) fn check_due(&self, ms: u64, every: Duration) -> bool {
        claim(&self.checked_ms, ms, every)
    }
}

/// Moves `last` to `ms` when it is `every` old; `true` for the caller that moved it.
fn claim(last: &AtomicU64, ms: u64, every: Duration) -> bool {
    let before = last.load(Ordering::Relaxed);
    ms.saturating_sub(before) >= every.as_millis() as u64
        && last
            .compare_exchange(before, ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}
