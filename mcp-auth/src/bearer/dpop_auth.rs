//! DPoP in the bearer provider: which scheme a request used, the checks of the `DPoP` scheme,
//! and the refusals of both schemes when both are served.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::AUTHORIZATION;
use http::{HeaderName, HeaderValue};
use jsonwebtoken::Algorithm;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::bearer::verifier::TokenError;
use crate::credentials::{self, Found};
use crate::dpop::htu;
use crate::dpop::nonce::Nonces;
use crate::dpop::options::{NonceSecret, SUPPORTED_ALGORITHMS};
use crate::dpop::proof::{self, ProofRequest, ProofRules};
use crate::dpop::{
    DPOP_NONCE_HEADER, DpopError, DpopMode, DpopOptions, MIN_NONCE_SECRET, MemoryReplayCache, ReplayCache, ReplayError,
};
use crate::scopes::check_scopes;
use crate::{
    AuthInfo, AuthSetupError, BearerAuth, BearerChallenge, BearerError, Challenge, DpopChallenge, DpopErrorCode,
    WwwAuthenticate,
};

/// The smallest proof bound that can be configured: below it no real proof fits.
const MIN_PROOF_LEN: usize = 512;

/// The DPoP side of a bearer provider whose mode is not `Off`.
pub(crate) struct DpopAuth {
    mode: DpopMode,
    rules: ProofRules,
    algorithm_names: Vec<String>,
    nonces: Option<Nonces>,
    replay: Arc<dyn ReplayCache>,
    bearer: BearerChallenge,
    dpop: DpopChallenge,
}

impl std::fmt::Debug for DpopAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopAuth")
            .field("mode", &self.mode)
            .field("algorithms", &self.algorithm_names)
            .field(
                "urls",
                &self.rules.urls.iter().map(ToString::to_string).collect::<Vec<_>>(),
            )
            .field("nonces", &self.nonces.is_some())
            .finish_non_exhaustive()
    }
}

fn invalid(reason: impl Into<String>) -> AuthSetupError {
    AuthSetupError::InvalidDpop { reason: reason.into() }
}

/// Seconds since the epoch.
fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Whether the token's claims bind it to a DPoP key (`cnf.jkt`, RFC 9449 §6).
fn is_bound(claims: &Map<String, Value>) -> bool {
    claims
        .get("cnf")
        .and_then(Value::as_object)
        .is_some_and(|cnf| cnf.contains_key("jkt"))
}

impl DpopAuth {
    /// The DPoP side of a provider configured with `mode`; `None` for [`DpopMode::Off`].
    /// `bearer` is the provider's own `Bearer` challenge (realm, scopes, metadata URL).
    pub(crate) fn new(
        mode: DpopMode,
        urls: &[String],
        options: DpopOptions,
        bearer: &BearerChallenge,
        realm: &str,
        scopes: &[String],
        resource_metadata: Option<&str>,
    ) -> Result<Option<Self>, AuthSetupError> {
        if mode == DpopMode::Off {
            return Ok(None);
        }
        if urls.is_empty() {
            return Err(invalid("DPoP needs the public URL of the endpoint (dpop_url)"));
        }
        let mut normalized = Vec::with_capacity(urls.len());
        for url in urls {
            let uri = crate::metadata::check_url("dpop_url", url)?;
            if uri.query().is_some() {
                return Err(AuthSetupError::InvalidUrl {
                    what: "dpop_url",
                    url: url.clone(),
                    reason: "a query is not allowed",
                });
            }
            normalized.push(htu::normalize(url).ok_or_else(|| AuthSetupError::InvalidUrl {
                what: "dpop_url",
                url: url.clone(),
                reason: "not an http(s) URL",
            })?);
        }
        if options.algorithms.is_empty() {
            return Err(invalid("no algorithm is accepted for DPoP proofs"));
        }
        let mut algorithms = Vec::with_capacity(options.algorithms.len());
        for name in &options.algorithms {
            if !SUPPORTED_ALGORITHMS.contains(&name.as_str()) {
                return Err(invalid(format!(
                    "{name:?} cannot sign DPoP proofs (supported: {})",
                    SUPPORTED_ALGORITHMS.join(", ")
                )));
            }
            let alg: Algorithm = name
                .parse()
                .map_err(|_| invalid(format!("unknown algorithm {name:?}")))?;
            if !algorithms.contains(&alg) {
                algorithms.push(alg);
            }
        }
        let iat_window_secs = options.iat_window.as_secs();
        if iat_window_secs == 0 {
            return Err(invalid("the iat window must be at least 1 s"));
        }
        if options.max_proof_len < MIN_PROOF_LEN {
            return Err(invalid(format!(
                "the proof bound must be at least {MIN_PROOF_LEN} bytes"
            )));
        }
        let nonces = match options.nonce {
            None => None,
            Some(secret) => {
                let secret = match secret {
                    NonceSecret::Given(s) if s.len() < MIN_NONCE_SECRET => {
                        return Err(invalid(format!(
                            "the nonce secret has {} bytes; at least {MIN_NONCE_SECRET} are required",
                            s.len()
                        )));
                    }
                    NonceSecret::Given(s) => s,
                    NonceSecret::Random => {
                        let mut s = vec![0u8; MIN_NONCE_SECRET];
                        getrandom::fill(&mut s).map_err(|_| AuthSetupError::Random)?;
                        s
                    }
                };
                Some(Nonces::new(secret, options.nonce_lifetime.as_secs()))
            }
        };
        let _ =
            jsonwebtoken::crypto::CryptoProvider::install_default(&jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER);
        let algorithm_names: Vec<String> = options.algorithms.iter().fold(Vec::new(), |mut names, n| {
            if !names.contains(n) {
                names.push(n.clone());
            }
            names
        });
        let mut dpop = DpopChallenge::new(realm).scope(scopes).algs(&algorithm_names);
        if let Some(url) = resource_metadata {
            dpop = dpop.resource_metadata(url);
        }
        Ok(Some(DpopAuth {
            mode,
            rules: ProofRules {
                algorithms,
                iat_window_secs,
                max_len: options.max_proof_len,
                urls: normalized,
            },
            algorithm_names,
            nonces,
            replay: options
                .replay_cache
                .unwrap_or_else(|| Arc::new(MemoryReplayCache::default())),
            bearer: bearer.clone(),
            dpop,
        }))
    }

    /// The mode (never `Off`).
    pub(crate) fn mode(&self) -> DpopMode {
        self.mode
    }

    /// The accepted algorithms, by name.
    pub(crate) fn algorithms(&self) -> &[String] {
        &self.algorithm_names
    }

    /// Authenticates a request for `provider`, which verifies the tokens, requiring `scopes`.
    pub(crate) async fn authenticate(
        &self,
        parts: &http::request::Parts,
        provider: &BearerAuth,
        scopes: &[String],
    ) -> Result<AuthInfo, Challenge> {
        let (scheme, token) = match credentials::single(&parts.headers, &AUTHORIZATION) {
            Found::Missing => return Err(self.missing()),
            Found::Malformed => return Err(self.malformed("malformed Authorization header")),
            Found::Value(v) => {
                let v = v.trim_matches(' ');
                let (scheme, rest) = v.split_once(' ').unwrap_or((v, ""));
                (scheme, rest.trim_matches(' '))
            }
        };
        if scheme.eq_ignore_ascii_case("DPoP") {
            if token.is_empty() {
                return Err(self.dpop_refusal(DpopErrorCode::InvalidRequest, "the access token is missing"));
            }
            return self.dpop_scheme(parts, token, provider, scopes).await;
        }
        if !scheme.eq_ignore_ascii_case("Bearer") {
            return Err(self.missing());
        }
        if self.mode == DpopMode::Required {
            return Err(self.dpop_refusal(
                DpopErrorCode::InvalidToken,
                "this resource accepts DPoP-bound tokens only (Authorization: DPoP with a DPoP proof)",
            ));
        }
        if token.is_empty() {
            return Err(self.bearer_refusal(BearerError::InvalidRequest, "the bearer token is missing"));
        }
        let info = provider.verify(token).await.map_err(|e| {
            if e == TokenError::Unavailable {
                return provider.refusal(&e);
            }
            tracing::debug!(reason = %e, "bearer token refused");
            self.bearer_refusal(BearerError::InvalidToken, &e.to_string())
        })?;
        if is_bound(&info.claims) {
            tracing::debug!("DPoP-bound token sent as a bearer token refused");
            return Err(self.bearer_refusal(
                BearerError::InvalidToken,
                "the token is bound to a DPoP key: send it with Authorization: DPoP and a DPoP proof",
            ));
        }
        check_scopes(&info, scopes, &self.bearer)?;
        Ok(info)
    }

    /// The `DPoP` scheme: the proof, the nonce, the token, its binding, the replay, the scopes.
    async fn dpop_scheme(
        &self,
        parts: &http::request::Parts,
        token: &str,
        provider: &BearerAuth,
        scopes: &[String],
    ) -> Result<AuthInfo, Challenge> {
        let now = unix_now();
        let checked = proof::single_header(&parts.headers, self.rules.max_len)
            .and_then(|proof| {
                let request = ProofRequest {
                    method: parts.method.as_str(),
                    path: parts.uri.path(),
                    access_token: token,
                    now,
                };
                proof::check(proof, &self.rules, &request)
            })
            .and_then(|checked| {
                match (&self.nonces, &checked.nonce) {
                    (None, _) => {}
                    (Some(_), None) => return Err(DpopError::NonceRequired),
                    (Some(nonces), Some(n)) if !nonces.is_fresh(n, now) => return Err(DpopError::StaleNonce),
                    (Some(_), Some(_)) => {}
                }
                Ok(checked)
            })
            .map_err(|e| self.proof_refusal(&e))?;
        let info = provider.verify(token).await.map_err(|e| {
            if e == TokenError::Unavailable {
                return provider.refusal(&e);
            }
            tracing::debug!(reason = %e, "DPoP access token refused");
            self.dpop_refusal(DpopErrorCode::InvalidToken, &e.to_string())
        })?;
        let bound = info
            .claims
            .get("cnf")
            .and_then(Value::as_object)
            .and_then(|c| c.get("jkt"));
        match bound {
            None => return Err(self.proof_refusal(&DpopError::Unbound)),
            Some(Value::String(jkt)) if *jkt == checked.jkt => {}
            Some(Value::String(_)) => return Err(self.proof_refusal(&DpopError::KeyMismatch)),
            Some(_) => {
                return Err(self.dpop_refusal(DpopErrorCode::InvalidToken, "the token has an invalid cnf claim"));
            }
        }
        let key = replay_key(&checked.jkt, &checked.jti);
        let window = self.rules.iat_window_secs;
        let ttl = (checked.iat + window + 1).saturating_sub(now).clamp(1, 2 * window + 1);
        match self.replay.check_and_insert(&key, Duration::from_secs(ttl)).await {
            Ok(true) => {}
            Ok(false) => return Err(self.proof_refusal(&DpopError::Replayed)),
            Err(ReplayError::Full { retry_after }) => {
                tracing::warn!("DPoP replay cache full: refusing new proofs until entries expire");
                return Err(Challenge::new(503, None).with_retry_after(retry_after));
            }
            Err(e) => {
                tracing::warn!(error = %e, "DPoP replay cache unavailable: refusing the proof");
                return Err(Challenge::new(503, None));
            }
        }
        if let Some(missing) = scopes.iter().find(|s| !info.has_scope(s)) {
            tracing::debug!(principal = %info.principal, scope = %missing, "request lacks a required scope");
            return Err(self
                .dpop
                .insufficient_scope(scopes, &format!("missing scope {missing}")));
        }
        Ok(info)
    }

    /// The 403 for an operation needing scopes the caller lacks (after authentication, so the
    /// scheme is not known here): the `DPoP` challenge under `Required`, both challenges under
    /// `Allowed` (RFC 9449 §7.2), each naming every needed scope.
    pub(crate) fn insufficient_scope(&self, needed: &[String], description: &str) -> Challenge {
        let dpop = self.dpop.insufficient_scope(needed, description);
        if self.mode != DpopMode::Allowed {
            return dpop;
        }
        let bearer = self.bearer.insufficient_scope(needed, description);
        let joined: Vec<String> = [bearer.www_authenticate, dpop.www_authenticate]
            .into_iter()
            .flatten()
            .collect();
        Challenge::new(403, Some(joined.join(", ")))
    }

    /// A fresh nonce header, when nonces are required.
    fn nonce_header(&self) -> Option<(HeaderName, HeaderValue)> {
        let nonce = self.nonces.as_ref()?.issue(unix_now());
        Some((
            HeaderName::from_static(DPOP_NONCE_HEADER),
            HeaderValue::from_str(&nonce).ok()?,
        ))
    }

    /// A refusal with these challenges, and the nonce header on a 401.
    fn refusal(&self, status: u16, challenges: &[WwwAuthenticate]) -> Challenge {
        let mut c = Challenge::with_challenges(status, challenges);
        if status == 401
            && let Some((name, value)) = self.nonce_header()
        {
            c = c.with_header(name, value);
        }
        c
    }

    /// The `Bearer` challenge without error beside `dpop`, when both schemes are served.
    fn with_bearer(&self, dpop: WwwAuthenticate) -> Vec<WwwAuthenticate> {
        match self.mode {
            DpopMode::Allowed => vec![self.bearer.www_authenticate(None, None), dpop],
            _ => vec![dpop],
        }
    }

    /// No credentials of a served scheme: the challenges without error attributes.
    fn missing(&self) -> Challenge {
        self.refusal(401, &self.with_bearer(self.dpop.www_authenticate(None, None)))
    }

    /// A malformed `Authorization` header: 400 `invalid_request` in every challenge (the
    /// scheme is unknown).
    fn malformed(&self, description: &str) -> Challenge {
        let dpop = self
            .dpop
            .www_authenticate(Some(DpopErrorCode::InvalidRequest), Some(description));
        let challenges = match self.mode {
            DpopMode::Allowed => vec![
                self.bearer
                    .www_authenticate(Some(BearerError::InvalidRequest), Some(description)),
                dpop,
            ],
            _ => vec![dpop],
        };
        self.refusal(400, &challenges)
    }

    /// A refusal of the `Bearer` scheme (served under `Allowed` only), the `DPoP` challenge beside it.
    fn bearer_refusal(&self, error: BearerError, description: &str) -> Challenge {
        let challenges = [
            self.bearer.www_authenticate(Some(error), Some(description)),
            self.dpop.www_authenticate(None, None),
        ];
        self.refusal(error.status(), &challenges)
    }

    /// A refusal of the `DPoP` scheme.
    fn dpop_refusal(&self, error: DpopErrorCode, description: &str) -> Challenge {
        let dpop = self.dpop.www_authenticate(Some(error), Some(description));
        self.refusal(error.status(), &self.with_bearer(dpop))
    }

    /// A refusal for a proof or binding error.
    fn proof_refusal(&self, e: &DpopError) -> Challenge {
        tracing::debug!(reason = %e, "DPoP proof refused");
        self.dpop_refusal(e.code(), &e.to_string())
    }
}

/// The replay-cache key of a proof: the base64url SHA-256 of its key's thumbprint and its `jti`
/// (a thumbprint has no newline, so the pair is unambiguous), of bounded size whatever the `jti`.
fn replay_key(jkt: &str, jti: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(jkt.as_bytes());
    hash.update(b"\n");
    hash.update(jti.as_bytes());
    URL_SAFE_NO_PAD.encode(hash.finalize())
}
