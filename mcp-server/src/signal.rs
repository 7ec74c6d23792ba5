//! The signals a server shuts down gracefully on: [`shutdown_signal`].

use std::future::Future;

/// Completes on the first shutdown signal the process receives: Ctrl-C (`SIGINT`) or, on
/// Unix, `SIGTERM` (what Kubernetes, systemd and Docker send to stop a process). Give it to
/// [`McpServer::serve_stdio_until`](crate::McpServer::serve_stdio_until), use it to cancel the
/// token of [`McpServer::serve_http_on`](crate::McpServer::serve_http_on), or to trigger the
/// `EndpointHandle` of a [`McpServer::router`](crate::McpServer::router):
/// [`McpServer::serve_http`](crate::McpServer::serve_http) and
/// [`McpServer::serve_stdio`](crate::McpServer::serve_stdio) use it themselves.
///
/// The handlers are installed when this is called, not when the future is first polled, so a
/// signal that arrives in between is not missed; once installed, the signal no longer ends the
/// process by itself (for the rest of its life: tokio never uninstalls them), so drain and
/// return from `main`. Must be called within a Tokio runtime. A handler that cannot be
/// installed is logged as a warning and that signal is not waited for.
///
/// ```no_run
/// # async fn run(server: mcp_server::McpServer) -> Result<(), mcp_server::ServerError> {
/// server.serve_stdio_until(mcp_server::shutdown_signal()).await
/// # }
/// ```
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            tokio::select! {
                () = unix::received(interrupt, "SIGINT") => {}
                () = unix::received(terminate, "SIGTERM") => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            match tokio::signal::ctrl_c().await {
                Ok(()) => tracing::info!(signal = "Ctrl-C", "shutdown signal received"),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for Ctrl-C");
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

#[cfg(unix)]
mod unix {
    use tokio::signal::unix::Signal;

    /// Completes when `signal` (named `name`) is received; never when it could not be
    /// installed.
    pub(super) async fn received(signal: std::io::Result<Signal>, name: &'static str) {
        match signal {
            Ok(mut s) => {
                if s.recv().await.is_some() {
                    tracing::info!(signal = name, "shutdown signal received");
                    return;
                }
            }
            Err(e) => tracing::warn!(signal = name, error = %e, "cannot install the signal handler"),
        }
        std::future::pending::<()>().await;
    }
}
