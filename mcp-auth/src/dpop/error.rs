//! Why a DPoP request was refused.

use crate::DpopErrorCode;

/// Why a request using the `DPoP` scheme was refused. Its message becomes the challenge's
/// `error_description`, so it never contains the proof, the token or a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// The request carries no `DPoP` header.
    #[error("the request has no DPoP proof")]
    Missing,
    /// The request carries more than one `DPoP` header (RFC 9449 §4.3, item 1).
    #[error("the request has more than one DPoP header")]
    Repeated,
    /// The proof is longer than the configured bound (checked before any parsing).
    #[error("the DPoP proof is larger than {0} bytes")]
    TooLarge(usize),
    /// Not a well-formed JWS in compact serialization, or its header or claims are not JSON objects.
    #[error("the DPoP proof is malformed")]
    Malformed,
    /// The `typ` header parameter is not `dpop+jwt` (RFC 9449 §11.5).
    #[error("the DPoP proof typ is not dpop+jwt")]
    WrongType,
    /// The `alg` header parameter is `none`, symmetric, unknown or not accepted here.
    #[error("the DPoP proof algorithm is not accepted")]
    DisallowedAlgorithm,
    /// The header names critical extensions (`crit`), which this server does not understand.
    #[error("the DPoP proof has critical header parameters this server does not understand")]
    CriticalHeader,
    /// The `jwk` header parameter is missing, or not a public key usable with `alg`.
    #[error("the DPoP proof jwk is not a usable public key for its algorithm")]
    InvalidKey,
    /// The `jwk` header parameter holds private key members (RFC 9449 §4.3, item 7).
    #[error("the DPoP proof jwk contains a private key")]
    PrivateKey,
    /// The signature does not verify with the proof's own key.
    #[error("the DPoP proof signature is invalid")]
    BadSignature,
    /// A required claim is absent.
    #[error("the DPoP proof lacks the {0} claim")]
    MissingClaim(&'static str),
    /// A claim has the wrong type or an unusable value.
    #[error("the DPoP proof has an invalid {0} claim")]
    InvalidClaim(&'static str),
    /// `htm` is not the request's method.
    #[error("the DPoP proof htm does not match the request method")]
    WrongMethod,
    /// `htu` is not this endpoint's URL.
    #[error("the DPoP proof htu does not match the request URL")]
    WrongUrl,
    /// `iat` is outside the accepted window around the server's time.
    #[error("the DPoP proof iat is outside the accepted window")]
    NotFresh,
    /// `ath` is not the hash of the access token sent with the proof.
    #[error("the DPoP proof ath does not match the access token")]
    WrongAth,
    /// The proof (its key and `jti`) was already used.
    #[error("the DPoP proof was already used")]
    Replayed,
    /// The server requires a nonce and the proof carries none.
    #[error("the resource server requires a nonce in the DPoP proof")]
    NonceRequired,
    /// The proof's nonce is not one this server issued, or is no longer fresh.
    #[error("the DPoP proof nonce is stale or unknown")]
    StaleNonce,
    /// The access token sent with the `DPoP` scheme is not bound to a key (`cnf.jkt`).
    #[error("the access token is not bound to a DPoP key")]
    Unbound,
    /// The access token is bound to another key than the proof's (RFC 9449 §6).
    #[error("the DPoP proof key does not match the access token binding")]
    KeyMismatch,
}

impl DpopError {
    /// The error code of the `DPoP` challenge that refuses the request: `use_dpop_nonce` for
    /// the nonce errors, `invalid_token` for the token's binding, `invalid_dpop_proof` for the
    /// rest.
    pub fn code(&self) -> DpopErrorCode {
        match self {
            DpopError::NonceRequired | DpopError::StaleNonce => DpopErrorCode::UseDpopNonce,
            DpopError::Unbound | DpopError::KeyMismatch => DpopErrorCode::InvalidToken,
            _ => DpopErrorCode::InvalidDpopProof,
        }
    }
}
