//! POST: the transport's checks in their order (behaviour invariant 3), then the engine.
//!
//! Origin and Host were checked by the caller. Here: `Accept` (406) → `Content-Type` (415) → the
//! in-flight cap (503) → authentication (401/403) → body size (413) and decoding (400). The
//! decoded message goes to
//! the engine with what only HTTP knows (the caller, `MCP-Protocol-Version`,
//! `Mcp-Session-Id`, the headers for the modern agreement checks, whether replies may stream);
//! the engine classifies it into its era *before* any session lookup, runs every check, and
//! hands back an answer, a call to run, or a subscription stream, which this crate writes.

use std::sync::Arc;

use axum::extract::Request as HttpRequest;
use axum::response::Response;
use http::header::HeaderValue;
use mcp_auth::AuthInfo;
use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::{DecodeError, Inbound, decode};
use mcp_protocol::{Message, RpcError, TransportRevision};
use mcp_runtime::engine::HeaderLookup;
use mcp_runtime::{Peer, Sessions, Step};

use crate::body::{limits, read_body, too_large};
use crate::bridge;
use crate::guard;
use crate::headers::{self, SESSION_HEADER, VERSION};
use crate::response::{answer, challenge, empty, refused, rpc_error, unsupported_media_type};
use crate::state::{Permit, Shared};
use crate::status;
use crate::verbs::{batch, call, listen};

/// What the checks established about a POST.
pub(crate) struct PostCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) parts: http::request::Parts,
    pub(crate) auth: Arc<AuthInfo>,
    pub(crate) permit: Permit,
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
        peer.revision = TransportRevision::parse(h.get(VERSION).map(HeaderValue::as_bytes));
        peer.streams = self.shared.streams();
        peer.headers = Some(headers);
        peer.remote = crate::client::remote(&self.shared.config, &extensions);
        peer.with_network(bridge::network(self.parts.version))
            .with_attachments(bridge::attachments(extensions))
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
        return rpc_error(status::NOT_ACCEPTABLE, None, &e);
    }
    if !guard::is_json_body(req.headers()) {
        return unsupported_media_type();
    }
    let (mut parts, body) = req.into_parts();
    let permit = match shared.permit(crate::client::client_addr(&shared.config, &parts)) {
        Ok(p) => p,
        Err(b) => return b.response(),
    };
    let auth = match crate::client::authenticate(&shared.config, &mut parts).await {
        Ok(a) => a.into_shared(),
        Err(c) => return challenge(&c),
    };
    let max = shared.config.max_body_bytes;
    let bytes = match read_body(&shared.config, body, &parts).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let inbound = match decode(&bytes, &limits(&shared.config)) {
        Ok(i) => i,
        Err(DecodeError::TooLarge { .. }) => return too_large(max),
        Err(e) if !e.wants_reply() => return empty(status::NOTHING_TO_ANSWER),
        Err(e) => return refused(Stage::Envelope, e.id(), &e.to_rpc_error()),
    };
    // The message owns what it needs: the body (perhaps the connection's read buffer) goes now.
    drop(bytes);
    let mut cx = PostCtx {
        shared: shared.clone(),
        parts,
        auth,
        permit,
    };
    let extensions = std::mem::take(&mut cx.parts.extensions);
    let map = &cx.parts.headers;
    let get = |name: &str| headers::lookup(map, name);
    let peer = cx.peer(&get, extensions);
    let engine = &shared.engine;
    match inbound {
        Inbound::Single(Message::Response(r)) => {
            engine.deliver(&peer, r).await;
            empty(status::NOTHING_TO_ANSWER)
        }
        Inbound::Single(Message::Notification(n)) => match engine.notification(&peer, &n).await {
            Some(refusal) => answer(&shared.config, refusal),
            None => empty(status::NOTHING_TO_ANSWER),
        },
        Inbound::Single(Message::Request(r)) => {
            let step = engine.request(&peer, r).await;
            let address = peer.remote.map(|r| r.address);
            drop(peer);
            match step {
                Step::Answer(a) => answer(&shared.config, a),
                // A long-lived call (an `events/stream`) is a stream too.
                Step::Call(c) if c.long_lived() => match cx.shared.stream(address) {
                    Ok(stream) => {
                        drop(cx.permit);
                        call::run(&cx.shared, stream, c).await
                    }
                    Err(refusal) => refusal.response(Some(c.id())),
                },
                Step::Call(c) => call::run(&cx.shared, cx.permit, c).await,
                // A stream is held by the stream budget, not by the calls' in-flight cap.
                Step::Listen(l) => {
                    drop(cx.permit);
                    listen::serve(&cx.shared, address, l)
                }
            }
        }
        Inbound::Batch(items) => {
            let step = engine.batch(&peer, items).await;
            drop(peer);
            batch::run(&cx.shared, cx.permit, step).await
        }
    }
}
