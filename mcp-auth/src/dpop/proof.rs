//! Checking one DPoP proof (RFC 9449 §4.3) against the request it came with, as a pure function
//! of the proof, the rules, the request and the time. The cheap checks come first; the
//! signature, the costly one, last.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use jsonwebtoken::Algorithm;
use serde_json::{Map, Value};

use super::htu::{self, Normalized};
use super::jwk::{access_token_hash, proof_key};
use super::{DPOP_HEADER, DpopError};

/// The longest `jti` accepted (RFC 9449 §11.1: refuse unnecessarily large ones).
pub(crate) const MAX_JTI_LEN: usize = 256;

/// What a proof must satisfy.
#[derive(Debug, Clone)]
pub(crate) struct ProofRules {
    /// The accepted algorithms: asymmetric only (checked when configured).
    pub(crate) algorithms: Vec<Algorithm>,
    /// How far `iat` may be from the server's time, either way, in seconds.
    pub(crate) iat_window_secs: u64,
    /// The longest proof accepted, in bytes.
    pub(crate) max_len: usize,
    /// The URLs `htu` may name.
    pub(crate) urls: Vec<Normalized>,
}

/// What a proof is checked against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProofRequest<'a> {
    /// The request's method.
    pub(crate) method: &'a str,
    /// The request's path (origin form).
    pub(crate) path: &'a str,
    /// The access token sent with the proof.
    pub(crate) access_token: &'a str,
    /// Seconds since the epoch.
    pub(crate) now: u64,
}

/// A proof that passed every check of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckedProof {
    /// The RFC 7638 thumbprint of its key.
    pub(crate) jkt: String,
    pub(crate) jti: String,
    pub(crate) iat: u64,
    pub(crate) nonce: Option<String>,
}

/// The single `DPoP` header of a request, within `max_len` bytes (checked before anything
/// reads it).
pub(crate) fn single_header(headers: &HeaderMap, max_len: usize) -> Result<&str, DpopError> {
    let mut values = headers.get_all(DPOP_HEADER).iter();
    let first = values.next().ok_or(DpopError::Missing)?;
    if values.next().is_some() {
        return Err(DpopError::Repeated);
    }
    if first.len() > max_len {
        return Err(DpopError::TooLarge(max_len));
    }
    first.to_str().map_err(|_| DpopError::Malformed)
}

/// A base64url segment decoded as a JSON object.
fn json_object(segment: &str) -> Result<Map<String, Value>, DpopError> {
    let bytes = URL_SAFE_NO_PAD.decode(segment).map_err(|_| DpopError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| DpopError::Malformed)
}

/// Whether `typ` names `application/dpop+jwt` (media types are case-insensitive, and the
/// `application/` prefix may be left out: RFC 7515 §4.1.9).
fn is_dpop_type(typ: &str) -> bool {
    let typ = typ
        .get(..12)
        .filter(|p| p.eq_ignore_ascii_case("application/"))
        .map_or(typ, |_| &typ[12..]);
    typ.eq_ignore_ascii_case("dpop+jwt")
}

/// A string claim, required.
fn string<'a>(claims: &'a Map<String, Value>, name: &'static str) -> Result<&'a str, DpopError> {
    match claims.get(name) {
        None => Err(DpopError::MissingClaim(name)),
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(DpopError::InvalidClaim(name)),
    }
}

/// A NumericDate claim, required: a non-negative number of seconds (fractions rounded down).
fn numeric_date(claims: &Map<String, Value>, name: &'static str) -> Result<u64, DpopError> {
    match claims.get(name) {
        None => Err(DpopError::MissingClaim(name)),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(v), _) => Ok(v),
            (None, Some(f)) if f.is_finite() && f >= 0.0 && f < u64::MAX as f64 => Ok(f as u64),
            _ => Err(DpopError::InvalidClaim(name)),
        },
        Some(_) => Err(DpopError::InvalidClaim(name)),
    }
}

/// Checks `proof` (RFC 9449 §4.3, items 2 to 9, 11 and 12's `ath`; the nonce, the binding to
/// the token and the replay are the caller's).
pub(crate) fn check(proof: &str, rules: &ProofRules, request: &ProofRequest<'_>) -> Result<CheckedProof, DpopError> {
    if proof.len() > rules.max_len {
        return Err(DpopError::TooLarge(rules.max_len));
    }
    if !proof
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(DpopError::Malformed);
    }
    let mut parts = proof.split('.');
    let (Some(header_b64), Some(claims_b64), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(DpopError::Malformed);
    };
    let header = json_object(header_b64)?;
    match header.get("typ") {
        Some(Value::String(typ)) if is_dpop_type(typ) => {}
        _ => return Err(DpopError::WrongType),
    }
    let alg = match header.get("alg") {
        Some(Value::String(alg)) => alg
            .parse::<Algorithm>()
            .ok()
            .filter(|a| rules.algorithms.contains(a))
            .ok_or(DpopError::DisallowedAlgorithm)?,
        _ => return Err(DpopError::DisallowedAlgorithm),
    };
    if header.contains_key("crit") {
        return Err(DpopError::CriticalHeader);
    }
    let key = proof_key(header.get("jwk").ok_or(DpopError::InvalidKey)?, alg)?;

    let claims = json_object(claims_b64)?;
    let jti = string(&claims, "jti")?;
    if jti.len() > MAX_JTI_LEN {
        return Err(DpopError::InvalidClaim("jti"));
    }
    if string(&claims, "htm")? != request.method {
        return Err(DpopError::WrongMethod);
    }
    let htu = htu::normalize(string(&claims, "htu")?).ok_or(DpopError::InvalidClaim("htu"))?;
    if !url_matches(&htu, &rules.urls, request.path) {
        return Err(DpopError::WrongUrl);
    }
    let iat = numeric_date(&claims, "iat")?;
    if iat.abs_diff(request.now) > rules.iat_window_secs {
        return Err(DpopError::NotFresh);
    }
    if string(&claims, "ath")? != access_token_hash(request.access_token) {
        return Err(DpopError::WrongAth);
    }
    let nonce = match claims.get("nonce") {
        None => None,
        Some(Value::String(n)) => Some(n.clone()),
        Some(_) => return Err(DpopError::InvalidClaim("nonce")),
    };

    if signature.is_empty() {
        return Err(DpopError::BadSignature);
    }
    let message_len = header_b64.len() + 1 + claims_b64.len();
    match jsonwebtoken::crypto::verify(signature, &proof.as_bytes()[..message_len], &key.key, alg) {
        Ok(true) => {}
        Ok(false) => return Err(DpopError::BadSignature),
        Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::Base64(_)) => return Err(DpopError::Malformed),
        Err(_) => return Err(DpopError::InvalidKey),
    }
    Ok(CheckedProof {
        jkt: key.thumbprint,
        jti: jti.to_owned(),
        iat,
        nonce,
    })
}

/// Whether `htu` names one of the configured URLs: those whose path is the request's when
/// there are some, else any of them (a proxy in front of the server changed the path).
fn url_matches(htu: &Normalized, urls: &[Normalized], request_path: &str) -> bool {
    let path = htu::normalize_request_path(request_path);
    let same_path = |u: &&Normalized| path.as_deref() == Some(u.path());
    if urls.iter().any(|u| same_path(&u)) {
        urls.iter().filter(same_path).any(|u| u == htu)
    } else {
        urls.iter().any(|u| u == htu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpop_types() {
        for ok in ["dpop+jwt", "DPoP+JWT", "application/dpop+jwt", "Application/DPOP+jwt"] {
            assert!(is_dpop_type(ok), "{ok}");
        }
        for bad in [
            "jwt",
            "JWT",
            "dpop",
            "application/jwt",
            "at+jwt",
            "",
            "application/",
            "x/dpop+jwt",
        ] {
            assert!(!is_dpop_type(bad), "{bad}");
        }
    }

    #[test]
    fn single_dpop_header_within_bounds() {
        let mut h = HeaderMap::new();
        assert_eq!(single_header(&h, 10), Err(DpopError::Missing));
        h.append(DPOP_HEADER, http::HeaderValue::from_static("a.b.c"));
        assert_eq!(single_header(&h, 10), Ok("a.b.c"));
        assert_eq!(single_header(&h, 4), Err(DpopError::TooLarge(4)));
        h.append(DPOP_HEADER, http::HeaderValue::from_static("d.e.f"));
        assert_eq!(single_header(&h, 10), Err(DpopError::Repeated));
    }

    #[test]
    fn url_matching_prefers_the_request_path() {
        let urls: Vec<Normalized> = [
            "https://h.example/mcp",
            "https://h.example/sse",
            "https://other.example/api/mcp",
        ]
        .iter()
        .map(|u| htu::normalize(u).unwrap())
        .collect();
        let url = |u: &str| htu::normalize(u).unwrap();
        assert!(url_matches(&url("https://h.example/mcp"), &urls, "/mcp"));
        assert!(
            !url_matches(&url("https://h.example/sse"), &urls, "/mcp"),
            "another endpoint's proof"
        );
        assert!(url_matches(&url("https://h.example/sse"), &urls, "/sse?session=1"));
        // A path none of the URLs has (a proxy rewrote it): any configured URL.
        assert!(url_matches(&url("https://other.example/api/mcp"), &urls, "/internal"));
        assert!(!url_matches(&url("https://evil.example/mcp"), &urls, "/mcp"));
    }
}
