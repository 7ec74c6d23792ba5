//! DPoP (RFC 9449) on the resource-server side: access tokens bound to a key the client
//! proves it holds on every request, so that a leaked token alone is useless.
//!
//! A client sends a DPoP-bound token as `Authorization: DPoP <token>` together with a proof,
//! `DPoP: <JWS>`, signed with its key and naming the request (`htm`, `htu`), the time (`iat`),
//! a unique id (`jti`), the token's hash (`ath`) and, when the server asks for one, a nonce.
//! The token names the key it is bound to by its RFC 7638 thumbprint in `cnf.jkt`, as a JWT
//! claim or in the claims a [`TokenVerifier`](crate::TokenVerifier) returns (RFC 7662
//! introspection, RFC 9449 §6.2).
//!
//! [`BearerAuth`](crate::BearerAuth) checks DPoP when configured with
//! [`BearerAuthBuilder::dpop`](crate::BearerAuthBuilder::dpop) (feature `jwt`):
//!
//! | [`DpopMode`] | `Authorization: Bearer` | `Authorization: DPoP` + `DPoP` proof | challenges |
//! | --- | --- | --- | --- |
//! | `Off` (default) | any valid token, bound or not | refused as an unknown scheme | `Bearer` |
//! | `Allowed` | unbound tokens only: a token with `cnf.jkt` is refused (RFC 9449 §7.2) | bound tokens | `Bearer …, DPoP …` |
//! | `Required` | refused | bound tokens | `DPoP …` |
//!
//! Under `Off` the provider is a DPoP-unaware resource server: it accepts a DPoP-bound token
//! sent as a bearer token, which RFC 9449 §7.2 expects of such servers (a client may send a
//! bound token with the `Bearer` scheme when challenged with `Bearer` only). Choose `Allowed`
//! or `Required` to refuse that downgrade.
//!
//! # What is checked
//!
//! For a request with the `DPoP` scheme, in this order (RFC 9449 §4.3, §7.1):
//!
//! 1. exactly one `DPoP` header, at most [`DEFAULT_MAX_PROOF_LEN`] bytes (configurable), before
//!    anything parses it;
//! 2. a compact JWS whose header has `typ` `dpop+jwt`, an `alg` among the accepted ones
//!    ([`DEFAULT_ALGORITHMS`]: ES256 and RS256; `none` and HMAC can never be configured), no
//!    `crit`, and a `jwk` that is a public key fit for `alg` (P-256 for ES256, RSA of 2048 to
//!    4096 bits, …) without private members (`d`, `p`, `k`, …);
//! 3. the claims: `jti` (at most 256 bytes), `htm` equal to the request's method, `htu` equal
//!    to the endpoint's public URL ([`BearerAuthBuilder::dpop_url`](crate::BearerAuthBuilder::dpop_url);
//!    query and fragment ignored, scheme and host case, default ports, percent-encodings and
//!    dot segments normalised), `iat` within [`DEFAULT_IAT_WINDOW`] of the server's time
//!    either way, `ath` equal to the hash of the access token ([`access_token_hash`]);
//! 4. the signature, with the proof's own key;
//! 5. the nonce, when the server requires one ([`DpopOptions::require_nonce`]);
//! 6. the access token, exactly as a bearer token (signature or verifier, `exp`, `aud`, …);
//! 7. its `cnf.jkt` equal to the proof key's thumbprint ([`jwk_thumbprint`]);
//! 8. the proof not used before: its key's thumbprint and `jti`, hashed, go into a
//!    [`ReplayCache`] for as long as the proof could be accepted (in memory by default,
//!    [`MemoryReplayCache`]; shared by several instances with `mcp-store-redis`);
//! 9. the required scopes.
//!
//! # Refusals
//!
//! 401 with `WWW-Authenticate: DPoP realm="mcp", error="invalid_dpop_proof" | "invalid_token" |
//! "use_dpop_nonce", error_description="…", algs="ES256 RS256", resource_metadata="…"` (and
//! `scope` when scopes are required); 400 `invalid_request` for a malformed `Authorization`
//! header; 403 `insufficient_scope`. Under `Allowed` every 401 and 400 carries both a `Bearer`
//! and a `DPoP` challenge in one header value, the one of the scheme the client used holding the
//! error (RFC 9449 §7.2). A replay cache that is full or unreachable answers 503 (fail closed).
//!
//! # Nonces
//!
//! With [`DpopOptions::require_nonce`] a proof must carry a nonce the server issued: a proof
//! without one, or with a stale one, is refused with 401 `use_dpop_nonce` and a fresh nonce in
//! a `DPoP-Nonce` response header ([`DPOP_NONCE_HEADER`]), which every other 401 of the
//! provider carries too, so a client usually learns it from its first refusal. Nonces need no
//! state: each is its issue time and an HMAC of it under a secret (random per process, or
//! shared by instances with [`DpopOptions::nonce_secret`]), fresh for
//! [`DEFAULT_NONCE_LIFETIME`]. A nonce is not refreshed on success (that would need a header
//! on the successful response): when it goes stale, the next request is refused once with a new
//! one.
//!
//! The extra response headers travel in [`Challenge::headers`](crate::Challenge::headers): a
//! transport must append them to the refusal it sends, expose `DPoP-Nonce` and
//! `WWW-Authenticate` to browsers through CORS (`Access-Control-Expose-Headers`), and let them
//! send the `DPoP` request header (`Access-Control-Allow-Headers`).
//!
//! # Metadata
//!
//! [`ResourceMetadataBuilder::dpop_bound_access_tokens_required`](crate::ResourceMetadataBuilder::dpop_bound_access_tokens_required)
//! and
//! [`dpop_signing_alg_values_supported`](crate::ResourceMetadataBuilder::dpop_signing_alg_values_supported)
//! publish the configuration (RFC 9728 §2); [`BearerAuth::dpop_mode`](crate::BearerAuth::dpop_mode)
//! and [`BearerAuth::dpop_algorithms`](crate::BearerAuth::dpop_algorithms) say what it is.
//!
//! The replay seam ([`ReplayCache`], [`MemoryReplayCache`], [`ReplayError`]) is available
//! without the `jwt` feature; the rest of this module needs it.

mod replay;

#[cfg(feature = "jwt")]
mod error;
#[cfg(feature = "jwt")]
pub(crate) mod htu;
#[cfg(feature = "jwt")]
mod jwk;
#[cfg(feature = "jwt")]
pub(crate) mod nonce;
#[cfg(feature = "jwt")]
pub(crate) mod options;
#[cfg(feature = "jwt")]
pub(crate) mod proof;
#[cfg(all(test, feature = "jwt"))]
mod tests;

pub use replay::{DEFAULT_REPLAY_ENTRIES, MemoryReplayCache, ReplayCache, ReplayError};

#[cfg(feature = "jwt")]
pub use error::DpopError;
#[cfg(feature = "jwt")]
pub use jwk::{access_token_hash, jwk_thumbprint};
#[cfg(feature = "jwt")]
pub use options::{
    DEFAULT_ALGORITHMS, DEFAULT_IAT_WINDOW, DEFAULT_MAX_PROOF_LEN, DEFAULT_NONCE_LIFETIME, DpopMode, DpopOptions,
    MIN_NONCE_SECRET, SUPPORTED_ALGORITHMS,
};

/// The request header carrying a DPoP proof (`DPoP`; header names are case-insensitive).
pub const DPOP_HEADER: &str = "dpop";
/// The response header carrying a server-provided nonce (`DPoP-Nonce`, RFC 9449 §8, §9).
pub const DPOP_NONCE_HEADER: &str = "dpop-nonce";
