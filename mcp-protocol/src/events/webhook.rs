//! Webhook delivery as the design profiles [Standard Webhooks]: `whsec_` secrets, the
//! `v1,` HMAC-SHA256 signature over `id.timestamp.body`, the headers every delivery carries,
//! control envelopes (`verification`, `gap`, `terminated`), what an endpoint's answer means
//! (delivered, retry, give up) and the retry schedule.
//!
//! [Standard Webhooks]: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::error::RpcError;

use super::wire::LastError;

type HmacSha256 = Hmac<Sha256>;

/// The header carrying the delivery's id (the `eventId`, or `msg_<type>_<random>`).
pub const ID_HEADER: &str = "webhook-id";
/// The header carrying the attempt's Unix time in seconds.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The header carrying the signatures (space-separated `v1,<base64>`).
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// The MCP header naming the subscription, so a receiver picks the secret before parsing.
pub const SUBSCRIPTION_HEADER: &str = "x-mcp-subscription-id";
/// A delivery body stays at or under this many bytes (the design's SHOULD: 256 KiB).
pub const MAX_BODY: usize = 256 * 1024;
/// The path a receiver publishes its consent at: `{"receivers": ["/prefix/", …]}`.
pub const RECEIVER_DOCUMENT: &str = "/.well-known/mcp-webhook-receiver.json";
/// The secret's prefix.
pub const SECRET_PREFIX: &str = "whsec_";
/// A secret decodes to at least this many bytes…
pub const MIN_SECRET_BYTES: usize = 24;
/// …and at most this many.
pub const MAX_SECRET_BYTES: usize = 64;

/// Why a `delivery.secret` is refused (-32602).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// No secret was given.
    #[error("delivery.secret is required")]
    Missing,
    /// The value does not start with `whsec_`.
    #[error("delivery.secret must start with whsec_")]
    Prefix,
    /// What follows the prefix is not base64.
    #[error("delivery.secret must be whsec_ followed by base64")]
    Encoding,
    /// It decodes to fewer than 24 or more than 64 bytes.
    #[error("delivery.secret must decode to 24 to 64 bytes, not {0}")]
    Length(usize),
}

impl From<SecretError> for RpcError {
    fn from(e: SecretError) -> Self {
        RpcError::invalid_params(e.to_string())
    }
}

/// A signing secret: the bytes of a `whsec_` value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// Reads a `whsec_` value.
    pub fn parse(value: Option<&str>) -> Result<Secret, SecretError> {
        let value = value.ok_or(SecretError::Missing)?;
        let encoded = value.strip_prefix(SECRET_PREFIX).ok_or(SecretError::Prefix)?;
        let bytes = STANDARD.decode(encoded).map_err(|_| SecretError::Encoding)?;
        if !(MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&bytes.len()) {
            return Err(SecretError::Length(bytes.len()));
        }
        Ok(Secret(bytes))
    }

    /// The secret's `whsec_` text (to store it).
    pub fn to_text(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// One `v1,<base64>` signature of a delivery.
    pub fn sign(&self, id: &str, timestamp: u64, body: &[u8]) -> String {
        let tag = self.mac(id, timestamp, body).finalize().into_bytes();
        format!("v1,{}", STANDARD.encode(tag))
    }

    /// Whether one of the `v1,` signatures of `header` is this secret's over the delivery
    /// (compared in constant time).
    pub fn verifies(&self, header: &str, id: &str, timestamp: u64, body: &[u8]) -> bool {
        header.split(' ').any(|sig| {
            let Some(b64) = sig.strip_prefix("v1,") else {
                return false;
            };
            let Ok(tag) = STANDARD.decode(b64) else {
                return false;
            };
            self.mac(id, timestamp, body).verify_slice(&tag).is_ok()
        })
    }

    fn mac(&self, id: &str, timestamp: u64, body: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }
}

/// The `webhook-signature` value of a delivery signed with every secret given (during a
/// rotation's grace window, the new and the old).
pub fn signature_header(secrets: &[&Secret], id: &str, timestamp: u64, body: &[u8]) -> String {
    secrets
        .iter()
        .map(|s| s.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A control envelope's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// Asks the endpoint to echo a challenge before any delivery.
    Verification,
    /// Occurrences were skipped; carries a fresh cursor.
    Gap,
    /// The subscription ended; carries the error.
    Terminated,
}

impl Envelope {
    /// The envelope's `type`.
    pub fn kind(self) -> &'static str {
        match self {
            Envelope::Verification => "verification",
            Envelope::Gap => "gap",
            Envelope::Terminated => "terminated",
        }
    }

    /// The `webhook-id` of one envelope: `msg_<type>_<hex of random>`.
    pub fn message_id(self, random: &[u8]) -> String {
        let mut id = format!("msg_{}_", self.kind());
        for b in random {
            id.push_str(&format!("{b:02x}"));
        }
        id
    }
}

/// `{"type":"verification","challenge":…}`.
pub fn verification_body(challenge: &str) -> Value {
    json!({"type": "verification", "challenge": challenge})
}

/// `{"type":"gap","cursor":…}`.
pub fn gap_body(cursor: Option<&str>) -> Value {
    json!({"type": "gap", "cursor": cursor})
}

/// `{"type":"terminated","error":…}`.
pub fn terminated_body(error: &RpcError) -> Value {
    json!({"type": "terminated", "error": error})
}

/// Whether a verification answer's body echoes `challenge` (`{"challenge": …}`, compared in
/// constant time).
pub fn echoes(body: &[u8], challenge: &str) -> bool {
    let Ok(Value::Object(answer)) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    match answer.get("challenge") {
        Some(Value::String(echo)) => bool::from(echo.as_bytes().ct_eq(challenge.as_bytes())),
        _ => false,
    }
}

/// What an endpoint's answer to one attempt means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// 2xx: accepted.
    Delivered,
    /// A failure worth another attempt (5xx, 408, 425, 429).
    Retry(LastError),
    /// A failure never retried for this delivery: 410 (the receiver declines it), 413 (too
    /// large), a redirect (never followed) and every other 4xx.
    GiveUp(LastError),
}

/// The meaning of HTTP status `status` answering an attempt.
pub fn outcome(status: u16) -> Outcome {
    match status {
        200..=299 => Outcome::Delivered,
        408 | 425 | 429 => Outcome::Retry(LastError::Http4xx),
        500..=599 => Outcome::Retry(LastError::Http5xx),
        _ => Outcome::GiveUp(LastError::Http4xx),
    }
}

/// How long to wait after failed attempt `attempt` (1 for the first) before the next; `None`
/// once the attempts are spent (five in all, over about six minutes: the design asks for 3–5
/// within 10–15 minutes, each retry at least a second after the last).
pub fn retry_after(attempt: u32) -> Option<Duration> {
    const SCHEDULE: [u64; 4] = [1, 5, 30, 300];
    let i = usize::try_from(attempt).ok()?.checked_sub(1)?;
    SCHEDULE.get(i).map(|s| Duration::from_secs(*s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> Secret {
        Secret::parse(Some(&format!("whsec_{}", STANDARD.encode([7u8; 32])))).unwrap()
    }

    #[test]
    fn secrets_are_whsec_base64_of_24_to_64_bytes() {
        assert_eq!(Secret::parse(None), Err(SecretError::Missing));
        assert_eq!(Secret::parse(Some("abc")), Err(SecretError::Prefix));
        assert_eq!(Secret::parse(Some("whsec_!!!")), Err(SecretError::Encoding));
        let short = format!("whsec_{}", STANDARD.encode([1u8; 8]));
        assert_eq!(Secret::parse(Some(&short)), Err(SecretError::Length(8)));
        let long = format!("whsec_{}", STANDARD.encode([1u8; 65]));
        assert_eq!(Secret::parse(Some(&long)), Err(SecretError::Length(65)));
        for n in [24, 64] {
            let ok = format!("whsec_{}", STANDARD.encode(vec![1u8; n]));
            assert_eq!(Secret::parse(Some(&ok)).unwrap().to_text(), ok);
        }
        assert_eq!(RpcError::from(SecretError::Prefix).code, -32602);
    }

    #[test]
    fn the_signature_is_hmac_sha256_over_id_timestamp_body_with_the_decoded_key() {
        let s = secret();
        let sig = s.sign("evt_1", 1_739_980_800, br#"{"a":1}"#);
        let mut mac = HmacSha256::new_from_slice(&[7u8; 32]).unwrap();
        mac.update(br#"evt_1.1739980800.{"a":1}"#);
        let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
        assert_eq!(sig, expected);
        assert!(s.verifies(&sig, "evt_1", 1_739_980_800, br#"{"a":1}"#));
        assert!(!s.verifies(&sig, "evt_1", 1_739_980_801, br#"{"a":1}"#));
        assert!(!s.verifies(&sig, "evt_1", 1_739_980_800, br#"{"a":2}"#));
        // A key taken literally (prefix and all) does not verify.
        let literal = HmacSha256::new_from_slice(s.to_text().as_bytes()).unwrap();
        let mut literal = literal;
        literal.update(br#"evt_1.1739980800.{"a":1}"#);
        let wrong = format!("v1,{}", STANDARD.encode(literal.finalize().into_bytes()));
        assert!(!s.verifies(&wrong, "evt_1", 1_739_980_800, br#"{"a":1}"#));
    }

    #[test]
    fn a_rotation_signs_with_both_and_either_verifies() {
        let old = secret();
        let new = Secret::parse(Some(&format!("whsec_{}", STANDARD.encode([9u8; 24])))).unwrap();
        let header = signature_header(&[&new, &old], "m", 5, b"x");
        assert_eq!(header.split(' ').count(), 2);
        assert!(old.verifies(&header, "m", 5, b"x") && new.verifies(&header, "m", 5, b"x"));
    }

    #[test]
    fn envelopes_and_echoes() {
        assert_eq!(Envelope::Gap.message_id(&[0xab, 1]), "msg_gap_ab01");
        assert_eq!(verification_body("n")["type"], "verification");
        assert_eq!(gap_body(None)["cursor"], Value::Null);
        assert!(echoes(br#"{"challenge":"n0nce"}"#, "n0nce"));
        assert!(!echoes(br#"{"challenge":"not-the-nonce"}"#, "n0nce"));
        assert!(!echoes(b"n0nce", "n0nce"));
    }

    #[test]
    fn answers_and_retries() {
        assert_eq!(outcome(204), Outcome::Delivered);
        assert_eq!(outcome(503), Outcome::Retry(LastError::Http5xx));
        assert_eq!(outcome(429), Outcome::Retry(LastError::Http4xx));
        for never in [410, 413, 302, 400, 404] {
            assert!(matches!(outcome(never), Outcome::GiveUp(_)), "{never}");
        }
        assert_eq!(retry_after(0), None);
        assert_eq!(retry_after(1), Some(Duration::from_secs(1)));
        assert_eq!(retry_after(5), None);
    }
}
