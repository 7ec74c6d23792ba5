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
    /// [`HttpConfig`]) until Ctrl-C, then shuts down gracefully.
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
    /// cancelled: open streams end, in-flight calls drain.
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
    /// The MCP endpoint as an `axum::Router`, to nest in an existing app.
    pub fn router(&self, config: HttpConfig) -> Result<axum::Router, ServerError> {
        Ok(mcp_transport_http::router(self.runtime.clone(), config)?)
    }

    #[cfg(feature = "stdio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
    /// Serves newline-delimited JSON-RPC on stdin/stdout until stdin closes.
    pub async fn serve_stdio(self) -> Result<(), ServerError> {
        mcp_transport_stdio::serve(self.runtime, mcp_transport_stdio::StdioConfig::default()).await?;
        Ok(())
    }
}
