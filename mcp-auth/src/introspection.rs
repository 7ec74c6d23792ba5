//! RFC 7662 token introspection (feature `oidc`): a [`TokenVerifier`] that asks the
//! authorization server whether a token is active, for opaque tokens (or JWTs the resource
//! server should not check by itself).
//!
//! ```no_run
//! use mcp_auth::BearerAuth;
//! use mcp_auth::introspection::Introspection;
//!
//! let introspection = Introspection::builder("https://auth.example.com/oauth2/introspect")
//!     .client_secret_basic("mcp-server", "the client secret")
//!     .build()
//!     .unwrap();
//! let provider = BearerAuth::builder()
//!     .verifier(introspection)
//!     .audience("https://mcp.example.com/mcp")
//!     .issuer("https://auth.example.com")
//!     .build()
//!     .unwrap();
//! # let _ = provider;
//! ```
//!
//! * **The request.** `POST` to the endpoint, `application/x-www-form-urlencoded`:
//!   `token=…&token_type_hint=access_token`, the resource server authenticated as an OAuth
//!   client with `client_secret_basic` (RFC 6749 §2.3.1: the id and the secret form-encoded,
//!   then in `Authorization: Basic`) or `client_secret_post` (`client_id` and `client_secret`
//!   in the form). The endpoint is configured, or read from the issuer's metadata
//!   (`introspection_endpoint`, [`Introspection::from_issuer`]) when the first token comes.
//!   The same rules as for every fetch hold: `https` (plain `http` on loopback only), a
//!   timeout (default 10 s), a bound on the answer (256 KiB), no redirect followed. At most
//!   [`DEFAULT_MAX_CONCURRENT_INTROSPECTIONS`] requests are under way at once; a token waiting
//!   for a slot longer than the timeout is refused with 503, so a flood of new tokens cannot
//!   open ever more connections to the authorization server.
//! * **The answer.** `"active": true`: the answer's members (`sub`, `scope`, `aud`, `exp`,
//!   `iss`, `client_id`, `cnf`, …) are the token's claims, which the bearer provider then checks
//!   like a JWT's (`exp`, `nbf`, `iss`, `aud` unless any audience is accepted) and takes the
//!   principal (`sub`, or the configured claim) and scopes from. `"active": false`:
//!   [`TokenError::Inactive`], a 401 `invalid_token` "the token is not active". A failure of
//!   the endpoint (network, timeout, a non-2xx status, not JSON, no boolean `active`):
//!   [`TokenError::Unavailable`], a 503 with `Retry-After`, logged through `tracing`.
//! * **The cache.** Answers are remembered by a keyed hash of the token (HMAC-SHA-256 under a
//!   per-process random key, never the token itself), at most
//!   [`DEFAULT_INTROSPECTION_CACHE_ENTRIES`] of them (the oldest evicted first): an active
//!   token until its `exp` and at most [`DEFAULT_INTROSPECTION_MAX_TTL`], an inactive one for
//!   [`DEFAULT_INACTIVE_TTL`]; a failure is not remembered. Concurrent lookups of one token
//!   share one request. A revoked token may thus still be accepted for up to the max TTL:
//!   lower it where revocation must bite sooner.
//!
//! Neither the token nor the client secret is logged or shown by `Debug`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use futures::FutureExt as _;
use futures::future::Shared;
use http::Uri;
use serde_json::{Map, Value};

use crate::cache::{CacheConfig, CredentialCache};
use crate::fetch::{Answer, HttpClient, check_fetch_url, check_issuer, discover, form_encode, invalid};
use crate::{AuthSetupError, BoxFuture, TokenError, TokenVerifier};

/// The default bound on remembered introspection answers.
pub const DEFAULT_INTROSPECTION_CACHE_ENTRIES: usize = 10_000;
/// The default longest time an active answer is remembered (it is never kept past the token's
/// `exp`).
pub const DEFAULT_INTROSPECTION_MAX_TTL: Duration = Duration::from_secs(5 * 60);
/// The default time an inactive answer is remembered.
pub const DEFAULT_INACTIVE_TTL: Duration = Duration::from_secs(10);
/// After a failed discovery of the endpoint, how long tokens are refused before it is tried
/// again.
const DISCOVERY_RETRY: Duration = Duration::from_secs(30);
/// The default bound on introspection requests under way at once.
pub const DEFAULT_MAX_CONCURRENT_INTROSPECTIONS: usize = 32;
/// The most distinct lookups shared at once; past it, a lookup runs unshared.
const MAX_SHARED_LOOKUPS: usize = 1_024;

/// How the resource server authenticates to the introspection endpoint.
#[derive(Clone)]
enum ClientAuth {
    None,
    Basic { id: String, secret: String },
    Post { id: String, secret: String },
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientAuth::None => f.write_str("none"),
            ClientAuth::Basic { id, .. } => write!(f, "client_secret_basic({id:?})"),
            ClientAuth::Post { id, .. } => write!(f, "client_secret_post({id:?})"),
        }
    }
}

#[derive(Debug, Clone)]
enum EndpointConfig {
    Url(String),
    Issuer(String),
}

/// Configures an [`Introspection`]. See the [module documentation](self) for the rules.
#[derive(Debug, Clone)]
pub struct IntrospectionBuilder {
    endpoint: EndpointConfig,
    auth: ClientAuth,
    timeout: Duration,
    roots: crate::fetch::RootPems,
    max_concurrent: usize,
    cache_entries: usize,
    max_ttl: Duration,
    inactive_ttl: Duration,
}

impl IntrospectionBuilder {
    fn new(endpoint: EndpointConfig) -> Self {
        IntrospectionBuilder {
            endpoint,
            auth: ClientAuth::None,
            timeout: crate::fetch::DEFAULT_FETCH_TIMEOUT,
            roots: crate::fetch::RootPems::default(),
            max_concurrent: DEFAULT_MAX_CONCURRENT_INTROSPECTIONS,
            cache_entries: DEFAULT_INTROSPECTION_CACHE_ENTRIES,
            max_ttl: DEFAULT_INTROSPECTION_MAX_TTL,
            inactive_ttl: DEFAULT_INACTIVE_TTL,
        }
    }

    /// Authenticates to the endpoint with HTTP Basic (RFC 6749 §2.3.1 `client_secret_basic`):
    /// the client id and secret, each form-encoded, in `Authorization: Basic`.
    pub fn client_secret_basic(mut self, client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        self.auth = ClientAuth::Basic {
            id: client_id.into(),
            secret: client_secret.into(),
        };
        self
    }

    /// Authenticates to the endpoint with `client_id` and `client_secret` in the form body
    /// (RFC 6749 §2.3.1 `client_secret_post`).
    pub fn client_secret_post(mut self, client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        self.auth = ClientAuth::Post {
            id: client_id.into(),
            secret: client_secret.into(),
        };
        self
    }

    /// How long one request may take, connection and answer included (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Trusts the certificate authorities of this PEM document (one or more `CERTIFICATE`s)
    /// too, beside the Mozilla roots (repeatable): for an authorization server behind a private
    /// authority.
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.roots.0.push(pem.into());
        self
    }

    /// The most introspection requests under way at once (default 32, at least 1): a flood of
    /// new tokens (each one a request) waits for a slot, at most the timeout, then is refused
    /// with 503, rather than opening ever more connections to the authorization server.
    pub fn max_concurrent_requests(mut self, max: usize) -> Self {
        self.max_concurrent = max;
        self
    }

    /// The most answers remembered (default 10,000); `0` remembers none.
    pub fn cache_entries(mut self, entries: usize) -> Self {
        self.cache_entries = entries;
        self
    }

    /// The longest time an active answer is remembered (default 5 minutes; never past the
    /// token's `exp`); zero remembers none.
    pub fn max_cache_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    /// How long an inactive answer is remembered (default 10 s); zero remembers none.
    pub fn inactive_cache_ttl(mut self, ttl: Duration) -> Self {
        self.inactive_ttl = ttl;
        self
    }

    /// Checks the URL and the client credentials and sets up the HTTPS client; nothing is
    /// fetched.
    pub fn build(self) -> Result<Introspection, AuthSetupError> {
        let endpoint = match &self.endpoint {
            EndpointConfig::Url(url) => Endpoint::Fixed(check_fetch_url("introspection endpoint", url)?),
            EndpointConfig::Issuer(issuer) => {
                check_issuer(issuer)?;
                Endpoint::Discovered {
                    issuer: issuer.clone(),
                    found: RwLock::new(None),
                    last_failure: tokio::sync::Mutex::new(None),
                }
            }
        };
        let (authorization, post_credentials) = match &self.auth {
            ClientAuth::None => (None, None),
            ClientAuth::Basic { id, secret } => {
                check_client_id(id)?;
                let pair = format!("{}:{}", form_encode(id), form_encode(secret));
                let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
                (Some(format!("Basic {encoded}")), None)
            }
            ClientAuth::Post { id, secret } => {
                check_client_id(id)?;
                let form = format!("&client_id={}&client_secret={}", form_encode(id), form_encode(secret));
                (None, Some(form))
            }
        };
        let ttl_cap = self.max_ttl.max(self.inactive_ttl);
        Ok(Introspection {
            inner: Arc::new(Inner {
                endpoint,
                auth: self.auth,
                client: HttpClient::new(self.timeout, &self.roots)?,
                authorization,
                post_credentials,
                cache: CredentialCache::new(CacheConfig::new(self.cache_entries, ttl_cap))?,
                max_ttl: self.max_ttl,
                inactive_ttl: self.inactive_ttl,
                in_flight: Mutex::new(HashMap::new()),
                slots: tokio::sync::Semaphore::new(self.max_concurrent.clamp(1, tokio::sync::Semaphore::MAX_PERMITS)),
                timeout: self.timeout,
                requests: AtomicU64::new(0),
                cache_hits: AtomicU64::new(0),
            }),
        })
    }
}

fn check_client_id(id: &str) -> Result<(), AuthSetupError> {
    if id.is_empty() || id.contains(char::is_control) {
        return Err(AuthSetupError::InvalidClientId);
    }
    Ok(())
}

/// Asks the authorization server about each token (RFC 7662), remembering its answers for a
/// while. A [`TokenVerifier`]: hand it to
/// [`BearerAuthBuilder::verifier`](crate::BearerAuthBuilder::verifier). Cheap to clone (clones
/// share the cache and the connections).
#[derive(Clone)]
pub struct Introspection {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let endpoint = match &self.inner.endpoint {
            Endpoint::Fixed(uri) => uri.to_string(),
            Endpoint::Discovered { issuer, .. } => format!("discovered from issuer {issuer}"),
        };
        f.debug_struct("Introspection")
            .field("endpoint", &endpoint)
            .field("client_auth", &self.inner.auth)
            .field("max_ttl", &self.inner.max_ttl)
            .field("inactive_ttl", &self.inner.inactive_ttl)
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// Introspects at `endpoint` (`https`, or `http` on a loopback host).
    pub fn builder(endpoint: impl Into<String>) -> IntrospectionBuilder {
        IntrospectionBuilder::new(EndpointConfig::Url(endpoint.into()))
    }

    /// Introspects at the `introspection_endpoint` of `issuer`'s metadata (OpenID Connect
    /// discovery, then RFC 8414; the document must name exactly this issuer), read when the
    /// first token comes. While it cannot be read, tokens are refused with 503; it is tried
    /// again at most every 30 s. The issuer is not added to the accepted `iss` values: configure
    /// it on the bearer provider.
    pub fn from_issuer(issuer: impl Into<String>) -> IntrospectionBuilder {
        IntrospectionBuilder::new(EndpointConfig::Issuer(issuer.into()))
    }

    /// How many introspection requests were sent since it was built.
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// How many tokens were answered from the cache, with no request.
    pub fn cache_hits(&self) -> u64 {
        self.inner.cache_hits.load(Ordering::Relaxed)
    }
}

impl TokenVerifier for Introspection {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Map<String, Value>, TokenError>> {
        Box::pin(async move { self.inner.lookup(token).await?.claims() })
    }
}

/// A remembered answer.
#[derive(Debug, Clone)]
enum Outcome {
    Active(Arc<Map<String, Value>>),
    Inactive,
}

impl Outcome {
    fn claims(self) -> Result<Map<String, Value>, TokenError> {
        match self {
            Outcome::Active(claims) => Ok(Arc::unwrap_or_clone(claims)),
            Outcome::Inactive => Err(TokenError::Inactive),
        }
    }
}

type CacheKey = [u8; 32];
type Lookup = Shared<BoxFuture<'static, Result<Outcome, TokenError>>>;

enum Endpoint {
    Fixed(Uri),
    Discovered {
        issuer: String,
        found: RwLock<Option<Uri>>,
        /// Held while discovering (one at a time); when the last discovery failed.
        last_failure: tokio::sync::Mutex<Option<Instant>>,
    },
}

struct Inner {
    endpoint: Endpoint,
    auth: ClientAuth,
    client: HttpClient,
    /// `Basic …` for `client_secret_basic`.
    authorization: Option<String>,
    /// `&client_id=…&client_secret=…` for `client_secret_post`.
    post_credentials: Option<String>,
    cache: CredentialCache<Outcome>,
    max_ttl: Duration,
    inactive_ttl: Duration,
    in_flight: Mutex<HashMap<CacheKey, Lookup>>,
    /// One permit per request under way.
    slots: tokio::sync::Semaphore,
    timeout: Duration,
    requests: AtomicU64,
    cache_hits: AtomicU64,
}

impl Inner {
    /// The answer for `token`: remembered, joined to a lookup under way, or asked for.
    async fn lookup(self: &Arc<Self>, token: &str) -> Result<Outcome, TokenError> {
        let key = self.cache.key(&[token.as_bytes()]);
        if let Some(hit) = self.cache.get(&key, Instant::now()) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(hit);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.introspect_and_remember(key, token).await;
        };
        let shared = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
            match in_flight.get(&key) {
                Some(lookup) => lookup.clone(),
                None => {
                    // A task of its own: the lookup ends (and is remembered) even when the
                    // request that started it goes away.
                    let me = Arc::clone(self);
                    let owned = token.to_owned();
                    let task = runtime.spawn(async move {
                        let outcome = me.introspect_and_remember(key, &owned).await;
                        me.in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
                        outcome
                    });
                    let lookup: Lookup = async move { task.await.unwrap_or(Err(TokenError::Unavailable)) }
                        .boxed()
                        .shared();
                    if in_flight.len() < MAX_SHARED_LOOKUPS {
                        in_flight.insert(key, lookup.clone());
                    }
                    lookup
                }
            }
        };
        shared.await
    }

    async fn introspect_and_remember(&self, key: CacheKey, token: &str) -> Result<Outcome, TokenError> {
        let outcome = self.introspect(token).await;
        let now = Instant::now();
        match &outcome {
            Ok(Outcome::Inactive) => self.cache.insert_for(key, Outcome::Inactive, now, self.inactive_ttl),
            Ok(active @ Outcome::Active(claims)) => {
                let ttl = match claims.get("exp").and_then(Value::as_u64) {
                    Some(exp) => {
                        let unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                        Duration::from_secs(exp.saturating_sub(unix)).min(self.max_ttl)
                    }
                    None => self.max_ttl,
                };
                self.cache.insert_for(key, active.clone(), now, ttl);
            }
            Err(_) => {}
        }
        outcome
    }

    /// One request to the endpoint.
    async fn introspect(&self, token: &str) -> Result<Outcome, TokenError> {
        let endpoint = self.endpoint().await?;
        let Ok(Ok(_slot)) = tokio::time::timeout(self.timeout, self.slots.acquire()).await else {
            tracing::warn!("token introspection refused: the requests under way are at their bound");
            return Err(TokenError::Unavailable);
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut form = format!("token={}&token_type_hint=access_token", form_encode(token));
        if let Some(credentials) = &self.post_credentials {
            form.push_str(credentials);
        }
        let answer = self
            .client
            .post_form(&endpoint, self.authorization.as_deref(), form)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "token introspection failed");
                TokenError::Unavailable
            })?;
        parse_answer(&endpoint, &answer).map_err(|e| {
            tracing::warn!(error = %e, "token introspection answer unusable");
            TokenError::Unavailable
        })
    }

    async fn endpoint(&self) -> Result<Uri, TokenError> {
        let (issuer, found, last_failure) = match &self.endpoint {
            Endpoint::Fixed(uri) => return Ok(uri.clone()),
            Endpoint::Discovered {
                issuer,
                found,
                last_failure,
            } => (issuer, found, last_failure),
        };
        let known = found.read().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(uri) = known {
            return Ok(uri);
        }
        let mut failed = last_failure.lock().await;
        let known = found.read().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(uri) = known {
            return Ok(uri);
        }
        if failed.is_some_and(|t| t.elapsed() < DISCOVERY_RETRY) {
            return Err(TokenError::Unavailable);
        }
        let discovered = discover(&self.client, issuer).await.and_then(|m| {
            m.introspection_endpoint.ok_or_else(|| crate::FetchError::Invalid {
                url: issuer.clone(),
                reason: "the issuer's metadata names no introspection_endpoint".to_owned(),
            })
        });
        match discovered {
            Ok(uri) => {
                *found.write().unwrap_or_else(PoisonError::into_inner) = Some(uri.clone());
                *failed = None;
                Ok(uri)
            }
            Err(e) => {
                tracing::warn!(error = %e, "discovery of the introspection endpoint failed");
                *failed = Some(Instant::now());
                Err(TokenError::Unavailable)
            }
        }
    }
}

/// The outcome an introspection answer states (RFC 7662 §2.2).
fn parse_answer(endpoint: &Uri, answer: &Answer) -> Result<Outcome, crate::FetchError> {
    let mut claims = answer.json_object(endpoint)?;
    match claims.remove("active") {
        Some(Value::Bool(true)) => Ok(Outcome::Active(Arc::new(claims))),
        Some(Value::Bool(false)) => Ok(Outcome::Inactive),
        _ => Err(invalid(endpoint, "no boolean active member")),
    }
}

#[cfg(test)]
mod tests;
