//! The verifier hook for tokens the provider cannot check with keys (opaque
//! tokens, RFC 7662 introspection, other algorithms), and why a token is refused.

use std::future::Future;

use serde_json::{Map, Value};

use crate::BoxFuture;

/// Why a bearer token was refused. Its message becomes the challenge's
/// `error_description`, so it never contains the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a well-formed token (not a JWT, bad encoding, not JSON…).
    #[error("the token is malformed")]
    Malformed,
    /// Signed with an algorithm no configured key accepts.
    #[error("the token algorithm is not accepted")]
    DisallowedAlgorithm,
    /// No configured key matches the token's key id.
    #[error("no key matches the token")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the token signature is invalid")]
    BadSignature,
    /// `exp` is past (beyond the clock skew).
    #[error("the token expired")]
    Expired,
    /// `nbf` is in the future (beyond the clock skew).
    #[error("the token is not yet valid")]
    NotYetValid,
    /// `aud` names none of the accepted audiences.
    #[error("the token is not meant for this resource")]
    WrongAudience,
    /// `iss` is not an accepted issuer.
    #[error("the token issuer is not accepted")]
    WrongIssuer,
    /// A required claim is absent.
    #[error("the token lacks the {0} claim")]
    MissingClaim(String),
    /// A claim has the wrong type or an unusable value.
    #[error("the token has an invalid {0} claim")]
    InvalidClaim(String),
    /// Refused by a verifier, for the reason given (shown to the client).
    #[error("{0}")]
    Rejected(String),
    /// The authorization server says the token is not active (RFC 7662 `"active": false`:
    /// revoked, expired, unknown, or not for this client).
    #[error("the token is not active")]
    Inactive,
    /// The token could not be checked because the authorization server is unavailable: its
    /// keys were never fetched, or its introspection endpoint failed (network, timeout, a 5xx,
    /// an unusable answer). Not the client's fault: the bearer provider answers it with 503 and
    /// `Retry-After`, without `invalid_token`, so the client keeps its token and tries again.
    #[error("the authorization server is unavailable")]
    Unavailable,
}

impl TokenError {
    /// A verifier's refusal, with a description for the client (keep it free of secrets).
    pub fn rejected(description: impl Into<String>) -> Self {
        TokenError::Rejected(description.into())
    }
}

/// Checks tokens the bearer provider cannot verify with keys: returns the
/// token's claims, which then go through the same checks as a JWT's (`exp`,
/// `nbf`, `iss`, `aud` unless any audience is accepted, scopes, principal).
///
/// Closures are accepted through
/// [`BearerAuthBuilder::verifier_fn`](crate::BearerAuthBuilder::verifier_fn).
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token`, returning its claims.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Map<String, Value>, TokenError>>;
}

/// Adapts an async function of the token to [`TokenVerifier`].
pub(crate) struct FnVerifier<F>(pub(crate) F);

impl<F, Fut> TokenVerifier for FnVerifier<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Map<String, Value>, TokenError>> + Send + 'static,
{
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Map<String, Value>, TokenError>> {
        Box::pin((self.0)(token.to_owned()))
    }
}
