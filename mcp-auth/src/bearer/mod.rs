//! The `bearer` provider: OAuth 2.1 access tokens in `Authorization: Bearer`
//! (RFC 6750), checked as JWTs with `jsonwebtoken` or by a [`TokenVerifier`].
//!
//! * Keys: HS256 secrets, RS256/ES256 PEM public keys, or JWKS documents
//!   (a key is chosen by the token's `kid` and `alg`; an algorithm no key
//!   has is refused, so a token cannot pick a weaker one).
//! * Claims: `exp` is required and, like `nbf`, checked with a clock skew of
//!   60 s (configurable); `aud` is required and must name a configured
//!   audience (RFC 8707); `iss` is checked when issuers are configured. A
//!   non-numeric `exp`/`nbf` refuses the token.
//! * Identity: the principal is the `sub` claim (configurable), the scopes
//!   come from the `scope` claim (configurable; a space-separated string or
//!   an array of strings).
//! * Refusals: 401 with `Bearer realm="mcp", error="invalid_token",
//!   error_description="…", resource_metadata="<url>"`; no error attributes
//!   when the request carried no bearer token at all (RFC 6750 §3.1); 403
//!   `insufficient_scope` naming the required scopes; 400 `invalid_request`
//!   for an ambiguous or empty `Authorization` header.
//!
//! Opaque tokens (or other algorithms) go to a verifier hook instead of keys;
//! its claims then go through the same checks. Only with a verifier may every
//! audience be accepted. RFC 7662 introspection is such a verifier:
//! `Introspection` (feature `oidc`).
//!
//! With the feature `oidc`, the keys may also come from the authorization
//! server: `BearerAuthBuilder::oidc_issuer` (OpenID Connect discovery, then
//! RFC 8414; the document must name exactly that issuer, which is also added
//! to the accepted `iss`) or `BearerAuthBuilder::jwks_uri`.
//!
//! * They are fetched lazily: `build()` stays synchronous and fetches nothing;
//!   the first token fetches them, and the tokens arriving meanwhile wait for
//!   that one fetch. `BearerAuth::fetch_keys` fetches them ahead. While no
//!   key set was ever fetched, tokens are refused with 503 and `Retry-After`
//!   ([`TokenError::Unavailable`]) rather than 401: the token may well be good.
//! * A key set is kept for its answer's `Cache-Control: max-age`, bounded to
//!   `MIN_KEYS_TTL`..=`MAX_KEYS_TTL` (`DEFAULT_KEYS_TTL` without one);
//!   past that, tokens are verified with it while one background task fetches
//!   the new set.
//! * A token whose `kid` (or accepted algorithm) matches no key held triggers a
//!   refetch, at most one per `BearerAuthBuilder::key_refetch_interval`
//!   (default `DEFAULT_KEY_REFETCH_INTERVAL`) and shared by all concurrent
//!   misses: random `kid`s cannot make the provider hammer the authorization
//!   server. A failed fetch, or a document that is no usable JWK set, changes
//!   nothing held (it is logged through `tracing`).
//! * The algorithms accepted from remote keys are RS256 and ES256 unless
//!   [`BearerAuthBuilder::algorithms`] says otherwise; HS256/384/512 are
//!   refused at build, `none` is never accepted.
//!
//! `BearerAuth::key_fetches` and `BearerAuth::key_fetch_failures` count
//! the fetches, for tests and operators.
//!
//! DPoP-bound tokens (RFC 9449, `Authorization: DPoP` with a `DPoP` proof) are
//! accepted or required with [`BearerAuthBuilder::dpop`]: see [`crate::dpop`].

mod claims;
mod dpop_auth;
mod keys;
#[cfg(feature = "oidc")]
mod remote;
#[cfg(test)]
mod tests;
#[cfg(all(test, feature = "oidc"))]
mod tests_remote;
mod verifier;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::Validation;
use jsonwebtoken::jwk::JwkSet;
use serde_json::{Map, Value};

pub use jsonwebtoken::Algorithm;
pub use keys::JwtKey;
#[cfg(feature = "oidc")]
pub use remote::{
    DEFAULT_KEY_REFETCH_INTERVAL, DEFAULT_KEYS_TTL, DEFAULT_REMOTE_ALGORITHMS, MAX_KEYS_TTL, MIN_KEYS_TTL,
};
pub use verifier::{TokenError, TokenVerifier};

use self::claims::{Audience, ClaimRules};
use self::keys::KeySet;
use self::verifier::FnVerifier;
use crate::challenge::valid_realm;
use crate::credentials::{self, Found};
use crate::dpop::{DpopMode, DpopOptions};
use crate::scopes::{check_scopes, valid_scope};
use crate::{
    AuthInfo, AuthProvider, AuthSetupError, BearerChallenge, BearerError, BoxFuture, Challenge, DEFAULT_REALM,
};
use dpop_auth::DpopAuth;

/// The default tolerance for `exp` and `nbf`.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(60);
/// The default claim holding the scopes.
pub const DEFAULT_SCOPE_CLAIM: &str = "scope";
/// The default claim holding the principal.
pub const DEFAULT_PRINCIPAL_CLAIM: &str = "sub";
/// Longer tokens are refused without being parsed.
const MAX_TOKEN_LEN: usize = 16 * 1024;
/// When a client refused because the authorization server is unavailable may try again.
const UNAVAILABLE_RETRY_AFTER: Duration = Duration::from_secs(5);

enum Jwks {
    Json(String),
    Set(JwkSet),
}

/// Configures a [`BearerAuth`]. See the [module documentation](self) for the rules.
pub struct BearerAuthBuilder {
    keys: Vec<JwtKey>,
    jwks: Vec<Jwks>,
    verifier: Option<Arc<dyn TokenVerifier>>,
    audience: Option<Audience>,
    issuers: Vec<String>,
    clock_skew: Duration,
    scope_claim: String,
    principal_claim: String,
    realm: String,
    resource_metadata: Option<String>,
    required_scopes: Vec<String>,
    dpop: DpopMode,
    dpop_urls: Vec<String>,
    dpop_options: DpopOptions,
    algorithms: Option<Vec<Algorithm>>,
    #[cfg(feature = "oidc")]
    remote: RemoteConfig,
}

/// Where remote keys come from and how they are fetched.
#[cfg(feature = "oidc")]
#[derive(Debug, Clone)]
struct RemoteConfig {
    issuer: Option<String>,
    jwks_uri: Option<String>,
    refetch_interval: Duration,
    timeout: Duration,
    roots: crate::fetch::RootPems,
    /// Bounds of a key set's lifetime other than a minute and a day (tests).
    #[cfg(test)]
    ttl_bounds: Option<(Duration, Duration)>,
}

#[cfg(feature = "oidc")]
impl Default for RemoteConfig {
    fn default() -> Self {
        RemoteConfig {
            issuer: None,
            jwks_uri: None,
            refetch_interval: remote::DEFAULT_KEY_REFETCH_INTERVAL,
            timeout: crate::fetch::DEFAULT_FETCH_TIMEOUT,
            roots: crate::fetch::RootPems::default(),
            #[cfg(test)]
            ttl_bounds: None,
        }
    }
}

#[cfg(feature = "oidc")]
impl RemoteConfig {
    fn configured(&self) -> bool {
        self.issuer.is_some() || self.jwks_uri.is_some()
    }
}

impl Default for BearerAuthBuilder {
    fn default() -> Self {
        BearerAuthBuilder {
            keys: Vec::new(),
            jwks: Vec::new(),
            verifier: None,
            audience: None,
            issuers: Vec::new(),
            clock_skew: DEFAULT_CLOCK_SKEW,
            scope_claim: DEFAULT_SCOPE_CLAIM.to_owned(),
            principal_claim: DEFAULT_PRINCIPAL_CLAIM.to_owned(),
            realm: DEFAULT_REALM.to_owned(),
            resource_metadata: None,
            required_scopes: Vec::new(),
            dpop: DpopMode::Off,
            dpop_urls: Vec::new(),
            dpop_options: DpopOptions::default(),
            algorithms: None,
            #[cfg(feature = "oidc")]
            remote: RemoteConfig::default(),
        }
    }
}

impl std::fmt::Debug for BearerAuthBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut f = f.debug_struct("BearerAuthBuilder");
        f.field("keys", &self.keys)
            .field("jwks_documents", &self.jwks.len())
            .field("verifier", &self.verifier.is_some())
            .field("audience", &self.audience)
            .field("issuers", &self.issuers)
            .field("clock_skew", &self.clock_skew)
            .field("scope_claim", &self.scope_claim)
            .field("principal_claim", &self.principal_claim)
            .field("realm", &self.realm)
            .field("resource_metadata", &self.resource_metadata)
            .field("required_scopes", &self.required_scopes)
            .field("dpop", &self.dpop)
            .field("dpop_urls", &self.dpop_urls)
            .field("dpop_options", &self.dpop_options)
            .field("algorithms", &self.algorithms);
        #[cfg(feature = "oidc")]
        f.field("remote", &self.remote);
        f.finish()
    }
}

impl BearerAuthBuilder {
    /// Verifies with a key given directly.
    pub fn key(mut self, key: JwtKey) -> Self {
        self.keys.push(key);
        self
    }

    /// Verifies HS256 tokens with a shared secret (at least 32 bytes).
    pub fn hs256_secret(self, secret: impl Into<Vec<u8>>) -> Self {
        self.key(JwtKey::hs256(secret))
    }

    /// Verifies RS256 tokens with an RSA public key in PEM.
    pub fn rs256_pem(self, pem: impl Into<Vec<u8>>) -> Self {
        self.key(JwtKey::rs256_pem(pem))
    }

    /// Verifies ES256 tokens with a P-256 public key in PEM.
    pub fn es256_pem(self, pem: impl Into<Vec<u8>>) -> Self {
        self.key(JwtKey::es256_pem(pem))
    }

    /// Verifies with the signing keys of a JWKS document (JSON, parsed at build
    /// time). Keys for encryption and symmetric keys are skipped.
    pub fn jwks(mut self, json: impl Into<String>) -> Self {
        self.jwks.push(Jwks::Json(json.into()));
        self
    }

    /// Verifies with the signing keys of a parsed JWK set.
    pub fn jwk_set(mut self, set: JwkSet) -> Self {
        self.jwks.push(Jwks::Set(set));
        self
    }

    /// Fetches the verification keys from the OpenID Connect provider or OAuth authorization
    /// server `issuer` (feature `oidc`): its metadata is read from
    /// `<issuer>/.well-known/openid-configuration`, or, when that is not found, from the
    /// RFC 8414 `/.well-known/oauth-authorization-server` URL; the document must name exactly
    /// this issuer, and its `jwks_uri` is where the keys are fetched. The issuer is also added
    /// to the accepted `iss` values.
    ///
    /// `https` is required, except on a loopback host (tests). Nothing is fetched by
    /// [`build`](Self::build): the first token does it (or [`BearerAuth::fetch_keys`]). With
    /// [`jwks_uri`](Self::jwks_uri) as well, the keys are fetched from that URL and no
    /// metadata is read. Not combinable with keys given directly or a verifier.
    #[cfg(feature = "oidc")]
    pub fn oidc_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.remote.issuer = Some(issuer.into());
        self
    }

    /// Fetches the verification keys from this JWKS URL (feature `oidc`), lazily like
    /// [`oidc_issuer`](Self::oidc_issuer) and with the same rules for the URL.
    #[cfg(feature = "oidc")]
    pub fn jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.remote.jwks_uri = Some(url.into());
        self
    }

    /// The least time between two fetches of the remote keys that tokens with an unknown `kid`
    /// (or a failed fetch) may trigger (default 30 s, feature `oidc`). However many such tokens
    /// arrive, the authorization server is asked at most once per interval.
    #[cfg(feature = "oidc")]
    pub fn key_refetch_interval(mut self, interval: Duration) -> Self {
        self.remote.refetch_interval = interval;
        self
    }

    /// How long one exchange with the authorization server may take, connection and body
    /// included (default 10 s, feature `oidc`).
    #[cfg(feature = "oidc")]
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.remote.timeout = timeout;
        self
    }

    /// Trusts the certificate authorities of this PEM document (one or more `CERTIFICATE`s)
    /// too, beside the Mozilla roots, when fetching from the authorization server (feature
    /// `oidc`; repeatable): for a server behind a private authority.
    #[cfg(feature = "oidc")]
    pub fn fetch_root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.remote.roots.0.push(pem.into());
        self
    }

    /// Bounds a remote key set's lifetime otherwise than to a minute..=a day (tests).
    #[cfg(all(test, feature = "oidc"))]
    pub(crate) fn key_ttl_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.remote.ttl_bounds = Some((min, max));
        self
    }

    /// The signature algorithms accepted. For remote keys the default is RS256 and ES256, and
    /// HS256/384/512 are refused at build (a public key set cannot hold a shared secret); for
    /// keys given directly the default is each key's own algorithm, and a key whose algorithm
    /// the list leaves out is a build error (JWKS keys of other algorithms are skipped).
    /// `none` is never accepted.
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = Some(algorithms.into_iter().collect());
        self
    }

    /// Hands tokens to a verifier instead of keys (opaque tokens, introspection).
    pub fn verifier(mut self, verifier: impl TokenVerifier) -> Self {
        self.verifier = Some(Arc::new(verifier));
        self
    }

    /// Hands tokens to an async function returning their claims.
    pub fn verifier_fn<F, Fut>(self, f: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Map<String, Value>, TokenError>> + Send + 'static,
    {
        self.verifier(FnVerifier(f))
    }

    /// Accepts tokens whose `aud` names `audience` (repeatable). Required,
    /// unless [`any_audience`](Self::any_audience) is set.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        match &mut self.audience {
            Some(Audience::OneOf(list)) => list.push(audience.into()),
            _ => self.audience = Some(Audience::OneOf(vec![audience.into()])),
        }
        self
    }

    /// Does not check `aud`: allowed only together with a verifier (which then
    /// answers for the audience). Replaces any audience set before.
    pub fn any_audience(mut self) -> Self {
        self.audience = Some(Audience::Any);
        self
    }

    /// Accepts tokens whose `iss` is `issuer` (repeatable; unchecked when none is set).
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(issuer.into());
        self
    }

    /// The tolerance for `exp` and `nbf` (default 60 s; whole seconds).
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.clock_skew = skew;
        self
    }

    /// The claim holding the scopes (default `scope`).
    pub fn scope_claim(mut self, claim: impl Into<String>) -> Self {
        self.scope_claim = claim.into();
        self
    }

    /// The claim holding the principal (default `sub`).
    pub fn principal_claim(mut self, claim: impl Into<String>) -> Self {
        self.principal_claim = claim.into();
        self
    }

    /// The realm of the challenges (default `mcp`).
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = realm.into();
        self
    }

    /// Names the RFC 9728 metadata document in every challenge
    /// (`resource_metadata="<url>"`; see [`ResourceMetadata::metadata_url`](crate::ResourceMetadata::metadata_url)).
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata = Some(url.into());
        self
    }

    /// Scopes every token must grant (fails closed with a 403); also named in the 401 challenges.
    pub fn required_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether DPoP-bound tokens (RFC 9449) are accepted or required (default
    /// [`DpopMode::Off`]); any mode but `Off` needs [`dpop_url`](Self::dpop_url). See [`crate::dpop`].
    pub fn dpop(mut self, mode: DpopMode) -> Self {
        self.dpop = mode;
        self
    }

    /// The public URL of this endpoint as clients call it (`https://host/mcp`, usually the
    /// RFC 9728 `resource`), which a DPoP proof's `htu` must name; repeatable for an endpoint
    /// reachable under several URLs (and for the legacy HTTP+SSE endpoints, whose paths
    /// differ). It is configured rather than read from the request because behind a proxy
    /// the request's scheme and host are not the client's. The request's path picks among
    /// the URLs: a proof must name one with the same path, or any when none has it.
    pub fn dpop_url(mut self, url: impl Into<String>) -> Self {
        self.dpop_urls.push(url.into());
        self
    }

    /// The options of DPoP checking: algorithms, `iat` window, proof size, nonces, replay cache.
    pub fn dpop_options(mut self, options: DpopOptions) -> Self {
        self.dpop_options = options;
        self
    }

    /// Checks the configuration and parses the key material.
    pub fn build(self) -> Result<BearerAuth, AuthSetupError> {
        if !valid_realm(&self.realm) {
            return Err(AuthSetupError::InvalidRealm { realm: self.realm });
        }
        if let Some(scope) = self.required_scopes.iter().find(|s| !valid_scope(s)) {
            return Err(AuthSetupError::InvalidScope { scope: scope.clone() });
        }
        let has_static = !self.keys.is_empty() || !self.jwks.is_empty();
        #[cfg(feature = "oidc")]
        let has_remote = self.remote.configured();
        #[cfg(not(feature = "oidc"))]
        let has_remote = false;
        match (has_static || has_remote, self.verifier.is_some()) {
            (true, true) => return Err(AuthSetupError::KeysAndVerifier),
            (false, false) => return Err(AuthSetupError::NoTokenSource),
            _ => {}
        }
        if has_static && has_remote {
            return Err(AuthSetupError::StaticAndRemoteKeys);
        }
        if self.algorithms.as_ref().is_some_and(Vec::is_empty) {
            return Err(AuthSetupError::AlgorithmNotAllowed {
                alg: "none".to_owned(),
                reason: "the algorithm list is empty",
            });
        }
        #[cfg_attr(not(feature = "oidc"), allow(unused_mut))]
        let mut issuers = self.issuers;
        #[cfg(feature = "oidc")]
        if let Some(issuer) = &self.remote.issuer {
            crate::fetch::check_issuer(issuer)?;
            if !issuers.contains(issuer) {
                issuers.push(issuer.clone());
            }
        }
        let audience = match self.audience {
            None => return Err(AuthSetupError::MissingAudience),
            Some(Audience::OneOf(list)) if list.iter().any(|a| a.is_empty()) => {
                return Err(AuthSetupError::MissingAudience);
            }
            Some(Audience::Any) if self.verifier.is_none() => return Err(AuthSetupError::AnyAudienceWithoutVerifier),
            Some(a) => a,
        };
        let mut challenge = BearerChallenge::new(&self.realm).scope(&self.required_scopes);
        if let Some(url) = &self.resource_metadata {
            crate::metadata::check_url("resource_metadata", url)?;
            challenge = challenge.resource_metadata(url);
        }
        let dpop = DpopAuth::new(
            self.dpop,
            &self.dpop_urls,
            self.dpop_options,
            &challenge,
            &self.realm,
            &self.required_scopes,
            self.resource_metadata.as_deref(),
        )?;
        let mut rules = ClaimRules {
            audience,
            issuers,
            skew_secs: self.clock_skew.as_secs(),
            require_exp: false,
        };
        let source = match self.verifier {
            Some(v) => Source::Verifier(v),
            #[cfg(feature = "oidc")]
            None if has_remote => {
                install_crypto_provider();
                rules.require_exp = true;
                Source::Remote {
                    keys: Arc::new(remote_keys(&self.remote, self.algorithms)?),
                    validation: Box::new(jwt_validation(&rules)),
                }
            }
            None => {
                let mut sets = Vec::with_capacity(self.jwks.len());
                for doc in self.jwks {
                    sets.push(match doc {
                        Jwks::Json(json) => keys::parse_jwks(&json)?,
                        Jwks::Set(set) => set,
                    });
                }
                install_crypto_provider();
                rules.require_exp = true;
                Source::Keys {
                    keys: KeySet::new(&self.keys, &sets, self.algorithms.as_deref())?,
                    validation: Box::new(jwt_validation(&rules)),
                }
            }
        };
        Ok(BearerAuth {
            source,
            rules,
            scope_claim: self.scope_claim,
            principal_claim: self.principal_claim,
            required_scopes: self.required_scopes,
            challenge,
            dpop,
        })
    }
}

/// Installs `jsonwebtoken`'s RustCrypto provider unless one is installed.
fn install_crypto_provider() {
    let _ = jsonwebtoken::crypto::CryptoProvider::install_default(&jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER);
}

/// The remote key set of `config`, its URLs checked; nothing is fetched.
#[cfg(feature = "oidc")]
fn remote_keys(
    config: &RemoteConfig,
    algorithms: Option<Vec<Algorithm>>,
) -> Result<remote::RemoteKeys, AuthSetupError> {
    let allowed = algorithms.unwrap_or_else(|| remote::DEFAULT_REMOTE_ALGORITHMS.to_vec());
    if let Some(hs) = allowed
        .iter()
        .find(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
    {
        return Err(AuthSetupError::AlgorithmNotAllowed {
            alg: format!("{hs:?}"),
            reason: "keys fetched from an authorization server are public keys",
        });
    }
    let origin = match (&config.jwks_uri, &config.issuer) {
        (Some(url), _) => remote::Origin::Jwks(crate::fetch::check_fetch_url("jwks_uri", url)?),
        (None, Some(issuer)) => remote::Origin::Issuer(issuer.clone()),
        (None, None) => return Err(AuthSetupError::NoTokenSource),
    };
    let client = crate::fetch::HttpClient::new(config.timeout, &config.roots)?;
    let keys = remote::RemoteKeys::new(origin, client, allowed, config.refetch_interval);
    #[cfg(test)]
    let keys = match config.ttl_bounds {
        Some((min, max)) => keys.with_ttl_bounds(min, max),
        None => keys,
    };
    Ok(keys)
}

/// The `jsonwebtoken` checks matching `rules` (the algorithm list is set per key).
fn jwt_validation(rules: &ClaimRules) -> Validation {
    let mut v = Validation::new(Algorithm::HS256);
    v.leeway = rules.skew_secs;
    v.validate_exp = true;
    v.validate_nbf = true;
    v.validate_aud = true;
    let mut required = vec!["exp", "aud"];
    if let Audience::OneOf(list) = &rules.audience {
        v.set_audience(list);
    }
    if !rules.issuers.is_empty() {
        v.set_issuer(&rules.issuers);
        required.push("iss");
    }
    v.set_required_spec_claims(&required);
    v
}

enum Source {
    Keys {
        keys: KeySet,
        validation: Box<Validation>,
    },
    #[cfg(feature = "oidc")]
    Remote {
        keys: Arc<remote::RemoteKeys>,
        validation: Box<Validation>,
    },
    Verifier(Arc<dyn TokenVerifier>),
}

/// Authenticates requests by bearer token.
///
/// ```
/// use mcp_auth::BearerAuth;
///
/// let provider = BearerAuth::builder()
///     .hs256_secret("an HS256 secret of at least 32 bytes!")
///     .audience("https://mcp.example.com/mcp")
///     .issuer("https://auth.example.com")
///     .resource_metadata("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
///     .build()
///     .unwrap();
/// # let _ = provider;
/// ```
pub struct BearerAuth {
    source: Source,
    rules: ClaimRules,
    scope_claim: String,
    principal_claim: String,
    required_scopes: Vec<String>,
    challenge: BearerChallenge,
    dpop: Option<DpopAuth>,
}

impl BearerAuth {
    /// Starts a configuration.
    pub fn builder() -> BearerAuthBuilder {
        BearerAuthBuilder::default()
    }

    /// Verifies a token and returns the identity it grants (without the
    /// required-scope check, which [`AuthProvider::authenticate`] adds).
    pub async fn verify(&self, token: &str) -> Result<AuthInfo, TokenError> {
        if token.len() > MAX_TOKEN_LEN || !is_b64token(token) {
            return Err(TokenError::Malformed);
        }
        let claims = match &self.source {
            Source::Keys { keys, validation } => keys.verify(token, validation)?,
            #[cfg(feature = "oidc")]
            Source::Remote { keys, validation } => verify_remote(keys, token, validation).await?,
            Source::Verifier(v) => v.verify(token).await?,
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        claims::check(&claims, &self.rules, now)?;
        let principal = claims::principal(&claims, &self.principal_claim)?;
        let scopes = claims::scopes(&claims, &self.scope_claim)?;
        Ok(AuthInfo::new(principal).with_scopes(scopes).with_claims(claims))
    }

    /// Whether DPoP-bound tokens are accepted or required: for the RFC 9728
    /// `dpop_bound_access_tokens_required` metadata (true under [`DpopMode::Required`]).
    pub fn dpop_mode(&self) -> DpopMode {
        self.dpop.as_ref().map_or(DpopMode::Off, DpopAuth::mode)
    }

    /// The JWS algorithms accepted for DPoP proofs (empty when DPoP is off): for the RFC 9728
    /// `dpop_signing_alg_values_supported` metadata.
    pub fn dpop_algorithms(&self) -> &[String] {
        self.dpop.as_ref().map_or(&[], DpopAuth::algorithms)
    }

    /// The refusal of a token: 401 `invalid_token` with the reason, or 503 with `Retry-After`
    /// and no challenge when the authorization server could not be asked
    /// ([`TokenError::Unavailable`]: the token may be good).
    pub(crate) fn refusal(&self, e: &TokenError) -> Challenge {
        if *e == TokenError::Unavailable {
            tracing::debug!("bearer token not checked: the authorization server is unavailable");
            return Challenge::new(503, None).with_retry_after(UNAVAILABLE_RETRY_AFTER);
        }
        tracing::debug!(reason = %e, "bearer token refused");
        self.challenge.error(BearerError::InvalidToken, &e.to_string())
    }

    /// Fetches the remote keys now (feature `oidc`), whatever the refetch interval, and returns
    /// how many are held. For a server that wants to learn at start-up that the authorization
    /// server answers; a failure changes nothing held. With keys given directly it fetches
    /// nothing and returns their number; with a verifier, 0.
    #[cfg(feature = "oidc")]
    pub async fn fetch_keys(&self) -> Result<usize, crate::FetchError> {
        match &self.source {
            Source::Remote { keys, .. } => keys.fetch_now().await,
            Source::Keys { keys, .. } => Ok(keys.len()),
            Source::Verifier(_) => Ok(0),
        }
    }

    /// How many fetches of the remote keys were attempted since the provider was built (feature
    /// `oidc`; each is one JWKS request, preceded by the issuer's metadata until that was read).
    /// Always 0 without remote keys.
    #[cfg(feature = "oidc")]
    pub fn key_fetches(&self) -> u64 {
        match &self.source {
            Source::Remote { keys, .. } => keys.fetches(),
            _ => 0,
        }
    }

    /// How many of the [`key_fetches`](Self::key_fetches) failed (feature `oidc`).
    #[cfg(feature = "oidc")]
    pub fn key_fetch_failures(&self) -> u64 {
        match &self.source {
            Source::Remote { keys, .. } => keys.failures(),
            _ => 0,
        }
    }
}

/// Verifies `token` with the remote keys: the keys held (fetched first if none ever were), and
/// once more with newer keys when its key is unknown and a refetch is allowed.
#[cfg(feature = "oidc")]
async fn verify_remote(
    remote: &Arc<remote::RemoteKeys>,
    token: &str,
    validation: &Validation,
) -> Result<Map<String, Value>, TokenError> {
    let (keys, seen) = remote.current().await?;
    match keys.verify(token, validation) {
        Err(e @ (TokenError::UnknownKey | TokenError::DisallowedAlgorithm)) if remote.may_refetch_for(token) => {
            match remote.after_miss(seen).await {
                Some(newer) => newer.verify(token, validation),
                None => Err(e),
            }
        }
        outcome => outcome,
    }
}

/// RFC 6750 §2.1 `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/'))
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match &self.source {
            Source::Keys { keys, .. } => format!("{} keys", keys.len()),
            #[cfg(feature = "oidc")]
            Source::Remote { keys, .. } => match keys.origin() {
                remote::Origin::Issuer(issuer) => format!("remote keys of issuer {issuer}"),
                remote::Origin::Jwks(uri) => format!("remote keys at {uri}"),
            },
            Source::Verifier(_) => "verifier".to_owned(),
        };
        f.debug_struct("BearerAuth")
            .field("source", &source)
            .field("audience", &self.rules.audience)
            .field("issuers", &self.rules.issuers)
            .field("required_scopes", &self.required_scopes)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

impl AuthProvider for BearerAuth {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        Box::pin(async move {
            if let Some(dpop) = &self.dpop {
                return dpop.authenticate(parts, self, &self.required_scopes).await;
            }
            let token = match credentials::authorization(&parts.headers, "Bearer") {
                Found::Missing => return Err(self.challenge.missing()),
                Found::Malformed => {
                    return Err(self
                        .challenge
                        .error(BearerError::InvalidRequest, "malformed Authorization header"));
                }
                Found::Value("") => {
                    return Err(self
                        .challenge
                        .error(BearerError::InvalidRequest, "the bearer token is missing"));
                }
                Found::Value(token) => token,
            };
            let info = self.verify(token).await.map_err(|e| self.refusal(&e))?;
            check_scopes(&info, &self.required_scopes, &self.challenge)?;
            Ok(info)
        })
    }

    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        if let Some(dpop) = &self.dpop {
            return dpop.insufficient_scope(needed, crate::challenge::INSUFFICIENT_SCOPE_DESCRIPTION);
        }
        self.challenge
            .insufficient_scope(needed, crate::challenge::INSUFFICIENT_SCOPE_DESCRIPTION)
    }
}
