//! Running handler futures under a deadline, a cancellation token, and a
//! panic guard: a handler that panics never takes its transport down, and
//! the panic's details go to the log only.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

/// Why a guarded handler produced no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The handler panicked.
    Panicked,
    /// The deadline passed.
    TimedOut,
    /// The request was cancelled.
    Cancelled,
}

/// Runs `fut` until it completes, panics, times out or is cancelled.
pub(crate) async fn run_guarded<T>(
    what: &str,
    fut: impl Future<Output = T>,
    deadline: Duration,
    cancel: &CancellationToken,
) -> Result<T, Interrupted> {
    tokio::select! {
        r = run_bounded(what, fut, deadline) => r,
        _ = cancel.cancelled() => Err(Interrupted::Cancelled),
    }
}

/// Runs `fut` until it completes, panics or times out.
pub(crate) async fn run_bounded<T>(
    what: &str,
    fut: impl Future<Output = T>,
    deadline: Duration,
) -> Result<T, Interrupted> {
    match tokio::time::timeout(deadline, AssertUnwindSafe(fut).catch_unwind()).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(panic)) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            tracing::error!(handler = what, panic = %msg, "handler panicked");
            Err(Interrupted::Panicked)
        }
        Err(_) => {
            tracing::warn!(handler = what, ?deadline, "handler timed out");
            Err(Interrupted::TimedOut)
        }
    }
}
