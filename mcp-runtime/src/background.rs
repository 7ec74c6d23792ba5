//! Background tasks: the long-lived tasks the library spawns beside the requests (sweepers,
//! heartbeats, relays, stream pumps, the transports' readers and writers) go through
//! [`spawn`], or [`boxed`] for a `TaskTracker`.
//!
//! Each distinct future type given to `tokio::spawn` instantiates the whole of tokio's task
//! machinery for it (some forty functions: the harness, its waker, its drop and cancellation
//! paths). Boxed, every background task is one type, `Background`, and shares one instantiation,
//! which keeps the binary of every server smaller. The box is one allocation per task, made
//! once per sweeper, session or stream: the tasks spawned for each request are not boxed here,
//! since their allocations count per request.

use std::future::Future;
use std::pin::Pin;

use tokio::task::JoinHandle;

/// A background task: any `()` future, boxed.
pub type Background = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Boxes a background task (for `TaskTracker::spawn` and the like).
pub fn boxed(task: impl Future<Output = ()> + Send + 'static) -> Background {
    Box::pin(task)
}

/// Spawns a background task on the current Tokio runtime, boxed (see the module's
/// documentation).
pub fn spawn(task: impl Future<Output = ()> + Send + 'static) -> JoinHandle<()> {
    tokio::spawn(boxed(task))
}
