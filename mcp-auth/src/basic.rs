//! The `basic` provider: `Authorization: Basic base64(user:password)` (RFC 7617).
//!
//! Passwords are stored as PBKDF2-SHA256 hashes
//! (`pbkdf2-sha256$<iters>$<b64 salt>$<b64 hash>`, see
//! [`hash_password`](crate::hash_password)); passwords given in clear are
//! hashed when the provider is built. An unknown user is checked against a
//! dummy hash computed at build time with the largest configured iteration
//! count, so it costs the same work as a known user (invariant 30, pitfall P8).
//! The comparison is constant-time, and the PBKDF2 work runs on tokio's
//! blocking pool when a runtime is present.
//!
//! The hashing work in flight is bounded ([`BasicAuthBuilder::max_concurrent_hashes`],
//! default 4): PBKDF2 costs milliseconds of CPU per attempt by design, so a few hundred
//! concurrent bad-password loops would otherwise push every good request past seconds. The
//! bound is shared by every client, so no address may hold more than its share of it
//! ([`BasicAuthBuilder::max_hashes_per_address`], default 2, checks running or waiting: over
//! it, 429 at once); an attempt that finds the bound full waits for a place in arrival order,
//! behind at most that many checks of any one address, and only past
//! [`BasicAuthBuilder::hash_wait`] (default 2 s) is it answered 503, with `Retry-After`
//! (see `hashing`).
//!
//! Failed attempts are also throttled per client
//! address, per (address, user name) and per user name ([`ThrottleConfig`], see
//! [`throttle`](crate::throttle)): past a limit, an attempt is answered at once with 429 and
//! `Retry-After`, without a password check and without taking a place under the bound, so a
//! flood of wrong passwords from one address costs that address, not the others. Unknown users
//! are throttled alike, so the answer never says whether a user exists.
//!
//! A password that was verified is remembered for a short while ([`CacheConfig`], 60 s and
//! 1,024 credentials by default), keyed by HMAC-SHA-256 of the user name and password under a
//! per-process random key: a client repeating a valid password does not pay PBKDF2 on every
//! request. The users of a provider never change once it is built, so an entry cannot outlive
//! its user's password; a provider built anew (to change a password or remove a user) starts
//! with an empty cache. A throttled attempt is refused before the cache is asked, so the cache
//! cannot be used to guess a password fast.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use self::hashing::{Hashing, Place, Refused};
use crate::cache::{CacheConfig, CredentialCache};
use crate::challenge::valid_realm;
use crate::credentials::{self, Found};
use crate::hash::PasswordHash;
use crate::scopes::valid_scope;
use crate::throttle::{Throttle, ThrottleConfig};
use crate::{
    AuthInfo, AuthProvider, AuthSetupError, BoxFuture, Challenge, ClientAddr, DEFAULT_PBKDF2_ITERATIONS, DEFAULT_REALM,
    WwwAuthenticate, hash_password_with,
};

mod hashing;

enum Secret {
    Plain(String),
    Hashed(String),
}

/// One user: a name (the principal), a password or its hash, scopes and claims.
///
/// Its `Debug` output shows the name, never the password or its hash.
pub struct BasicUser {
    name: String,
    secret: Secret,
    scopes: Vec<String>,
    claims: Map<String, Value>,
}

impl BasicUser {
    /// A user whose password is given by its stored hash (`pbkdf2-sha256$…`).
    pub fn hashed(name: impl Into<String>, hash: impl Into<String>) -> Self {
        Self::with(name.into(), Secret::Hashed(hash.into()))
    }

    /// A user whose password is given in clear; it is hashed when the provider is built.
    pub fn plain(name: impl Into<String>, password: impl Into<String>) -> Self {
        Self::with(name.into(), Secret::Plain(password.into()))
    }

    fn with(name: String, secret: Secret) -> Self {
        BasicUser {
            name,
            secret,
            scopes: Vec::new(),
            claims: Map::new(),
        }
    }

    /// The scopes granted to the user.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Claims (metadata) handed to handlers with the identity.
    pub fn claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }
}

impl std::fmt::Debug for BasicUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicUser")
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Configures a [`BasicAuth`].
#[derive(Debug)]
pub struct BasicAuthBuilder {
    realm: String,
    iterations: u32,
    users: Vec<BasicUser>,
    max_hashes: usize,
    hashes_per_address: usize,
    hash_wait: Duration,
    throttle: ThrottleConfig,
    cache: CacheConfig,
}

/// The default bound on password checks running at once.
pub const DEFAULT_MAX_CONCURRENT_HASHES: usize = 4;

/// The default share of one client address in the password checks, running or waiting.
pub const DEFAULT_HASHES_PER_ADDRESS: usize = 2;

/// How long an attempt waits by default for a place under the bound on password checks.
pub const DEFAULT_HASH_WAIT: Duration = Duration::from_secs(2);

impl Default for BasicAuthBuilder {
    fn default() -> Self {
        BasicAuthBuilder {
            realm: DEFAULT_REALM.to_owned(),
            iterations: DEFAULT_PBKDF2_ITERATIONS,
            users: Vec::new(),
            max_hashes: DEFAULT_MAX_CONCURRENT_HASHES,
            hashes_per_address: DEFAULT_HASHES_PER_ADDRESS,
            hash_wait: DEFAULT_HASH_WAIT,
            throttle: ThrottleConfig::default(),
            cache: CacheConfig::default(),
        }
    }
}

impl BasicAuthBuilder {
    /// The realm of the challenge (default `mcp`).
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = realm.into();
        self
    }

    /// PBKDF2 iterations for passwords given in clear (default 100,000).
    pub fn password_iterations(mut self, iterations: u32) -> Self {
        self.iterations = iterations;
        self
    }

    /// The most password checks (PBKDF2 runs) at once (default 4, at least 1); an attempt
    /// that finds them all taken waits for a place (see [`hash_wait`](Self::hash_wait)).
    pub fn max_concurrent_hashes(mut self, n: usize) -> Self {
        self.max_hashes = n.max(1);
        self
    }

    /// The most password checks one client address has running or waiting at once (default
    /// 2, at least 1; an IPv6 address counts by its `/64`): over it an attempt is refused at
    /// once with 429 and `Retry-After`, so that one address never holds the whole bound.
    pub fn max_hashes_per_address(mut self, n: usize) -> Self {
        self.hashes_per_address = n.max(1);
        self
    }

    /// How long an attempt waits for a place under [`max_concurrent_hashes`](Self::max_concurrent_hashes)
    /// (default 2 s) before it is refused with 503 and `Retry-After`.
    pub fn hash_wait(mut self, wait: Duration) -> Self {
        self.hash_wait = wait;
        self
    }

    /// How failed attempts are throttled (default [`ThrottleConfig::default`]: per address,
    /// per address and user, per user).
    pub fn throttle(mut self, config: ThrottleConfig) -> Self {
        self.throttle = config;
        self
    }

    /// How verified passwords are remembered (default 1,024 for 60 s; [`CacheConfig::disabled`]
    /// checks every request's password).
    pub fn credential_cache(mut self, config: CacheConfig) -> Self {
        self.cache = config;
        self
    }

    /// Adds a user.
    pub fn user(mut self, user: BasicUser) -> Self {
        self.users.push(user);
        self
    }

    /// Adds several users.
    pub fn users(mut self, users: impl IntoIterator<Item = BasicUser>) -> Self {
        self.users.extend(users);
        self
    }

    /// Checks the configuration, hashes the passwords given in clear and
    /// computes the dummy hash for unknown users.
    pub fn build(self) -> Result<BasicAuth, AuthSetupError> {
        if !valid_realm(&self.realm) {
            return Err(AuthSetupError::InvalidRealm { realm: self.realm });
        }
        if self.users.is_empty() {
            return Err(AuthSetupError::NoCredentials { provider: "basic" });
        }
        let mut users = HashMap::with_capacity(self.users.len());
        for user in self.users {
            let BasicUser {
                name,
                secret,
                scopes,
                claims,
            } = user;
            if name.is_empty() || name.contains(':') || name.chars().any(char::is_control) {
                return Err(AuthSetupError::InvalidUserName { user: name });
            }
            if let Some(scope) = scopes.iter().find(|s| !valid_scope(s)) {
                return Err(AuthSetupError::InvalidScope { scope: scope.clone() });
            }
            if users.contains_key(&name) {
                return Err(AuthSetupError::DuplicateUser { user: name });
            }
            let stored = match secret {
                Secret::Plain(password) => hash_password_with(&password, self.iterations)?,
                Secret::Hashed(hash) => hash,
            };
            let hash = PasswordHash::parse(&stored)
                .ok_or_else(|| AuthSetupError::InvalidPasswordHash { user: name.clone() })?;
            let info = AuthInfo::new(name.as_str()).with_scopes(scopes).with_claims(claims);
            users.insert(name, (Arc::new(hash), info));
        }
        let iterations = users
            .values()
            .map(|(h, _)| h.iterations)
            .max()
            .unwrap_or(self.iterations);
        let dummy = Arc::new(PasswordHash::dummy(iterations)?);
        let challenge = WwwAuthenticate::new("Basic").param("realm", &self.realm).unauthorized();
        Ok(BasicAuth {
            users,
            dummy,
            challenge,
            hashing: Hashing::new(self.max_hashes, self.hashes_per_address, self.hash_wait),
            throttle: Throttle::new(self.throttle)?,
            cache: CredentialCache::new(self.cache)?,
            counters: Counters::default(),
        })
    }
}

/// Authenticates requests by user name and password.
///
/// ```
/// use mcp_auth::{BasicAuth, BasicUser, hash_password_with};
///
/// let stored = hash_password_with("s3cret", 1_000).unwrap();
/// let provider = BasicAuth::builder().user(BasicUser::hashed("alice", stored).scopes(["tools"])).build().unwrap();
/// # let _ = provider;
/// ```
pub struct BasicAuth {
    users: HashMap<String, (Arc<PasswordHash>, AuthInfo)>,
    dummy: Arc<PasswordHash>,
    challenge: Challenge,
    /// The places of password checks in flight.
    hashing: Hashing,
    throttle: Throttle,
    cache: CredentialCache,
    counters: Counters,
}

/// What a [`BasicAuth`] did since it was built (see [`BasicAuth::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BasicAuthStats {
    /// Password checks run (PBKDF2 derivations, unknown users' included).
    pub password_checks: u64,
    /// Requests served from the credential cache, with no password check.
    pub cache_hits: u64,
    /// Attempts refused with 429 because failed attempts were over a limit.
    pub throttled: u64,
    /// Attempts refused with 503 because the password checks in flight stayed at their bound
    /// for the whole wait.
    pub overloaded: u64,
    /// Attempts refused with 429 because their address had its share of the password checks
    /// running or waiting.
    pub over_address_share: u64,
}

#[derive(Debug, Default)]
struct Counters {
    password_checks: AtomicU64,
    cache_hits: AtomicU64,
    throttled: AtomicU64,
    overloaded: AtomicU64,
    over_address_share: AtomicU64,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl BasicAuth {
    /// Starts a configuration.
    pub fn builder() -> BasicAuthBuilder {
        BasicAuthBuilder::default()
    }

    /// What the provider did since it was built: password checks, cache hits, refusals.
    pub fn stats(&self) -> BasicAuthStats {
        let c = &self.counters;
        BasicAuthStats {
            password_checks: c.password_checks.load(Ordering::Relaxed),
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            throttled: c.throttled.load(Ordering::Relaxed),
            overloaded: c.overloaded.load(Ordering::Relaxed),
            over_address_share: c.over_address_share.load(Ordering::Relaxed),
        }
    }

    /// The refusal of an attempt over a failure limit.
    fn throttled(&self, retry_after: Duration) -> Challenge {
        Counters::bump(&self.counters.throttled);
        tracing::debug!("basic authentication throttled: too many failed attempts");
        Challenge::too_many_requests(retry_after)
    }
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

/// `user:password` from the `Authorization: Basic` credentials.
fn decode(credentials: &str) -> Option<(String, String)> {
    let bytes = STANDARD.decode(credentials).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    (!user.is_empty()).then(|| (user.to_owned(), password.to_owned()))
}

/// Runs the PBKDF2 work off the async workers when a tokio runtime is present, holding
/// `place` until it is done (even if the request is dropped meanwhile).
async fn verify(hash: Arc<PasswordHash>, password: String, place: Place) -> bool {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(move || {
                let _place = place;
                hash.verify(password.as_bytes())
            })
            .await
            .unwrap_or(false),
        Err(_) => hash.verify(password.as_bytes()),
    }
}

/// The answer to an attempt that found no place for its password check: 429 when its address
/// holds its share, 503 when the bound stayed full for the whole wait; retry in a second.
fn busy(why: Refused) -> Challenge {
    let second = Duration::from_secs(1);
    match why {
        Refused::AddressFull => Challenge::too_many_requests(second),
        Refused::Busy => Challenge::new(503, None).with_retry_after(second),
    }
}

impl AuthProvider for BasicAuth {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        Box::pin(async move {
            let Found::Value(credentials) = credentials::authorization(&parts.headers, "Basic") else {
                return Err(self.challenge.clone());
            };
            let Some((user, password)) = decode(credentials) else {
                tracing::debug!("malformed basic credentials");
                return Err(self.challenge.clone());
            };
            let now = Instant::now();
            let attempt = self.throttle.attempt(ClientAddr::of(parts), Some(&user));
            // Before the cache: a throttled client must not test passwords against it.
            if let Err(wait) = self.throttle.check(&attempt, now) {
                return Err(self.throttled(wait));
            }
            let key = self.cache.key(&[user.as_bytes(), password.as_bytes()]);
            if let Some(info) = self.cache.get(&key, now) {
                Counters::bump(&self.counters.cache_hits);
                self.throttle.succeeded(&attempt, None, now);
                return Ok(info);
            }
            let (hash, info) = match self.users.get(&user) {
                Some((hash, info)) => (hash.clone(), Some(info)),
                None => (self.dummy.clone(), None),
            };
            let place = match self.hashing.enter(ClientAddr::of(parts)).await {
                Ok(place) => place,
                Err(why @ Refused::AddressFull) => {
                    Counters::bump(&self.counters.over_address_share);
                    tracing::debug!("basic authentication refused: the address has its share of password checks");
                    return Err(busy(why));
                }
                Err(why @ Refused::Busy) => {
                    Counters::bump(&self.counters.overloaded);
                    tracing::warn!("basic authentication refused: too many password checks in flight");
                    return Err(busy(why));
                }
            };
            // Counted as a failure now, refunded on success: concurrent attempts cannot overrun
            // a limit, and an attempt dropped while its password is checked stays counted.
            let charged = match self.throttle.charge(&attempt, now) {
                Ok(charged) => charged,
                Err(wait) => return Err(self.throttled(wait)),
            };
            Counters::bump(&self.counters.password_checks);
            let matched = verify(hash, password, place).await;
            match info {
                Some(info) if matched => {
                    let now = Instant::now();
                    self.throttle.succeeded(&attempt, Some(charged), now);
                    self.cache.insert(key, info.clone(), now);
                    Ok(info.clone())
                }
                _ => {
                    tracing::debug!("basic authentication failed");
                    Err(self.challenge.clone())
                }
            }
        })
    }
}

#[cfg(test)]
mod flood;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MIN_PBKDF2_ITERATIONS, test_parts};

    fn basic(user_password: &str) -> String {
        format!("Basic {}", STANDARD.encode(user_password))
    }

    fn provider() -> BasicAuth {
        BasicAuth::builder()
            .password_iterations(MIN_PBKDF2_ITERATIONS)
            .user(
                BasicUser::hashed(
                    "alice",
                    hash_password_with("wonder:land", MIN_PBKDF2_ITERATIONS).unwrap(),
                )
                .scopes(["read"]),
            )
            .user(BasicUser::plain("bob", "builder"))
            .build()
            .unwrap()
    }

    async fn run(p: &BasicAuth, authorization: &str) -> Result<AuthInfo, Challenge> {
        p.authenticate(&test_parts(&[("authorization", authorization)])).await
    }

    #[tokio::test]
    async fn password_checks_in_flight_are_bounded() {
        let p = BasicAuth::builder()
            .password_iterations(MIN_PBKDF2_ITERATIONS)
            .max_concurrent_hashes(2)
            .hash_wait(Duration::ZERO)
            .user(BasicUser::plain("bob", "builder"))
            .build()
            .unwrap();
        let held: Vec<_> = (0..2).map(|_| p.hashing.hold()).collect();
        for creds in ["bob:builder", "bob:wrong", "eve:x"] {
            let refused = run(&p, &basic(creds)).await.unwrap_err();
            assert_eq!(refused.status, 503, "{creds}: answered at once, no work done");
        }
        drop(held);
        assert!(
            run(&p, &basic("bob:builder")).await.is_ok(),
            "served again once checks end"
        );
        assert_eq!(run(&p, &basic("bob:wrong")).await.unwrap_err().status, 401);
    }

    #[tokio::test]
    async fn right_password() {
        let p = provider();
        let alice = run(&p, &basic("alice:wonder:land")).await.unwrap();
        assert_eq!(&*alice.principal, "alice");
        assert_eq!(alice.scopes, ["read"]);
        assert_eq!(&*run(&p, &basic("bob:builder")).await.unwrap().principal, "bob");
        assert!(
            run(&p, &format!("basic {}", STANDARD.encode("bob:builder")))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn wrong_password_unknown_user_and_garbage() {
        let p = provider();
        let expected = Challenge::unauthorized(r#"Basic realm="mcp""#);
        for auth in [
            basic("alice:wonder"),
            basic("carol:builder"),
            basic("bob"),
            basic(":builder"),
            "Basic !!!".to_owned(),
            "Bearer abc".to_owned(),
        ] {
            assert_eq!(run(&p, &auth).await.unwrap_err(), expected, "{auth}");
        }
        assert_eq!(p.authenticate(&test_parts(&[])).await.unwrap_err(), expected);
    }

    /// An unknown user's attempt runs a PBKDF2 derivation as costly as the costliest known
    /// user's, so its answer takes as long (invariant 30). Measured on this thread: without a
    /// runtime the derivation runs inline.
    #[test]
    fn unknown_users_run_the_same_work() {
        let p = BasicAuth::builder()
            .user(BasicUser::hashed("slow", hash_password_with("x", 5_000).unwrap()))
            .user(BasicUser::hashed(
                "fast",
                hash_password_with("x", MIN_PBKDF2_ITERATIONS).unwrap(),
            ))
            .build()
            .unwrap();
        let work = |creds: &str| {
            let before = crate::hash::VERIFIED_ITERATIONS.with(std::cell::Cell::get);
            let parts = test_parts(&[("authorization", &basic(creds))]);
            let refused = futures::executor::block_on(p.authenticate(&parts)).unwrap_err();
            assert_eq!(refused.status, 401, "{creds}");
            crate::hash::VERIFIED_ITERATIONS.with(std::cell::Cell::get) - before
        };
        assert_eq!(work("slow:wrong"), 5_000);
        assert_eq!(work("fast:wrong"), u64::from(MIN_PBKDF2_ITERATIONS));
        for unknown in ["nobody:x", "eve:wrong", "Slow:x"] {
            assert_eq!(work(unknown), 5_000, "{unknown}: as costly as the costliest user");
        }
    }

    #[test]
    fn works_without_a_runtime() {
        let p = provider();
        let parts = test_parts(&[("authorization", &basic("bob:builder"))]);
        let info = futures::executor::block_on(p.authenticate(&parts)).unwrap();
        assert_eq!(&*info.principal, "bob");
    }

    #[test]
    fn setup_errors() {
        let user = || BasicUser::plain("u", "p");
        let b = || BasicAuth::builder().password_iterations(MIN_PBKDF2_ITERATIONS);
        assert_eq!(
            b().build().unwrap_err(),
            AuthSetupError::NoCredentials { provider: "basic" }
        );
        assert!(matches!(
            b().user(BasicUser::hashed("u", "plain")).build().unwrap_err(),
            AuthSetupError::InvalidPasswordHash { user } if user == "u"
        ));
        assert!(matches!(
            b().user(BasicUser::plain("a:b", "p")).build().unwrap_err(),
            AuthSetupError::InvalidUserName { .. }
        ));
        assert!(matches!(
            b().user(user()).user(user()).build().unwrap_err(),
            AuthSetupError::DuplicateUser { .. }
        ));
        assert!(matches!(
            b().realm("a\"b").user(user()).build().unwrap_err(),
            AuthSetupError::InvalidRealm { .. }
        ));
        assert_eq!(
            BasicAuth::builder()
                .password_iterations(10)
                .user(user())
                .build()
                .unwrap_err(),
            AuthSetupError::InvalidIterations {
                iterations: 10,
                min: MIN_PBKDF2_ITERATIONS,
                max: crate::MAX_PBKDF2_ITERATIONS
            }
        );
        let p = b().realm("private").user(user()).build().unwrap();
        assert_eq!(p.challenge, Challenge::unauthorized(r#"Basic realm="private""#));
    }

    #[test]
    fn debug_shows_no_secret() {
        let u = BasicUser::plain("alice", "pw-secret");
        let shown = format!(
            "{u:?} {:?}",
            BasicAuth::builder().password_iterations(MIN_PBKDF2_ITERATIONS)
        );
        assert!(!shown.contains("pw-secret") && shown.contains("alice"), "{shown}");
        let p = BasicAuth::builder()
            .password_iterations(MIN_PBKDF2_ITERATIONS)
            .user(u)
            .build()
            .unwrap();
        assert!(!format!("{p:?}").contains("pbkdf2"));
    }
}
