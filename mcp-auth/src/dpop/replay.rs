//! The memory of DPoP proofs already used (RFC 9449 §11.1): a seam, [`ReplayCache`], and its
//! in-memory bounded implementation, [`MemoryReplayCache`].
//!
//! The bearer provider hands the cache a key derived from the proof (a hash of its key's
//! thumbprint and its `jti`, never the proof itself) and how long the proof could still be
//! accepted; the cache answers whether the key is new. A cache shared by several instances of a
//! server (such as the Redis one of `mcp-store-redis`) makes a proof single-use across them
//! all; the in-memory one, only within one process.
//!
//! This module needs no JWT library: it is available without the `jwt` feature, so that a
//! store crate can implement the seam.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::BoxFuture;

/// How many proofs the in-memory cache remembers by default.
pub const DEFAULT_REPLAY_ENTRIES: usize = 100_000;

/// Why a replay cache could not answer. The bearer provider then refuses the request with a
/// 503 (it fails closed: a proof it cannot record is not accepted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The cache holds as many live entries as it may; `retry_after` is when the oldest of
    /// them expires.
    #[error("the DPoP replay cache is full")]
    Full {
        /// When room is expected again.
        retry_after: Duration,
    },
    /// The cache's backend could not be reached or failed (the reason, free of secrets).
    #[error("the DPoP replay cache is unavailable: {0}")]
    Unavailable(String),
}

/// Remembers one-time keys for a while: the `jti` of each accepted DPoP proof.
///
/// Implementations must be atomic: of two concurrent calls with the same key, exactly one may
/// answer `Ok(true)`.
///
/// ```
/// use std::time::Duration;
/// use mcp_auth::{MemoryReplayCache, ReplayCache};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let cache = MemoryReplayCache::new(10);
/// assert_eq!(cache.check_and_insert("k", Duration::from_secs(60)).await, Ok(true));
/// assert_eq!(cache.check_and_insert("k", Duration::from_secs(60)).await, Ok(false));
/// # });
/// ```
pub trait ReplayCache: Send + Sync + 'static {
    /// Records `key` for `ttl` unless it is already recorded: `Ok(true)` when it was not (the
    /// first use), `Ok(false)` when it was (a replay).
    fn check_and_insert<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, ReplayError>>;
}

impl<C: ReplayCache + ?Sized> ReplayCache for std::sync::Arc<C> {
    fn check_and_insert<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, ReplayError>> {
        (**self).check_and_insert(key, ttl)
    }
}

/// A [`ReplayCache`] in this process's memory, bounded.
///
/// Expired entries are dropped as new ones come. When the cache holds `max_entries` live
/// entries it refuses new keys with [`ReplayError::Full`] rather than forget a live one (which
/// would let that proof be replayed): the bearer provider answers 503 with `Retry-After` until
/// the oldest entry expires. An entry lives as long as its proof could be accepted (about
/// twice the `iat` window, two minutes by default), so the default bound of
/// [`DEFAULT_REPLAY_ENTRIES`] holds some 800 accepted proofs a second. The bearer provider
/// records a proof only once everything else about the request checked out (a valid token
/// bound to the proof's key), so only holders of valid tokens can fill the cache.
#[derive(Debug)]
pub struct MemoryReplayCache {
    max_entries: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Key → when it expires.
    by_key: HashMap<String, Instant>,
    /// (expiry, key), to drop expired entries in order.
    by_expiry: BTreeSet<(Instant, String)>,
}

impl Entries {
    /// Drops every entry expired at `now`.
    fn purge(&mut self, now: Instant) {
        while let Some(first) = self.by_expiry.first() {
            if first.0 > now {
                break;
            }
            if let Some((_, key)) = self.by_expiry.pop_first() {
                self.by_key.remove(&key);
            }
        }
    }
}

impl MemoryReplayCache {
    /// A cache of at most `max_entries` live keys (at least 1).
    pub fn new(max_entries: usize) -> Self {
        MemoryReplayCache {
            max_entries: max_entries.max(1),
            inner: Mutex::new(Entries::default()),
        }
    }

    /// How many keys are remembered now (expired ones included until the next insertion).
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).by_key.len()
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn insert_at(&self, key: &str, ttl: Duration, now: Instant) -> Result<bool, ReplayError> {
        let mut entries = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        entries.purge(now);
        if entries.by_key.contains_key(key) {
            return Ok(false);
        }
        if entries.by_key.len() >= self.max_entries {
            let retry_after = entries
                .by_expiry
                .first()
                .map_or(Duration::from_secs(1), |(at, _)| at.saturating_duration_since(now));
            return Err(ReplayError::Full { retry_after });
        }
        let expires = now + ttl.max(Duration::from_millis(1));
        entries.by_key.insert(key.to_owned(), expires);
        entries.by_expiry.insert((expires, key.to_owned()));
        Ok(true)
    }
}

impl Default for MemoryReplayCache {
    fn default() -> Self {
        Self::new(DEFAULT_REPLAY_ENTRIES)
    }
}

impl ReplayCache for MemoryReplayCache {
    fn check_and_insert<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, ReplayError>> {
        let outcome = self.insert_at(key, ttl, Instant::now());
        Box::pin(std::future::ready(outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn first_use_then_replay() {
        let c = MemoryReplayCache::new(10);
        let t0 = Instant::now();
        assert_eq!(c.insert_at("a", MIN, t0), Ok(true));
        assert_eq!(c.insert_at("a", MIN, t0), Ok(false));
        assert_eq!(c.insert_at("b", MIN, t0), Ok(true));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn expired_keys_are_forgotten() {
        let c = MemoryReplayCache::new(10);
        let t0 = Instant::now();
        assert_eq!(c.insert_at("a", MIN, t0), Ok(true));
        assert_eq!(c.insert_at("a", MIN, t0 + MIN - Duration::from_millis(1)), Ok(false));
        assert_eq!(c.insert_at("a", MIN, t0 + MIN), Ok(true), "expired, then new again");
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn full_refuses_new_keys_until_one_expires() {
        let c = MemoryReplayCache::new(2);
        let t0 = Instant::now();
        assert_eq!(c.insert_at("a", MIN, t0), Ok(true));
        assert_eq!(c.insert_at("b", 2 * MIN, t0), Ok(true));
        let later = t0 + Duration::from_secs(20);
        assert_eq!(
            c.insert_at("c", MIN, later),
            Err(ReplayError::Full {
                retry_after: Duration::from_secs(40)
            })
        );
        // A live key is still known to be used, even when full.
        assert_eq!(c.insert_at("a", MIN, later), Ok(false));
        assert_eq!(c.insert_at("c", MIN, t0 + MIN), Ok(true), "a expired: room again");
        assert_eq!(c.len(), 2);
    }

    #[tokio::test]
    async fn through_the_trait_and_an_arc() {
        let c: std::sync::Arc<dyn ReplayCache> = std::sync::Arc::new(MemoryReplayCache::default());
        assert_eq!(c.check_and_insert("x", MIN).await, Ok(true));
        assert_eq!(c.check_and_insert("x", MIN).await, Ok(false));
    }
}
