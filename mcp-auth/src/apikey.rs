//! The `apikey` provider: a key in `x-api-key` (or another header) or in
//! `Authorization: ApiKey <key>`.
//!
//! Keys are stored as peppered HMAC-SHA-256 hashes (`hmac-sha256$<base64>`,
//! see [`hash_api_key`](crate::hash_api_key)). A presented key is hashed once
//! and compared with **every** stored hash in constant time, with no early
//! exit, so the time taken says nothing about which key (if any) matched.

use std::sync::Arc;

use serde_json::{Map, Value};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::credentials::{self, Found};
use crate::hash::{api_key_mac, parse_api_key_hash};
use crate::scopes::valid_scope;
use crate::{AuthInfo, AuthProvider, AuthSetupError, BoxFuture, Challenge, WwwAuthenticate};

/// The default header carrying the key.
pub const DEFAULT_API_KEY_HEADER: &str = "x-api-key";

enum Secret {
    Plain(String),
    Hashed(String),
}

/// One accepted key and the identity it stands for.
///
/// Its `Debug` output shows the principal, never the key or its hash.
pub struct ApiKey {
    secret: Secret,
    principal: Arc<str>,
    scopes: Vec<String>,
    claims: Map<String, Value>,
}

impl ApiKey {
    /// A key given by its stored hash (`hmac-sha256$…`, made with the provider's pepper).
    pub fn hashed(hash: impl Into<String>, principal: impl Into<Arc<str>>) -> Self {
        Self::with(Secret::Hashed(hash.into()), principal.into())
    }

    /// A key given in clear; it is hashed with the provider's pepper when the provider is built.
    pub fn plain(key: impl Into<String>, principal: impl Into<Arc<str>>) -> Self {
        Self::with(Secret::Plain(key.into()), principal.into())
    }

    fn with(secret: Secret, principal: Arc<str>) -> Self {
        ApiKey {
            secret,
            principal,
            scopes: Vec::new(),
            claims: Map::new(),
        }
    }

    /// The scopes granted to the key.
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

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("principal", &self.principal)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Configures an [`ApiKeyAuth`].
#[derive(Default)]
pub struct ApiKeyAuthBuilder {
    header: Option<String>,
    pepper: Option<Vec<u8>>,
    keys: Vec<ApiKey>,
}

impl std::fmt::Debug for ApiKeyAuthBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyAuthBuilder")
            .field("header", &self.header)
            .field("pepper", &self.pepper.as_ref().map(|_| "<redacted>"))
            .field("keys", &self.keys)
            .finish()
    }
}

impl ApiKeyAuthBuilder {
    /// The header carrying the key (default `x-api-key`). `Authorization: ApiKey <key>` is always accepted too.
    pub fn header_name(mut self, name: impl Into<String>) -> Self {
        self.header = Some(name.into());
        self
    }

    /// The pepper (HMAC key) the stored hashes were made with. Required when
    /// any key is given hashed; when every key is given in clear and no pepper
    /// is set, a random one is drawn at build time.
    pub fn pepper(mut self, pepper: impl Into<Vec<u8>>) -> Self {
        self.pepper = Some(pepper.into());
        self
    }

    /// Accepts a key.
    pub fn key(mut self, key: ApiKey) -> Self {
        self.keys.push(key);
        self
    }

    /// Accepts several keys.
    pub fn keys(mut self, keys: impl IntoIterator<Item = ApiKey>) -> Self {
        self.keys.extend(keys);
        self
    }

    /// Checks the configuration and hashes the keys given in clear.
    pub fn build(self) -> Result<ApiKeyAuth, AuthSetupError> {
        let header_name = self.header.unwrap_or_else(|| DEFAULT_API_KEY_HEADER.to_owned());
        let header =
            http::HeaderName::from_bytes(header_name.as_bytes()).map_err(|_| AuthSetupError::InvalidHeaderName {
                name: header_name.clone(),
            })?;
        if self.keys.is_empty() {
            return Err(AuthSetupError::NoCredentials { provider: "apikey" });
        }
        let pepper = match self.pepper {
            Some(p) => p,
            None if self.keys.iter().any(|k| matches!(k.secret, Secret::Hashed(_))) => {
                return Err(AuthSetupError::MissingPepper);
            }
            None => {
                let mut p = vec![0u8; 32];
                getrandom::fill(&mut p).map_err(|_| AuthSetupError::Random)?;
                p
            }
        };
        let mut entries: Vec<([u8; 32], AuthInfo)> = Vec::with_capacity(self.keys.len());
        for (index, key) in self.keys.into_iter().enumerate() {
            let mac = match &key.secret {
                Secret::Plain(k) if k.is_empty() => return Err(AuthSetupError::EmptyKey { index }),
                Secret::Plain(k) => api_key_mac(k.as_bytes(), &pepper),
                Secret::Hashed(h) => parse_api_key_hash(h).ok_or(AuthSetupError::InvalidKeyHash { index })?,
            };
            if key.principal.trim().is_empty() {
                return Err(AuthSetupError::EmptyPrincipal);
            }
            if let Some(scope) = key.scopes.iter().find(|s| !valid_scope(s)) {
                return Err(AuthSetupError::InvalidScope { scope: scope.clone() });
            }
            if let Some(first) = entries.iter().position(|(m, _)| *m == mac) {
                return Err(AuthSetupError::DuplicateKey { first, second: index });
            }
            let info = AuthInfo::new(key.principal)
                .with_scopes(key.scopes)
                .with_claims(key.claims);
            entries.push((mac, info));
        }
        let challenge = WwwAuthenticate::new("ApiKey")
            .param("header", header.as_str())
            .unauthorized();
        Ok(ApiKeyAuth {
            header,
            pepper,
            entries,
            challenge,
        })
    }
}

/// Authenticates requests by API key.
///
/// ```
/// use mcp_auth::{ApiKey, ApiKeyAuth, hash_api_key};
///
/// let stored = hash_api_key("k-123", "pepper");
/// let provider = ApiKeyAuth::builder()
///     .pepper("pepper")
///     .key(ApiKey::hashed(stored, "ci-bot").scopes(["tools"]))
///     .build()
///     .unwrap();
/// # let _ = provider;
/// ```
pub struct ApiKeyAuth {
    header: http::HeaderName,
    pepper: Vec<u8>,
    entries: Vec<([u8; 32], AuthInfo)>,
    challenge: Challenge,
}

impl ApiKeyAuth {
    /// Starts a configuration.
    pub fn builder() -> ApiKeyAuthBuilder {
        ApiKeyAuthBuilder::default()
    }

    /// The presented key, from the configured header first, then `Authorization: ApiKey`.
    fn presented<'a>(&self, headers: &'a http::HeaderMap) -> Option<&'a str> {
        let found = match credentials::single(headers, &self.header) {
            Found::Missing => credentials::authorization(headers, "ApiKey"),
            other => other,
        };
        match found {
            Found::Value(v) if !v.is_empty() => Some(v),
            _ => None,
        }
    }

    /// The identity of a key: every stored hash is compared, in constant time.
    fn lookup(&self, key: &str) -> Option<&AuthInfo> {
        let mac = api_key_mac(key.as_bytes(), &self.pepper);
        let mut found = subtle::Choice::from(0);
        let mut index = 0u64;
        for (i, (stored, _)) in self.entries.iter().enumerate() {
            let hit = stored.ct_eq(&mac);
            index.conditional_assign(&(i as u64), hit);
            found |= hit;
        }
        bool::from(found).then(|| &self.entries[index as usize].1)
    }
}

impl std::fmt::Debug for ApiKeyAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyAuth")
            .field("header", &self.header)
            .field("keys", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl AuthProvider for ApiKeyAuth {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        let outcome = match self.presented(&parts.headers) {
            None => Err(self.challenge.clone()),
            Some(key) => self.lookup(key).cloned().ok_or_else(|| {
                tracing::debug!("unknown API key presented");
                self.challenge.clone()
            }),
        };
        Box::pin(std::future::ready(outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{hash_api_key, test_parts};

    fn provider() -> ApiKeyAuth {
        ApiKeyAuth::builder()
            .pepper("pepper")
            .key(ApiKey::hashed(hash_api_key("k-alice", "pepper"), "alice").scopes(["read", "write"]))
            .key(ApiKey::plain("k-bob", "bob"))
            .build()
            .unwrap()
    }

    async fn run(p: &ApiKeyAuth, headers: &[(&str, &str)]) -> Result<AuthInfo, Challenge> {
        p.authenticate(&test_parts(headers)).await
    }

    #[tokio::test]
    async fn key_in_x_api_key() {
        let info = run(&provider(), &[("x-api-key", "k-alice")]).await.unwrap();
        assert_eq!(&*info.principal, "alice");
        assert_eq!(info.scopes, ["read", "write"]);
        let bob = run(&provider(), &[("X-Api-Key", "k-bob")]).await.unwrap();
        assert_eq!(&*bob.principal, "bob");
    }

    #[tokio::test]
    async fn key_in_authorization() {
        let info = run(&provider(), &[("authorization", "ApiKey k-alice")]).await.unwrap();
        assert_eq!(&*info.principal, "alice");
        let info = run(&provider(), &[("authorization", "apikey k-bob")]).await.unwrap();
        assert_eq!(&*info.principal, "bob");
    }

    #[tokio::test]
    async fn wrong_missing_and_ambiguous_keys() {
        let p = provider();
        let expected = Challenge::unauthorized(r#"ApiKey header="x-api-key""#);
        for headers in [
            &[("x-api-key", "k-carol")][..],
            &[("x-api-key", "")][..],
            &[][..],
            &[("authorization", "Bearer k-alice")][..],
            &[("x-api-key", "k-alice"), ("x-api-key", "k-bob")][..],
        ] {
            assert_eq!(run(&p, headers).await.unwrap_err(), expected, "{headers:?}");
        }
    }

    #[tokio::test]
    async fn configurable_header() {
        let p = ApiKeyAuth::builder()
            .header_name("X-Token")
            .key(ApiKey::plain("k", "svc"))
            .build()
            .unwrap();
        assert_eq!(&*run(&p, &[("x-token", "k")]).await.unwrap().principal, "svc");
        assert!(run(&p, &[("x-api-key", "k")]).await.is_err());
        assert_eq!(
            run(&p, &[]).await.unwrap_err().www_authenticate.as_deref(),
            Some(r#"ApiKey header="x-token""#)
        );
    }

    #[test]
    fn a_wrong_pepper_admits_nobody() {
        let p = ApiKeyAuth::builder()
            .pepper("other")
            .key(ApiKey::hashed(hash_api_key("k", "pepper"), "a"))
            .build()
            .unwrap();
        assert!(p.lookup("k").is_none());
    }

    #[test]
    fn setup_errors() {
        let hashed = || ApiKey::hashed(hash_api_key("k", "p"), "a");
        assert_eq!(
            ApiKeyAuth::builder().build().unwrap_err(),
            AuthSetupError::NoCredentials { provider: "apikey" }
        );
        assert_eq!(
            ApiKeyAuth::builder().key(hashed()).build().unwrap_err(),
            AuthSetupError::MissingPepper
        );
        let bad = ApiKeyAuth::builder()
            .pepper("p")
            .key(ApiKey::hashed("sha256$xx", "a"))
            .build();
        assert_eq!(bad.unwrap_err(), AuthSetupError::InvalidKeyHash { index: 0 });
        let dup = ApiKeyAuth::builder()
            .pepper("p")
            .keys([hashed(), ApiKey::plain("k", "b")])
            .build();
        assert_eq!(dup.unwrap_err(), AuthSetupError::DuplicateKey { first: 0, second: 1 });
        let header = ApiKeyAuth::builder()
            .header_name("bad header")
            .key(ApiKey::plain("k", "a"))
            .build();
        assert!(matches!(header.unwrap_err(), AuthSetupError::InvalidHeaderName { .. }));
        let empty = ApiKeyAuth::builder().key(ApiKey::plain("k", "")).build();
        assert_eq!(empty.unwrap_err(), AuthSetupError::EmptyPrincipal);
        let scope = ApiKeyAuth::builder()
            .key(ApiKey::plain("k", "a").scopes(["a b"]))
            .build();
        assert!(matches!(scope.unwrap_err(), AuthSetupError::InvalidScope { .. }));
    }

    #[test]
    fn debug_shows_no_secret() {
        let b = ApiKeyAuth::builder()
            .pepper("pepper-secret")
            .key(ApiKey::plain("key-secret", "alice"));
        let mut shown = format!("{b:?}");
        shown += &format!("{:?}", b.build().unwrap());
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }
}
