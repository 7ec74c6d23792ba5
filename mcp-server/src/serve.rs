//! Serving: Streamable HTTP (on an address, a bound listener, or as an axum router) and stdio.
//! The helpers that run until the process is told to stop drain on Ctrl-C and `SIGTERM`
//! ([`shutdown_signal`](crate::shutdown_signal)).

#[cfg(feature = "http")]
use mcp_transport_http::HttpConfig;
#[cfg(feature = "http")]
use tokio_util::sync::CancellationToken;

use crate::server::{McpServer, ServerError};

impl McpServer {
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    /// Serves Streamable HTTP on `addr` (both eras on `/mcp`, the health
    /// probes on `/livez` and `/readyz`, the default [`HttpConfig`]) until
    /// Ctrl-C or `SIGTERM` ([`shutdown_signal`](crate::shutdown_signal)), then
    /// shuts down gracefully (see [`McpServer::serve_http_on`]). Accepted
    /// sockets get `TCP_NODELAY`.
    pub async fn serve_http(self, addr: impl tokio::net::ToSocketAddrs) -> Result<(), ServerError> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        self.serve_http_listener(listener).await
    }

    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    /// [`McpServer::serve_http`] on a listener bound beforehand: to learn its address first (a
    /// port chosen by the system, `127.0.0.1:0`), or to take one handed over by a supervisor.
    pub async fn serve_http_listener(self, listener: tokio::net::TcpListener) -> Result<(), ServerError> {
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let signal = crate::shutdown_signal();
        mcp_runtime::background::spawn(async move {
            signal.await;
            stop.cancel();
        });
        self.serve_http_on(listener, HttpConfig::default(), shutdown).await
    }

    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    /// Serves Streamable HTTP on a bound listener, with the health probes
    /// ([`HttpConfig::probes`]), until `shutdown` is cancelled (for example
    /// by [`shutdown_signal`](crate::shutdown_signal)), then shuts down
    /// gracefully: `/readyz` answers 503 at once; after
    /// [`HttpConfig::readiness_delay`] (default zero) nothing more is
    /// accepted, every SSE stream ends (legacy GET streams,
    /// `subscriptions/listen` streams after their completion result, the
    /// 2024-11-05 pair, POST streams), and the calls in flight get
    /// [`HttpConfig::shutdown_grace`] (default 10 s) to finish; past it the
    /// sessions are closed and the remaining calls cancelled, each handler
    /// with `ServerConfig::cancel_grace` (default 1 s) to clean up. Returns
    /// once they have drained. Accepted sockets get `TCP_NODELAY`.
    pub async fn serve_http_on(
        self,
        listener: tokio::net::TcpListener,
        config: HttpConfig,
        shutdown: CancellationToken,
    ) -> Result<(), ServerError> {
        self.drive();
        let engine = self.engine.clone();
        let ended = shutdown.clone();
        let delay = config.readiness_delay;
        mcp_runtime::background::spawn(async move {
            ended.cancelled().await;
            // Subscriptions end with the endpoint's streams, once readiness has been down
            // for the delay.
            tokio::time::sleep(delay).await;
            engine.shutdown();
        });
        mcp_transport_http::serve(self.engine, config, listener, shutdown).await?;
        Ok(())
    }

    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    /// The MCP endpoint as an `axum::Router` to merge or nest in an existing
    /// app, with the handle that shuts it down: an
    /// [`Endpoint`](mcp_transport_http::Endpoint).
    ///
    /// The router sweeps its own idle legacy sessions (`session_ttl`, every
    /// [`HttpConfig::session_sweep_interval`]) and serves the health probes
    /// ([`HttpConfig::probes`]: `/livez` and `/readyz` by default, before the
    /// endpoint's checks and authentication; other paths, or none, when the
    /// application has its own). What the application serving it must do:
    ///
    /// - **Shut it down through its handle.** Its SSE streams (a legacy GET
    ///   stream lives as long as its client) end only when the endpoint shuts
    ///   down: `axum::serve(..).with_graceful_shutdown(..)` alone waits for
    ///   them forever. Call [`EndpointHandle::trigger`] (streams end, calls
    ///   drain within [`HttpConfig::shutdown_grace`], then are cancelled),
    ///   give [`EndpointHandle::triggered`] to `with_graceful_shutdown`, and
    ///   await [`EndpointHandle::shutdown`] for the drain.
    /// - **Set `TCP_NODELAY`.** axum does not: with axum 0.8,
    ///   `listener.tap_io(|tcp| { let _ = tcp.set_nodelay(true); })`
    ///   (`axum::serve::ListenerExt`); without it every SSE event and small
    ///   reply may wait for Nagle's algorithm.
    /// - **Name the origins and hosts** when serving beyond loopback: the
    ///   router does not know its address, so `None` means the loopback
    ///   defaults ([`HttpConfig::allowed_origins`],
    ///   [`HttpConfig::allowed_hosts`]).
    /// - **Bound connections** itself: the connection cap, header, idle and
    ///   stall timeouts, HTTP/2 limits and TLS of [`McpServer::serve_http_on`]
    ///   are not the router's (the body limits and body timeout are).
    /// - **Include a prefix** in [`HttpConfig::sse_pair`]'s message path when
    ///   nesting the router under one.
    /// - Call [`McpServer::shutdown`] too when `subscriptions/listen` streams
    ///   of other transports share the server.
    ///
    /// ```no_run
    /// # async fn run(server: mcp_server::McpServer) -> Result<(), Box<dyn std::error::Error>> {
    /// use axum::serve::ListenerExt;
    /// use mcp_server::http::HttpConfig;
    ///
    /// let (mcp, handle) = server.router(HttpConfig::default())?.into_parts();
    /// let app = axum::Router::new().merge(mcp);
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080")
    ///     .await?
    ///     .tap_io(|tcp| {
    ///         let _ = tcp.set_nodelay(true);
    ///     });
    /// let stop = handle.clone();
    /// let signal = mcp_server::shutdown_signal(); // Ctrl-C or SIGTERM
    /// mcp_runtime::background::spawn(async move {
    ///     signal.await;
    ///     stop.trigger(); // /readyz answers 503; streams end after the readiness delay
    /// });
    /// axum::serve(listener, app)
    ///     .with_graceful_shutdown(handle.triggered())
    ///     .await?;
    /// handle.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// [`EndpointHandle::trigger`]: mcp_transport_http::EndpointHandle::trigger
    /// [`EndpointHandle::triggered`]: mcp_transport_http::EndpointHandle::triggered
    /// [`EndpointHandle::shutdown`]: mcp_transport_http::EndpointHandle::shutdown
    pub fn router(&self, config: HttpConfig) -> Result<mcp_transport_http::Endpoint, ServerError> {
        self.drive();
        Ok(mcp_transport_http::endpoint(self.engine.clone(), config)?)
    }

    #[cfg(feature = "stdio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
    /// Serves newline-delimited JSON-RPC on stdin/stdout until stdin closes,
    /// or until Ctrl-C or `SIGTERM` ([`shutdown_signal`](crate::shutdown_signal)):
    /// then it shuts down gracefully as [`McpServer::serve_stdio_until`] says
    /// (the requests in flight are answered before it returns).
    pub async fn serve_stdio(self) -> Result<(), ServerError> {
        self.serve_stdio_with(mcp_transport_stdio::StdioConfig::default(), crate::shutdown_signal())
            .await
    }

    #[cfg(feature = "stdio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
    /// Serves newline-delimited JSON-RPC on stdin/stdout until stdin closes
    /// or `shutdown` completes (e.g. [`shutdown_signal`](crate::shutdown_signal):
    /// Ctrl-C or `SIGTERM`),
    /// then shuts down gracefully: reading stops, `subscriptions/listen`
    /// streams end with `notifications/cancelled` and their completion
    /// result, admitted requests get the drain timeout (default 10 s) to
    /// finish, then are cancelled (each handler with
    /// `ServerConfig::cancel_grace` to clean up), and the output is flushed.
    /// A stdin that is not a pipe (a terminal) is read on a detached thread,
    /// so the process exits when `main` returns even while that read blocks.
    pub async fn serve_stdio_until(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), ServerError> {
        self.serve_stdio_with(mcp_transport_stdio::StdioConfig::default(), shutdown)
            .await
    }

    #[cfg(feature = "stdio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
    /// [`McpServer::serve_stdio_until`] with a transport configuration (the
    /// bounds, the drain timeout).
    pub async fn serve_stdio_with(
        self,
        config: mcp_transport_stdio::StdioConfig,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), ServerError> {
        self.drive();
        mcp_transport_stdio::serve_until(self.engine, config, shutdown).await?;
        Ok(())
    }

    /// Runs this server as a worker only: it serves no client, and runs the tasks the queue of
    /// its store hands it (resumable tools' tasks whose worker stopped, or that a draining
    /// instance handed back), at most `TaskRuns::max_running` at once, until `shutdown`
    /// completes (e.g. [`shutdown_signal`](crate::shutdown_signal)). Then it stops claiming,
    /// gives its running tasks `grace` to end and hands the rest back (see
    /// [`Engine::drain_tasks`](crate::transport::Engine::drain_tasks)). Give it the same store
    /// (feature `redis`: the same Redis) as the instances that accept the calls.
    pub async fn serve_workers(
        self,
        grace: std::time::Duration,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), ServerError> {
        self.drive();
        shutdown.await;
        let handed = self.engine.drain_tasks(grace).await;
        tracing::info!(handed_back = handed, "worker stopped");
        self.engine.shutdown();
        Ok(())
    }
}
