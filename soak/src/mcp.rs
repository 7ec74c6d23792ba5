//! The MCP messages the soak sends and the judgement of their answers.
//!
//! Modern (2026-07-28) requests carry the `_meta` envelope and the `MCP-Protocol-Version`,
//! `Mcp-Method` and (for `tools/call`) `Mcp-Name` headers; legacy ones go through `initialize`
//! at 2025-11-25 and name their session.

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{Value, json};

use crate::client::{Reply, Req, sse_data};

/// The modern revision.
pub(crate) const MODERN: &str = "2026-07-28";
/// The legacy revision of the handshake.
pub(crate) const LEGACY: &str = "2025-11-25";
/// JSON-RPC "Internal error": the declared overload refusals.
pub(crate) const INTERNAL_ERROR: i64 = -32603;
/// The rate-limit refusal's code (HTTP 429 beside it).
pub(crate) const RATE_LIMITED: i64 = 429;
/// JSON-RPC "Parse error".
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Invalid Request".
pub(crate) const INVALID_REQUEST: i64 = -32600;

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn frame(id: u64, method: &str, params: Value) -> Bytes {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into()
}

/// A modern stateless `tools/call` of `tool` with `arguments`.
pub(crate) fn modern_call(id: u64, tool: &str, arguments: Value) -> Req {
    let body = frame(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments, "_meta": modern_meta()}),
    );
    Req::post(body)
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
}

/// A modern `tools/list` (first page).
pub(crate) fn modern_list(id: u64) -> Req {
    Req::post(frame(id, "tools/list", json!({"_meta": modern_meta()})))
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/list")
}

/// A modern `subscriptions/listen` for tool list changes.
pub(crate) fn modern_listen(id: u64) -> Req {
    let params = json!({"notifications": {"toolsListChanged": true}, "_meta": modern_meta()});
    Req::post(frame(id, "subscriptions/listen", params))
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "subscriptions/listen")
}

/// A legacy `initialize` at 2025-11-25.
pub(crate) fn initialize(id: u64) -> Req {
    Req::post(frame(
        id,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "soak", "version": "1.0.0"}}),
    ))
}

/// `notifications/initialized` in `session`.
pub(crate) fn initialized(session: &str) -> Req {
    Req::post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .header("mcp-protocol-version", LEGACY)
        .header("mcp-session-id", session)
}

/// A legacy `tools/call` of `tool` in `session`.
pub(crate) fn legacy_call(id: u64, session: &str, tool: &str, arguments: Value) -> Req {
    Req::post(frame(id, "tools/call", json!({"name": tool, "arguments": arguments})))
        .header("mcp-protocol-version", LEGACY)
        .header("mcp-session-id", session)
}

/// DELETE of `session`.
pub(crate) fn delete(session: &str) -> Req {
    Req {
        method: hyper::Method::DELETE,
        content_type: None,
        accept: None,
        headers: vec![
            ("mcp-protocol-version", LEGACY.to_owned()),
            ("mcp-session-id", session.to_owned()),
        ],
        body: Bytes::new(),
    }
}

/// What a request should be answered with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expect {
    /// Exactly one JSON-RPC result for `id` that is not a tool error.
    Result(u64),
    /// Exactly one JSON-RPC result for `id` that is a tool error (`isError: true`): what a
    /// panicking tool is answered with.
    ToolError(u64),
    /// `initialize`: a result for `id` and an `Mcp-Session-Id`.
    Initialize(u64),
    /// A 2xx with no JSON-RPC error (a notification's 202, a DELETE).
    Success,
    /// This HTTP status, with a JSON-RPC error of this code when given.
    Status(u16, Option<i64>),
}

/// How an answer was judged.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The expected answer.
    Answered,
    /// A declared refusal over a bound: 503 or 429 with -32603, or 429 with the rate-limit
    /// error (a server run with a rate limit).
    Overload,
    /// A 5xx that is not a declared overload.
    Unexpected5xx(String),
    /// An answer, but not the expected one.
    Wrong(String),
}

/// Judges `reply` against `expect`.
pub(crate) fn judge(reply: &Reply, expect: Expect) -> Verdict {
    let status = reply.status;
    let refusal = status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS;
    let code = error_code(&reply.body);
    if refusal && code == Some(INTERNAL_ERROR) {
        return Verdict::Overload;
    }
    if status == StatusCode::TOO_MANY_REQUESTS && code == Some(RATE_LIMITED) {
        return Verdict::Overload;
    }
    if status.is_server_error() {
        return Verdict::Unexpected5xx(format!("HTTP {status} {}", snippet(&reply.body)));
    }
    match check(reply, expect) {
        Ok(()) => Verdict::Answered,
        Err(why) => Verdict::Wrong(why),
    }
}

fn check(reply: &Reply, expect: Expect) -> Result<(), String> {
    let status = reply.status;
    match expect {
        Expect::Result(id) | Expect::Initialize(id) => {
            if status != StatusCode::OK {
                return Err(format!("HTTP {status} {}", snippet(&reply.body)));
            }
            let response = one_response(&reply.body, id)?;
            let result = response.get("result").ok_or_else(|| format!("an error: {response}"))?;
            if result.get("isError") == Some(&Value::Bool(true)) {
                return Err(format!("a tool error: {response}"));
            }
            if matches!(expect, Expect::Initialize(_)) && reply.session.is_none() {
                return Err("initialize answered without Mcp-Session-Id".to_owned());
            }
            Ok(())
        }
        Expect::ToolError(id) => {
            if status != StatusCode::OK {
                return Err(format!("HTTP {status} {}", snippet(&reply.body)));
            }
            let response = one_response(&reply.body, id)?;
            match response.pointer("/result/isError") {
                Some(Value::Bool(true)) => Ok(()),
                _ => Err(format!("expected a tool error, got {response}")),
            }
        }
        Expect::Success => {
            if status.is_success() && error_code(&reply.body).is_none() {
                Ok(())
            } else {
                Err(format!("HTTP {status} {}", snippet(&reply.body)))
            }
        }
        Expect::Status(want, code) => {
            if status.as_u16() != want {
                return Err(format!("expected HTTP {want}, got {status} {}", snippet(&reply.body)));
            }
            match code {
                Some(code) if error_code(&reply.body) != Some(code) => {
                    Err(format!("expected error {code}: {}", snippet(&reply.body)))
                }
                _ => Ok(()),
            }
        }
    }
}

/// The one JSON-RPC response for `id` in a body (JSON, or every event of an SSE stream):
/// none or more than one is wrong.
fn one_response(body: &[u8], id: u64) -> Result<Value, String> {
    let found: Vec<Value> = messages(body)
        .into_iter()
        .filter(|m| m.get("result").is_some() || m.get("error").is_some())
        .collect();
    let mine: Vec<&Value> = found.iter().filter(|m| m.get("id") == Some(&json!(id))).collect();
    match mine.len() {
        1 => Ok(mine[0].clone()),
        0 if found.is_empty() => Err(format!("no JSON-RPC response in {}", snippet(body))),
        0 => Err(format!("no response for id {id}: {}", snippet(body))),
        n => Err(format!("{n} responses for id {id}")),
    }
}

/// The JSON messages of a body: the JSON itself, or the data of each SSE event.
fn messages(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(&text).into_iter().collect();
    }
    text.replace('\r', "")
        .split("\n\n")
        .filter_map(sse_data)
        .filter_map(|d| serde_json::from_str::<Value>(&d).ok())
        .collect()
}

/// The code of the JSON-RPC error a JSON body holds.
fn error_code(body: &[u8]) -> Option<i64> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.pointer("/error/code").and_then(Value::as_i64)
}

/// The start of a body, for messages.
pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).expect("a status"),
            session: None,
            body: Bytes::from(body.to_owned()),
        }
    }

    #[test]
    fn results_errors_and_overload() {
        let ok = reply(200, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#);
        assert!(matches!(judge(&ok, Expect::Result(7)), Verdict::Answered));
        assert!(matches!(judge(&ok, Expect::Result(8)), Verdict::Wrong(_)));
        let panic = reply(
            200,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}"#,
        );
        assert!(matches!(judge(&panic, Expect::ToolError(7)), Verdict::Answered));
        assert!(matches!(judge(&panic, Expect::Result(7)), Verdict::Wrong(_)));
        let busy = reply(
            503,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Server is overloaded"}}"#,
        );
        assert!(matches!(judge(&busy, Expect::Result(7)), Verdict::Overload));
        let crash = reply(500, "oops");
        assert!(matches!(judge(&crash, Expect::Result(7)), Verdict::Unexpected5xx(_)));
    }

    #[test]
    fn sse_bodies_need_exactly_one_response() {
        let one = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert!(matches!(judge(&reply(200, one), Expect::Result(3)), Verdict::Answered));
        let two = "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert!(matches!(judge(&reply(200, two), Expect::Result(3)), Verdict::Wrong(_)));
    }

    #[test]
    fn statuses() {
        let r = reply(
            415,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#,
        );
        assert!(matches!(judge(&r, Expect::Status(415, None)), Verdict::Answered));
        assert!(matches!(
            judge(&r, Expect::Status(415, Some(INVALID_REQUEST))),
            Verdict::Answered
        ));
        assert!(matches!(judge(&r, Expect::Status(400, None)), Verdict::Wrong(_)));
    }
}
