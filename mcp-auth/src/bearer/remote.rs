//! Keys fetched from the authorization server (feature `oidc`): a JWKS URL given directly, or
//! the `jwks_uri` of an issuer's metadata (OpenID Connect Discovery 1.0, RFC 8414).
//!
//! * **Lazy.** Nothing is fetched at build time: the first token to verify fetches the keys
//!   (and the metadata first, for an issuer), and the tokens that arrive meanwhile wait for that
//!   same fetch. [`BearerAuth::fetch_keys`](super::BearerAuth::fetch_keys) fetches them ahead,
//!   for a server that wants to know at start-up. While no key set was ever fetched, tokens are
//!   refused with [`TokenError::Unavailable`] (503, `Retry-After`).
//! * **Fresh.** A key set is kept for the `max-age` of its answer's `Cache-Control`, bounded to
//!   [`MIN_KEYS_TTL`]..=[`MAX_KEYS_TTL`] ([`DEFAULT_KEYS_TTL`] when absent). Past that, the
//!   next token is verified with the keys held while one background task fetches anew.
//! * **Rotation without hammering.** A token whose `kid` (or algorithm, when it is an accepted
//!   one) matches no key held triggers a refetch, but at most one per minimum interval
//!   ([`DEFAULT_KEY_REFETCH_INTERVAL`]) and all concurrent misses share it (single flight): a
//!   flood of tokens with random `kid`s costs the authorization server one request per interval.
//! * **Last good keys.** A fetch that fails, or whose document is no usable JWK set, changes
//!   nothing held (it is logged, and tried again after the minimum interval).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use http::Uri;
use jsonwebtoken::Algorithm;

use super::keys::KeySet;
use crate::bearer::verifier::TokenError;
use crate::fetch::{FetchError, HttpClient, discover, invalid};

/// The shortest time a fetched key set is kept, whatever its `Cache-Control` says.
pub const MIN_KEYS_TTL: Duration = Duration::from_secs(60);
/// The longest time a fetched key set is kept, whatever its `Cache-Control` says.
pub const MAX_KEYS_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a fetched key set is kept when its answer has no `Cache-Control: max-age`.
pub const DEFAULT_KEYS_TTL: Duration = Duration::from_secs(5 * 60);
/// The default least time between two fetches of the keys that a token with an unknown `kid`
/// (or a failed fetch) may trigger.
pub const DEFAULT_KEY_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// The algorithms accepted from remote keys unless configured otherwise.
pub const DEFAULT_REMOTE_ALGORITHMS: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

/// Why the keys are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// None were ever fetched, or a token's key is not among them: at most once per interval.
    Missing,
    /// They are past their lifetime (a failed fetch sets that one interval ahead).
    Stale,
    /// [`RemoteKeys::fetch_now`].
    Asked,
}

/// Where the keys come from.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// The `jwks_uri` of this issuer's metadata.
    Issuer(String),
    /// This JWKS URL.
    Jwks(Uri),
}

#[derive(Default)]
struct State {
    /// The last good key set.
    keys: Option<Arc<KeySet>>,
    /// The JWKS URL, once known.
    jwks_uri: Option<Uri>,
    /// When the keys held should be fetched anew.
    fresh_until: Option<Instant>,
    /// When the last fetch (good or not) ended.
    last_attempt: Option<Instant>,
    /// How many fetches ended: a waiter that saw another count knows a fetch happened meanwhile.
    attempts: u64,
}

/// A key set fetched from the authorization server, refreshed and swapped whole.
pub(crate) struct RemoteKeys {
    origin: Origin,
    client: HttpClient,
    allowed: Vec<Algorithm>,
    refetch_interval: Duration,
    ttl_bounds: (Duration, Duration),
    state: RwLock<State>,
    /// Held by the one fetch under way (single flight).
    fetching: tokio::sync::Mutex<()>,
    /// Set while a background refresh is spawned, so that at most one is.
    refreshing: AtomicBool,
    fetches: AtomicU64,
    failures: AtomicU64,
}

impl std::fmt::Debug for RemoteKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteKeys")
            .field("origin", &self.origin)
            .field("allowed", &self.allowed)
            .field("refetch_interval", &self.refetch_interval)
            .finish_non_exhaustive()
    }
}

impl RemoteKeys {
    pub(crate) fn new(origin: Origin, client: HttpClient, allowed: Vec<Algorithm>, refetch_interval: Duration) -> Self {
        RemoteKeys {
            origin,
            client,
            allowed,
            refetch_interval,
            ttl_bounds: (MIN_KEYS_TTL, MAX_KEYS_TTL),
            state: RwLock::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
            refreshing: AtomicBool::new(false),
            fetches: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    /// Lowers the bounds of a key set's lifetime (tests, which cannot wait a minute).
    #[cfg(test)]
    pub(crate) fn with_ttl_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.ttl_bounds = (min, max);
        self
    }

    /// Where the keys come from.
    pub(crate) fn origin(&self) -> &Origin {
        &self.origin
    }

    /// How many fetches of the keys were attempted (each one JWKS request, preceded by the
    /// metadata's until an issuer's was fetched).
    pub(crate) fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// How many of those failed.
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The keys held, whether they are stale at `now`, and the count of fetches they follow.
    fn snapshot(&self, now: Instant) -> (Option<Arc<KeySet>>, bool, u64) {
        let s = self.read();
        let stale = s.fresh_until.is_none_or(|t| now >= t);
        (s.keys.clone(), stale, s.attempts)
    }

    /// The keys to verify with, and the count of fetches they follow (for
    /// [`after_miss`](Self::after_miss)). Fetches them first when none were ever fetched;
    /// refreshes stale ones in the background.
    pub(crate) async fn current(self: &Arc<Self>) -> Result<(Arc<KeySet>, u64), TokenError> {
        let (keys, stale, seen) = self.snapshot(Instant::now());
        if let Some(keys) = keys {
            if stale {
                self.refresh_in_background(seen);
            }
            return Ok((keys, seen));
        }
        self.refresh(seen, Why::Missing).await;
        let (keys, _, seen) = self.snapshot(Instant::now());
        keys.map(|k| (k, seen)).ok_or(TokenError::Unavailable)
    }

    /// After a token matched no key of the set that followed `seen` fetches: fetches the keys
    /// again unless one fetch ended since (it is shared) or the last one ended less than the
    /// minimum interval ago. The newer keys, if there are any.
    pub(crate) async fn after_miss(&self, seen: u64) -> Option<Arc<KeySet>> {
        self.refresh(seen, Why::Missing).await;
        let (keys, _, now_seen) = self.snapshot(Instant::now());
        if now_seen == seen { None } else { keys }
    }

    /// Whether a token's miss may trigger a refetch: its header names an accepted algorithm.
    pub(crate) fn may_refetch_for(&self, token: &str) -> bool {
        jsonwebtoken::decode_header(token).is_ok_and(|h| self.allowed.contains(&h.alg))
    }

    /// Fetches now, whatever the interval (still one fetch at a time); the number of keys held.
    pub(crate) async fn fetch_now(&self) -> Result<usize, FetchError> {
        match self.refresh(0, Why::Asked).await {
            Some(outcome) => outcome,
            None => Ok(self.read().keys.as_ref().map_or(0, |k| k.len())),
        }
    }

    fn refresh_in_background(self: &Arc<Self>, seen: u64) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = Arc::clone(self);
        runtime.spawn(async move {
            me.refresh(seen, Why::Stale).await;
            me.refreshing.store(false, Ordering::Release);
        });
    }

    /// One fetch, unless another ended since `seen` fetches, or, for missing keys, the last
    /// one ended less than the minimum interval ago: then `None`. Asked for, it always fetches.
    async fn refresh(&self, seen: u64, why: Why) -> Option<Result<usize, FetchError>> {
        let _flight = self.fetching.lock().await;
        if why != Why::Asked {
            let s = self.read();
            let too_soon = s.last_attempt.is_some_and(|t| t.elapsed() < self.refetch_interval);
            if s.attempts != seen || (why == Why::Missing && too_soon) {
                return None;
            }
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let outcome = self.load().await;
        let now = Instant::now();
        let mut s = self.write();
        s.attempts += 1;
        s.last_attempt = Some(now);
        Some(match outcome {
            Ok((set, max_age)) => {
                let (min, max) = self.ttl_bounds;
                let ttl = max_age.unwrap_or(DEFAULT_KEYS_TTL).clamp(min, max);
                let count = set.len();
                s.keys = Some(Arc::new(set));
                s.fresh_until = now.checked_add(ttl);
                tracing::debug!(
                    keys = count,
                    ttl_secs = ttl.as_secs(),
                    "bearer: fetched the authorization server's keys"
                );
                Ok(count)
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                s.fresh_until = now.checked_add(self.refetch_interval);
                if s.keys.is_some() {
                    tracing::warn!(error = %e, "bearer: fetching the authorization server's keys failed; the last good keys are kept");
                } else {
                    tracing::warn!(error = %e, "bearer: fetching the authorization server's keys failed; tokens are refused (503) until a fetch succeeds");
                }
                Err(e)
            }
        })
    }

    /// Discovers the JWKS URL (once, for an issuer), fetches and parses the key set.
    async fn load(&self) -> Result<(KeySet, Option<Duration>), FetchError> {
        let jwks_uri = match &self.origin {
            Origin::Jwks(uri) => uri.clone(),
            Origin::Issuer(issuer) => {
                let known = self.read().jwks_uri.clone();
                match known {
                    Some(uri) => uri,
                    None => {
                        let metadata = discover(&self.client, issuer).await?;
                        let uri = metadata.jwks_uri.ok_or_else(|| FetchError::Invalid {
                            url: issuer.clone(),
                            reason: "the issuer's metadata names no jwks_uri".to_owned(),
                        })?;
                        self.write().jwks_uri = Some(uri.clone());
                        uri
                    }
                }
            }
        };
        let answer = self.client.get(&jwks_uri).await?;
        let doc = answer.json_object(&jwks_uri)?;
        let set = KeySet::from_remote(&doc, &self.allowed).map_err(|reason| invalid(&jwks_uri, reason))?;
        Ok((set, answer.max_age()))
    }
}
