//! Sessions on the wire: resolving `Mcp-Session-Id` for a principal, the GET stream (or the
//! resumption of a POST stream) and DELETE.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::HeaderMap;
use mcp_protocol::event_id::{StreamEventId, parse_stream_id};
use mcp_protocol::{Era, Revision};
use mcp_runtime::SessionHandle;

use crate::guard;
use crate::headers::{SESSION_HEADER, VERSION};
use crate::response::{challenge, empty, session_not_found, session_required, store_unavailable};
use crate::state::Shared;
use crate::status;
use crate::streams::hub::{self, StreamSpec};
use crate::streams::pump;
use crate::streams::resume::{self, Follow};
use crate::streams::shared_stream::{Resumed, SharedLive, SharedTape};
use crate::streams::sse;

/// The session a request names.
pub(crate) enum Lookup {
    /// No `Mcp-Session-Id` header.
    Absent,
    /// The header names a live session the caller owns.
    Found(SessionHandle),
    /// Unknown, deleted, or another principal's: all answer alike (404).
    Unknown,
    /// The shared store could not be asked (503).
    Unavailable,
}

/// Resolves the session header for `principal` (in the shared store too, when there is one).
pub(crate) async fn lookup(shared: &Shared, headers: &HeaderMap, principal: &str) -> Lookup {
    let Some(raw) = headers.get(SESSION_HEADER) else {
        return Lookup::Absent;
    };
    let Ok(id) = raw.to_str() else {
        return Lookup::Unknown;
    };
    match shared.engine.find_session(id, principal).await {
        Ok(Some(s)) => Lookup::Found(s),
        Ok(None) => Lookup::Unknown,
        Err(e) => {
            tracing::warn!(error = %e, "session lookup failed: store unavailable");
            Lookup::Unavailable
        }
    }
}

/// Whether the `MCP-Protocol-Version` header names a modern revision (modern clients have no
/// GET stream and no DELETE).
fn modern_header(headers: &HeaderMap) -> bool {
    headers
        .get(VERSION)
        .and_then(|v| v.to_str().ok())
        .and_then(Revision::parse)
        .is_some_and(|r| r.era() == Era::Modern)
}

/// GET: the legacy standalone SSE stream of a session, or the resumption of one of its POST
/// streams when `Last-Event-ID` names one (`<stream>-<seq>`; `204 No Content` when that stream has
/// nothing left to send, so that the client stops reconnecting).
pub(crate) async fn get(shared: &Arc<Shared>, req: Request) -> Response {
    if !shared.sessions() || modern_header(req.headers()) {
        return shared.method_not_allowed();
    }
    if !guard::accepts_sse(req.headers()) {
        return empty(status::NOT_ACCEPTABLE);
    }
    let (mut parts, _body) = req.into_parts();
    let auth = match crate::client::authenticate(&shared.config, &mut parts).await {
        Ok(a) => a,
        Err(c) => return challenge(&c),
    };
    let session = match lookup(shared, &parts.headers, &auth.principal).await {
        Lookup::Absent => return session_required(),
        Lookup::Unknown => return session_not_found(),
        Lookup::Unavailable => return store_unavailable(),
        Lookup::Found(s) => s,
    };
    // Every stream a GET opens is held by the stream budget, with its response body.
    let permit = match shared.stream(crate::client::address(&parts.extensions)) {
        Ok(p) => p,
        Err(refusal) => return refusal.response(None),
    };
    let last_event_id = parts
        .headers
        .get("last-event-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let channel = shared.hub.channel(&session);
    if let Some(StreamEventId {
        stream: number,
        seq: cursor,
    }) = last_event_id.as_deref().and_then(parse_stream_id)
    {
        // A POST stream's id: resume that stream, never another one.
        let local = channel.streams.get(number);
        if local.is_none()
            && session.is_shared()
            && let Some(store) = shared.engine.store()
        {
            // Its call runs on another instance: follow the stream's shared log.
            let retry = shared.config.sse_retry;
            return match SharedTape::open(
                session.clone(),
                &channel.wakes,
                store.events.clone(),
                number,
                cursor,
                retry,
            )
            .await
            {
                Ok(Resumed::Follow(feed)) => {
                    let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
                    let (keep_alive, shutdown) = (shared.config.sse_keep_alive, shared.shutdown.clone());
                    shared.tracker.spawn(pump::run(feed, tx, keep_alive, shutdown));
                    tracing::debug!(session = %session.id(), stream = number, "POST stream resumed from the shared log");
                    sse::holding(rx, permit)
                }
                Ok(Resumed::Nothing) => empty(status::NOTHING_TO_RESUME),
                Err(e) => {
                    tracing::warn!(session = %session.id(), error = %e, "POST stream not resumed: store unavailable");
                    store_unavailable()
                }
            };
        }
        let Some(tape) = local.filter(|t| !t.consumed(cursor)) else {
            tracing::debug!(session = %session.id(), stream = number, "nothing left to resume");
            return empty(status::NOTHING_TO_RESUME);
        };
        let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
        let follow = Follow {
            streams: channel.streams.clone(),
            tape,
            from: Some(cursor),
            close_at: None,
            retry: shared.config.sse_retry,
            keep_alive: shared.config.sse_keep_alive,
            shutdown: shared.shutdown.clone(),
            session: session.closed().clone(),
        };
        shared
            .tracker
            .spawn(mcp_runtime::background::boxed(resume::follow(follow, tx)));
        tracing::debug!(session = %session.id(), stream = number, "POST stream resumed");
        return sse::holding(rx, permit);
    }
    if session.is_shared()
        && let Some(store) = shared.engine.store()
    {
        let opened = SharedLive::open(
            channel,
            store.events.clone(),
            shared.engine.bus_gaps(),
            last_event_id.as_deref(),
            shared.config.sse_retry,
        )
        .await;
        let feed = match opened {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(session = %session.id(), error = %e, "GET stream not opened: store unavailable");
                return store_unavailable();
            }
        };
        let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
        let (keep_alive, shutdown) = (shared.config.sse_keep_alive, shared.shutdown.clone());
        shared.tracker.spawn(pump::run(feed, tx, keep_alive, shutdown));
        tracing::debug!(session = %session.id(), "shared GET stream opened");
        return sse::holding(rx, permit);
    }
    let spec = StreamSpec {
        channel,
        last_event_id,
        retry: shared.config.sse_retry,
        keep_alive: shared.config.sse_keep_alive,
        shutdown: shared.shutdown.clone(),
    };
    let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
    shared
        .tracker
        .spawn(mcp_runtime::background::boxed(hub::pump(spec, tx)));
    tracing::debug!(session = %session.id(), "GET stream opened");
    sse::holding(rx, permit)
}

/// DELETE: ends the caller's session.
pub(crate) async fn delete(shared: &Arc<Shared>, req: Request) -> Response {
    if !shared.sessions() || modern_header(req.headers()) {
        return shared.method_not_allowed();
    }
    let (mut parts, _body) = req.into_parts();
    let auth = match crate::client::authenticate(&shared.config, &mut parts).await {
        Ok(a) => a,
        Err(c) => return challenge(&c),
    };
    let Some(raw) = parts.headers.get(SESSION_HEADER) else {
        return session_required();
    };
    let Ok(id) = raw.to_str() else {
        return session_not_found();
    };
    match shared.engine.end_session(id, &auth.principal).await {
        Ok(true) => {
            shared.hub.remove(id);
            tracing::debug!(session = id, "session deleted");
            empty(status::SESSION_ENDED)
        }
        Ok(false) => session_not_found(),
        Err(e) => {
            tracing::warn!(session = id, error = %e, "session not deleted: store unavailable");
            store_unavailable()
        }
    }
}
