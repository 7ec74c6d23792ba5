//! A short-lived cache of verified credentials, so that a client presenting the same valid
//! password again does not pay the password hash each time (and, with the feature `oidc`, a
//! token introspected again does not cost another request to the authorization server).
//!
//! An entry is keyed by HMAC-SHA-256, under a per-process random key, of the user name and
//! the password as presented: neither the password nor an unkeyed hash of it is held, and the
//! key is useless to anyone who reads memory without the process key. An entry lives
//! [`CacheConfig::ttl`] from the check that made it (it is not renewed by use), and the cache
//! holds at most [`CacheConfig::max_entries`], the oldest evicted first. Only successes are
//! cached; a wrong password always goes to the throttle and the hash.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::bounded::BoundedMap;
use crate::{AuthInfo, AuthSetupError};

/// How many verified credentials are remembered, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheConfig {
    /// The most credentials remembered (default 1,024); `0` disables the cache.
    pub max_entries: usize,
    /// How long a verified credential is remembered (default 60 s); zero disables the cache.
    pub ttl: Duration,
}

/// The default bound on cached credentials.
pub const DEFAULT_CACHE_ENTRIES: usize = 1_024;
/// The default lifetime of a cached credential.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            max_entries: DEFAULT_CACHE_ENTRIES,
            ttl: DEFAULT_CACHE_TTL,
        }
    }
}

impl CacheConfig {
    /// A cache of at most `max_entries` credentials, each remembered for `ttl`.
    pub fn new(max_entries: usize, ttl: Duration) -> Self {
        CacheConfig { max_entries, ttl }
    }

    /// No cache: every request checks its password.
    pub fn disabled() -> Self {
        CacheConfig::new(0, Duration::ZERO)
    }

    fn enabled(&self) -> bool {
        self.max_entries > 0 && !self.ttl.is_zero()
    }
}

/// The key of a credential: HMAC-SHA-256 of its parts under the cache's key.
type Key = [u8; 32];

/// Verified credentials, by keyed hash: what each was verified as (an identity for basic auth,
/// an introspection answer for bearer tokens).
pub(crate) struct CredentialCache<V = AuthInfo> {
    config: CacheConfig,
    secret: [u8; 32],
    entries: Mutex<BoundedMap<Key, (V, Instant)>>,
}

impl<V> std::fmt::Debug for CredentialCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialCache")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<V: Clone> CredentialCache<V> {
    /// An empty cache with a fresh random key.
    pub(crate) fn new(config: CacheConfig) -> Result<Self, AuthSetupError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|_| AuthSetupError::Random)?;
        Ok(CredentialCache {
            config,
            secret,
            entries: Mutex::new(BoundedMap::new(config.max_entries)),
        })
    }

    /// The key of the credential made of `parts` (e.g. a user name and a password).
    pub(crate) fn key(&self, parts: &[&[u8]]) -> Key {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes keys of any length");
        for p in parts {
            mac.update(&(p.len() as u64).to_be_bytes());
            mac.update(p);
        }
        mac.finalize().into_bytes().into()
    }

    /// What a credential was verified as, if that was less than the TTL ago.
    pub(crate) fn get(&self, key: &Key, now: Instant) -> Option<V> {
        if !self.config.enabled() {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(key)
            .filter(|(_, expires)| *expires > now)
            .map(|(info, _)| info.clone())
    }

    /// Remembers that a credential was verified as `info` at `now`.
    pub(crate) fn insert(&self, key: Key, info: V, now: Instant) {
        self.insert_for(key, info, now, self.config.ttl);
    }

    /// Remembers that a credential was verified as `info` at `now`, for `ttl` (at most the
    /// configured TTL).
    pub(crate) fn insert_for(&self, key: Key, info: V, now: Instant, ttl: Duration) {
        let ttl = ttl.min(self.config.ttl);
        if !self.config.enabled() || ttl.is_zero() {
            return;
        }
        let Some(expires) = now.checked_add(ttl) else {
            return;
        };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = entries.entry(key, || (info.clone(), expires), |(_, e)| *e <= now);
        *slot = (info, expires);
    }

    /// How many credentials are held (expired ones included until they are evicted).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(max: usize, ttl: Duration) -> CredentialCache {
        CredentialCache::new(CacheConfig::new(max, ttl)).unwrap()
    }

    #[test]
    fn shorter_lifetimes_per_entry() {
        let c: CredentialCache<u8> = CredentialCache::new(CacheConfig::new(4, Duration::from_secs(60))).unwrap();
        let now = Instant::now();
        let (a, b) = (c.key(&[b"a"]), c.key(&[b"b"]));
        c.insert_for(a, 1, now, Duration::from_secs(5));
        c.insert_for(b, 2, now, Duration::from_secs(600));
        assert_eq!(c.get(&a, now + Duration::from_secs(4)), Some(1));
        assert_eq!(c.get(&a, now + Duration::from_secs(5)), None);
        assert_eq!(c.get(&b, now + Duration::from_secs(59)), Some(2));
        assert_eq!(
            c.get(&b, now + Duration::from_secs(60)),
            None,
            "at most the configured TTL"
        );
        let z = c.key(&[b"z"]);
        c.insert_for(z, 3, now, Duration::ZERO);
        assert_eq!(c.get(&z, now), None, "a zero lifetime is not remembered");
    }

    #[test]
    fn remembers_for_the_ttl_only() {
        let c = cache(4, Duration::from_secs(60));
        let now = Instant::now();
        let k = c.key(&[b"alice", b"pw"]);
        assert_eq!(c.get(&k, now), None);
        c.insert(k, AuthInfo::new("alice"), now);
        assert_eq!(
            c.get(&k, now + Duration::from_secs(59)).unwrap().principal.as_ref(),
            "alice"
        );
        assert_eq!(c.get(&k, now + Duration::from_secs(60)), None, "not renewed by use");
    }

    #[test]
    fn keys_are_keyed_and_unambiguous() {
        let c = cache(4, Duration::from_secs(60));
        assert_eq!(c.key(&[b"alice", b"pw"]), c.key(&[b"alice", b"pw"]));
        assert_ne!(c.key(&[b"alice", b"pw"]), c.key(&[b"alic", b"epw"]));
        assert_ne!(
            c.key(&[b"alice", b"pw"]),
            cache(4, Duration::from_secs(1)).key(&[b"alice", b"pw"])
        );
    }

    #[test]
    fn bounded_oldest_first() {
        let c = cache(3, Duration::from_secs(60));
        let now = Instant::now();
        let keys: Vec<_> = (0..5u8).map(|i| c.key(&[&[i]])).collect();
        for k in &keys {
            c.insert(*k, AuthInfo::new("u"), now);
        }
        assert_eq!(c.len(), 3);
        assert!(c.get(&keys[0], now).is_none() && c.get(&keys[1], now).is_none());
        assert!(c.get(&keys[4], now).is_some());
    }

    #[test]
    fn disabled_remembers_nothing() {
        for c in [cache(0, Duration::from_secs(60)), cache(4, Duration::ZERO)] {
            let now = Instant::now();
            let k = c.key(&[b"x"]);
            c.insert(k, AuthInfo::new("u"), now);
            assert_eq!(c.get(&k, now), None);
        }
        assert_eq!(CacheConfig::disabled(), CacheConfig::new(0, Duration::ZERO));
    }
}
