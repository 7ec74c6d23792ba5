//! `mcp_protocol::jsonrpc::decode` on arbitrary bytes within limits.
//!
//! The first two bytes pick the limits (nesting depth 1–72, batch cap 0–20, the size cap near
//! the input's length, so that `TooLarge` is reached too); the rest is the body. Checks that
//! decoding never panics, that the limits hold for what decodes (size, depth, batch length),
//! that a batch is never empty nor mixes calls and responses, that every error has a
//! well-formed answer, and that re-encoding a decoded message decodes back to the same message.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::{depth, pick, same_json};
use mcp_protocol::jsonrpc::{
    DecodeError, DecodeLimits, Inbound, decode, encode_batch, encode_notification, encode_request, encode_response,
    split_batch,
};
use mcp_protocol::{Message, RequestId};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let (config, body) = data.split_at(data.len().min(2));
    let max_depth = pick(config.first(), 1, 72);
    let max_batch = pick(config.get(1), 0, 20);
    let max_bytes = if config.get(1).is_some_and(|b| b & 0x80 != 0) {
        body.len().saturating_sub(1)
    } else {
        1 << 20
    };
    let limits = DecodeLimits::new(max_bytes, max_depth).with_max_batch(max_batch);
    match decode(body, &limits) {
        Ok(Inbound::Single(m)) => {
            assert!(body.len() <= max_bytes);
            check_message(&m, max_depth);
        }
        Ok(Inbound::Batch(items)) => {
            assert!(body.len() <= max_bytes);
            assert!(!items.is_empty(), "an empty batch decoded");
            assert!(items.len() <= max_batch, "{} > batch cap {max_batch}", items.len());
            let responses = items.iter().filter(|m| matches!(m, Ok(Message::Response(_)))).count();
            let calls = items
                .iter()
                .filter(|m| matches!(m, Ok(Message::Request(_) | Message::Notification(_))))
                .count();
            assert!(responses == 0 || calls == 0, "a mixed batch decoded");
            for item in &items {
                match item {
                    Ok(m) => check_message(m, max_depth - 1),
                    Err(e) => check_error(e),
                }
            }
            let (messages, answers) = split_batch(items);
            assert_eq!(messages.len(), calls + responses);
            let array: Value = serde_json::from_slice(&encode_batch(&answers)).expect("a JSON array");
            assert_eq!(array.as_array().map(Vec::len), Some(answers.len()));
        }
        Err(e) => {
            if let DecodeError::TooLarge { limit } = e {
                assert!(body.len() > limit);
            }
            check_error(&e);
        }
    }
});

/// What one decoded message must satisfy, `max_depth` being the depth left for it.
fn check_message(m: &Message, max_depth: usize) {
    let encoded = match m {
        Message::Request(r) => {
            let params = r.params.clone().map(|p| Value::Object(p.into_object()));
            if let Some(p) = &params {
                assert!(depth(p) < max_depth, "params nest deeper than the limit");
            }
            encode_request(&r.id, r.method.as_str(), params.as_ref())
        }
        Message::Notification(n) => {
            let params = n.params.clone().map(|p| Value::Object(p.into_object()));
            if let Some(p) = &params {
                assert!(depth(p) < max_depth, "params nest deeper than the limit");
            }
            encode_notification(n.method.as_str(), params.as_ref())
        }
        Message::Response(r) => {
            if let Ok(v) = &r.outcome {
                assert!(depth(v) < max_depth, "a result nests deeper than the limit");
            }
            encode_response(&r.id, &r.outcome)
        }
    };
    let again = match decode(&encoded, &DecodeLimits::default()) {
        Ok(Inbound::Single(again)) => again,
        other => panic!(
            "re-encoded {m:?} as {:?}, which decodes to {other:?}",
            String::from_utf8_lossy(&encoded)
        ),
    };
    let same = match (m, &again) {
        (Message::Request(a), Message::Request(b)) => {
            a.id == b.id && a.method == b.method && same_params(a.params.as_ref().map(mcp_protocol::Params::object), b.params.as_ref().map(mcp_protocol::Params::object))
        }
        (Message::Notification(a), Message::Notification(b)) => {
            a.method == b.method && same_params(a.params.as_ref().map(mcp_protocol::Params::object), b.params.as_ref().map(mcp_protocol::Params::object))
        }
        (Message::Response(a), Message::Response(b)) => {
            a.id == b.id
                && match (&a.outcome, &b.outcome) {
                    (Ok(x), Ok(y)) => same_json(x, y),
                    (Err(x), Err(y)) => {
                        x.code == y.code
                            && x.message == y.message
                            && match (&x.data, &y.data) {
                                (Some(x), Some(y)) => same_json(x, y),
                                (x, y) => x == y,
                            }
                    }
                    _ => false,
                }
        }
        _ => false,
    };
    assert!(same, "{m:?} re-encodes to {again:?}");
}

fn same_params(a: Option<&serde_json::Map<String, Value>>, b: Option<&serde_json::Map<String, Value>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_json(&Value::Object(a.clone()), &Value::Object(b.clone())),
        (a, b) => a == b,
    }
}

/// Every decoding error maps to a JSON-RPC error, and its answer (when one is due) is one.
fn check_error(e: &DecodeError) {
    let rpc = e.to_rpc_error();
    assert!(rpc.code == -32700 || rpc.code == -32600, "{e:?} maps to {}", rpc.code);
    match e.answer() {
        None => assert!(!e.wants_reply()),
        Some(frame) => {
            let v: Value = serde_json::from_slice(&frame).expect("the answer is JSON");
            assert_eq!(v["error"]["code"], rpc.code);
            let id = match e.id() {
                Some(RequestId::Number(n)) => Value::from(*n),
                Some(RequestId::String(s)) => Value::from(&**s),
                None => Value::Null,
            };
            assert_eq!(v["id"], id);
        }
    }
}
