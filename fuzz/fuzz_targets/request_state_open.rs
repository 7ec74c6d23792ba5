//! MRTR `requestState`: `mcp_protocol::request_state::open` on arbitrary tokens, and the
//! seal/open round trip on arbitrary state.
//!
//! The first byte picks the mode. Odd: the rest is a token, opened with a fixed key; opening
//! never panics, and a token that opens is exactly the one `seal` makes for the state it
//! holds (so nothing opens that this key did not seal). Even: the rest is split into a
//! principal, a method and a JSON state; the sealed token opens to the same state, and fails
//! for another principal, another request, another key, after expiry, and with any one byte of
//! it changed.

#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use mcp_fuzz::{same_json, split_line};
use mcp_protocol::jsonrpc::parse_value;
use mcp_protocol::request_state::{StateError, StateKey, open, seal};
use serde_json::{Map, Value, json};

const NOW: u64 = 1_700_000_000_000;
const TTL: u64 = 300_000;
const TAG_LEN: usize = 32;

fn key() -> StateKey {
    StateKey::new(b"fuzz-request-state-key-0123456789abcdef").expect("long enough")
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 1 {
        open_arbitrary(rest);
    } else {
        round_trip(mode, rest);
    }
});

fn open_arbitrary(token: &[u8]) {
    let token = String::from_utf8_lossy(token);
    let params = json!({"name": "t"});
    let params = params.as_object();
    let Ok(state) = open(&key(), &token, "alice", "tools/call", params, NOW) else {
        return;
    };
    // Only a token sealed with this key opens: it is byte for byte what `seal` makes.
    let raw = URL_SAFE_NO_PAD.decode(token.as_bytes()).expect("it opened");
    let sealed: Value = serde_json::from_slice(&raw[1..raw.len() - TAG_LEN]).expect("it opened");
    let exp = sealed["exp"].as_u64().expect("it opened");
    let again = seal(&key(), "alice", "tools/call", params, &state, exp - TTL, TTL).expect("it fit once");
    assert_eq!(again, token, "a token opened that seal never makes");
}

fn round_trip(mode: u8, rest: &[u8]) {
    let (principal, rest) = split_line(rest);
    let (method, rest) = split_line(rest);
    let principal = String::from_utf8_lossy(principal);
    let method = String::from_utf8_lossy(method);
    let state = match parse_value(rest, 32) {
        Ok(v) => v,
        Err(_) => Value::String(String::from_utf8_lossy(rest).into_owned()),
    };
    let params: Option<Map<String, Value>> = (mode & 2 == 2).then(|| {
        let mut p = Map::new();
        p.insert("name".into(), Value::String(principal.clone().into_owned()));
        p
    });
    let token = match seal(&key(), &principal, &method, params.as_ref(), &state, NOW, TTL) {
        Ok(t) => t,
        Err(StateError::TooLarge) => return,
        Err(e) => panic!("seal failed: {e:?}"),
    };
    assert!(token.len() <= mcp_protocol::request_state::MAX_STATE_BYTES);
    let opened = open(&key(), &token, &principal, &method, params.as_ref(), NOW + TTL - 1).expect("opens");
    assert!(same_json(&opened, &state), "{state:?} opened as {opened:?}");

    let other = format!("{principal}\0");
    assert_eq!(
        open(&key(), &token, &other, &method, params.as_ref(), NOW),
        Err(StateError::WrongPrincipal)
    );
    let other_method = format!("{method}/x");
    assert_eq!(
        open(&key(), &token, &principal, &other_method, params.as_ref(), NOW),
        Err(StateError::WrongRequest)
    );
    let mut other_params = params.clone().unwrap_or_default();
    other_params.insert("extra".into(), Value::Bool(true));
    assert_eq!(
        open(&key(), &token, &principal, &method, Some(&other_params), NOW),
        Err(StateError::WrongRequest)
    );
    let other_key = StateKey::new(&[0u8; 32]).expect("long enough");
    assert_eq!(
        open(&other_key, &token, &principal, &method, params.as_ref(), NOW),
        Err(StateError::BadSignature)
    );
    assert_eq!(
        open(&key(), &token, &principal, &method, params.as_ref(), NOW + TTL),
        Err(StateError::Expired)
    );
    // Any one byte of the decoded token changed: refused.
    let mut raw = URL_SAFE_NO_PAD.decode(&token).expect("our own token");
    let at = (rest.len().wrapping_mul(31) + usize::from(mode)) % raw.len();
    raw[at] ^= 1 << ((mode >> 1) % 8);
    let tampered = URL_SAFE_NO_PAD.encode(&raw);
    assert!(open(&key(), &tampered, &principal, &method, params.as_ref(), NOW).is_err());
}
