//! The [`RateBuckets`] seam: where rate-limit buckets live, and the in-process default
//! ([`MemoryBuckets`], on the `governor` crate).
//!
//! The rate-limit middleware (`middleware::RateLimit`) names a bucket per caller (and per
//! tool or method, if asked) and asks the seam for one request from it. With one process the
//! buckets are in its memory; with several instances behind a load balancer they must be shared
//! (the `mcp-store-redis` crate keeps them in Redis), or a client would get its rate once per
//! instance.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use governor::DefaultKeyedRateLimiter;
use governor::clock::{Clock, DefaultClock};

use super::{Quota, StoreFuture};

/// What a bucket said to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The request is within its quota (one request was taken from the bucket).
    Allowed,
    /// The bucket is empty: the request is refused, and one would be allowed after
    /// `retry_after`.
    Limited {
        /// How long until the bucket allows a request again.
        retry_after: Duration,
    },
}

impl Admission {
    /// Whether the request was allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Admission::Allowed)
    }
}

/// Where rate-limit buckets live.
///
/// # Contract
///
/// - `acquire(key, quota)` takes one request from the bucket `key` under the GCRA of `quota`:
///   a bucket never seen (or idle long enough to be full again) allows `quota.burst()` requests
///   at once, then one per `quota.interval()`. A refused request takes nothing and is told how
///   long until the next would be allowed.
/// - Decisions on one key are atomic: of concurrent acquisitions on any instance sharing the
///   backend, no more are allowed than the bucket holds.
/// - Keys are opaque strings chosen by the caller; a bucket keeps no state once it is full again
///   (idle keys cost nothing, so memory is bounded by the keys active within a refill time).
/// - A backend that cannot decide answers a [`StoreError`](super::StoreError); the middleware
///   then applies its failure policy.
pub trait RateBuckets: Send + Sync + 'static {
    /// Takes one request from the bucket `key` under `quota`.
    fn acquire<'a>(&'a self, key: &'a str, quota: Quota) -> StoreFuture<'a, Admission>;
}

/// How often at most the in-process buckets drop the keys that are full again.
const SWEEP_INTERVAL_NANOS: u64 = 1_000_000_000;

/// The default: buckets in this process's memory, one `governor` keyed limiter (a concurrent
/// map of GCRA states) per distinct quota.
///
/// Idle keys are evicted: at most once a second, an acquisition sweeps away every key whose
/// bucket is full again (`retain_recent`), so memory holds only the keys active within their
/// refill time (`burst × interval`). Distinct quotas are expected to be few (they come from the
/// server's configuration and its per-principal hook).
pub struct MemoryBuckets {
    limiters: DashMap<Quota, DefaultKeyedRateLimiter<String>>,
    clock: DefaultClock,
    /// When the buckets were made: what `swept` counts from.
    origin: Instant,
    /// When the last sweep ran, in nanoseconds since `origin`.
    swept: AtomicU64,
}

impl std::fmt::Debug for MemoryBuckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBuckets")
            .field("quotas", &self.limiters.len())
            .field("keys", &self.len())
            .finish()
    }
}

impl Default for MemoryBuckets {
    fn default() -> Self {
        MemoryBuckets {
            limiters: DashMap::new(),
            clock: DefaultClock::default(),
            origin: Instant::now(),
            swept: AtomicU64::new(0),
        }
    }
}

impl MemoryBuckets {
    /// No bucket yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one request from the bucket `key` under `quota`, at once (the in-process decision
    /// needs no await).
    pub fn check(&self, key: &str, quota: Quota) -> Admission {
        self.maybe_sweep();
        let key = key.to_owned();
        let decision = match self.limiters.get(&quota) {
            Some(limiter) => limiter.check_key(&key),
            None => self
                .limiters
                .entry(quota)
                .or_insert_with(|| DefaultKeyedRateLimiter::dashmap(quota.to_governor()))
                .check_key(&key),
        };
        match decision {
            Ok(()) => Admission::Allowed,
            Err(not_until) => Admission::Limited {
                retry_after: not_until.wait_time_from(self.clock.now()),
            },
        }
    }

    /// How many keys are held (buckets not yet swept away).
    pub fn len(&self) -> usize {
        self.limiters.iter().map(|l| l.len()).sum()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every key whose bucket is full again (it would decide as a new one would).
    pub fn sweep(&self) {
        for limiter in self.limiters.iter() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    fn maybe_sweep(&self) {
        let now = self.now_nanos();
        let last = self.swept.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= SWEEP_INTERVAL_NANOS;
        // One caller sweeps; the others go on.
        if due
            && self
                .swept
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.sweep();
        }
    }

    fn now_nanos(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl RateBuckets for MemoryBuckets {
    fn acquire<'a>(&'a self, key: &'a str, quota: Quota) -> StoreFuture<'a, Admission> {
        let admission = self.check(key, quota);
        Box::pin(async move { Ok(admission) })
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    fn three_per_minute() -> Quota {
        Quota::per_minute(NonZeroU32::new(3).unwrap())
    }

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_with_the_wait() {
        let b = MemoryBuckets::new();
        for _ in 0..3 {
            assert_eq!(b.check("k", three_per_minute()), Admission::Allowed);
        }
        let Admission::Limited { retry_after } = b.check("k", three_per_minute()) else {
            panic!("the fourth request is over the burst");
        };
        assert!(
            retry_after > Duration::from_secs(15) && retry_after <= Duration::from_secs(20),
            "{retry_after:?}"
        );
        // Another key, another bucket.
        assert!(b.check("other", three_per_minute()).is_allowed());
        // Another quota, another bucket even for the same key.
        assert!(
            b.check("k", Quota::per_second(NonZeroU32::new(1).unwrap()))
                .is_allowed()
        );
    }

    #[test]
    fn full_buckets_are_swept() {
        let b = MemoryBuckets::new();
        let fast = Quota::with_interval(Duration::from_millis(1)).unwrap();
        for i in 0..100 {
            assert!(b.check(&format!("k{i}"), fast).is_allowed());
        }
        assert_eq!(b.check("slow", three_per_minute()), Admission::Allowed);
        assert_eq!(b.len(), 101);
        std::thread::sleep(Duration::from_millis(20));
        b.sweep();
        // The fast buckets are full again and gone; the slow one still counts.
        assert_eq!(b.len(), 1);
    }

    #[tokio::test]
    async fn the_seam_answers_like_check() {
        let b = MemoryBuckets::new();
        let q = Quota::with_interval(Duration::from_secs(60)).unwrap();
        assert_eq!(b.acquire("k", q).await, Ok(Admission::Allowed));
        assert!(matches!(b.acquire("k", q).await, Ok(Admission::Limited { .. })));
    }
}
