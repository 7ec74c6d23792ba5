//! The responses this crate builds outside a stream: empty and JSON bodies, JSON-RPC errors with
//! the status [`status`] gives them, the refusals every verb shares (sessions,
//! overload, authentication, media type, verbs), and the HTTP form of an engine's [`Answer`].

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use mcp_auth::Challenge;
use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::encode_error;
use mcp_protocol::{RequestId, RpcError};
use mcp_runtime::Answer;

use crate::config::HttpConfig;
use crate::headers::SESSION_HEADER;
use crate::status;

/// A response with a status and no body.
pub(crate) fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// A JSON response.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A JSON-RPC error response with an HTTP status.
pub(crate) fn rpc_error(status: StatusCode, id: Option<&RequestId>, error: &RpcError) -> Response {
    json(status, encode_error(id, error))
}

/// A JSON-RPC error this crate raises at `stage`, with the status the protocol gives it there.
pub(crate) fn refused(stage: Stage, id: Option<&RequestId>, error: &RpcError) -> Response {
    rpc_error(status::at(stage, error.code), id, error)
}

/// The answer for an unknown, deleted or another principal's session: always the same 404.
pub(crate) fn session_not_found() -> Response {
    refused(Stage::Session, None, &RpcError::session_not_found())
}

/// The answer for a legacy request without `Mcp-Session-Id`.
pub(crate) fn session_required() -> Response {
    refused(Stage::Session, None, &RpcError::session_required())
}

/// The answer when the shared store a session request needs cannot be reached: 503, so that the
/// client retries (the session may well exist).
pub(crate) fn store_unavailable() -> Response {
    refused(Stage::Overload, None, &RpcError::store_unavailable())
}

/// The answer when the in-flight cap (or another server-wide bound) is reached: 503.
pub(crate) fn overloaded() -> Response {
    rpc_error(status::overload(), None, &RpcError::overloaded())
}

/// 405 with `Allow`: the verbs the route serves.
pub(crate) fn not_allowed(allow: &'static str) -> Response {
    let mut r = empty(status::VERB_NOT_SERVED);
    r.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    r
}

/// 415: a POST whose body is not declared `application/json`.
pub(crate) fn unsupported_media_type() -> Response {
    let e = RpcError::invalid_request("Unsupported Media Type: Content-Type must be application/json");
    rpc_error(status::NOT_JSON, None, &e)
}

/// The answer to a refused authentication: the provider's status and challenge, and
/// `Retry-After` when the provider says when to try again (a 429 for too many failed attempts;
/// a 503 over the provider's own bound, which retries in a second unless it says otherwise).
pub(crate) fn challenge(c: &Challenge) -> Response {
    let status = status::challenge(c.status);
    let mut r = if status == status::overload() {
        overloaded()
    } else {
        empty(status)
    };
    let retry_after = c.retry_after_secs().or((status == status::overload()).then_some(1));
    if let Some(secs) = retry_after {
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some(v) = c
        .www_authenticate
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    // What else the provider's refusal carries (a DPoP server nonce, RFC 9449 §8).
    for (name, value) in &c.headers {
        r.headers_mut().append(name.clone(), value.clone());
    }
    r
}

/// The HTTP response of an answer the engine gave at once (with `Mcp-Session-Id` when
/// `initialize` minted a session, and the authentication provider's `insufficient_scope`
/// challenge when the caller lacks scopes the operation needs).
pub(crate) fn answer(config: &HttpConfig, a: Answer) -> Response {
    let mut resp = json(status::answer(a.status), a.frame);
    crate::bridge::write_headers(resp.headers_mut(), &a.headers);
    if let Some(scopes) = &a.required_scopes {
        let refusal = config.auth.insufficient_scope(scopes);
        if let Some(v) = refusal
            .www_authenticate
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            resp.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
        for (name, value) in refusal.headers {
            resp.headers_mut().append(name, value);
        }
    }
    if let Some(session) = a.session
        && let Ok(value) = HeaderValue::from_str(session.id())
    {
        resp.headers_mut().insert(SESSION_HEADER, value);
    }
    resp
}
