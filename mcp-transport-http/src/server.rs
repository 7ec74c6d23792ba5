//! Serving on a listener: the accept loop, the connection cap, `TCP_NODELAY`, TLS, HTTP/1.1 and
//! HTTP/2, and graceful shutdown.
//!
//! Every accepted connection takes a slot of [`HttpConfig::max_connections`] with one atomic
//! add; a connection over the cap is closed at once (and the loop pauses 50 ms, so that a flood
//! does not spin it). The slot is a guard owned by the connection's task: it is released however
//! the connection ends (completed, reset, failed handshake, panic, shutdown). Each connection is
//! served by hyper-util's auto builder, which reads the first bytes: an HTTP/2 preface (h2c with
//! prior knowledge, or `h2` negotiated through ALPN on TLS) selects HTTP/2, anything else
//! HTTP/1.1.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::{Extension, Router};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use mcp_runtime::Runtime;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::config::{HttpConfig, HttpError};
use crate::state::Shared;

/// The pause after refusing a connection or failing an accept.
const BACKOFF: Duration = Duration::from_millis(50);
/// The longest a TLS handshake may take.
const TLS_HANDSHAKE: Duration = Duration::from_secs(30);

/// One slot of the connection cap, released when dropped.
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// Takes a slot, or `None` when `max` connections are open.
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        let n = count.fetch_add(1, Ordering::AcqRel) + 1;
        if n > max {
            count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(count.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Prepares an accepted socket: small writes (SSE events) leave at once.
fn prepare(tcp: &TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
}

/// Serves the endpoint on `listener` until `shutdown` is cancelled.
///
/// A listener bound to a non-loopback address needs [`HttpConfig::allowed_origins`]. Accepted
/// connections get `TCP_NODELAY`; at most [`HttpConfig::max_connections`] are served at once.
/// Cleartext connections speak HTTP/1.1 or HTTP/2 with prior knowledge (h2c); with
/// [`HttpConfig::with_tls`] they are TLS with ALPN `h2`/`http/1.1`. A background task sweeps
/// sessions idle for longer than the runtime's `session_ttl` every
/// [`HttpConfig::session_sweep_interval`]. On shutdown no new connection is accepted, SSE streams
/// end, and the calls in flight run to their end (at most [`HttpConfig::shutdown_grace`]) before
/// this returns.
pub async fn serve(
    runtime: Arc<Runtime>,
    config: HttpConfig,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let addr = listener.local_addr()?;
    let shared = crate::shared(runtime, config, Some(addr), shutdown.child_token())?;
    shared.hub.ensure_started(&shared.runtime, &shared.shutdown);
    let sweeper = tokio::spawn(sweep(shared.clone()));
    let app = crate::routes(shared.clone());
    let tls = shared.config.tls.clone().map(TlsAcceptor::from);
    let max = shared.config.max_connections;
    let open = Arc::new(AtomicUsize::new(0));
    let graceful = GracefulShutdown::new();
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(%addr, scheme, path = %shared.config.path, "MCP Streamable HTTP endpoint listening");
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            r = listener.accept() => r,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                pause(&shutdown).await;
                continue;
            }
        };
        let Some(slot) = Slot::take(&open, max) else {
            tracing::warn!(limit = max, "connection refused: too many connections");
            drop(tcp);
            pause(&shutdown).await;
            continue;
        };
        prepare(&tcp);
        // The peer's address reaches handlers and per-peer bounds as axum's `ConnectInfo`.
        let service = TowerToHyperService::new(app.clone().layer(Extension(ConnectInfo(peer))));
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            match tls {
                None => connection(TokioIo::new(tcp), service, watcher).await,
                Some(acceptor) => match tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => connection(TokioIo::new(stream), service, watcher).await,
                    Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                    Err(_) => tracing::debug!("TLS handshake timed out"),
                },
            }
        });
    }
    drop(listener);
    shared.shutdown.cancel();
    sweeper.abort();
    let drained = tokio::time::timeout(shared.config.shutdown_grace, async {
        graceful.shutdown().await;
        shared.tracker.close();
        shared.tracker.wait().await;
    })
    .await;
    if drained.is_err() {
        tracing::warn!(grace = ?shared.config.shutdown_grace, "calls still in flight after the shutdown grace");
        shared.runtime.sessions().clear();
    }
    tracing::info!(%addr, "MCP Streamable HTTP endpoint stopped");
    Ok(())
}

async fn pause(shutdown: &CancellationToken) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = tokio::time::sleep(BACKOFF) => {}
    }
}

/// Serves one connection (HTTP/1.1 or HTTP/2) until it ends or a graceful shutdown closes it.
async fn connection<I>(io: TokioIo<I>, service: TowerToHyperService<Router>, watcher: Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(io, service);
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// Expires idle sessions every [`HttpConfig::session_sweep_interval`].
async fn sweep(shared: Arc<Shared>) {
    let every = shared.config.session_sweep_interval.max(Duration::from_millis(10));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_released() {
        let open = Arc::new(AtomicUsize::new(0));
        let a = Slot::take(&open, 2).expect("first");
        let b = Slot::take(&open, 2).expect("second");
        assert!(Slot::take(&open, 2).is_none(), "over the cap");
        assert_eq!(open.load(Ordering::Acquire), 2, "a refusal takes nothing");
        drop(a);
        let c = Slot::take(&open, 2).expect("released");
        drop((b, c));
        assert_eq!(open.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn accepted_sockets_get_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client = TcpStream::connect(addr).await.expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        assert!(!server.nodelay().expect("nodelay"), "off by default");
        prepare(&server);
        assert!(server.nodelay().expect("nodelay"));
        drop(client);
    }
}
