//! Sealing and opening the MRTR `requestState` (behaviour invariant 23).
//!
//! A server that answers `tools/call`, `prompts/get` or `resources/read` with
//! an `InputRequiredResult` may hand the client a `requestState`, which the
//! client echoes byte for byte on its retry. The client is not trusted: the
//! state is integrity-protected with HMAC-SHA256 and bound to
//!
//! - an expiry (`exp`, milliseconds; the clock is an argument),
//! - the authenticated principal (a SHA-256 digest of it),
//! - the originating request: the method and a digest of its params with the
//!   keys sorted recursively, **minus** `_meta`, `inputResponses` and
//!   `requestState` (those legitimately change between the rounds).
//!
//! Token layout: `base64url_nopad(payload || HMAC-SHA256(key, payload))`,
//! where `payload = [VERSION] || key id (4 bytes) || JSON {"exp", "p", "r", "s"}`.
//! The key id names the key that sealed it (the first 4 bytes of SHA-256 of
//! the key), so that several instances given the same [`StateKeyRing`] open
//! each other's states and a rotation keeps opening the states sealed with an
//! older key while new ones are sealed with the newest. Opening checks the
//! length cap first, picks the key by its id, checks the MAC in constant time
//! **before** anything else of the payload is parsed, then the version,
//! expiry, principal and request.
//! Every failure answers the same -32602 "Invalid requestState" on the wire
//! (the log may say which check failed), and a failed state is never
//! re-prompted. Tokens (and so states) over [`MAX_STATE_BYTES`] are refused.
//!
//! Single use is not enforced here: it needs server-side memory.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::RpcError;

type HmacSha256 = Hmac<Sha256>;

/// The largest accepted token, in bytes (64 KiB).
pub const MAX_STATE_BYTES: usize = 64 * 1024;
/// The shortest accepted key, in bytes.
pub const MIN_KEY_BYTES: usize = 32;
/// The default lifetime of a sealed state: 300 s (the reference implementation's).
pub const DEFAULT_TTL_MS: u64 = 300_000;
/// The payload format version written by [`seal`].
const VERSION: u8 = 2;
/// The length of a key id.
const KID_LEN: usize = 4;
/// The length of an HMAC-SHA256 tag.
const TAG_LEN: usize = 32;
/// The params that may change between the rounds of one MRTR exchange.
const UNBOUND_PARAMS: [&str; 3] = ["_meta", "inputResponses", "requestState"];

/// Why a state could not be sealed or opened.
///
/// On the wire every opening failure is the same -32602 (see
/// [`StateError::to_rpc_error`]); the variant is for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The key given to [`StateKey::new`] is shorter than [`MIN_KEY_BYTES`].
    #[error("requestState key must be at least {MIN_KEY_BYTES} bytes")]
    KeyTooShort,
    /// The text given to [`StateKey::from_hex`] is not hexadecimal digits.
    #[error("requestState key must be hexadecimal digits")]
    KeyNotHex,
    /// The token (sealed or presented) is longer than [`MAX_STATE_BYTES`].
    #[error("requestState is larger than {MAX_STATE_BYTES} bytes")]
    TooLarge,
    /// Not base64url, too short to hold a MAC, or an unreadable payload.
    #[error("requestState is malformed")]
    Malformed,
    /// The MAC does not verify: tampered, or sealed with another key.
    #[error("requestState signature does not verify")]
    BadSignature,
    /// The payload has a format version this build does not read.
    #[error("requestState has an unsupported version")]
    UnsupportedVersion,
    /// The state's lifetime is over.
    #[error("requestState has expired")]
    Expired,
    /// The state was sealed for another principal.
    #[error("requestState was issued to another principal")]
    WrongPrincipal,
    /// The state was sealed for another method or other params.
    #[error("requestState was issued for another request")]
    WrongRequest,
}

impl StateError {
    /// The wire error: always -32602 "Invalid requestState", whatever failed.
    pub fn to_rpc_error(&self) -> RpcError {
        RpcError::invalid_params("Invalid requestState")
    }
}

/// The HMAC key that seals request states (at least 32 bytes).
///
/// A server seeds it once at start (from a CSPRNG, or from configuration when
/// several instances must open each other's states). `Debug` never shows it.
#[derive(Clone)]
pub struct StateKey {
    mac: HmacSha256,
    id: [u8; KID_LEN],
}

impl StateKey {
    /// A key from raw bytes; fewer than [`MIN_KEY_BYTES`] is an error.
    pub fn new(bytes: &[u8]) -> Result<StateKey, StateError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(StateError::KeyTooShort);
        }
        let mac = HmacSha256::new_from_slice(bytes).map_err(|_| StateError::KeyTooShort)?;
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let mut id = [0u8; KID_LEN];
        id.copy_from_slice(&digest[..KID_LEN]);
        Ok(StateKey { mac, id })
    }

    /// A key from 64 hexadecimal digits (32 bytes), as given on a command line or in an
    /// environment variable.
    pub fn from_hex(hex: &str) -> Result<StateKey, StateError> {
        let hex = hex.trim();
        if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StateError::KeyNotHex);
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0))
            .collect();
        StateKey::new(&bytes)
    }

    /// The key's id (written in every state it seals): the first 4 bytes of SHA-256 of the
    /// key, so the key itself never shows.
    pub fn id(&self) -> [u8; KID_LEN] {
        self.id
    }

    fn tag(&self, payload: &[u8]) -> [u8; TAG_LEN] {
        let mut mac = self.mac.clone();
        mac.update(payload);
        mac.finalize().into_bytes().into()
    }

    fn verify(&self, payload: &[u8], tag: &[u8]) -> Result<(), StateError> {
        let mut mac = self.mac.clone();
        mac.update(payload);
        mac.verify_slice(tag).map_err(|_| StateError::BadSignature)
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(<redacted>)")
    }
}

/// The keys a server opens request states with: the newest seals, the older ones (a rotation
/// in progress) still open what they sealed. Every instance behind one endpoint is given the
/// same ring.
#[derive(Debug, Clone)]
pub struct StateKeyRing {
    /// Newest last.
    keys: Vec<StateKey>,
}

impl StateKeyRing {
    /// A ring of one key.
    pub fn new(newest: StateKey) -> Self {
        StateKeyRing { keys: vec![newest] }
    }

    /// Adds a key that still opens states but no longer seals new ones.
    pub fn with_old(mut self, old: StateKey) -> Self {
        self.keys.insert(0, old);
        self
    }

    /// The key new states are sealed with.
    pub fn newest(&self) -> &StateKey {
        // A ring is never empty: `new` takes its first key.
        &self.keys[self.keys.len() - 1]
    }

    /// The key with this id, if the ring holds it.
    pub fn get(&self, id: &[u8]) -> Option<&StateKey> {
        self.keys.iter().rev().find(|k| k.id[..] == *id)
    }
}

impl From<StateKey> for StateKeyRing {
    fn from(key: StateKey) -> Self {
        StateKeyRing::new(key)
    }
}

/// The sealed payload (after the version byte).
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Expiry, milliseconds since the epoch of the caller's clock (exclusive).
    exp: u64,
    /// base64url of SHA-256(principal).
    p: String,
    /// base64url of [`params_digest`].
    r: String,
    /// The state itself.
    s: Value,
}

/// SHA-256 over the method and the canonical form of `params` minus
/// `_meta`, `inputResponses` and `requestState`.
///
/// Canonical form: compact JSON with object keys sorted (byte order) at every
/// level; absent params count as `{}`. The method is length-prefixed so that
/// no two (method, params) pairs share an input.
pub fn params_digest(method: &str, params: Option<&Map<String, Value>>) -> [u8; 32] {
    let mut canonical = String::new();
    canonical.push('{');
    if let Some(params) = params {
        let mut keys: Vec<&String> = params
            .keys()
            .filter(|k| !UNBOUND_PARAMS.contains(&k.as_str()))
            .collect();
        keys.sort();
        for (i, k) in keys.into_iter().enumerate() {
            if i > 0 {
                canonical.push(',');
            }
            write_string(&mut canonical, k);
            canonical.push(':');
            write_canonical(&mut canonical, &params[k.as_str()]);
        }
    }
    canonical.push('}');
    let mut h = Sha256::new();
    h.update((method.len() as u64).to_be_bytes());
    h.update(method.as_bytes());
    h.update(canonical.as_bytes());
    h.finalize().into()
}

fn write_string(out: &mut String, s: &str) {
    // Serialising a string cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

fn write_canonical(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_canonical(out, v);
            }
            out.push('}');
        }
    }
}

fn principal_digest(principal: &str) -> [u8; 32] {
    Sha256::digest(principal.as_bytes()).into()
}

/// Seals `state` for one principal and one request, valid while the caller's
/// clock reads less than `now_ms + ttl_ms`.
///
/// Fails with [`StateError::TooLarge`] when the token would exceed
/// [`MAX_STATE_BYTES`].
pub fn seal(
    key: &StateKey,
    principal: &str,
    method: &str,
    params: Option<&Map<String, Value>>,
    state: &Value,
    now_ms: u64,
    ttl_ms: u64,
) -> Result<String, StateError> {
    let sealed = Sealed {
        exp: now_ms.saturating_add(ttl_ms),
        p: URL_SAFE_NO_PAD.encode(principal_digest(principal)),
        r: URL_SAFE_NO_PAD.encode(params_digest(method, params)),
        s: state.clone(),
    };
    let mut payload = vec![VERSION];
    payload.extend_from_slice(&key.id);
    serde_json::to_writer(&mut payload, &sealed).map_err(|_| StateError::Malformed)?;
    // Unpadded base64 of n bytes is ceil(4n / 3) characters: refuse before
    // MACing and encoding what cannot fit.
    if ((payload.len() + TAG_LEN) * 4).div_ceil(3) > MAX_STATE_BYTES {
        return Err(StateError::TooLarge);
    }
    let tag = key.tag(&payload);
    payload.extend_from_slice(&tag);
    Ok(URL_SAFE_NO_PAD.encode(&payload))
}

/// Opens a token made by [`seal`] and returns the state, after checking (in
/// this order) the length cap, the encoding, the MAC (constant time, before
/// the payload is parsed), the version, the expiry, the principal and the
/// request (method and params digest).
pub fn open(
    key: &StateKey,
    token: &str,
    principal: &str,
    method: &str,
    params: Option<&Map<String, Value>>,
    now_ms: u64,
) -> Result<Value, StateError> {
    open_with(|_| Some(key), token, principal, method, params, now_ms)
}

/// Opens a token sealed with any key of `ring` (the key its id names), with the checks of
/// [`open`]; a token naming a key the ring does not hold fails like a bad signature.
pub fn open_ring(
    ring: &StateKeyRing,
    token: &str,
    principal: &str,
    method: &str,
    params: Option<&Map<String, Value>>,
    now_ms: u64,
) -> Result<Value, StateError> {
    open_with(|id| ring.get(id), token, principal, method, params, now_ms)
}

fn open_with<'k>(
    key_for: impl FnOnce(&[u8]) -> Option<&'k StateKey>,
    token: &str,
    principal: &str,
    method: &str,
    params: Option<&Map<String, Value>>,
    now_ms: u64,
) -> Result<Value, StateError> {
    if token.len() > MAX_STATE_BYTES {
        return Err(StateError::TooLarge);
    }
    let raw = URL_SAFE_NO_PAD
        .decode(token.as_bytes())
        .map_err(|_| StateError::Malformed)?;
    if raw.len() < 1 + KID_LEN + TAG_LEN {
        return Err(StateError::Malformed);
    }
    let (payload, tag) = raw.split_at(raw.len() - TAG_LEN);
    let key = key_for(&payload[1..1 + KID_LEN]).ok_or(StateError::BadSignature)?;
    key.verify(payload, tag)?;
    if payload[0] != VERSION {
        return Err(StateError::UnsupportedVersion);
    }
    let sealed: Sealed = serde_json::from_slice(&payload[1 + KID_LEN..]).map_err(|_| StateError::Malformed)?;
    if now_ms >= sealed.exp {
        return Err(StateError::Expired);
    }
    let expected_p = URL_SAFE_NO_PAD.encode(principal_digest(principal));
    if !bool::from(sealed.p.as_bytes().ct_eq(expected_p.as_bytes())) {
        return Err(StateError::WrongPrincipal);
    }
    let expected_r = URL_SAFE_NO_PAD.encode(params_digest(method, params));
    if !bool::from(sealed.r.as_bytes().ct_eq(expected_r.as_bytes())) {
        return Err(StateError::WrongRequest);
    }
    Ok(sealed.s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: u64 = 1_700_000_000_000;
    const TTL: u64 = DEFAULT_TTL_MS;

    fn key() -> StateKey {
        StateKey::new(&[7u8; 32]).unwrap()
    }

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn base() -> Map<String, Value> {
        params(json!({"name": "get_weather", "arguments": {"location": "New York", "units": "c"}}))
    }

    fn sealed() -> String {
        seal(
            &key(),
            "alice",
            "tools/call",
            Some(&base()),
            &json!({"step": 1}),
            NOW,
            TTL,
        )
        .unwrap()
    }

    #[test]
    fn a_ring_opens_old_keys_and_seals_with_the_newest() {
        let old = StateKey::new(&[1u8; 32]).unwrap();
        let new = StateKey::from_hex(&"02".repeat(32)).unwrap();
        let stranger = StateKey::new(&[3u8; 32]).unwrap();
        let ring = StateKeyRing::new(new.clone()).with_old(old.clone());
        assert_eq!(ring.newest().id(), new.id());
        let state = json!({"n": 1});
        for k in [&old, &new] {
            let t = seal(k, "alice", "tools/call", None, &state, NOW, TTL).unwrap();
            assert_eq!(
                open_ring(&ring, &t, "alice", "tools/call", None, NOW),
                Ok(state.clone())
            );
        }
        let t = seal(&stranger, "alice", "tools/call", None, &state, NOW, TTL).unwrap();
        assert_eq!(
            open_ring(&ring, &t, "alice", "tools/call", None, NOW),
            Err(StateError::BadSignature),
            "a key the ring does not hold"
        );
        assert_eq!(StateKey::from_hex("zz").unwrap_err(), StateError::KeyNotHex);
        assert_eq!(StateKey::from_hex("ab").unwrap_err(), StateError::KeyTooShort);
    }

    #[test]
    fn round_trip() {
        let t = sealed();
        let state = open(&key(), &t, "alice", "tools/call", Some(&base()), NOW + 1).unwrap();
        assert_eq!(state, json!({"step": 1}));
        assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    }

    #[test]
    fn key_rules_and_debug() {
        assert_eq!(StateKey::new(&[1u8; 31]).unwrap_err(), StateError::KeyTooShort);
        assert!(StateKey::new(&[1u8; 64]).is_ok());
        let dbg = format!("{:?}", StateKey::new(&[0xAB; 32]).unwrap());
        assert_eq!(dbg, "StateKey(<redacted>)");
    }

    #[test]
    fn tampering_any_byte_fails() {
        let t = sealed();
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x01;
            let bad = URL_SAFE_NO_PAD.encode(&bad);
            let e = open(&key(), &bad, "alice", "tools/call", Some(&base()), NOW).unwrap_err();
            assert_eq!(e, StateError::BadSignature, "byte {i}");
        }
    }

    #[test]
    fn failures_by_cause() {
        let t = sealed();
        let other_key = StateKey::new(&[8u8; 32]).unwrap();
        let mut changed = base();
        changed["arguments"]["location"] = json!("Paris");
        let mut extra = base();
        extra.insert("other".into(), json!(1));
        type Case<'a> = (&'a str, StateKey, &'a str, &'a str, Map<String, Value>, u64, StateError);
        #[rustfmt::skip]
        let table: Vec<Case> = vec![
            ("wrong key", other_key, "alice", "tools/call", base(), NOW, StateError::BadSignature),
            ("expired at exp", key(), "alice", "tools/call", base(), NOW + TTL, StateError::Expired),
            ("expired later", key(), "alice", "tools/call", base(), u64::MAX, StateError::Expired),
            ("principal", key(), "bob", "tools/call", base(), NOW, StateError::WrongPrincipal),
            ("method", key(), "alice", "prompts/get", base(), NOW, StateError::WrongRequest),
            ("arguments", key(), "alice", "tools/call", changed, NOW, StateError::WrongRequest),
            ("extra param", key(), "alice", "tools/call", extra, NOW, StateError::WrongRequest),
        ];
        for (what, k, principal, method, p, now, want) in table {
            let e = open(&k, &t, principal, method, Some(&p), now).unwrap_err();
            assert_eq!(e, want, "{what}");
            let rpc = e.to_rpc_error();
            assert_eq!(
                (rpc.code, rpc.message.as_str()),
                (-32602, "Invalid requestState"),
                "{what}"
            );
        }
    }

    #[test]
    fn malformed_tokens() {
        let short = URL_SAFE_NO_PAD.encode([1u8; TAG_LEN]);
        for t in ["", "not base64!", "AAAA=", short.as_str()] {
            let e = open(&key(), t, "alice", "tools/call", None, NOW).unwrap_err();
            assert_eq!(e, StateError::Malformed, "{t:?}");
        }
    }

    #[test]
    fn version_and_payload_checked_after_mac() {
        // A correctly MACed payload with another version byte, and one with garbage JSON.
        let kid = key().id();
        for (version, json, want) in [
            (3u8, &b"{}"[..], StateError::UnsupportedVersion),
            (VERSION, &b"not json"[..], StateError::Malformed),
        ] {
            let mut payload = vec![version];
            payload.extend_from_slice(&kid);
            payload.extend_from_slice(json);
            let mut raw = payload.clone();
            raw.extend_from_slice(&key().tag(&payload));
            let t = URL_SAFE_NO_PAD.encode(&raw);
            assert_eq!(open(&key(), &t, "alice", "tools/call", None, NOW).unwrap_err(), want);
        }
    }

    #[test]
    fn unbound_params_and_key_order_do_not_matter() {
        let t = sealed();
        let variants = [
            json!({"arguments": {"units": "c", "location": "New York"}, "name": "get_weather"}),
            json!({"name": "get_weather", "arguments": {"location": "New York", "units": "c"},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
                   "inputResponses": {"k": {"action": "accept"}},
                   "requestState": "whatever"}),
        ];
        for v in variants {
            let p = params(v);
            assert_eq!(
                open(&key(), &t, "alice", "tools/call", Some(&p), NOW).unwrap(),
                json!({"step": 1})
            );
        }
    }

    #[test]
    fn digest_rules() {
        let d = |m: &str, v: Option<Value>| params_digest(m, v.map(params).as_ref());
        assert_eq!(d("m", None), d("m", Some(json!({}))));
        assert_eq!(d("m", None), d("m", Some(json!({"_meta": {"a": 1}}))));
        assert_eq!(
            d("m", Some(json!({"a": {"x": 1, "y": [{"q": 1, "p": 2}]}}))),
            d("m", Some(json!({"a": {"y": [{"p": 2, "q": 1}], "x": 1}})))
        );
        assert_ne!(d("m", Some(json!({"a": [1, 2]}))), d("m", Some(json!({"a": [2, 1]}))));
        assert_ne!(d("m", Some(json!({"a": 1}))), d("m", Some(json!({"a": "1"}))));
        assert_ne!(d("a", None), d("b", None));
        // `_meta` is only ignored at the top level.
        assert_ne!(d("m", Some(json!({"a": {}}))), d("m", Some(json!({"a": {"_meta": 1}}))));
    }

    #[test]
    fn oversize() {
        let big = json!("x".repeat(MAX_STATE_BYTES));
        let e = seal(&key(), "alice", "tools/call", None, &big, NOW, TTL).unwrap_err();
        assert_eq!(e, StateError::TooLarge);
        // Just under the cap seals and opens.
        let fits = json!("x".repeat(MAX_STATE_BYTES / 2));
        let t = seal(&key(), "alice", "tools/call", None, &fits, NOW, TTL).unwrap();
        assert!(t.len() <= MAX_STATE_BYTES);
        assert_eq!(open(&key(), &t, "alice", "tools/call", None, NOW).unwrap(), fits);
        // Around the boundary the cap is exact: every Ok fits, the largest
        // accepted token is within one base64 quantum of the cap, and
        // everything after it is refused.
        let around = MAX_STATE_BYTES * 3 / 4;
        let (mut largest, mut refused) = (None, false);
        for n in (around - 300)..(around + 50) {
            let state = json!("y".repeat(n));
            match seal(&key(), "alice", "tools/call", Some(&base()), &state, NOW, TTL) {
                Ok(t) => {
                    assert!(t.len() <= MAX_STATE_BYTES && !refused, "{n}");
                    largest = Some(t.len());
                }
                Err(e) => {
                    assert_eq!(e, StateError::TooLarge, "{n}");
                    refused = true;
                }
            }
        }
        assert!(
            refused && largest.is_some_and(|l| l > MAX_STATE_BYTES - 4),
            "{largest:?}"
        );
        let long = "A".repeat(MAX_STATE_BYTES + 1);
        let e = open(&key(), &long, "alice", "tools/call", None, NOW).unwrap_err();
        assert_eq!(e, StateError::TooLarge);
    }
}
