//! # mcp-auth
//!
//! Authentication for MCP servers. An MCP server on a network is an OAuth 2.1
//! resource server: every request (every HTTP verb, before any session
//! lookup) is authenticated by an [`AuthProvider`], which turns the request's
//! parts into an [`AuthInfo`] (a stable principal, scopes, claims) or refuses
//! it with a [`Challenge`] (401 or 403 with an RFC 6750 `WWW-Authenticate`).
//!
//! The principal is what owns sessions, tasks, request states and
//! subscriptions: another principal's state answers as "not found"
//! (behaviour invariant 4 in `docs/INVARIANTS.md`; the crate's place in the
//! workspace: `docs/ARCHITECTURE.md`).
//!
//! ## Providers
//!
//! Each provider lives in its own module and is built with a builder whose
//! `build()` returns `Result<_, AuthSetupError>`: bad key material, a missing
//! audience or a malformed hash fail there, before a transport binds a port.
//!
//! | provider | credentials | refusal |
//! | --- | --- | --- |
//! | [`NoAuth`] (default) | none; everyone is `anonymous` | never |
//! | [`BearerAuth`] (feature `jwt`, on by default) | `Authorization: Bearer <JWT>` (HS256, RS256, ES256, JWKS) or an opaque token checked by a [`TokenVerifier`]; optionally DPoP-bound tokens, `Authorization: DPoP <token>` with a `DPoP` proof ([`dpop`], RFC 9449) | `Bearer realm="mcp", error="invalid_token", …` (and `DPoP realm="mcp", algs="ES256 RS256", …`); 503 with `Retry-After` while the authorization server cannot be asked |
//! | `BearerAuth` with remote keys (feature `oidc`) | `Authorization: Bearer <JWT>` verified with the keys of an OpenID Connect issuer (`oidc_issuer`, discovery) or a JWKS URL (`jwks_uri`), fetched and refreshed by the provider | as above |
//! | `BearerAuth` with `Introspection` (feature `oidc`) | `Authorization: Bearer <token>` (opaque or not) asked about at the authorization server's RFC 7662 endpoint, answers cached | as above; `error_description="the token is not active"` |
//! | [`ApiKeyAuth`] | `x-api-key: <key>` or `Authorization: ApiKey <key>`, stored as peppered HMAC-SHA-256 hashes | `ApiKey header="x-api-key"` |
//! | [`BasicAuth`] | `Authorization: Basic …`, passwords stored as PBKDF2-SHA256 hashes | `Basic realm="mcp"` |
//! | [`CustomAuth`] | whatever an async function or another provider decides | its own challenge |
//!
//! [`RequireScopes`] wraps any provider and fails closed: an identity lacking
//! one of the required scopes gets a 403 `insufficient_scope` that names the
//! scopes. [`ResourceMetadata`] renders the RFC 9728 protected-resource
//! metadata document that a bearer challenge points at.
//!
//! ## DPoP
//!
//! With [`BearerAuthBuilder::dpop`] the bearer provider also accepts (or requires) access
//! tokens bound to a client's key (RFC 9449): every request then carries a proof, signed with
//! that key, of its method, URL and time and of the token, which the provider checks, with
//! the token's `cnf.jkt` binding, a replay cache of used proofs ([`ReplayCache`]) and optional
//! server nonces (whose `DPoP-Nonce` response header travels in [`Challenge::headers`]). See
//! [`dpop`].
//!
//! ## Talking to the authorization server (feature `oidc`)
//!
//! The feature `oidc` (not on by default; it implies `jwt`) adds a small HTTPS client:
//! hyper, rustls with the ring provider, and the Mozilla roots compiled in (`webpki-roots`, so
//! it trusts the same authorities on every host, containers without a trust store included).
//! It fetches only the URLs the configuration names, or that the configured issuer's own
//! metadata names; `https` is required except on a loopback host; each exchange has a timeout
//! (`DEFAULT_FETCH_TIMEOUT`) and a bound on the answer (`MAX_FETCH_BODY`); redirects are
//! not followed; failures are `FetchError`s, logged through `tracing`. With it:
//!
//! * `BearerAuthBuilder::oidc_issuer` and `BearerAuthBuilder::jwks_uri`: the signing keys
//!   are fetched when the first token comes (or by `BearerAuth::fetch_keys`), kept per their
//!   `Cache-Control` (1 minute to 24 hours, 5 minutes when it says nothing), refetched for an
//!   unknown `kid` at most once per `key_refetch_interval`
//!   however many such tokens arrive, and the last good set is kept when a fetch fails.
//!   RS256 and ES256 are accepted unless `algorithms` says
//!   otherwise; HS* never, for keys anyone can fetch.
//! * `introspection::Introspection`: a `TokenVerifier` asking the RFC 7662 endpoint, its
//!   answers cached by a keyed hash of the token until the token's `exp` (at most 5 minutes),
//!   inactive ones for 10 s.
//!
//! A token that cannot be checked because the authorization server is unavailable (its keys
//! never fetched, its introspection endpoint failing) is `TokenError::Unavailable`, answered
//! 503 with `Retry-After` and no `invalid_token`: the client's token may be good, so it should
//! try again rather than throw the token away.
//!
//! ## Secrets
//!
//! No token, key, password, pepper, hash or client secret is ever logged, and no type of this
//! crate shows one in its `Debug` output. The hashes that configure the
//! API-key and basic providers come from [`hash_api_key`] and
//! [`hash_password`] (the `hash` example prints them from the command line).
//! Comparisons of secrets are constant-time, and an unknown basic-auth user
//! costs the same PBKDF2 work as a known one.
//!
//! ## Floods of wrong credentials
//!
//! A password check costs milliseconds of CPU by design. [`BasicAuth`] bounds the checks in
//! flight, throttles failed attempts per client address, per (address, user) and per user
//! ([`throttle`], answered 429 with `Retry-After` at no cost), and remembers verified
//! passwords for a short while ([`cache`]), so that one client's flood of wrong passwords
//! costs that client rather than everyone sharing the bound.

/// The `http` crate, whose request parts a provider reads (re-exported so that a provider can
/// be written without depending on it).
pub use http;
pub use mcp_protocol::auth::{ANONYMOUS, AuthInfo};

pub mod apikey;
pub mod basic;
#[cfg(feature = "jwt")]
pub mod bearer;
mod bounded;
pub mod cache;
mod challenge;
mod client;
mod credentials;
pub mod custom;
pub mod dpop;
mod error;
#[cfg(feature = "oidc")]
mod fetch;
mod hash;
#[cfg(feature = "oidc")]
pub mod introspection;
pub mod metadata;
pub mod none;
mod provider;
mod scopes;
#[cfg(all(test, feature = "oidc"))]
mod test_server;
pub mod throttle;

pub use apikey::{ApiKey, ApiKeyAuth, ApiKeyAuthBuilder};
pub use basic::{BasicAuth, BasicAuthBuilder, BasicAuthStats, BasicUser, DEFAULT_MAX_CONCURRENT_HASHES};
#[cfg(feature = "jwt")]
pub use bearer::{BearerAuth, BearerAuthBuilder, JwtKey, TokenError, TokenVerifier};
pub use cache::{CacheConfig, DEFAULT_CACHE_ENTRIES, DEFAULT_CACHE_TTL};
pub use challenge::{
    BearerChallenge, BearerError, Challenge, DEFAULT_REALM, DpopChallenge, DpopErrorCode, WwwAuthenticate,
};
pub use client::ClientAddr;
pub use custom::{CustomAuth, RequestHead};
#[cfg(feature = "jwt")]
pub use dpop::{DpopError, DpopMode, DpopOptions};
pub use dpop::{MemoryReplayCache, ReplayCache, ReplayError};
pub use error::AuthSetupError;
#[cfg(feature = "oidc")]
pub use fetch::{DEFAULT_FETCH_TIMEOUT, FetchError, MAX_FETCH_BODY};
pub use hash::{
    API_KEY_HASH_PREFIX, DEFAULT_PBKDF2_ITERATIONS, MAX_PBKDF2_ITERATIONS, MIN_PBKDF2_ITERATIONS, PASSWORD_HASH_PREFIX,
    hash_api_key, hash_password, hash_password_with, verify_password,
};
#[cfg(feature = "oidc")]
pub use introspection::{Introspection, IntrospectionBuilder};
pub use metadata::{ResourceMetadata, ResourceMetadataBuilder};
pub use none::NoAuth;
pub use provider::{AuthProvider, BoxFuture};
pub use scopes::{AuthProviderExt, RequireScopes};
pub use throttle::{DEFAULT_THROTTLE_ENTRIES, FailureLimit, ThrottleConfig};

/// Builds the request parts that tests of the providers authenticate.
#[cfg(test)]
pub(crate) fn test_parts(headers: &[(&str, &str)]) -> http::request::Parts {
    let mut request = http::Request::builder().method("POST").uri("/mcp");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(()).unwrap().into_parts().0
}
