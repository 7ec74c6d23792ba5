//! Serving: Streamable HTTP (on an address, a bound listener, or as an axum router) and stdio.

#[cfg(feature = "http")]
use mcp_transport_http::HttpConfig;
#[cfg(feature = "http")]
use tokio_util::sync::CancellationToken;

use crate::server::{McpServer, ServerError};

impl McpServer {
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    /// Serves Streamable HTTP on `addr` (both eras on `/mcp`, the default
    /// [`HttpConfig`]) until Ctrl-C, then shuts down gracefully (see
    /// [`McpServer::serve_http_on`]). Accepted sockets get `TCP_NODELAY`.
    pub async fn serve_http(self, addr: impl tokio::net::ToSocketAddrs) -> Result<(), ServerError> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.cancel();
            }
        });
        self.serve_http_on(listener, HttpConfig::default(), shutdown).await
    }

    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    /// Serves Streamable HTTP on a bound listener until `shutdown` is
    /// cancelled, then shuts down gracefully: nothing more is accepted, every
    /// SSE stream ends at once (legacy GET streams, `subscriptions/listen`
    /// streams after their completion result, the 2024-11-05 pair, POST
    /// streams), and the calls in flight get
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
        let runtime = self.runtime.clone();
        let ended = shutdown.clone();
        tokio::spawn(async move {
            ended.cancelled().await;
            runtime.shutdown();
        });
        mcp_transport_http::serve(self.runtime, config, listener, shutdown).await?;
        Ok(())
    }

    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    /// The MCP endpoint as an `axum::Router` to merge or nest in an existing
    /// app, with the handle that shuts it down: an
    /// [`Endpoint`](mcp_transport_http::Endpoint).
    ///
    /// The router sweeps its own idle legacy sessions (`session_ttl`, every
    /// [`HttpConfig::session_sweep_interval`]). What the application serving
    /// it must do:
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
    /// tokio::spawn(async move {
    ///     let _ = tokio::signal::ctrl_c().await;
    ///     stop.trigger();
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
        Ok(mcp_transport_http::endpoint(self.runtime.clone(), config)?)
    }

    #[cfg(feature = "stdio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
    /// Serves newline-delimited JSON-RPC on stdin/stdout until stdin closes
    /// (see [`McpServer::serve_stdio_until`] for a graceful shutdown).
    pub async fn serve_stdio(self) -> Result<(), ServerError> {
        self.serve_stdio_with(mcp_transport_stdio::StdioConfig::default(), std::future::pending())
            .await
    }

    #[cfg(feature = "stdio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
    /// Serves newline-delimited JSON-RPC on stdin/stdout until stdin closes
    /// or `shutdown` completes (e.g. `async { let _ = tokio::signal::ctrl_c().await; }`),
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
        mcp_transport_stdio::serve_until(self.runtime, config, shutdown).await?;
        Ok(())
    }
}
