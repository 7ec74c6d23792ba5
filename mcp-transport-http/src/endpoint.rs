//! The endpoint as an axum router the application serves itself, with the handle that shuts it
//! down gracefully.

use std::future::Future;
use std::sync::Arc;

use axum::Router;

use crate::state::{Readiness, Shared};

/// The MCP endpoint as an `axum::Router` to merge or nest into an application, and the
/// [`EndpointHandle`] that shuts it down. Built by [`endpoint`](crate::endpoint).
///
/// The router sweeps its own idle legacy sessions (every
/// [`HttpConfig::session_sweep_interval`](crate::HttpConfig::session_sweep_interval), idle for
/// longer than the engine's `session_ttl`), starting with its first request (or at once when
/// built inside a Tokio runtime), and stops when the endpoint shuts down or every clone of the
/// router is dropped.
///
/// Shutting it down with the server that serves it (axum 0.8):
///
/// ```no_run
/// # async fn run(engine: mcp_runtime::Engine) -> Result<(), Box<dyn std::error::Error>> {
/// use axum::serve::ListenerExt;
/// use mcp_transport_http::{HttpConfig, endpoint};
///
/// let mcp = endpoint(engine, HttpConfig::default())?;
/// let handle = mcp.handle();
/// let app = axum::Router::new().merge(mcp.into_router());
/// // axum does not set TCP_NODELAY: without it small SSE events wait for Nagle's algorithm.
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080")
///     .await?
///     .tap_io(|tcp| {
///         let _ = tcp.set_nodelay(true);
///     });
/// let stop = handle.clone();
/// tokio::spawn(async move {
///     let _ = tokio::signal::ctrl_c().await;
///     stop.trigger(); // streams end now, calls drain
/// });
/// axum::serve(listener, app)
///     .with_graceful_shutdown(handle.triggered())
///     .await?;
/// handle.shutdown().await; // the calls in flight have drained (or were cancelled)
/// # Ok(())
/// # }
/// ```
///
/// Without the handle, `axum::serve(..).with_graceful_shutdown(..)` waits for every open SSE
/// stream (a legacy GET stream lives as long as its client) and never returns.
///
/// The router also serves the health probes ([`HttpConfig::probes`](crate::HttpConfig::probes):
/// `/livez` and `/readyz` by default, outside the endpoint's checks and authentication). An
/// application that has routes of its own on those paths picks other ones
/// (`.probes("/mcp-livez", "/mcp-readyz")`) or serves none (`.without_probes()`) and asks
/// [`EndpointHandle::readiness`] in its own health route. Nested under a prefix, the probes
/// move with it (`/prefix/readyz`).
#[derive(Clone)]
pub struct Endpoint {
    router: Router,
    handle: EndpointHandle,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").finish_non_exhaustive()
    }
}

impl Endpoint {
    pub(crate) fn new(router: Router, shared: Arc<Shared>) -> Self {
        Endpoint {
            router,
            handle: EndpointHandle { shared },
        }
    }

    /// The router (a clone: routers are cheap to clone).
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// The handle that shuts the endpoint down.
    pub fn handle(&self) -> EndpointHandle {
        self.handle.clone()
    }

    /// The router, giving up this value (keep a [`handle`](Endpoint::handle) first).
    pub fn into_router(self) -> Router {
        self.router
    }

    /// The router and the handle.
    pub fn into_parts(self) -> (Router, EndpointHandle) {
        (self.router, self.handle)
    }
}

impl From<Endpoint> for Router {
    fn from(e: Endpoint) -> Router {
        e.router
    }
}

/// Shuts an [`Endpoint`] down gracefully (cheap to clone; every clone controls the same
/// endpoint).
///
/// A shutdown makes readiness fall at once ([`EndpointHandle::readiness`], the `/readyz`
/// probe), then, after [`HttpConfig::readiness_delay`](crate::HttpConfig::readiness_delay)
/// (default zero) during which everything is served as usual, ends every stream of the
/// endpoint: legacy GET streams, resumable POST
/// streams, `subscriptions/listen` streams (after their completion result), the 2024-11-05
/// pair (whose calls are cancelled with it). The calls in flight then get
/// [`HttpConfig::shutdown_grace`](crate::HttpConfig::shutdown_grace) (default 10 s) to finish;
/// past it every session is closed and the calls still running are cancelled, each with the
/// engine's `cancel_grace` (default 1 s) to clean up (behaviour invariant 27). Requests that
/// arrive meanwhile are still served (stop accepting them with the server's own graceful
/// shutdown, see [`EndpointHandle::triggered`]).
#[derive(Clone)]
pub struct EndpointHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for EndpointHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointHandle")
            .field("triggered", &self.is_triggered())
            .finish_non_exhaustive()
    }
}

impl EndpointHandle {
    /// Begins the shutdown now and returns: readiness falls; after the readiness delay (at
    /// once by default) streams end, and the drain runs in the background. Calling it again
    /// does nothing. Needs a Tokio runtime.
    pub fn trigger(&self) {
        self.shared.begin_shutdown();
    }

    /// Whether the shutdown has begun (readiness has fallen).
    pub fn is_triggered(&self) -> bool {
        self.shared.stopping.is_cancelled()
    }

    /// Whether the endpoint is ready for new clients, as its readiness probe answers: not once
    /// the shutdown has begun, nor while the engine's shared store does not answer its check
    /// (asked at most about once a second; the answer is cached meanwhile).
    pub async fn readiness(&self) -> Readiness {
        self.shared.readiness().await
    }

    /// Completes once the endpoint's streams end: when [`EndpointHandle::trigger`] was called
    /// and the readiness delay is over. Give it to
    /// `axum::serve(..).with_graceful_shutdown(..)`, so that the server stops accepting
    /// connections then.
    pub fn triggered(&self) -> impl Future<Output = ()> + Send + 'static {
        self.shared.shutdown.clone().cancelled_owned()
    }

    /// Shuts the endpoint down: begins the shutdown (if it had not begun) and completes once
    /// every stream has ended and the calls in flight have drained, or were cancelled after
    /// the grace and had their `cancel_grace`: at most `readiness_delay` + `shutdown_grace` +
    /// `cancel_grace` + 1 s.
    pub async fn shutdown(&self) {
        self.trigger();
        self.shared.drained.cancelled().await;
    }
}
