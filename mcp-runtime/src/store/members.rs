//! The [`Membership`] seam: which instances of a server are alive, and the in-memory default.
//!
//! Every runtime that shares a [`Store`](super::Store) has an instance id and renews a
//! heartbeat; an instance whose heartbeat lapsed is gone, and the tasks it was running are
//! failed by recovery on a live instance.

use std::time::Duration;

use dashmap::DashMap;
use tokio::time::Instant;

use super::StoreFuture;

/// Where instances announce they are alive.
///
/// # Contract
///
/// - `heartbeat(instance, ttl)` marks the instance alive until `ttl` from now.
/// - `alive(instance)` is `true` until the last heartbeat's `ttl` ran out, `false` for an
///   instance never seen or that `leave`s.
/// - `check()` answers `Ok` when the backend can be reached now: one light round trip (Redis:
///   `PING`), no state read or written. A store in this process's memory is always reachable
///   (the default method). It is what readiness probes ask ([`Store::check`](super::Store::check)).
pub trait Membership: Send + Sync + 'static {
    /// Marks an instance alive for `ttl`.
    fn heartbeat<'a>(&'a self, instance: &'a str, ttl: Duration) -> StoreFuture<'a, ()>;

    /// Whether an instance is alive.
    fn alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool>;

    /// An instance leaves (a graceful shutdown).
    fn leave<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, ()>;

    /// Whether the backend can be reached now: `Err` (typically
    /// [`StoreError::Unavailable`](super::StoreError::Unavailable)) when it cannot. The default
    /// answers `Ok` at once: a store in this process's memory is always there.
    fn check(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
}

/// The default: heartbeats in this process's memory, on the Tokio clock.
#[derive(Debug, Default)]
pub struct MemoryMembership {
    until: DashMap<String, Instant>,
}

impl MemoryMembership {
    /// No instance alive yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Membership for MemoryMembership {
    fn heartbeat<'a>(&'a self, instance: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        self.until.insert(instance.to_owned(), Instant::now() + ttl);
        Box::pin(async { Ok(()) })
    }

    fn alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool> {
        let alive = self.until.get(instance).is_some_and(|t| *t > Instant::now());
        Box::pin(async move { Ok(alive) })
    }

    fn leave<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, ()> {
        self.until.remove(instance);
        Box::pin(async { Ok(()) })
    }
}
