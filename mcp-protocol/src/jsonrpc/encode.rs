//! Encoding JSON-RPC envelopes: responses, errors, notifications and requests, written in one
//! pass.

use serde::Serialize;
use serde_json::Value;

use super::RequestId;
use crate::error::RpcError;

#[derive(Serialize)]
struct ResultOut<'a, T: ?Sized> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

#[derive(Serialize)]
struct ErrorOut<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RequestId>,
    error: &'a RpcError,
}

#[derive(Serialize)]
struct NotificationOut<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct RequestOut<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

/// Encodes a success response (the result may be a `Value` or an already
/// serialized `RawValue`).
pub fn encode_result<T: Serialize + ?Sized>(id: &RequestId, result: &T) -> Vec<u8> {
    to_vec(&ResultOut {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// Encodes an error response; `id` is `null` when the request's id was unreadable.
pub fn encode_error(id: Option<&RequestId>, error: &RpcError) -> Vec<u8> {
    to_vec(&ErrorOut {
        jsonrpc: "2.0",
        id,
        error,
    })
}

/// Encodes a response outcome.
pub fn encode_response(id: &RequestId, outcome: &Result<Value, RpcError>) -> Vec<u8> {
    match outcome {
        Ok(v) => encode_result(id, v),
        Err(e) => encode_error(Some(id), e),
    }
}

/// Encodes a notification.
pub fn encode_notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    to_vec(&NotificationOut {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// Encodes a request (server-to-client, legacy era).
pub fn encode_request(id: &RequestId, method: &str, params: Option<&Value>) -> Vec<u8> {
    to_vec(&RequestOut {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// Encodes a success response whose result is already serialized (`result` is JSON text: a
/// cached catalog page, a tool's result written as it was rendered): the same bytes as
/// [`encode_result`], written in one pass into a buffer of the size they take (so that a body
/// made of it needs no other allocation), the result copied once, not re-serialized.
pub fn encode_raw_result(id: &RequestId, result: &str) -> Vec<u8> {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &[u8] = br#","result":"#;
    let raw = result.as_bytes();
    let mut out = Vec::with_capacity(HEAD.len() + id_len(id) + RESULT.len() + raw.len() + 1);
    out.extend_from_slice(HEAD);
    // An id (an integer or a string) always serializes.
    let _ = serde_json::to_writer(&mut out, id);
    out.extend_from_slice(RESULT);
    out.extend_from_slice(raw);
    out.push(b'}');
    out
}

/// The length of an id's JSON: exact for a number or a string without escapes, an estimate
/// otherwise.
fn id_len(id: &RequestId) -> usize {
    match id {
        RequestId::Number(n) => {
            let digits = n.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 1;
            digits + usize::from(*n < 0)
        }
        RequestId::String(s) if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') => s.len() + 2,
        RequestId::String(s) => s.len() + 8,
    }
}

fn to_vec<T: Serialize>(v: &T) -> Vec<u8> {
    // Serialising plain `Value`s and strings cannot fail.
    serde_json::to_vec(v).unwrap_or_default()
}
