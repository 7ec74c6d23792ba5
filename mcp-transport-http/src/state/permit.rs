//! The in-flight cap: the count of requests being handled, and the [`Permit`] each one holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The number of requests in flight (a request of a batch counts as one).
#[derive(Debug, Default)]
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// Takes `n` slots at once when they all fit under `max`; otherwise takes none.
    pub(crate) fn take(&self, n: usize, max: usize) -> Option<Permit> {
        let total = self.0.fetch_add(n, Ordering::AcqRel) + n;
        if total > max {
            self.0.fetch_sub(n, Ordering::AcqRel);
            return None;
        }
        Some(Permit(self.0.clone(), n))
    }
}

/// Slots of the in-flight cap (one per request), released when dropped.
#[derive(Debug)]
pub(crate) struct Permit(Arc<AtomicUsize>, usize);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::AcqRel);
    }
}
