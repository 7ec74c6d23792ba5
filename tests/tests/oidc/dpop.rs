//! DPoP proofs (RFC 9449 §4.2) as a client makes them: a P-256 key of its own, and a JWS of
//! `typ` `dpop+jwt` whose header carries the public key, signed over the request's method and
//! URL, the time, a fresh `jti` and (for a resource request) the access token's hash.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use sha2::{Digest, Sha256};

/// A client's DPoP key.
pub(crate) struct DpopKey {
    signing: EncodingKey,
    jwk: Jwk,
}

impl DpopKey {
    /// A fresh P-256 key.
    pub(crate) fn generate() -> DpopKey {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
        let point = pair.public_key_raw();
        assert_eq!(point.len(), 65, "an uncompressed P-256 point");
        let jwk = json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        });
        DpopKey {
            signing: EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).expect("the key in PEM"),
            jwk: serde_json::from_value(jwk).expect("a JWK"),
        }
    }

    /// A proof of `method url`, for `access_token` when one is presented.
    pub(crate) fn proof(&self, method: &str, url: &str, access_token: Option<&str>) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs();
        let mut claims = json!({
            "jti": format!("{:032x}", rand_u128()),
            "htm": method,
            "htu": url,
            "iat": now,
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        }
        jsonwebtoken::encode(&header, &claims, &self.signing).expect("a signed proof")
    }
}

/// A random `jti`.
fn rand_u128() -> u128 {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("randomness");
    u128::from_le_bytes(bytes)
}
