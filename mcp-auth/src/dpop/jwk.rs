//! The proof's public key (the `jwk` header parameter): checked against the algorithm, refused
//! when it holds private members, turned into a verification key, and its RFC 7638 thumbprint.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::dpop::error::DpopError;

/// Members that only a private (or symmetric) key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1;
/// RFC 8037 §2).
const PRIVATE_MEMBERS: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
/// The smallest RSA modulus accepted, in bits.
const MIN_RSA_BITS: usize = 2048;
/// The largest RSA modulus accepted, in bits (the verifier's own bound).
const MAX_RSA_BITS: usize = 4096;

/// A proof's key, ready to verify its signature.
pub(crate) struct ProofKey {
    pub(crate) key: DecodingKey,
    pub(crate) thumbprint: String,
}

/// The base64url (no padding) of the SHA-256 of `bytes`.
fn sha256_b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

/// The `ath` of an access token (RFC 9449 §4.2): the base64url encoding of the SHA-256 hash
/// of the token's ASCII characters.
///
/// ```
/// // RFC 9449 §7.1, figures 13 and 14.
/// assert_eq!(
///     mcp_auth::dpop::access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
///     "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
/// );
/// ```
pub fn access_token_hash(token: &str) -> String {
    sha256_b64(token.as_bytes())
}

/// A string member of the key, required.
fn member<'a>(jwk: &'a Map<String, Value>, name: &str) -> Result<&'a str, DpopError> {
    match jwk.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(DpopError::InvalidKey),
    }
}

/// A base64url member decoded.
fn bytes(jwk: &Map<String, Value>, name: &str) -> Result<Vec<u8>, DpopError> {
    URL_SAFE_NO_PAD
        .decode(member(jwk, name)?)
        .map_err(|_| DpopError::InvalidKey)
}

/// The RFC 7638 JWK SHA-256 thumbprint of a public key: the base64url SHA-256 of the JSON
/// object of its required members (`EC`: `crv`, `kty`, `x`, `y`; `RSA`: `e`, `kty`, `n`;
/// `OKP`: `crv`, `kty`, `x`), in lexicographic order, without whitespace. The value of a
/// `cnf.jkt` claim (RFC 9449 §6.1).
///
/// ```
/// use serde_json::json;
///
/// // RFC 7638 §3.1.
/// let jwk = json!({
///     "kty": "RSA",
///     "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
///     "e": "AQAB",
///     "alg": "RS256",
///     "kid": "2011-04-29"
/// });
/// let thumbprint = mcp_auth::dpop::jwk_thumbprint(jwk.as_object().unwrap()).unwrap();
/// assert_eq!(thumbprint, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
/// ```
pub fn jwk_thumbprint(jwk: &Map<String, Value>) -> Result<String, DpopError> {
    let required: &[&str] = match member(jwk, "kty")? {
        "EC" => &["crv", "kty", "x", "y"],
        "RSA" => &["e", "kty", "n"],
        "OKP" => &["crv", "kty", "x"],
        _ => return Err(DpopError::InvalidKey),
    };
    let mut canonical = BTreeMap::new();
    for name in required {
        canonical.insert(*name, member(jwk, name)?);
    }
    let json = serde_json::to_string(&canonical).map_err(|_| DpopError::InvalidKey)?;
    Ok(sha256_b64(json.as_bytes()))
}

/// Checks the `jwk` header parameter of a proof signed with `alg` and returns its key.
pub(crate) fn proof_key(jwk: &Value, alg: Algorithm) -> Result<ProofKey, DpopError> {
    let Value::Object(jwk) = jwk else {
        return Err(DpopError::InvalidKey);
    };
    if PRIVATE_MEMBERS.iter().any(|m| jwk.contains_key(*m)) {
        return Err(DpopError::PrivateKey);
    }
    match jwk.get("alg") {
        None => {}
        Some(Value::String(a)) if a.parse::<Algorithm>().ok() == Some(alg) => {}
        Some(_) => return Err(DpopError::InvalidKey),
    }
    let key = match (member(jwk, "kty")?, alg) {
        ("EC", Algorithm::ES256 | Algorithm::ES384) => {
            let (crv, len) = if alg == Algorithm::ES256 {
                ("P-256", 32)
            } else {
                ("P-384", 48)
            };
            if member(jwk, "crv")? != crv || bytes(jwk, "x")?.len() != len || bytes(jwk, "y")?.len() != len {
                return Err(DpopError::InvalidKey);
            }
            DecodingKey::from_ec_components(member(jwk, "x")?, member(jwk, "y")?)
        }
        (
            "RSA",
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512,
        ) => {
            let n = bytes(jwk, "n")?;
            let bits = significant_bits(&n);
            let e = bytes(jwk, "e")?;
            if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) || e.is_empty() || e.len() > 8 {
                return Err(DpopError::InvalidKey);
            }
            Ok(DecodingKey::from_rsa_raw_components(&n, &e))
        }
        ("OKP", Algorithm::EdDSA) => {
            if member(jwk, "crv")? != "Ed25519" || bytes(jwk, "x")?.len() != 32 {
                return Err(DpopError::InvalidKey);
            }
            DecodingKey::from_ed_components(member(jwk, "x")?)
        }
        _ => return Err(DpopError::InvalidKey),
    }
    .map_err(|_| DpopError::InvalidKey)?;
    Ok(ProofKey {
        key,
        thumbprint: jwk_thumbprint(jwk)?,
    })
}

/// The bit length of a big-endian unsigned integer.
fn significant_bits(be: &[u8]) -> usize {
    match be.iter().position(|b| *b != 0) {
        None => 0,
        Some(i) => (be.len() - i) * 8 - be[i].leading_zeros() as usize,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RFC7638_N: &str = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn rfc7638_example_thumbprint() {
        let jwk = obj(json!({"kty": "RSA", "n": RFC7638_N, "e": "AQAB", "alg": "RS256", "kid": "2011-04-29"}));
        assert_eq!(
            jwk_thumbprint(&jwk).unwrap(),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
        // Member order and optional members do not matter.
        let reordered = obj(json!({"e": "AQAB", "use": "sig", "n": RFC7638_N, "kty": "RSA"}));
        assert_eq!(jwk_thumbprint(&reordered), jwk_thumbprint(&jwk));
    }

    #[test]
    fn rfc9449_example_ec_thumbprint() {
        // RFC 9449 figure 4's key is the one bound by `cnf.jkt` in figure 9.
        let jwk = obj(json!({
            "kty": "EC",
            "x": "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
            "y": "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA",
            "crv": "P-256"
        }));
        assert_eq!(
            jwk_thumbprint(&jwk).unwrap(),
            "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
        );
        assert!(proof_key(&Value::Object(jwk), Algorithm::ES256).is_ok());
    }

    #[test]
    fn thumbprint_needs_the_required_members() {
        for bad in [
            json!({"kty": "EC", "crv": "P-256", "x": "AA"}),
            json!({"kty": "RSA", "n": RFC7638_N}),
            json!({"kty": "oct", "k": "c2VjcmV0"}),
            json!({"n": RFC7638_N, "e": "AQAB"}),
            json!({"kty": "RSA", "n": RFC7638_N, "e": 3}),
        ] {
            assert_eq!(jwk_thumbprint(&obj(bad.clone())), Err(DpopError::InvalidKey), "{bad}");
        }
    }

    #[test]
    fn keys_must_fit_the_algorithm() {
        let rsa = json!({"kty": "RSA", "n": RFC7638_N, "e": "AQAB"});
        assert!(proof_key(&rsa, Algorithm::RS256).is_ok());
        assert!(proof_key(&rsa, Algorithm::PS256).is_ok());
        for alg in [Algorithm::ES256, Algorithm::EdDSA, Algorithm::HS256] {
            assert!(matches!(proof_key(&rsa, alg), Err(DpopError::InvalidKey)), "{alg:?}");
        }
        let mut with_alg = rsa.clone();
        with_alg["alg"] = json!("RS512");
        assert!(matches!(
            proof_key(&with_alg, Algorithm::RS256),
            Err(DpopError::InvalidKey)
        ));
        // A 1024-bit modulus is too weak.
        let short = json!({"kty": "RSA", "n": URL_SAFE_NO_PAD.encode([0xffu8; 128]), "e": "AQAB"});
        assert!(matches!(
            proof_key(&short, Algorithm::RS256),
            Err(DpopError::InvalidKey)
        ));
        let p384 = json!({"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"});
        assert!(matches!(proof_key(&p384, Algorithm::ES256), Err(DpopError::InvalidKey)));
        assert!(matches!(
            proof_key(&json!("key"), Algorithm::ES256),
            Err(DpopError::InvalidKey)
        ));
    }

    #[test]
    fn private_members_are_refused() {
        for member in PRIVATE_MEMBERS {
            let mut jwk = json!({"kty": "RSA", "n": RFC7638_N, "e": "AQAB"});
            jwk[*member] = json!("AQAB");
            assert!(
                matches!(proof_key(&jwk, Algorithm::RS256), Err(DpopError::PrivateKey)),
                "{member}"
            );
        }
    }

    #[test]
    fn bit_lengths() {
        assert_eq!(significant_bits(&[]), 0);
        assert_eq!(significant_bits(&[0, 0]), 0);
        assert_eq!(significant_bits(&[1]), 1);
        assert_eq!(significant_bits(&[0, 0x80, 0]), 16);
        assert_eq!(significant_bits(&[0xff; 256]), 2048);
    }
}
