//! POST: the checks in their order (behaviour invariant 3), then the era fork.
//!
//! Origin and Host were checked by the caller. Here: `Accept` (406) → the in-flight cap (503) →
//! authentication (401/403) → body size (413) and decoding (400) → client responses (202) →
//! notifications (202) → requests, classified into their era *before* any session lookup. A
//! modern request never looks a session up nor mints one; a legacy one resolves its session
//! (`initialize` mints one) and then runs.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request as HttpRequest;
use axum::response::Response;
use futures::StreamExt;
use http::header::{CONTENT_LENGTH, HeaderValue, WWW_AUTHENTICATE};
use http::{HeaderMap, StatusCode};
use mcp_auth::{AuthInfo, Challenge};
use mcp_protocol::classify::{era_of, request_era};
use mcp_protocol::headers::{PROTOCOL_VERSION_HEADER, check_param_headers, check_standard_headers};
use mcp_protocol::jsonrpc::{DecodeError, DecodeLimits, Inbound, decode, encode_result};
use mcp_protocol::meta::{PROTOCOL_VERSION, meta_of, progress_token};
use mcp_protocol::{Era, Message, Notification, Request, Response as RpcResponse, Revision, RpcError};
use mcp_runtime::InFlight;
use serde_json::Value;

use crate::call::{self, Mode};
use crate::session::{Lookup, lookup};
use crate::state::{Permit, SESSION_HEADER, Shared, empty, json, rpc_error, session_not_found, session_required};
use crate::{batch, guard, listen};

/// What the checks established about a POST.
pub(crate) struct PostCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) parts: http::request::Parts,
    pub(crate) auth: Arc<AuthInfo>,
    pub(crate) permit: Arc<Permit>,
}

/// The `MCP-Protocol-Version` header.
pub(crate) enum HeaderRevision {
    /// Not sent.
    Absent,
    /// A known revision.
    Known(Revision),
    /// A value that names no revision.
    Unknown(String),
}

impl HeaderRevision {
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        match headers.get(PROTOCOL_VERSION_HEADER) {
            None => HeaderRevision::Absent,
            Some(v) => {
                let s = String::from_utf8_lossy(v.as_bytes()).trim().to_owned();
                Revision::parse(&s).map_or(HeaderRevision::Unknown(s), HeaderRevision::Known)
            }
        }
    }

    pub(crate) fn revision(&self) -> Option<Revision> {
        match self {
            HeaderRevision::Known(r) => Some(*r),
            _ => None,
        }
    }

    /// The legacy answer to an unknown value: 400.
    pub(crate) fn reject_unknown(&self, id: Option<&mcp_protocol::RequestId>) -> Option<Response> {
        match self {
            HeaderRevision::Unknown(v) => Some(rpc_error(
                400,
                id,
                &RpcError::invalid_request(format!("Unsupported MCP-Protocol-Version: {v}")),
            )),
            _ => None,
        }
    }
}

/// The answer to a refused authentication.
pub(crate) fn challenge(c: &Challenge) -> Response {
    let mut r = empty(StatusCode::from_u16(c.status).unwrap_or(StatusCode::UNAUTHORIZED));
    if let Some(v) = c
        .www_authenticate
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    r
}

enum BodyError {
    TooLarge,
    Io,
}

async fn read_limited(body: Body, headers: &HeaderMap, max: usize) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut stream = body.into_data_stream();
    let mut buf = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| BodyError::Io)?;
        if buf.len() + chunk.len() > max {
            return Err(BodyError::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

fn too_large(max: usize) -> Response {
    rpc_error(
        413,
        None,
        &RpcError::invalid_request(format!("Request body exceeds {max} bytes")),
    )
}

/// Reads a request body within [`HttpConfig::max_body_bytes`](crate::HttpConfig::max_body_bytes)
/// (413) and [`HttpConfig::body_timeout`](crate::HttpConfig::body_timeout).
///
/// A body that does not arrive in time is answered `408 Request Timeout`, the status HTTP
/// defines for "the server did not receive a complete request message within the time it was
/// prepared to wait" (RFC 9110 §15.5.9): the request was not wrong, so a 400 would blame the
/// client for its content, and clients and proxies know 408 may be retried on a new connection.
/// The body is a JSON-RPC error (-32600, no id: the request was never read) with
/// `Connection: close` (HTTP/1.1), since the rest of that body may still arrive.
pub(crate) async fn read_body(shared: &Shared, body: Body, parts: &http::request::Parts) -> Result<Bytes, Response> {
    let max = shared.config.max_body_bytes;
    let timeout = shared.config.body_timeout;
    match tokio::time::timeout(timeout, read_limited(body, &parts.headers, max)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(BodyError::TooLarge)) => Err(too_large(max)),
        Ok(Err(BodyError::Io)) => Err(rpc_error(
            400,
            None,
            &RpcError::parse_error("Could not read the request body"),
        )),
        Err(_) => {
            tracing::debug!(?timeout, "request body timed out");
            let e = RpcError::invalid_request(format!("Request body not received within {} ms", timeout.as_millis()));
            let mut r = rpc_error(408, None, &e);
            if parts.version < http::Version::HTTP_2 {
                r.headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            }
            Err(r)
        }
    }
}

/// Handles a POST whose Origin and Host passed.
pub(crate) async fn handle(shared: &Arc<Shared>, req: HttpRequest) -> Response {
    let accepted = if shared.streams() {
        guard::accepts_post(req.headers())
    } else {
        guard::accepts_json(req.headers())
    };
    if !accepted {
        let e = RpcError::invalid_request("Not Acceptable: Accept must list application/json and text/event-stream");
        return rpc_error(406, None, &e);
    }
    let Some(permit) = shared.permit() else {
        tracing::warn!(limit = shared.config.max_in_flight, "too many requests in flight");
        return rpc_error(503, None, &RpcError::internal_with("Server is overloaded"));
    };
    let (parts, body) = req.into_parts();
    let auth = match shared.config.auth.authenticate(&parts).await {
        Ok(a) => Arc::new(a),
        Err(c) => return challenge(&c),
    };
    let max = shared.config.max_body_bytes;
    let bytes = match read_body(shared, body, &parts).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let limits = DecodeLimits {
        max_bytes: max,
        max_depth: shared.config.max_depth,
    };
    let inbound = match decode(&bytes, &limits) {
        Ok(i) => i,
        Err(DecodeError::TooLarge { .. }) => return too_large(max),
        Err(e) if !e.wants_reply() => return empty(StatusCode::ACCEPTED),
        Err(e) => return rpc_error(400, e.id(), &e.to_rpc_error()),
    };
    let cx = PostCtx {
        shared: shared.clone(),
        parts,
        auth,
        permit,
    };
    match inbound {
        Inbound::Single(Message::Response(r)) => {
            deliver(&cx, r);
            empty(StatusCode::ACCEPTED)
        }
        Inbound::Single(Message::Notification(n)) => notification(&cx, &n),
        Inbound::Single(Message::Request(r)) => request(cx, r).await,
        Inbound::Batch(items) => batch::handle(cx, items).await,
    }
}

/// A client response: delivered only to a session the caller owns, else dropped behind the same
/// 202 (no oracle).
pub(crate) fn deliver(cx: &PostCtx, r: RpcResponse) {
    if !cx.shared.sessions() {
        return;
    }
    match lookup(&cx.shared, &cx.parts.headers, &cx.auth.principal) {
        Lookup::Found(s) => {
            if !s.deliver(&r.id, r.outcome) {
                tracing::debug!(id = %r.id, "client response matches no pending request");
            }
        }
        _ => tracing::debug!(id = %r.id, "client response for no owned session dropped"),
    }
}

fn notification(cx: &PostCtx, n: &Notification) -> Response {
    let header = HeaderRevision::of(&cx.parts.headers);
    let runtime = &cx.shared.runtime;
    if era_of(n.params.as_ref(), header.revision()) == Era::Modern {
        // Modern cancellation is the closing of the request's stream.
        tracing::debug!(method = %n.method, "modern notification accepted");
        return empty(StatusCode::ACCEPTED);
    }
    let found = if cx.shared.sessions() {
        lookup(&cx.shared, &cx.parts.headers, &cx.auth.principal)
    } else {
        Lookup::Absent
    };
    match found {
        Lookup::Found(s) => runtime.notification(n, Some(&s), s.in_flight()),
        Lookup::Unknown => return session_not_found(None),
        Lookup::Absent => runtime.notification(n, None, &InFlight::new()),
    }
    empty(StatusCode::ACCEPTED)
}

async fn request(cx: PostCtx, req: Request) -> Response {
    let header = HeaderRevision::of(&cx.parts.headers);
    match request_era(&req, header.revision()) {
        Era::Modern => modern(cx, req, header.revision()).await,
        Era::Legacy => legacy(cx, req, header).await,
    }
}

async fn modern(cx: PostCtx, req: Request, transport: Option<Revision>) -> Response {
    let headers = &cx.parts.headers;
    let get = |name: &str| headers.get(name).map(|v| v.as_bytes());
    let params = req.params.as_ref();
    // Header/body agreement first (-32020); without a `_meta` version string the route below
    // refuses the envelope itself.
    if let Some(version) = meta_of(params)
        .and_then(|m| m.get(PROTOCOL_VERSION))
        .and_then(Value::as_str)
        && let Err(e) = check_standard_headers(&req.method, params, version, &get)
    {
        return rpc_error(400, Some(&req.id), &e);
    }
    let route = match cx.shared.runtime.route(&req, transport, None) {
        Ok(r) => r,
        Err(rej) => return rpc_error(rej.http_status(), Some(&req.id), &rej.error),
    };
    if req.method == "tools/call" {
        // A tool hidden from the caller is unknown here too: its headers are not checked.
        let tool = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .and_then(|n| cx.shared.runtime.tool_for(&cx.auth, n));
        if let Some(tool) = tool {
            let args = params.and_then(|p| p.get("arguments")).and_then(Value::as_object);
            if let Err(e) = check_param_headers(&tool.param_headers, args, &get) {
                return rpc_error(400, Some(&req.id), &e);
            }
        }
    }
    if req.method == "subscriptions/listen" {
        if !cx.shared.streams() {
            let e = RpcError::invalid_request("subscriptions/listen needs a streaming transport");
            return rpc_error(400, Some(&req.id), &e);
        }
        return listen::open(cx, &req, &route);
    }
    let stream = progress_token(params).is_some() || route.modern.as_ref().is_some_and(|m| m.log_level.is_some());
    call::run(cx, req, route, None, Mode::Modern { stream }).await
}

async fn legacy(cx: PostCtx, req: Request, header: HeaderRevision) -> Response {
    if let Some(r) = header.reject_unknown(Some(&req.id)) {
        return r;
    }
    let transport = header.revision();
    let sessions = cx.shared.sessions();
    let found = if sessions {
        lookup(&cx.shared, &cx.parts.headers, &cx.auth.principal)
    } else {
        Lookup::Absent
    };
    if req.method == "initialize" {
        return match found {
            Lookup::Absent => initialize(&cx, &req, transport),
            Lookup::Unknown => session_not_found(Some(&req.id)),
            Lookup::Found(_) => rpc_error(
                400,
                Some(&req.id),
                &RpcError::invalid_request("Session already initialized"),
            ),
        };
    }
    let session = match found {
        Lookup::Found(s) => Some(s),
        Lookup::Unknown => return session_not_found(Some(&req.id)),
        Lookup::Absent if !sessions || req.method == "server/discover" => None,
        Lookup::Absent => return session_required(Some(&req.id)),
    };
    let route = match cx.shared.runtime.route(&req, transport, session.as_deref()) {
        Ok(r) => r,
        Err(rej) => return rpc_error(rej.http_status(), Some(&req.id), &rej.error),
    };
    call::run(cx, req, route, session, Mode::Legacy).await
}

/// A legacy `initialize` without a session header: mints the session.
fn initialize(cx: &PostCtx, req: &Request, transport: Option<Revision>) -> Response {
    let runtime = &cx.shared.runtime;
    if let Err(rej) = runtime.route(req, transport, None) {
        return rpc_error(rej.http_status(), Some(&req.id), &rej.error);
    }
    match runtime.initialize(req, &cx.auth) {
        Ok((result, session)) => {
            let mut resp = json(StatusCode::OK, encode_result(&req.id, &result));
            if cx.shared.sessions()
                && let Ok(value) = HeaderValue::from_str(session.id())
            {
                // The session's event channel (ring buffer, GET stream state) is created
                // when it is first needed: most sessions never open a stream.
                runtime.sessions().insert(session.clone());
                resp.headers_mut().insert(SESSION_HEADER, value);
                tracing::debug!(session = %session.id(), revision = %session.revision(), "session minted");
            }
            resp
        }
        Err(e) => rpc_error(200, Some(&req.id), &e),
    }
}
