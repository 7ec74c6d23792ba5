//! The MCP messages the bench sends, and the checks of their answers.
//!
//! Modern (2026-07-28) requests carry the `_meta` envelope (protocol version, client info,
//! client capabilities) and the `MCP-Protocol-Version`, `Mcp-Method` and (for `tools/call`)
//! `Mcp-Name` headers; legacy ones go through `initialize` at 2025-11-25 and name their session.

use bytes::Bytes;
use serde_json::Value;

use crate::client::{Reply, Result, sse_data};

/// The text sent to `echo`, which every answer must carry back.
pub(crate) const TEXT: &str = "hello from the bench";
/// The modern revision.
pub(crate) const MODERN: &str = "2026-07-28";
/// The legacy revision of the handshake.
pub(crate) const LEGACY: &str = "2025-11-25";

/// The `_meta` envelope of every modern request.
const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"loadgen","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

/// The headers of a modern `tools/call` of `echo`.
pub(crate) const MODERN_CALL_HEADERS: &[(&str, &str)] = &[
    ("mcp-protocol-version", MODERN),
    ("mcp-method", "tools/call"),
    ("mcp-name", "echo"),
];
/// The headers of a modern `tools/list`.
pub(crate) const MODERN_LIST_HEADERS: &[(&str, &str)] =
    &[("mcp-protocol-version", MODERN), ("mcp-method", "tools/list")];
/// The headers of a modern `subscriptions/listen`.
pub(crate) const MODERN_LISTEN_HEADERS: &[(&str, &str)] =
    &[("mcp-protocol-version", MODERN), ("mcp-method", "subscriptions/listen")];

/// A modern `tools/call` of `echo`.
pub(crate) fn modern_call(id: u64) -> Bytes {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}},{MODERN_META}}}}}"#
    )
    .into()
}

/// A modern `tools/list`, from `cursor` if given.
pub(crate) fn modern_list(id: u64, cursor: Option<&str>) -> Bytes {
    let cursor = cursor
        .map(|c| format!(r#""cursor":{},"#, Value::from(c)))
        .unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{cursor}{MODERN_META}}}}}"#).into()
}

/// A modern `subscriptions/listen` for tool list changes.
pub(crate) fn modern_listen(id: u64) -> Bytes {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},{MODERN_META}}}}}"#
    )
    .into()
}

/// A legacy `initialize` at 2025-11-25.
pub(crate) fn initialize(id: u64) -> Bytes {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{LEGACY}","capabilities":{{}},"clientInfo":{{"name":"loadgen","version":"1.0.0"}}}}}}"#
    )
    .into()
}

/// `notifications/initialized`.
pub(crate) fn initialized() -> Bytes {
    Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
}

/// A legacy `tools/call` of `echo`.
pub(crate) fn legacy_call(id: u64) -> Bytes {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}}}}}"#
    )
    .into()
}

/// The headers of a legacy request in `session` (none for a sessionless target such as the
/// floor).
pub(crate) fn legacy_headers(session: Option<&str>) -> Vec<(&'static str, &str)> {
    let mut headers = vec![("mcp-protocol-version", LEGACY)];
    if let Some(s) = session {
        headers.push(("mcp-session-id", s));
    }
    headers
}

/// Fails unless the status is 2xx.
pub(crate) fn check_status(reply: &Reply, what: &str) -> Result<()> {
    if reply.status.is_success() {
        Ok(())
    } else {
        Err(format!("{what}: HTTP {} {}", reply.status, snippet(&reply.body)))
    }
}

/// The cheap check of a `tools/call` answer on the hot path: 2xx, the text came back, no error.
pub(crate) fn check_call(reply: &Reply) -> Result<()> {
    check_status(reply, "tools/call")?;
    if contains(&reply.body, TEXT.as_bytes()) && !contains(&reply.body, br#""error":{"#) {
        Ok(())
    } else {
        Err(format!("tools/call: unexpected answer {}", snippet(&reply.body)))
    }
}

/// The cheap check of any other answer: 2xx and no JSON-RPC error.
pub(crate) fn check_ok(reply: &Reply, what: &str) -> Result<()> {
    check_status(reply, what)?;
    if contains(&reply.body, br#""error":{"#) {
        Err(format!("{what}: error answer {}", snippet(&reply.body)))
    } else {
        Ok(())
    }
}

/// The JSON-RPC response in a body: the JSON itself, or the last SSE event that is a response.
pub(crate) fn response_of(body: &[u8]) -> Result<Value> {
    let text = String::from_utf8_lossy(body);
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(&text).map_err(|e| format!("invalid JSON ({e}): {}", snippet(body)));
    }
    let normalized = text.replace('\r', "");
    normalized
        .split("\n\n")
        .filter_map(sse_data)
        .filter_map(|d| serde_json::from_str::<Value>(&d).ok())
        .filter(|v| v.get("result").is_some() || v.get("error").is_some())
        .last()
        .ok_or_else(|| format!("no JSON-RPC response in {}", snippet(body)))
}

/// The strict check of a `tools/call` answer: exactly one text block holding the text.
pub(crate) fn strict_call(reply: &Reply) -> Result<()> {
    check_status(reply, "tools/call")?;
    let response = response_of(&reply.body)?;
    let content = &response["result"]["content"];
    let ok = content.as_array().is_some_and(|c| c.len() == 1)
        && content[0]["type"] == "text"
        && content[0]["text"] == TEXT
        && response["result"]["isError"] != true;
    if ok {
        Ok(())
    } else {
        Err(format!("tools/call: not the echo result: {response}"))
    }
}

/// The tools of a `tools/list` answer and its `nextCursor`.
pub(crate) fn list_page(reply: &Reply) -> Result<(usize, Option<String>)> {
    check_ok(reply, "tools/list")?;
    let response = response_of(&reply.body)?;
    let tools = response["result"]["tools"]
        .as_array()
        .map(Vec::len)
        .ok_or_else(|| format!("tools/list: no tools in {response}"))?;
    let next = response["result"]["nextCursor"].as_str().map(str::to_owned);
    Ok((tools, next))
}

/// The `nextCursor` of a `tools/list` answer, looked for only when the body names one.
pub(crate) fn next_cursor(reply: &Reply) -> Result<Option<String>> {
    // A byte scan, not a parse: the generator must not spend more on a page than the
    // servers do, whichever way a target pages its list. Cursors are plain strings.
    const KEY: &[u8] = b"\"nextCursor\":\"";
    if !contains(&reply.body, KEY) {
        return Ok(None);
    }
    // The key is written once (a JSON string cannot hold it unescaped), near the end of a page.
    let at = match std::str::from_utf8(&reply.body) {
        Ok(text) => text.rfind("\"nextCursor\":\""),
        Err(_) => reply.body.windows(KEY.len()).position(|w| w == KEY),
    };
    let Some(at) = at else {
        return Ok(None);
    };
    let rest = &reply.body[at + KEY.len()..];
    let end = rest
        .iter()
        .position(|b| *b == b'"')
        .ok_or_else(|| format!("unterminated nextCursor: {}", snippet(&reply.body)))?;
    Ok(Some(String::from_utf8_lossy(&rest[..end]).into_owned()))
}

/// Whether `needle` occurs in `haystack`: `str::contains` (vectorized for short needles) on a
/// UTF-8 body, a byte-window scan otherwise. A page of 15 KB costs the generator a few
/// microseconds, not tens: the generator must not be what a paged list is measured by.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    match (std::str::from_utf8(haystack), std::str::from_utf8(needle)) {
        (Ok(h), Ok(n)) => h.contains(n),
        _ => haystack.windows(needle.len()).any(|w| w == needle),
    }
}

/// The start of a body, for messages.
pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_json() {
        for body in [
            modern_call(1),
            modern_list(2, Some("c\"x")),
            modern_listen(3),
            initialize(4),
            legacy_call(5),
        ] {
            let v: Value = serde_json::from_slice(&body).expect("valid JSON");
            assert_eq!(v["jsonrpc"], "2.0");
        }
        let v: Value = serde_json::from_slice(&modern_call(1)).expect("valid JSON");
        assert_eq!(v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], MODERN);
        assert_eq!(v["params"]["arguments"]["text"], TEXT);
    }

    #[test]
    fn responses_from_json_and_sse() {
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        assert!(response_of(json).is_ok());
        let sse =
            b"id: 0\nretry: 3000\ndata:\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        assert!(response_of(sse).expect("a response")["result"].is_object());
    }
}
