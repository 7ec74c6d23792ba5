//! JSON-RPC batches: legacy only, where the revision allows them (`check_batch`: 2025-03-26 and,
//! for compatibility, 2024-11-05). A batch uses the session its header names and never mints
//! one. Its requests run concurrently; the answer is one JSON array (no streaming, so the
//! elements get a detached sink), or 202 when nothing in it expects an answer.

use std::sync::Arc;

use axum::response::Response;
use http::StatusCode;
use mcp_protocol::classify::check_batch;
use mcp_protocol::jsonrpc::{DecodeError, encode_batch, encode_error, split_batch};
use mcp_protocol::{Message, RpcError};
use mcp_runtime::{InFlight, RequestEnv, Sink};
use tokio_util::sync::CancellationToken;

use crate::post::{HeaderRevision, PostCtx, deliver};
use crate::session::{Lookup, lookup};
use crate::state::{empty, json, rpc_error, session_not_found, session_required};

/// Handles a decoded batch.
pub(crate) async fn handle(cx: PostCtx, items: Vec<Result<Message, DecodeError>>) -> Response {
    let header = HeaderRevision::of(&cx.parts.headers);
    if let Some(r) = header.reject_unknown(None) {
        return r;
    }
    let shared = cx.shared.clone();
    let sessions = shared.sessions();
    let session = match if sessions {
        lookup(&shared, &cx.parts.headers, &cx.auth.principal)
    } else {
        Lookup::Absent
    } {
        Lookup::Found(s) => Some(s),
        Lookup::Unknown => return session_not_found(None),
        Lookup::Absent => None,
    };
    let (messages, mut out) = split_batch(items);
    let revision = header.revision().or(session.as_ref().map(|s| s.revision()));
    if let Err(e) = check_batch(revision, &messages) {
        return rpc_error(400, None, &e);
    }
    let has_requests = messages.iter().any(|m| matches!(m, Message::Request(_)));
    if sessions && session.is_none() && has_requests {
        return session_required(None);
    }
    let sessionless = InFlight::new();
    let in_flight = session.as_ref().map_or(&sessionless, |s| s.in_flight());
    let mut calls = Vec::new();
    for m in messages {
        match m {
            Message::Response(r) => deliver(&cx, r),
            Message::Notification(n) => shared.runtime.notification(&n, session.as_ref(), in_flight),
            Message::Request(req) => {
                let route = match shared.runtime.route(&req, header.revision(), session.as_deref()) {
                    Ok(r) => r,
                    Err(rej) => {
                        out.push(encode_error(Some(&req.id), &rej.error));
                        continue;
                    }
                };
                let cancel = CancellationToken::new();
                let registration = match in_flight.begin(req.id.clone(), cancel.clone()) {
                    Ok(g) => g,
                    Err(dup) => {
                        out.push(encode_error(Some(&req.id), &RpcError::invalid_request(dup.to_string())));
                        continue;
                    }
                };
                let env = RequestEnv {
                    auth: cx.auth.clone(),
                    session: session.clone(),
                    sink: Sink::detached(),
                    cancel,
                    extensions: cx.parts.extensions.clone(),
                };
                let runtime = Arc::clone(&shared.runtime);
                let permit = cx.permit.clone();
                let id = req.id.clone();
                let job = shared.tracker.spawn(async move {
                    let _registration = registration;
                    let _permit = permit;
                    runtime.dispatch(req, &route, env).await
                });
                calls.push((id, job));
            }
        }
    }
    for (id, job) in calls {
        match job.await {
            Ok(reply) => {
                if let Some(frame) = reply.encode(&id) {
                    out.push(frame);
                }
            }
            Err(e) => {
                tracing::error!(%id, error = %e, "batch element failed");
                out.push(encode_error(Some(&id), &RpcError::internal()));
            }
        }
    }
    if out.is_empty() {
        return empty(StatusCode::ACCEPTED);
    }
    json(StatusCode::OK, encode_batch(&out))
}
