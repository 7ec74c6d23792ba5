//! # mcp-transport-http
//!
//! The Streamable HTTP transport of the MCP server library, on axum and hyper. One endpoint
//! (default `/mcp`) serves both protocol eras side by side: the legacy revisions 2024-11-05 …
//! 2025-11-25 (`initialize`, `Mcp-Session-Id` sessions, the GET stream, server-to-client
//! requests) and the modern, stateless 2026-07-28 (per-request `_meta`, `Mcp-*` headers). Use
//! [`serve`] to run it on a listener, or [`endpoint`] to mount it in an existing axum app (with
//! the [`EndpointHandle`] that shuts it down).
//!
//! ## Health probes and shutdown
//!
//! Beside the endpoint, [`serve`] and [`endpoint`] answer the health probes
//! ([`HttpConfig::probes`]): `/livez` (`200 ok` while serving) and `/readyz` (`503 draining`
//! once a shutdown has begun, `503 store unreachable` while the engine's shared store fails
//! its check, `200 ok` otherwise; see [`Readiness`]), before the Origin and Host checks,
//! authentication and every limit.
//!
//! A graceful shutdown ([`serve`]'s token, [`EndpointHandle::shutdown`]) makes readiness fall
//! at once, serves as usual for [`HttpConfig::readiness_delay`] (zero by default), then ends
//! every SSE stream, gives the calls in flight [`HttpConfig::shutdown_grace`] to finish, then
//! closes the sessions and cancels what still runs (each handler has the engine's
//! `cancel_grace` to clean up): behaviour invariant 27.
//!
//! ## How a POST travels
//!
//! The order of the checks is fixed (behaviour invariant 3). This crate checks Origin and Host
//! (403, with no CORS headers, so a browser learns nothing) → `Accept` (406) → `Content-Type`
//! (415) → the in-flight cap (503) → authentication through the configured
//! [`mcp_auth::AuthProvider`] (401/403 with its challenge) → body size (413) and decoding within
//! limits (400). The message then goes to the engine (`mcp_runtime::Engine`, the one
//! pipeline every transport uses) with what only HTTP knows: the caller, `MCP-Protocol-Version`,
//! `Mcp-Session-Id`, the headers for the modern agreement checks. The engine delivers client
//! responses (202, only to a session the caller owns), routes notifications (202), decides the
//! era from the body and the header *before* any session lookup, checks a modern request's
//! `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` headers against the body (-32020) without ever reading
//! or minting a session, resolves a legacy one's session (`initialize` mints one; an unknown,
//! deleted or another principal's id is the same 404), and hands back an answer with its status,
//! a call to run, or a subscription stream.
//!
//! Protocol rules are asked of `mcp-protocol` and the pipeline is the engine's: this crate only
//! moves bytes, keeps the wire's bounds and picks the response shape (its place in the workspace:
//! `docs/ARCHITECTURE.md`). Each call runs in its own task with a per-request outbound channel
//! (`Sink`); every stream (the GET stream, listen streams, the pair, a call's stream,
//! resumable or not) is written by one pump (keep-alives, the client leaving, shutdown). If the reply is
//! ready before the handler emits anything, it is answered as `application/json`; as soon as a
//! frame (progress, a log message, a legacy server-to-client request) arrives first, the answer
//! switches to `text/event-stream` and carries the frames, then the reply, on that request's own
//! stream ([`HttpConfig::open_stream_after`] opens a silent modern call's stream after a while). A legacy client that disconnects does not cancel its call; a modern client that
//! closes its stream does. A call cancelled by `notifications/cancelled` gets no JSON-RPC
//! answer: a stream that had started just ends, otherwise the POST is answered with an SSE
//! stream that ends before any event (behaviour invariant 13).
//!
//! ## Resumable POST streams (SEP-1699)
//!
//! A legacy call of a session that streams gets a resumable stream: it starts with a priming
//! event (an id and empty data, after a `retry:` field), and every event carries an id
//! `<stream>-<seq>` that names the stream. The events are kept in the stream's buffer, so a
//! client whose connection broke, or whose stream the server closed (see
//! [`HttpConfig::poll_after`]), resumes with a GET carrying `Last-Event-ID` and receives the
//! rest, ending with the reply. A stream with nothing left to send answers that GET with
//! `204 No Content`, which tells a client to stop reconnecting.
//!
//! ## Sessions and the GET stream
//!
//! Each legacy session has a ring buffer of its last `sse_buffer_size` server-initiated events
//! (list-changed and resource-updated notifications fanned out from the registry). The GET
//! stream starts with a SEP-1699 priming event (an id and empty data, after a `retry:` field),
//! replays the events after `Last-Event-ID` when the client resumes (or says, with one
//! `notifications/replay_truncated` event, that some were lost), then carries live events.
//! DELETE ends a session; [`serve`] and [`endpoint`] also sweep idle ones.
//!
//! ## `subscriptions/listen`
//!
//! A modern `subscriptions/listen` is answered with an SSE stream that starts with the engine's
//! acknowledgement and carries the subscription's notifications until the client closes it (or
//! the server shuts down: then the completion result is written last).
//!
//! ## Other ways in
//!
//! [`HttpMode::Simple`] serves POST only, with JSON replies and no sessions.
//! [`HttpConfig::sse_pair`] adds the 2024-11-05 HTTP+SSE transport (a GET stream whose first
//! event names the URL to POST messages to; the session is the stream).
//! [`HttpConfig::with_resource_metadata`] serves the RFC 9728 document before any check, and
//! [`HttpConfig::with_server_card`] and [`HttpConfig::with_catalog`] the discovery documents of
//! SEP-2127 (the server's card at `<path>/server-card`, a domain's AI Catalog).
//!
//! ## Connections
//!
//! [`serve`] accepts at most [`HttpConfig::max_connections`] connections (at the cap the
//! longest-idle one makes room for a newcomer), sets `TCP_NODELAY`, speaks HTTP/1.1 and HTTP/2
//! (h2c with prior knowledge, or ALPN over TLS with [`HttpConfig::with_tls`]), and bounds what a
//! silent or slow client can hold: [`HttpConfig::header_read_timeout`],
//! [`HttpConfig::idle_timeout`], HTTP/2 keep-alive pings, [`HttpConfig::stall_timeout`] for a
//! reader that stopped reading, explicit HTTP/2 limits, and [`HttpConfig::body_timeout`] for
//! every body read (a slower body is answered `408`). The Host rules follow RFC 9112 §3.2 and
//! RFC 9113 §8.3.1: an absolute-form target's authority and the h2 `:authority` win over `Host`
//! (403 when not allowed), and two `Host` headers or disagreeing ones are 400.
//!
//! ## CORS
//!
//! Every answer to a validated `Origin` echoes it (never a wildcard) with `Vary: Origin`, and
//! lists the allowed methods, the allowed request headers (including every `mcp-param-*` a
//! registered tool declares, recomputed when the registry changes) and the exposed ones.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod admit;
mod body;
mod bridge;
mod client;
mod config;
mod discovery;
mod endpoint;
mod error;
mod guard;
mod headers;
mod metadata;
mod pair;
mod probes;
mod response;
mod routes;
mod server;
mod state;
mod status;
mod streams;
#[cfg(feature = "tls")]
mod tls;
mod verbs;

use axum::Router;
use mcp_runtime::Engine;
use tokio_util::sync::CancellationToken;

pub use config::{HttpConfig, HttpMode};
pub use endpoint::{Endpoint, EndpointHandle};
pub use error::HttpError;
pub use server::serve;
pub use state::Readiness;
/// The rustls version this crate serves TLS with (for [`HttpConfig::with_rustls`]).
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tokio_rustls::rustls;

use crate::state::Shared;

/// The MCP endpoint as an `axum::Router`, to merge or nest into an application, with the
/// [`EndpointHandle`] that shuts it down (see [`Endpoint`] for the whole pattern).
///
/// What the router does not know or own, the application must see to:
///
/// - **Shutdown.** Its SSE streams (a legacy GET stream lives as long as its client) end only
///   when the endpoint shuts down: call [`EndpointHandle::trigger`] or
///   [`EndpointHandle::shutdown`] and give [`EndpointHandle::triggered`] to
///   `axum::serve(..).with_graceful_shutdown(..)`; without it the server's graceful shutdown
///   waits for those streams forever.
/// - **`TCP_NODELAY`.** Set it on accepted sockets (axum 0.8: `axum::serve::ListenerExt`,
///   `listener.tap_io(|tcp| { let _ = tcp.set_nodelay(true); })`), or SSE events and small
///   replies wait for Nagle's algorithm and delayed ACKs (tens of ms per event).
/// - **Origins and hosts.** The router does not know the address it is served on, so a `None`
///   [`HttpConfig::allowed_origins`] / [`HttpConfig::allowed_hosts`] means the loopback
///   defaults: configure both when serving other hosts.
/// - **Connections.** The connection cap, the header-read, idle and stall timeouts, HTTP/2
///   limits and TLS are [`serve`]'s; the application's server has its own (or none). The
///   body limits and the body-read timeout apply.
/// - **Paths.** [`HttpConfig::path`] (and the 2024-11-05 pair's paths, and the health probes'
///   `/livez` and `/readyz`, [`HttpConfig::probes`]) are routes of this router: nested under a
///   prefix, the pair's `endpoint` event must name the prefix too (see
///   [`HttpConfig::sse_pair`]); a route of the application on a probe's path clashes with it
///   (move the probes, or serve none and ask [`EndpointHandle::readiness`]).
///
/// The router sweeps its own idle sessions (started with its first request, or at once when
/// built inside a Tokio runtime). Request extensions set by the application's middleware reach
/// handlers as one attachment: `ctx.attachments().get::<http::Extensions>()`.
pub fn endpoint(engine: Engine, config: HttpConfig) -> Result<Endpoint, HttpError> {
    let shared = Shared::build(engine, config, None, CancellationToken::new())?;
    if tokio::runtime::Handle::try_current().is_ok() {
        shared.start_tasks();
    }
    Ok(Endpoint::new(routes::build(shared.clone()), shared))
}

/// The MCP endpoint as an `axum::Router` alone: [`endpoint`] without its handle, so it cannot
/// be shut down gracefully (its SSE streams end only when their clients leave). Prefer
/// [`endpoint`]; every caveat listed there applies.
pub fn router(engine: Engine, config: HttpConfig) -> Result<Router, HttpError> {
    endpoint(engine, config).map(Endpoint::into_router)
}
