//! JSON-RPC error codes, the typed error object, and each era's HTTP status mapping.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::revision::{Era, Revision};

/// The JSON-RPC error codes the server emits.
pub mod codes {
    /// Invalid JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// Not a valid JSON-RPC request object.
    pub const INVALID_REQUEST: i32 = -32600;
    /// Unknown method, or a method the era does not serve.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid parameters.
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// Resource not found (legacy revisions only).
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
    /// The legacy session a request names is unknown, ended, or another principal's (all
    /// answered alike).
    pub const SESSION_NOT_FOUND: i32 = -32001;
    /// HTTP headers disagree with the body (2026-07-28).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// A needed client capability was not declared (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// Unsupported protocol version (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
    /// URL elicitation required (2025-11-25 only).
    pub const URL_ELICITATION_REQUIRED: i32 = -32042;
    /// The caller sent more requests than its rate limit allows; `data.retryAfterMs` says when
    /// to retry. HTTP 429 in both eras.
    ///
    /// No revision defines a rate-limit code. The 2026-07-28 revision reserves -32020…-32099
    /// for the codes it defines (implementations must not emit others from that band) and asks
    /// new application codes to be allocated outside the JSON-RPC reserved range
    /// (-32768…-32000), so -32000…-32099 is out; 429 mirrors the HTTP status, is legal in every
    /// revision (they all leave codes outside the reserved range to the application), and is
    /// what other MCP gateways moved to for the same reason. A proposal to standardize a code
    /// (SEP-3304, -32023) is open; this constant is the one place to change if it lands.
    pub const RATE_LIMITED: i32 = 429;
    /// The caller's credentials lack scopes the operation needs; `data.requiredScopes` names
    /// every scope it needs (not only the missing ones), so that a client can step up once.
    /// HTTP 403 in both eras, with a `WWW-Authenticate: Bearer error="insufficient_scope"`
    /// challenge naming them (2026-07-28 authorization, runtime insufficient scope errors).
    ///
    /// No revision defines a JSON-RPC code for it (over HTTP the status and the challenge
    /// carry it); 403 mirrors the status, for the same reasons as [`RATE_LIMITED`].
    pub const INSUFFICIENT_SCOPE: i32 = 403;
}

/// A JSON-RPC error object: what travels in `error` of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct RpcError {
    /// The error code.
    pub code: i32,
    /// A short, single-sentence message.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(codes::PARSE_ERROR, message)
    }

    /// -32600.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_REQUEST, message)
    }

    /// -32601 naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(codes::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// -32602.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// -32602 "Unknown tool: NAME", in every revision (the tools page's own example): a
    /// `tools/call` naming no tool the caller can see is a protocol error, not a tool execution
    /// error. A tool hidden from the caller answers exactly so.
    pub fn unknown_tool(name: &str) -> Self {
        Self::invalid_params(format!("Unknown tool: {name}"))
    }

    /// -32603 with a generic message: internal details never reach the wire.
    pub fn internal() -> Self {
        Self::new(codes::INTERNAL_ERROR, "Internal error")
    }

    /// -32603 with a chosen, non-sensitive message.
    pub fn internal_with(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }

    /// Resource not found: -32002 in the legacy era, -32602 in the modern one
    /// (SEP-2164), with `data.uri` in both.
    pub fn resource_not_found(era: Era, uri: &str) -> Self {
        let code = match era {
            Era::Legacy => codes::RESOURCE_NOT_FOUND,
            Era::Modern => codes::INVALID_PARAMS,
        };
        Self::new(code, format!("Resource not found: {uri}")).with_data(json!({ "uri": uri }))
    }

    /// -32001: the named session is unknown, ended, or another principal's (one answer for
    /// all three, so that it tells nothing about other callers' sessions).
    pub fn session_not_found() -> Self {
        Self::new(codes::SESSION_NOT_FOUND, "Session not found")
    }

    /// -32600: a legacy request other than `initialize` and `server/discover` names no
    /// session where the transport keeps them.
    pub fn session_required() -> Self {
        Self::invalid_request("Mcp-Session-Id header required")
    }

    /// -32600: `initialize` on a session that already exists.
    pub fn already_initialized() -> Self {
        Self::invalid_request("Session already initialized")
    }

    /// -32600: a request reuses the id of one still in flight.
    pub fn duplicate_id() -> Self {
        Self::invalid_request("Duplicate request id")
    }

    /// -32600: the transport's revision header (HTTP `MCP-Protocol-Version`) names no revision.
    pub fn unknown_revision_header(value: &str) -> Self {
        Self::invalid_request(format!("Unsupported MCP-Protocol-Version: {value}"))
    }

    /// -32600: a modern request on a transport that serves the legacy revisions only (the
    /// 2024-11-05 HTTP+SSE pair).
    pub fn legacy_only_transport() -> Self {
        Self::invalid_request("This transport serves the legacy revisions only")
    }

    /// -32600: a method answered with a stream, on a transport that cannot stream.
    pub fn needs_streaming(method: &str) -> Self {
        Self::invalid_request(format!("{method} needs a streaming transport"))
    }

    /// -32603: the session store is full (all principals together).
    pub fn too_many_sessions() -> Self {
        Self::internal_with("Too many sessions")
    }

    /// -32603: a shared store the request needs cannot be reached (answered with HTTP 503 at
    /// [`Stage::Overload`]; the client retries).
    pub fn store_unavailable() -> Self {
        Self::internal_with("Store unavailable")
    }

    /// -32603: the caller holds as many sessions as one client may (one principal, or one
    /// address for anonymous callers).
    pub fn too_many_sessions_for_principal() -> Self {
        Self::internal_with("Too many sessions for this client")
    }

    /// -32603: as many tasks are running as the server runs at once (all clients together).
    pub fn too_many_running_tasks() -> Self {
        Self::internal_with("Too many running tasks")
    }

    /// -32603: the caller has as many tasks running as one client may.
    pub fn too_many_running_tasks_for_client() -> Self {
        Self::internal_with("Too many running tasks for this client")
    }

    /// -32603: the caller's stored tasks are all still running, and it holds as many as one
    /// principal may (a finished one would have made room).
    pub fn too_many_stored_tasks_for_client() -> Self {
        Self::internal_with("Too many stored tasks for this client, none of them finished")
    }

    /// -32603: the server holds as many long-lived streams (subscriptions, SSE streams) as it
    /// holds at once, every client together; calls are still served.
    pub fn too_many_streams() -> Self {
        Self::internal_with("Too many open streams")
    }

    /// -32603: the caller's address holds as many long-lived streams as one address may.
    pub fn too_many_streams_from_address() -> Self {
        Self::internal_with("Too many open streams from this address")
    }

    /// -32603: the caller's address has as many requests in flight as one address may.
    pub fn too_many_in_flight_from_address() -> Self {
        Self::internal_with("Too many requests in flight from this address")
    }

    /// -32603: the server refuses work over one of its bounds.
    pub fn overloaded() -> Self {
        Self::internal_with("Server is overloaded")
    }

    /// -32020.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(codes::HEADER_MISMATCH, message)
    }

    /// -32021 with `data.requiredCapabilities`.
    pub fn missing_capability(required: Value) -> Self {
        let message = match required.as_object().and_then(|m| m.keys().next()) {
            Some(k) => format!("Server requires the {k} capability for this request"),
            None => "Server requires a client capability for this request".to_owned(),
        };
        Self::new(codes::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
            .with_data(json!({ "requiredCapabilities": required }))
    }

    /// -32021 for a request that needs extension `id`, which the client did not declare
    /// (`requiredCapabilities: {"extensions": {id: {}}}`; HTTP 400).
    pub fn undeclared_extension(id: &str) -> Self {
        let mut e = Self::missing_capability(json!({ "extensions": { id: {} } }));
        e.message = format!("Server requires the {id} extension for this request");
        e
    }

    /// -32022 with `data.supported` and `data.requested`.
    pub fn unsupported_version(supported: &[Revision], requested: &str) -> Self {
        let supported: Vec<&str> = supported.iter().map(|r| r.as_str()).collect();
        Self::new(codes::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            .with_data(json!({ "supported": supported, "requested": requested }))
    }

    /// [`codes::RATE_LIMITED`]: the caller is over its rate limit and may retry after
    /// `retry_after` (`data.retryAfterMs`, in whole milliseconds rounded up). Over HTTP it is
    /// answered 429 with `Retry-After` ([`retry_after_seconds`]).
    pub fn rate_limited(retry_after: Duration) -> Self {
        let ms = u64::try_from(retry_after.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        Self::new(codes::RATE_LIMITED, "Rate limit exceeded").with_data(json!({ "retryAfterMs": ms }))
    }

    /// [`codes::INSUFFICIENT_SCOPE`]: the caller lacks scopes the operation needs; `required`
    /// names every scope it needs (`data.requiredScopes`). Over HTTP it is answered 403 with an
    /// `insufficient_scope` challenge naming them.
    pub fn insufficient_scope<S: AsRef<str>>(required: &[S]) -> Self {
        let scopes: Vec<&str> = required.iter().map(AsRef::as_ref).collect();
        Self::new(
            codes::INSUFFICIENT_SCOPE,
            format!("Insufficient scope: this operation needs {}", scopes.join(" ")),
        )
        .with_data(json!({ "requiredScopes": scopes }))
    }

    /// The scopes an [`insufficient_scope`](Self::insufficient_scope) refusal names (`None` for
    /// any other error).
    pub fn required_scopes(&self) -> Option<Vec<String>> {
        if self.code != codes::INSUFFICIENT_SCOPE {
            return None;
        }
        let list = self.data.as_ref()?.get("requiredScopes")?.as_array()?;
        Some(list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
    }

    /// The HTTP status this error is answered with in an era.
    pub fn http_status(&self, era: Era) -> u16 {
        http_status(era, self.code)
    }
}

/// The HTTP status of a JSON-RPC error, per era (behaviour invariant 17).
///
/// Modern: -32601 is 404; -32700, -32600, -32602 raised before dispatch,
/// -32020, -32021 and -32022 are 400; everything else travels in-band with 200. Legacy: parse and
/// shape errors are 400, everything else 200. In both eras a rate-limit refusal
/// ([`codes::RATE_LIMITED`]) is 429 and a lack of scope ([`codes::INSUFFICIENT_SCOPE`]) 403.
///
/// Note that a modern -32602 raised by a handler (unknown tool arguments, an
/// unknown prompt) is in-band: callers map only pre-dispatch errors through
/// here, and answer handler errors with 200.
pub fn http_status(era: Era, code: i32) -> u16 {
    match code {
        codes::RATE_LIMITED => return 429,
        codes::INSUFFICIENT_SCOPE => return 403,
        _ => {}
    }
    match era {
        Era::Modern => match code {
            codes::METHOD_NOT_FOUND => 404,
            codes::PARSE_ERROR
            | codes::INVALID_REQUEST
            | codes::INVALID_PARAMS
            | codes::HEADER_MISMATCH
            | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | codes::UNSUPPORTED_PROTOCOL_VERSION => 400,
            _ => 200,
        },
        Era::Legacy => match code {
            codes::PARSE_ERROR | codes::INVALID_REQUEST => 400,
            _ => 200,
        },
    }
}

/// Where in the pipeline an error was raised: its HTTP status depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before the era is known: the body or the transport's revision header is unusable.
    Envelope,
    /// The legacy session a request names (or fails to name).
    Session,
    /// The checks before any handler runs ([`http_status`]).
    Route,
    /// While running the method ([`dispatch_http_status`]).
    Dispatch,
    /// A server-wide bound is reached (sessions, requests in flight): 503, the client may retry
    /// later.
    Overload,
    /// A bound of one caller is reached (its sessions, its subscriptions): 429.
    Quota,
}

/// The HTTP status of an error raised at `stage` in `era`: the one mapping every HTTP answer
/// goes through.
///
/// Envelope errors are 400. Session errors are 404 for -32001 (unknown, ended or another
/// principal's session) and 400 otherwise (no session named, `initialize` twice). Route and
/// dispatch errors follow [`http_status`] and [`dispatch_http_status`]. A server-wide bound is
/// 503, a per-caller bound 429.
pub fn status_at(stage: Stage, era: Era, code: i32) -> u16 {
    match stage {
        Stage::Envelope => 400,
        Stage::Session if code == codes::SESSION_NOT_FOUND => 404,
        Stage::Session => 400,
        Stage::Route => http_status(era, code),
        Stage::Dispatch => dispatch_http_status(era, code),
        Stage::Overload => 503,
        Stage::Quota => 429,
    }
}

/// The HTTP status of an error raised while running a method (after
/// dispatch), per era.
///
/// Unlike [`http_status`], a modern -32602 raised by a handler (an unknown
/// prompt, a resource that does not exist, a tampered `requestState`) travels
/// in-band with 200: only the errors the specification maps to statuses keep
/// them (-32601 404; -32020, -32021, -32022 400). Legacy errors are in-band. A rate-limit
/// refusal ([`codes::RATE_LIMITED`], raised by a middleware layer) is 429 and a lack of scope
/// ([`codes::INSUFFICIENT_SCOPE`]) 403 in both eras.
pub fn dispatch_http_status(era: Era, code: i32) -> u16 {
    match (era, code) {
        (_, codes::RATE_LIMITED) => 429,
        (_, codes::INSUFFICIENT_SCOPE) => 403,
        (Era::Modern, codes::METHOD_NOT_FOUND) => 404,
        (
            Era::Modern,
            codes::HEADER_MISMATCH | codes::MISSING_REQUIRED_CLIENT_CAPABILITY | codes::UNSUPPORTED_PROTOCOL_VERSION,
        ) => 400,
        _ => 200,
    }
}

/// The `Retry-After` value (RFC 9110, whole seconds) for a wait: rounded up, at least 1 (a
/// client told 0 would retry at once and be refused again).
pub fn retry_after_seconds(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_table() {
        let table = [
            (codes::PARSE_ERROR, 400, 400),
            (codes::INVALID_REQUEST, 400, 400),
            (codes::METHOD_NOT_FOUND, 404, 200),
            (codes::INVALID_PARAMS, 400, 200),
            (codes::INTERNAL_ERROR, 200, 200),
            (codes::HEADER_MISMATCH, 400, 200),
            (codes::MISSING_REQUIRED_CLIENT_CAPABILITY, 400, 200),
            (codes::UNSUPPORTED_PROTOCOL_VERSION, 400, 200),
            (codes::RESOURCE_NOT_FOUND, 200, 200),
            (codes::RATE_LIMITED, 429, 429),
            (codes::INSUFFICIENT_SCOPE, 403, 403),
        ];
        for (code, modern, legacy) in table {
            assert_eq!(http_status(Era::Modern, code), modern, "modern {code}");
            assert_eq!(http_status(Era::Legacy, code), legacy, "legacy {code}");
        }
    }

    #[test]
    fn dispatch_status_table() {
        let table = [
            (codes::METHOD_NOT_FOUND, 404),
            (codes::INVALID_PARAMS, 200),
            (codes::INTERNAL_ERROR, 200),
            (codes::HEADER_MISMATCH, 400),
            (codes::MISSING_REQUIRED_CLIENT_CAPABILITY, 400),
            (codes::UNSUPPORTED_PROTOCOL_VERSION, 400),
        ];
        for (code, modern) in table {
            assert_eq!(dispatch_http_status(Era::Modern, code), modern, "modern {code}");
            assert_eq!(dispatch_http_status(Era::Legacy, code), 200, "legacy {code}");
        }
        for era in [Era::Modern, Era::Legacy] {
            assert_eq!(dispatch_http_status(era, codes::RATE_LIMITED), 429, "{era:?}");
            assert_eq!(status_at(Stage::Dispatch, era, codes::RATE_LIMITED), 429, "{era:?}");
            assert_eq!(
                status_at(Stage::Dispatch, era, codes::INSUFFICIENT_SCOPE),
                403,
                "{era:?}"
            );
            assert_eq!(status_at(Stage::Route, era, codes::INSUFFICIENT_SCOPE), 403, "{era:?}");
        }
    }

    #[test]
    fn insufficient_scope_names_every_scope() {
        let e = RpcError::insufficient_scope(&["a:read", "a:write"]);
        assert_eq!(e.code, codes::INSUFFICIENT_SCOPE);
        assert_eq!(e.message, "Insufficient scope: this operation needs a:read a:write");
        assert_eq!(e.required_scopes().unwrap(), ["a:read", "a:write"]);
        assert_eq!(RpcError::internal().required_scopes(), None);
    }

    #[test]
    fn rate_limited_carries_the_wait() {
        let e = RpcError::rate_limited(Duration::from_micros(1_500_001));
        assert_eq!(e.code, codes::RATE_LIMITED);
        assert_eq!(e.data, Some(json!({"retryAfterMs": 1501})));
        assert!(
            !(-32768..=-32000).contains(&e.code),
            "outside the JSON-RPC reserved range"
        );
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(2000)), 2);
        assert_eq!(retry_after_seconds(Duration::from_millis(2001)), 3);
    }

    #[test]
    fn status_by_stage() {
        use Stage::*;
        let table = [
            (Envelope, Era::Legacy, codes::INVALID_REQUEST, 400),
            (Session, Era::Legacy, codes::SESSION_NOT_FOUND, 404),
            (Session, Era::Legacy, codes::INVALID_REQUEST, 400),
            (Route, Era::Modern, codes::METHOD_NOT_FOUND, 404),
            (Route, Era::Modern, codes::INVALID_PARAMS, 400),
            (Route, Era::Legacy, codes::METHOD_NOT_FOUND, 200),
            (Dispatch, Era::Modern, codes::INVALID_PARAMS, 200),
            (Dispatch, Era::Legacy, codes::INVALID_REQUEST, 200),
        ];
        for (stage, era, code, want) in table {
            assert_eq!(status_at(stage, era, code), want, "{stage:?} {era:?} {code}");
        }
        assert_eq!(RpcError::session_not_found().code, -32001);
    }

    #[test]
    fn resource_not_found_per_era() {
        assert_eq!(RpcError::resource_not_found(Era::Legacy, "x://a").code, -32002);
        let modern = RpcError::resource_not_found(Era::Modern, "x://a");
        assert_eq!(modern.code, -32602);
        assert_eq!(modern.data, Some(json!({"uri": "x://a"})));
    }

    #[test]
    fn unsupported_version_data() {
        let e = RpcError::unsupported_version(&[Revision::V2026_07_28], "1900-01-01");
        assert_eq!(e.code, -32022);
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "1900-01-01"}))
        );
    }

    #[test]
    fn missing_capability_data() {
        let e = RpcError::missing_capability(json!({"sampling": {}}));
        assert_eq!(e.code, -32021);
        assert_eq!(e.data, Some(json!({"requiredCapabilities": {"sampling": {}}})));
        assert!(e.message.contains("sampling"));
    }

    #[test]
    fn serializes_without_null_data() {
        let v = serde_json::to_value(RpcError::invalid_request("bad")).unwrap();
        assert_eq!(v, json!({"code": -32600, "message": "bad"}));
    }
}
