//! `--features count-allocs`: a counting global allocator, for allocations per request.
//!
//! Every allocation goes to the system allocator; this wrapper only counts them (calls and
//! bytes, reallocations counted as allocations). On `SIGUSR1` the process prints the totals so
//! far on stderr, one line, `allocs: CALLS bytes: BYTES`: read it before and after a run of a
//! known number of requests (the load generator's `requests_sent`) and divide the difference.
//! The counters are process-wide relaxed atomics, which costs a few nanoseconds per allocation:
//! the feature is off in the measured bench.
//!
//! `unsafe` is allowed in this module alone (the bench workspace denies it): implementing
//! [`GlobalAlloc`] is an `unsafe impl` whatever it does, and each method only forwards its
//! arguments, under the same contract, to [`System`].
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counted.
pub(crate) struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

fn count(size: usize) {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size as u64, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's own arguments, which satisfy
// `GlobalAlloc`'s contract for `System` exactly as they do for `Counting`.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this wrapper) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: the caller upholds `realloc`'s contract; `ptr` came from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Prints the totals on stderr at every `SIGUSR1`, until the process ends.
pub(crate) fn report_on_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut usr1 = signal(SignalKind::user_defined1())?;
    tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            let (n, b) = (ALLOCS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
            eprintln!("allocs: {n} bytes: {b}");
        }
    });
    Ok(())
}
