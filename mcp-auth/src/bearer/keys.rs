//! Verification keys: given directly (HS256 secret, RS256/ES256 PEM public
//! keys) or as a JWKS document, and the choice of key for a token.

use std::str::FromStr;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::verifier::TokenError;
use crate::AuthSetupError;

/// The shortest HS256 secret accepted (RFC 7518 §3.2: at least the hash size).
const MIN_HMAC_SECRET: usize = 32;

#[derive(Clone)]
enum Material {
    Secret(Vec<u8>),
    RsaPem(Vec<u8>),
    EcPem(Vec<u8>),
}

/// A verification key given directly, with an optional key id (`kid`).
///
/// Its `Debug` output shows the algorithm and key id, never the key.
#[derive(Clone)]
pub struct JwtKey {
    kid: Option<String>,
    material: Material,
}

impl JwtKey {
    /// An HS256 shared secret (at least 32 bytes, RFC 7518 §3.2).
    pub fn hs256(secret: impl Into<Vec<u8>>) -> Self {
        Self::with(Material::Secret(secret.into()))
    }

    /// An RS256 public key in PEM (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY`).
    pub fn rs256_pem(pem: impl Into<Vec<u8>>) -> Self {
        Self::with(Material::RsaPem(pem.into()))
    }

    /// An ES256 (P-256) public key in PEM (SPKI `PUBLIC KEY`).
    pub fn es256_pem(pem: impl Into<Vec<u8>>) -> Self {
        Self::with(Material::EcPem(pem.into()))
    }

    fn with(material: Material) -> Self {
        JwtKey { kid: None, material }
    }

    /// Restricts the key to tokens whose header names this `kid`. A key
    /// without a kid is tried for any token of its algorithm whose kid matches
    /// no other key.
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    fn algorithm(&self) -> Algorithm {
        match self.material {
            Material::Secret(_) => Algorithm::HS256,
            Material::RsaPem(_) => Algorithm::RS256,
            Material::EcPem(_) => Algorithm::ES256,
        }
    }

    fn decoding_key(&self, index: usize) -> Result<DecodingKey, AuthSetupError> {
        let invalid = |e: jsonwebtoken::errors::Error| AuthSetupError::InvalidKey {
            index,
            reason: e.to_string(),
        };
        match &self.material {
            Material::Secret(s) if s.len() < MIN_HMAC_SECRET => Err(AuthSetupError::WeakSecret { index, len: s.len() }),
            Material::Secret(s) => Ok(DecodingKey::from_secret(s)),
            Material::RsaPem(pem) => DecodingKey::from_rsa_pem(pem).map_err(invalid),
            Material::EcPem(pem) => DecodingKey::from_ec_pem(pem).map_err(invalid),
        }
    }
}

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtKey")
            .field("alg", &self.algorithm())
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// A parsed key ready to verify.
struct VerifyingKey {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

/// Every key a bearer provider verifies with.
pub(crate) struct KeySet {
    keys: Vec<VerifyingKey>,
}

impl KeySet {
    /// Parses direct keys and JWKS documents; fails on any unusable key. When `allowed` is
    /// given, a direct key of another algorithm is an error and a JWKS key of another
    /// algorithm is skipped.
    pub(crate) fn new(
        direct: &[JwtKey],
        jwks: &[JwkSet],
        allowed: Option<&[Algorithm]>,
    ) -> Result<Self, AuthSetupError> {
        let mut keys = Vec::new();
        for (index, k) in direct.iter().enumerate() {
            let alg = k.algorithm();
            if allowed.is_some_and(|list| !list.contains(&alg)) {
                return Err(AuthSetupError::AlgorithmNotAllowed {
                    alg: format!("{alg:?}"),
                    reason: "a configured key uses an algorithm the algorithm list leaves out",
                });
            }
            keys.push(VerifyingKey {
                kid: k.kid.clone(),
                alg,
                key: k.decoding_key(index)?,
            });
        }
        for set in jwks {
            let before = keys.len();
            for jwk in &set.keys {
                if let Some(k) = from_jwk(jwk)?
                    && allowed.is_none_or(|list| list.contains(&k.alg))
                {
                    keys.push(k);
                }
            }
            if keys.len() == before {
                return Err(AuthSetupError::EmptyJwks);
            }
        }
        Ok(KeySet { keys })
    }

    /// Parses a JWKS document fetched from an authorization server: its signing keys of the
    /// `allowed` algorithms (never HS*, which [`from_jwk`] skips). Unlike a configured
    /// document, a key that cannot be used is skipped (logged), so that one odd key published
    /// beside good ones does not cost them; a document that is not a JWK set, or that leaves
    /// no usable key, is an error.
    #[cfg(feature = "oidc")]
    pub(crate) fn from_remote(doc: &Map<String, Value>, allowed: &[Algorithm]) -> Result<Self, String> {
        let Some(Value::Array(entries)) = doc.get("keys") else {
            return Err("not a JWK set (no keys array)".to_owned());
        };
        let mut keys = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let jwk: Jwk = match serde_json::from_value(entry.clone()) {
                Ok(jwk) => jwk,
                Err(e) => {
                    tracing::debug!(index, error = %e, "JWKS key skipped: not a usable JWK");
                    continue;
                }
            };
            match from_jwk(&jwk) {
                Ok(Some(k)) if allowed.contains(&k.alg) => keys.push(k),
                Ok(Some(k)) => tracing::debug!(index, alg = ?k.alg, "JWKS key skipped: algorithm not accepted"),
                Ok(None) => tracing::debug!(index, "JWKS key skipped: not a signing key"),
                Err(e) => tracing::debug!(index, error = %e, "JWKS key skipped"),
            }
        }
        if keys.is_empty() {
            return Err("the JWK set has no usable signing key".to_owned());
        }
        Ok(KeySet { keys })
    }

    /// How many keys there are.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Verifies `token` with the key its header selects, then the registered
    /// claims with `validation` (whose algorithm list is replaced by the key's).
    pub(crate) fn verify(&self, token: &str, validation: &Validation) -> Result<Map<String, Value>, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        let same_alg = || self.keys.iter().filter(|k| k.alg == header.alg);
        let candidates: Vec<&VerifyingKey> = match header.kid.as_deref() {
            Some(kid) if same_alg().any(|k| k.kid.as_deref() == Some(kid)) => {
                same_alg().filter(|k| k.kid.as_deref() == Some(kid)).collect()
            }
            Some(_) => same_alg().filter(|k| k.kid.is_none()).collect(),
            None => same_alg().collect(),
        };
        if candidates.is_empty() {
            return Err(if same_alg().next().is_none() {
                TokenError::DisallowedAlgorithm
            } else {
                TokenError::UnknownKey
            });
        }
        let mut validation = validation.clone();
        validation.algorithms = vec![header.alg];
        for key in candidates {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => continue,
                Err(e) => return Err(map_error(e)),
            }
        }
        Err(TokenError::BadSignature)
    }
}

/// A usable signing key from a JWK; `None` for keys meant for something else
/// (encryption, symmetric keys, unknown algorithms).
fn from_jwk(jwk: &Jwk) -> Result<Option<VerifyingKey>, AuthSetupError> {
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return Ok(None);
    }
    let alg = match (jwk.common.key_algorithm, &jwk.algorithm) {
        (_, AlgorithmParameters::OctetKey(_)) => return Ok(None),
        (Some(KeyAlgorithm::UNKNOWN_ALGORITHM), _) => return Ok(None),
        (Some(ka), _) => match Algorithm::from_str(&ka.to_string()) {
            Ok(alg) => alg,
            Err(_) => return Ok(None),
        },
        (None, AlgorithmParameters::RSA(_)) => Algorithm::RS256,
        (None, AlgorithmParameters::EllipticCurve(ec)) => match ec.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            _ => return Ok(None),
        },
        (None, AlgorithmParameters::OctetKeyPair(_)) => Algorithm::EdDSA,
    };
    if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
        return Ok(None);
    }
    let key = DecodingKey::from_jwk(jwk).map_err(|e| AuthSetupError::InvalidJwks {
        reason: format!("key {:?}: {e}", jwk.common.key_id.as_deref().unwrap_or("")),
    })?;
    Ok(Some(VerifyingKey {
        kid: jwk.common.key_id.clone(),
        alg,
        key,
    }))
}

/// Parses a JWKS document.
pub(crate) fn parse_jwks(json: &str) -> Result<JwkSet, AuthSetupError> {
    serde_json::from_str(json).map_err(|e| AuthSetupError::InvalidJwks {
        reason: format!("not a JWK set: {e}"),
    })
}

fn map_error(e: jsonwebtoken::errors::Error) -> TokenError {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => TokenError::Expired,
        K::ImmatureSignature => TokenError::NotYetValid,
        K::InvalidAudience => TokenError::WrongAudience,
        K::InvalidIssuer => TokenError::WrongIssuer,
        K::InvalidSignature => TokenError::BadSignature,
        K::InvalidAlgorithm | K::MissingAlgorithm => TokenError::DisallowedAlgorithm,
        K::MissingRequiredClaim(c) => TokenError::MissingClaim(c.clone()),
        K::InvalidClaimFormat(c) => TokenError::InvalidClaim(c.clone()),
        K::InvalidToken | K::Base64(_) | K::Json(_) | K::Utf8(_) => TokenError::Malformed,
        other => {
            tracing::warn!(error = ?other, "bearer token verification failed on the key");
            TokenError::BadSignature
        }
    }
}
