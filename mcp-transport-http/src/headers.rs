//! The headers this crate names beyond those of `http`: the legacy session's `Mcp-Session-Id`,
//! read on every verb and written when `initialize` mints a session; and the names the engine
//! asks for on every request, prebuilt, so that looking them up ([`lookup`]) does not parse the
//! name each time: those of `mcp_protocol::headers`, and (for a traced request) the W3C trace
//! context's.

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use mcp_protocol::headers::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER};
use mcp_runtime::observe::{TRACEPARENT, TRACESTATE};

/// The lowercase name of the session header.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// `MCP-Protocol-Version`.
pub(crate) const VERSION: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
/// `Mcp-Method`.
const METHOD: HeaderName = HeaderName::from_static(METHOD_HEADER);
/// `Mcp-Name`.
const NAME: HeaderName = HeaderName::from_static(NAME_HEADER);
/// `traceparent`.
const PARENT: HeaderName = HeaderName::from_static(TRACEPARENT);
/// `tracestate`.
const STATE: HeaderName = HeaderName::from_static(TRACESTATE);

/// The value of the header named `name` (lowercase, as `mcp_protocol::headers` names them), as
/// the engine's header checks read it.
pub(crate) fn lookup<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h [u8]> {
    let value = match name {
        PROTOCOL_VERSION_HEADER => headers.get(VERSION),
        METHOD_HEADER => headers.get(METHOD),
        NAME_HEADER => headers.get(NAME),
        TRACEPARENT => headers.get(PARENT),
        TRACESTATE => headers.get(STATE),
        _ => headers.get(name),
    };
    value.map(HeaderValue::as_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_prebuilt_and_other_names_alike() {
        let mut h = HeaderMap::new();
        h.insert("MCP-Protocol-Version", HeaderValue::from_static("2026-07-28"));
        h.insert("Mcp-Method", HeaderValue::from_static("tools/call"));
        h.insert("Mcp-Name", HeaderValue::from_static("echo"));
        h.insert("Mcp-Param-Region", HeaderValue::from_static("eu"));
        h.insert("traceparent", HeaderValue::from_static("00-1-2-01"));
        assert_eq!(lookup(&h, PROTOCOL_VERSION_HEADER), Some(&b"2026-07-28"[..]));
        assert_eq!(lookup(&h, METHOD_HEADER), Some(&b"tools/call"[..]));
        assert_eq!(lookup(&h, NAME_HEADER), Some(&b"echo"[..]));
        assert_eq!(lookup(&h, "mcp-param-region"), Some(&b"eu"[..]));
        assert_eq!(lookup(&h, TRACEPARENT), Some(&b"00-1-2-01"[..]));
        assert_eq!(lookup(&h, TRACESTATE), None);
        assert_eq!(lookup(&h, "mcp-param-other"), None);
    }
}
