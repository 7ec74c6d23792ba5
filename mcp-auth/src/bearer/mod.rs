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
//! Opaque tokens (or introspection, or other algorithms) go to a verifier
//! hook instead of keys; its claims then go through the same checks. Only
//! with a verifier may every audience be accepted.
//!
//! DPoP-bound tokens (RFC 9449, `Authorization: DPoP` with a `DPoP` proof) are
//! accepted or required with [`BearerAuthBuilder::dpop`]: see [`crate::dpop`].

mod claims;
mod keys;
#[cfg(test)]
mod tests;
mod verifier;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

pub use keys::JwtKey;
pub use verifier::{TokenError, TokenVerifier};

use self::claims::{Audience, ClaimRules};
use self::keys::KeySet;
use self::verifier::FnVerifier;
use crate::challenge::valid_realm;
use crate::credentials::{self, Found};
use crate::dpop::{DpopAuth, DpopMode, DpopOptions};
use crate::scopes::{check_scopes, valid_scope};
use crate::{
    AuthInfo, AuthProvider, AuthSetupError, BearerChallenge, BearerError, BoxFuture, Challenge, DEFAULT_REALM,
};

/// The default tolerance for `exp` and `nbf`.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(60);
/// The default claim holding the scopes.
pub const DEFAULT_SCOPE_CLAIM: &str = "scope";
/// The default claim holding the principal.
pub const DEFAULT_PRINCIPAL_CLAIM: &str = "sub";
/// Longer tokens are refused without being parsed.
const MAX_TOKEN_LEN: usize = 16 * 1024;

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
        }
    }
}

impl std::fmt::Debug for BearerAuthBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerAuthBuilder")
            .field("keys", &self.keys)
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
            .finish()
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
        let has_keys = !self.keys.is_empty() || !self.jwks.is_empty();
        match (has_keys, self.verifier.is_some()) {
            (true, true) => return Err(AuthSetupError::KeysAndVerifier),
            (false, false) => return Err(AuthSetupError::NoTokenSource),
            _ => {}
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
            issuers: self.issuers,
            skew_secs: self.clock_skew.as_secs(),
            require_exp: false,
        };
        let source = match self.verifier {
            Some(v) => Source::Verifier(v),
            None => {
                let mut sets = Vec::with_capacity(self.jwks.len());
                for doc in self.jwks {
                    sets.push(match doc {
                        Jwks::Json(json) => keys::parse_jwks(&json)?,
                        Jwks::Set(set) => set,
                    });
                }
                let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
                    &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER,
                );
                rules.require_exp = true;
                Source::Keys {
                    keys: KeySet::new(&self.keys, &sets)?,
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
    Keys { keys: KeySet, validation: Box<Validation> },
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
            let info = self.verify(token).await.map_err(|e| {
                tracing::debug!(reason = %e, "bearer token refused");
                self.challenge.error(BearerError::InvalidToken, &e.to_string())
            })?;
            check_scopes(&info, &self.required_scopes, &self.challenge)?;
            Ok(info)
        })
    }

    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        if let Some(dpop) = &self.dpop {
            return dpop.insufficient_scope(needed, crate::INSUFFICIENT_SCOPE_DESCRIPTION);
        }
        self.challenge
            .insufficient_scope(needed, crate::INSUFFICIENT_SCOPE_DESCRIPTION)
    }
}
