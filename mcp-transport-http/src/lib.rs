//! # mcp-transport-http
//!
//! The Streamable HTTP transport of the MCP server library, on axum and hyper. One endpoint
//! (default `/mcp`) serves both protocol eras side by side: the legacy revisions 2024-11-05 …
//! 2025-11-25 (`initialize`, `Mcp-Session-Id` sessions, the GET stream, server-to-client
//! requests) and the modern, stateless 2026-07-28 (per-request `_meta`, `Mcp-*` headers). Use
//! [`serve`] to run it on a listener, or [`router`] to mount it in an existing axum app.
//!
//! ## How a POST travels
//!
//! The order of the checks is fixed (behaviour invariant 3): Origin and Host (403, with no CORS
//! headers, so a browser learns nothing) → `Accept` (406) → the in-flight cap (503) →
//! authentication through the configured [`mcp_auth::AuthProvider`] (401/403 with its
//! challenge) → body size (413) and decoding within limits (400) → client responses (202,
//! delivered only to a session the caller owns) → notifications (202) → the era fork, decided
//! by `mcp-protocol` from the body and the `MCP-Protocol-Version` header *before* any session
//! lookup. A modern request checks its `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` headers against the
//! body (-32020) and never reads or mints a session; a legacy one resolves its session
//! (`initialize` mints one; an unknown, deleted or another principal's id is the same 404).
//!
//! Protocol rules are asked of `mcp-protocol`, and handlers run in `mcp-runtime`: this crate only
//! moves bytes, keeps the wire's bounds and picks the response shape. The dispatch of each
//! request runs in its own task with a per-request outbound channel (`Sink`). If the reply is
//! ready before the handler emits anything, it is answered as `application/json`; as soon as a
//! frame (progress, a log message, a legacy server-to-client request) arrives first, the answer
//! switches to `text/event-stream` and carries the frames, then the reply, on that request's own
//! stream. A legacy client that disconnects does not cancel its call; a modern client that
//! closes its stream does. A call cancelled by `notifications/cancelled` is answered with an
//! empty 200.
//!
//! ## Sessions and the GET stream
//!
//! Each legacy session has a ring buffer of its last `sse_buffer_size` server-initiated events
//! (list-changed and resource-updated notifications fanned out from the registry). The GET
//! stream starts with a SEP-1699 priming event (an id and empty data, after a `retry:` field),
//! replays the events after `Last-Event-ID` when the client resumes (or says, with one
//! `notifications/replay_truncated` event, that some were lost), then carries live events.
//! DELETE ends a session; [`serve`] also sweeps idle ones.
//!
//! ## `subscriptions/listen`
//!
//! A modern `subscriptions/listen` is answered with an SSE stream that starts with the runtime's
//! acknowledgement and carries the subscription's notifications until the client closes it (or
//! the server shuts down: then the completion result is written last).
//!
//! ## CORS
//!
//! Every answer to a validated `Origin` echoes it (never a wildcard) with `Vary: Origin`, and
//! lists the allowed methods, the allowed request headers (including every `mcp-param-*` a
//! registered tool declares, recomputed when the registry changes) and the exposed ones.

mod batch;
mod call;
mod config;
mod guard;
mod hub;
mod listen;
mod post;
mod session;
mod sse;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use axum::serve::ListenerExt;
use http::{HeaderValue, Method, StatusCode};
use mcp_protocol::RpcError;
use mcp_runtime::Runtime;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::{HttpConfig, HttpError};

use crate::guard::{HostPolicy, OriginPolicy};
use crate::state::{Shared, empty, rpc_error};

/// Builds the shared state; `bind` is the listening address when known.
fn shared(
    runtime: Arc<Runtime>,
    config: HttpConfig,
    bind: Option<SocketAddr>,
    shutdown: CancellationToken,
) -> Result<Arc<Shared>, HttpError> {
    if !config.path.starts_with('/') {
        return Err(HttpError::InvalidPath(config.path.clone()));
    }
    let loopback = bind.is_none_or(|a| a.ip().is_loopback());
    if let (Some(addr), false, None) = (bind, loopback, &config.allowed_origins) {
        return Err(HttpError::AllowedOriginsRequired { addr });
    }
    let origins = OriginPolicy::new(&config, loopback)?;
    let hosts = HostPolicy::new(&config, loopback)?;
    Ok(Arc::new(Shared::new(runtime, config, origins, hosts, shutdown)))
}

fn routes(shared: Arc<Shared>) -> Router {
    let path = shared.config.path.clone();
    Router::new().route(&path, any(entry)).with_state(shared)
}

/// The MCP endpoint as an axum [`Router`], to merge or nest into an application.
///
/// The router does not know the address it is served on, so a `None`
/// [`HttpConfig::allowed_origins`] / [`HttpConfig::allowed_hosts`] means the loopback defaults:
/// configure both when serving other hosts. Idle sessions are not swept by the router alone:
/// call `runtime.sessions().sweep(ttl)` periodically, or use [`serve`].
pub fn router(runtime: Arc<Runtime>, config: HttpConfig) -> Result<Router, HttpError> {
    let shared = shared(runtime, config, None, CancellationToken::new())?;
    if tokio::runtime::Handle::try_current().is_ok() {
        shared.hub.ensure_started(&shared.runtime, &shared.shutdown);
    }
    Ok(routes(shared))
}

/// Serves the endpoint on `listener` until `shutdown` is cancelled.
///
/// A listener bound to a non-loopback address needs [`HttpConfig::allowed_origins`]. Accepted
/// connections get `TCP_NODELAY`. A background task sweeps sessions idle for longer than the
/// runtime's `session_ttl` every [`HttpConfig::session_sweep_interval`]. On shutdown, no new
/// connection is accepted, GET streams end, and the calls in flight run to their end before this
/// returns.
pub async fn serve(
    runtime: Arc<Runtime>,
    config: HttpConfig,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let addr = listener.local_addr()?;
    let shared = shared(runtime, config, Some(addr), shutdown.child_token())?;
    shared.hub.ensure_started(&shared.runtime, &shared.shutdown);
    let sweeper = {
        let shared = shared.clone();
        tokio::spawn(async move {
            let every = shared
                .config
                .session_sweep_interval
                .max(std::time::Duration::from_millis(10));
            let mut tick = tokio::time::interval(every);
            tick.reset();
            loop {
                tokio::select! {
                    _ = shared.shutdown.cancelled() => return,
                    _ = tick.tick() => {
                        let n = shared.runtime.sessions().sweep(shared.runtime.config().session_ttl);
                        shared.hub.prune();
                        if n > 0 {
                            tracing::debug!(expired = n, "idle sessions swept");
                        }
                    }
                }
            }
        })
    };
    tracing::info!(%addr, path = %shared.config.path, "MCP Streamable HTTP endpoint listening");
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let app = routes(shared.clone());
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await;
    shared.shutdown.cancel();
    sweeper.abort();
    shared.tracker.close();
    shared.tracker.wait().await;
    tracing::info!(%addr, "MCP Streamable HTTP endpoint stopped");
    result.map_err(HttpError::from)
}

/// Every verb of the endpoint: Origin and Host first, then the verb, then CORS.
async fn entry(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    shared.hub.ensure_started(&shared.runtime, &shared.shutdown);
    let headers = req.headers();
    let origin = guard::origin_of(headers);
    if !shared.origins.allows(origin) || !shared.hosts.allows(guard::host_of(headers, req.uri())) {
        tracing::debug!(origin = ?origin.map(String::from_utf8_lossy), "request refused: origin or host not allowed");
        return rpc_error(
            403,
            None,
            &RpcError::invalid_request("Forbidden: origin or host not allowed"),
        );
    }
    let cors = origin.and_then(|o| HeaderValue::from_bytes(o).ok());
    let mut resp = match *req.method() {
        Method::POST => post::handle(&shared, req).await,
        Method::GET => session::get(&shared, req).await,
        Method::DELETE => session::delete(&shared, req).await,
        Method::OPTIONS => empty(StatusCode::NO_CONTENT),
        _ => shared.method_not_allowed(),
    };
    if let Some(o) = cors {
        shared.apply_cors(resp.headers_mut(), o);
    }
    resp
}
