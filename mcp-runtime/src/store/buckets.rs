//! The [`RateBuckets`] seam: where rate-limit buckets live, and the in-process default
//! ([`MemoryBuckets`]: the GCRA over a concurrent map).
//!
//! The rate-limit middleware (`middleware::RateLimit`) names a bucket per caller (and per
//! tool or method, if asked) and asks the seam for one request from it. With one process the
//! buckets are in its memory; with several instances behind a load balancer they must be shared
//! (the `mcp-store-redis` crate keeps them in Redis), or a client would get its rate once per
//! instance.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use foldhash::fast::RandomState;

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

/// The default: buckets in this process's memory, the GCRA (generic cell rate algorithm) over
/// one concurrent map of theoretical arrival times per distinct quota.
///
/// A bucket is one number, its theoretical arrival time (TAT): when it would be full again. A
/// request at `now` is allowed when `max(TAT, now) - now <= (burst - 1) × interval`, and then
/// moves the TAT one interval on; otherwise it is refused with
/// `retry_after = max(TAT, now) - now - (burst - 1) × interval` and changes nothing. Each
/// decision is made under the map's lock of its key, so concurrent requests on one key never
/// take more than the bucket holds. (This is `governor`'s algorithm, written here because it
/// is twenty lines and the crate brought eight more to every build.)
///
/// Idle keys are evicted: at most once a second, an acquisition sweeps away every key whose
/// bucket is full again (its TAT has passed), so memory holds only the keys active within their
/// refill time (`burst × interval`). Distinct quotas are expected to be few (they come from the
/// server's configuration and its per-principal hook).
///
/// Keys are strings by default (the [`RateBuckets`] seam's); any hashable key will do
/// (`K`): the rate-limit layer's own buckets are keyed by value, so that deciding formats
/// nothing. Keys are hashed with a randomly seeded hash (foldhash's), so that callers cannot
/// choose keys that collide.
pub struct MemoryBuckets<K = String> {
    /// Per quota, each key's TAT in nanoseconds since `origin`.
    buckets: DashMap<Quota, DashMap<K, u64, RandomState>, RandomState>,
    /// What every time here counts from.
    origin: Instant,
    /// When the last sweep ran, in nanoseconds since `origin`.
    swept: AtomicU64,
}

impl<K: Hash + Eq> std::fmt::Debug for MemoryBuckets<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBuckets")
            .field("quotas", &self.buckets.len())
            .field("keys", &self.len())
            .finish()
    }
}

impl<K: Hash + Eq> Default for MemoryBuckets<K> {
    fn default() -> Self {
        MemoryBuckets {
            buckets: DashMap::default(),
            origin: Instant::now(),
            swept: AtomicU64::new(0),
        }
    }
}

/// Nanoseconds of a duration, saturating.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The GCRA's decision on one bucket: the admission, and the bucket's next TAT if allowed.
fn decide(tat: u64, now: u64, quota: Quota) -> (Admission, Option<u64>) {
    let interval = nanos(quota.interval());
    let tolerance = interval.saturating_mul(u64::from(quota.burst() - 1));
    let start = tat.max(now);
    let ahead = start - now;
    if ahead > tolerance {
        let retry_after = Duration::from_nanos(ahead - tolerance);
        (Admission::Limited { retry_after }, None)
    } else {
        (Admission::Allowed, Some(start.saturating_add(interval)))
    }
}

impl MemoryBuckets {
    /// No bucket yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<K: Hash + Eq> MemoryBuckets<K> {
    /// Takes one request from the bucket `key` under `quota`, at once (the in-process decision
    /// needs no await). The key is copied only when its bucket is new.
    pub fn check<Q>(&self, key: &Q, quota: Quota) -> Admission
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let now = self.now_nanos();
        self.maybe_sweep(now);
        let keys = match self.buckets.get(&quota) {
            Some(keys) => keys,
            None => self.buckets.entry(quota).or_default().downgrade(),
        };
        // The key's entry is locked while it is decided: decisions on one key are atomic.
        if let Some(mut tat) = keys.get_mut(key) {
            let (admission, next) = decide(*tat, now, quota);
            if let Some(next) = next {
                *tat = next;
            }
            return admission;
        }
        let mut tat = keys.entry(key.to_owned()).or_insert(now);
        let (admission, next) = decide(*tat, now, quota);
        if let Some(next) = next {
            *tat = next;
        }
        admission
    }

    /// How many keys are held (buckets not yet swept away).
    pub fn len(&self) -> usize {
        self.buckets.iter().map(|keys| keys.len()).sum()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every key whose bucket is full again (it would decide as a new one would).
    pub fn sweep(&self) {
        let now = self.now_nanos();
        for keys in self.buckets.iter() {
            keys.retain(|_, tat| *tat > now);
            keys.shrink_to_fit();
        }
    }

    fn maybe_sweep(&self, now: u64) {
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
        nanos(self.origin.elapsed())
    }
}

impl RateBuckets for MemoryBuckets<String> {
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

    #[test]
    fn the_gcra_spaces_requests_after_the_burst() {
        let q = Quota::per_second(NonZeroU32::new(2).unwrap()); // 500 ms apart, burst 2
        let ms = |n: u64| n * 1_000_000;
        // A fresh bucket (TAT = now) takes the burst, then refuses until one interval passed.
        let (a, tat) = decide(0, 0, q);
        assert_eq!((a, tat), (Admission::Allowed, Some(ms(500))));
        let (a, tat) = decide(ms(500), 0, q);
        assert_eq!((a, tat), (Admission::Allowed, Some(ms(1000))));
        let (a, tat) = decide(ms(1000), ms(100), q);
        assert_eq!(
            (a, tat),
            (
                Admission::Limited {
                    retry_after: Duration::from_millis(400)
                },
                None
            ),
            "allowed again at TAT - tolerance = 500 ms"
        );
        assert_eq!(decide(ms(1000), ms(500), q), (Admission::Allowed, Some(ms(1500))));
        // Long idle: the bucket is full again, whatever its old TAT.
        assert_eq!(decide(ms(1500), ms(10_000), q), (Admission::Allowed, Some(ms(10_500))));
    }

    #[test]
    fn concurrent_requests_on_one_key_never_take_more_than_the_burst() {
        let b = std::sync::Arc::new(MemoryBuckets::new());
        let q = Quota::per_minute(NonZeroU32::new(50).unwrap());
        let allowed = std::sync::Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (b, allowed) = (b.clone(), allowed.clone());
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        if b.check("shared", q).is_allowed() {
                            allowed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("no panic");
        }
        assert_eq!(
            allowed.load(Ordering::Relaxed),
            50,
            "400 attempts, a burst of 50 within a second"
        );
    }

    #[tokio::test]
    async fn the_seam_answers_like_check() {
        let b = MemoryBuckets::new();
        let q = Quota::with_interval(Duration::from_secs(60)).unwrap();
        assert_eq!(b.acquire("k", q).await, Ok(Admission::Allowed));
        assert!(matches!(b.acquire("k", q).await, Ok(Admission::Limited { .. })));
    }
}
