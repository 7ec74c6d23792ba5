//! POST: the transport's checks in their order (behaviour invariant 3), then the engine.
//!
//! Origin and Host were checked by the caller. Here: `Accept` (406) → `Content-Type` (415) → the
//! in-flight cap (503) → authentication (401/403) → body size (413) and decoding (400). The
//! decoded message goes to
//! the runtime's engine with what only HTTP knows (the caller, `MCP-Protocol-Version`,
//! `Mcp-Session-Id`, the headers for the modern agreement checks, whether replies may stream);
//! the engine classifies it into its era *before* any session lookup, runs every check, and
//! hands back an answer, a call to run, or a subscription stream, which this crate writes.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request as HttpRequest;
use axum::response::Response;
use futures::StreamExt;
use http::header::{CONTENT_LENGTH, HeaderValue, WWW_AUTHENTICATE};
use http::{HeaderMap, StatusCode};
use mcp_auth::{AuthInfo, Challenge};
use mcp_protocol::headers::PROTOCOL_VERSION_HEADER;
use mcp_protocol::jsonrpc::{DecodeError, DecodeLimits, Inbound, decode};
use mcp_protocol::{Message, RpcError, TransportRevision};
use mcp_runtime::engine::HeaderLookup;
use mcp_runtime::{Answer, Peer, Sessions, Step};

use crate::guard;
use crate::state::{Permit, SESSION_HEADER, Shared, empty, json, rpc_error};
use crate::verbs::{batch, call, listen};

/// What the checks established about a POST.
pub(crate) struct PostCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) parts: http::request::Parts,
    pub(crate) auth: Arc<AuthInfo>,
    pub(crate) permit: Arc<Permit>,
}

impl PostCtx {
    /// What the engine is told about this POST.
    pub(crate) fn peer<'a>(&'a self, headers: &'a HeaderLookup<'a>, extensions: http::Extensions) -> Peer<'a> {
        let h = &self.parts.headers;
        let sessions = if self.shared.sessions() {
            // A header that is not text names no session that exists.
            Sessions::Store(h.get(SESSION_HEADER).map(|v| v.to_str().unwrap_or("")))
        } else {
            Sessions::None
        };
        let mut peer = Peer::new(self.auth.clone(), sessions);
        peer.revision = TransportRevision::parse(h.get(PROTOCOL_VERSION_HEADER).map(HeaderValue::as_bytes));
        peer.streams = self.shared.streams();
        peer.headers = Some(headers);
        peer.remote = extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        peer.with_extensions(extensions)
    }
}

/// The HTTP response of an answer the engine gave at once (with `Mcp-Session-Id` when
/// `initialize` minted a session).
pub(crate) fn answer(a: Answer) -> Response {
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut resp = json(status, a.frame);
    if let Some(session) = a.session
        && let Ok(value) = HeaderValue::from_str(session.id())
    {
        resp.headers_mut().insert(SESSION_HEADER, value);
    }
    resp
}

/// 415: a POST whose body is not declared `application/json`.
pub(crate) fn unsupported_media_type() -> Response {
    let e = RpcError::invalid_request("Unsupported Media Type: Content-Type must be application/json");
    rpc_error(415, None, &e)
}

/// The answer to a refused authentication.
pub(crate) fn challenge(c: &Challenge) -> Response {
    if c.status == 503 {
        // The provider is over its own bound (e.g. password hashing in flight): retry soon.
        let mut r = rpc_error(503, None, &RpcError::overloaded());
        r.headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
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
    if !guard::is_json_body(req.headers()) {
        return unsupported_media_type();
    }
    let Some(permit) = shared.permit() else {
        tracing::warn!(limit = shared.config.max_in_flight, "too many requests in flight");
        return rpc_error(503, None, &RpcError::overloaded());
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
    let limits = DecodeLimits::new(max, shared.config.max_depth).with_max_batch(shared.config.max_batch);
    let inbound = match decode(&bytes, &limits) {
        Ok(i) => i,
        Err(DecodeError::TooLarge { .. }) => return too_large(max),
        Err(e) if !e.wants_reply() => return empty(StatusCode::ACCEPTED),
        Err(e) => return rpc_error(400, e.id(), &e.to_rpc_error()),
    };
    let mut cx = PostCtx {
        shared: shared.clone(),
        parts,
        auth,
        permit,
    };
    let extensions = std::mem::take(&mut cx.parts.extensions);
    let headers = &cx.parts.headers;
    let get = |name: &str| headers.get(name).map(HeaderValue::as_bytes);
    let peer = cx.peer(&get, extensions);
    let engine = &shared.engine;
    match inbound {
        Inbound::Single(Message::Response(r)) => {
            engine.deliver(&peer, r).await;
            empty(StatusCode::ACCEPTED)
        }
        Inbound::Single(Message::Notification(n)) => match engine.notification(&peer, &n).await {
            Some(refused) => answer(refused),
            None => empty(StatusCode::ACCEPTED),
        },
        Inbound::Single(Message::Request(r)) => {
            let step = engine.request(&peer, r).await;
            drop(peer);
            match step {
                Step::Answer(a) => answer(a),
                Step::Call(c) => call::run(&cx.shared, cx.permit.clone(), c).await,
                Step::Listen(l) => listen::serve(&cx.shared, cx.permit.clone(), l),
            }
        }
        Inbound::Batch(items) => {
            let step = engine.batch(&peer, items).await;
            drop(peer);
            batch::run(&cx.shared, cx.permit.clone(), step).await
        }
    }
}
