//! Serving on a listener: the accept loop, the connection cap, `TCP_NODELAY`, TLS, HTTP/1.1 and
//! HTTP/2, the connection timeouts, and graceful shutdown.
//!
//! - **The cap.** Every accepted connection takes a place among
//!   [`HttpConfig::max_connections`] ([`track::Conns`]). At the cap the longest-idle connection
//!   (no request in flight) is closed to admit the newcomer; when every connection has a
//!   request in flight, one of the peer address holding the most is, if it holds at least two
//!   more than the newcomer's; only when they are shared out evenly is the newcomer closed at
//!   once. The place is released however the
//!   connection ends (completed, reset, failed handshake, panic, shutdown).
//! - **Accept errors** (out of file descriptors, mostly) pause the loop, 5 ms doubling up to
//!   1 s, logged once per burst; running out of descriptors also sheds an idle connection, so
//!   the next accept can succeed.
//! - **Timeouts.** HTTP/1.1 request heads must arrive within
//!   [`HttpConfig::header_read_timeout`] (hyper's timer, which also runs while a keep-alive
//!   connection waits for its next request); a connection with no request in flight for
//!   [`HttpConfig::idle_timeout`] is closed (an HTTP/2 one with `GOAWAY`; this also covers a
//!   socket that never sends a byte, before hyper knows its version); HTTP/2 connections are
//!   pinged every [`HttpConfig::h2_keep_alive_interval`]; a response the client takes nothing of
//!   for [`HttpConfig::stall_timeout`] is ended, and its connection closed when the client still
//!   holds it one more `stall_timeout` later ([`track`]).
//! - **HTTP/2 limits** are set explicitly: concurrent streams, header list size, streams reset
//!   before being accepted (rapid reset: `GOAWAY`), streams reset for protocol errors, the send
//!   buffer of a stream.
//!
//! With the `http2` feature each connection is served by hyper-util's auto builder, which reads
//! the first bytes: an HTTP/2 preface (h2c with prior knowledge, or `h2` negotiated through ALPN
//! on TLS) selects HTTP/2, anything else HTTP/1.1. Without it every connection is HTTP/1.1
//! ([`conn`]); TLS needs the `tls` feature.
//!
//! What a client that never reads can still pin: over HTTP/2, hyper holds the one chunk it took
//! from each response (a whole JSON reply) until the stream's window opens; that is at most
//! [`HttpConfig::h2_max_concurrent_streams`] replies per connection, for at most twice
//! [`HttpConfig::stall_timeout`], after which the connection is closed.

mod conn;
mod track;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use hyper_util::rt::TokioIo;
use mcp_runtime::Engine;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::HttpConfig;
use crate::error::HttpError;
use crate::routes;
use crate::state::Shared;
#[cfg(feature = "tls")]
use conn::Acceptor;
use conn::{ConnBuilder, builder};
use track::{Admitted, Clock, Conns, Endpoint, Reaped, Slot, Tracked};

/// The first pause after a failed accept.
const BACKOFF_MIN: Duration = Duration::from_millis(5);
/// The longest pause after failed accepts.
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// The shortest of the connection timeouts: a smaller configured one is raised to this.
pub(crate) const MIN_TIMEOUT: Duration = Duration::from_millis(10);
/// How long a connection closed for idleness may take to finish (an HTTP/2 `GOAWAY`).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The pause after failed accepts: growing while they fail, reset by a success.
#[derive(Debug, Default)]
struct Backoff {
    failures: u64,
    pause: Duration,
}

impl Backoff {
    /// Records a failure: the pause to take, and whether this failure opens a burst (log it).
    fn fail(&mut self) -> (Duration, bool) {
        self.failures += 1;
        self.pause = if self.pause.is_zero() {
            BACKOFF_MIN
        } else {
            (self.pause * 2).min(BACKOFF_MAX)
        };
        (self.pause, self.failures == 1)
    }

    /// Records a success: the length of the burst it ends, if one was running.
    fn recover(&mut self) -> Option<u64> {
        let failures = std::mem::take(&mut self.failures);
        self.pause = Duration::ZERO;
        (failures > 0).then_some(failures)
    }
}

/// Whether an accept error says the process or the system is out of file descriptors.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    // EMFILE and ENFILE (the same numbers on Linux, the BSDs and macOS).
    cfg!(unix) && matches!(e.raw_os_error(), Some(23 | 24))
}

/// Prepares an accepted socket: small writes (SSE events) leave at once.
fn prepare(tcp: &TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
}

/// The connection timeouts, floored at [`MIN_TIMEOUT`].
#[derive(Debug, Clone, Copy)]
struct Timing {
    idle: Duration,
    stall: Duration,
}

impl Timing {
    fn of(config: &HttpConfig) -> Timing {
        Timing {
            idle: config.idle_timeout.max(MIN_TIMEOUT),
            stall: config.stall_timeout.max(MIN_TIMEOUT),
        }
    }
}

/// Serves the endpoint on `listener` until `shutdown` is cancelled.
///
/// A listener bound to a non-loopback address needs [`HttpConfig::allowed_origins`]. Accepted
/// connections get `TCP_NODELAY`; at most [`HttpConfig::max_connections`] are served at once
/// (the longest-idle one is closed to admit a newcomer). Cleartext connections speak HTTP/1.1 or
/// HTTP/2 with prior knowledge (h2c); with [`HttpConfig::with_tls`] they are TLS with ALPN
/// `h2`/`http/1.1`. Connections are bounded by [`HttpConfig::header_read_timeout`],
/// [`HttpConfig::idle_timeout`], [`HttpConfig::stall_timeout`] and the HTTP/2 keep-alive and
/// limits. A background task sweeps sessions idle for longer than the engine's `session_ttl`
/// every [`HttpConfig::session_sweep_interval`].
///
/// The health probes ([`HttpConfig::probes`], `/livez` and `/readyz` by default) are served
/// beside the endpoint, before its checks. When `shutdown` is cancelled, readiness answers 503
/// at once; after [`HttpConfig::readiness_delay`] (default zero), during which everything is
/// served as usual, no new connection is accepted and every SSE stream ends at once (the
/// legacy GET stream, `subscriptions/listen` streams with their completion result,
/// the 2024-11-05 pair, POST streams); the calls in flight get [`HttpConfig::shutdown_grace`]
/// (default 10 s) to finish; past it every session is closed and the remaining calls are
/// cancelled, each with the engine's `cancel_grace` to clean up. This returns when the calls
/// have drained: at most `readiness_delay` + `shutdown_grace` + `cancel_grace` + 1 s after the
/// cancellation.
pub async fn serve(
    engine: Engine,
    config: HttpConfig,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let addr = listener.local_addr()?;
    // The endpoint's own token: its streams end when the readiness delay is over, not when
    // `shutdown` is cancelled.
    let shared = Shared::build(engine, config, Some(addr), CancellationToken::new())?;
    shared.start_tasks();
    let endpoint = Endpoint::new(shared.clone(), routes::build(shared.clone()));
    let tls = conn::acceptor(&shared.config);
    let max = shared.config.max_connections;
    let conns = Conns::new(max, Clock::new());
    let builder = Arc::new(builder(&shared.config));
    let timing = Timing::of(&shared.config);
    let connections = TaskTracker::new();
    let drain = CancellationToken::new();
    let mut backoff = Backoff::default();
    let mut refused = 0u64;
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(%addr, scheme, path = %shared.config.path, "MCP Streamable HTTP endpoint listening");
    // Set when `shutdown` is cancelled: readiness has fallen, the listener closes then.
    let mut close_at: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled(), if close_at.is_none() => {
                shared.stopping.cancel();
                let delay = shared.config.readiness_delay;
                if delay.is_zero() {
                    break;
                }
                tracing::info!(?delay, "shutting down: not ready; serving on for the readiness delay");
                close_at = Some(Instant::now() + delay);
                continue;
            }
            () = sleep_until_some(close_at) => break,
            r = listener.accept() => r,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                let (wait, first) = backoff.fail();
                let shed = out_of_descriptors(&e) && conns.shed_idle();
                if first {
                    tracing::warn!(error = %e, shed, "accept failed; pausing until it succeeds again");
                }
                if close_at.is_none() {
                    pause(&shutdown, wait).await;
                } else {
                    // Already shutting down: the pause still applies (at most a second).
                    tokio::time::sleep(wait).await;
                }
                continue;
            }
        };
        if let Some(failures) = backoff.recover() {
            tracing::info!(failures, "accepting connections again");
        }
        let Some((slot, how)) = conns.admit(peer.ip().to_canonical()) else {
            if refused == 0 {
                tracing::warn!(
                    limit = max,
                    "connection refused: every connection has a request in flight, shared out evenly"
                );
            }
            refused += 1;
            drop(tcp);
            continue;
        };
        if refused > 0 {
            tracing::info!(refused, "connections admitted again");
            refused = 0;
        }
        match how {
            Admitted::Free => {}
            Admitted::Shed => tracing::debug!(
                limit = max,
                "connection cap reached: the longest-idle connection was closed"
            ),
            Admitted::ShedHeaviest => tracing::info!(
                limit = max,
                %peer,
                "connection cap reached, every connection busy: one of the address holding the most was closed"
            ),
        }
        prepare(&tcp);
        // The peer's address reaches handlers and per-peer bounds as axum's `ConnectInfo`, put on
        // each request by the tracking service (no per-connection copy of the router).
        let endpoint = endpoint.clone();
        let (tls, builder, drain) = (tls.clone(), builder.clone(), drain.clone());
        connections.spawn(mcp_runtime::background::boxed(async move {
            match tls {
                None => connection(tcp, peer, &builder, endpoint, slot, timing, drain).await,
                #[cfg(feature = "tls")]
                Some(acceptor) => tls_connection(acceptor, tcp, peer, &builder, endpoint, slot, timing, drain).await,
                // Without the `tls` feature no acceptor can exist.
                #[cfg(not(feature = "tls"))]
                Some(acceptor) => match acceptor {},
            }
        }));
    }
    drop(listener);
    // Streams end at once (the endpoint's shutdown token); connections close once their
    // responses are done (hyper's graceful shutdown); calls get `shutdown_grace`, then are
    // cancelled (behaviour invariant 27).
    shared.shutdown.cancel();
    drain.cancel();
    connections.close();
    shared.drain(connections.wait()).await;
    tracing::info!(%addr, "MCP Streamable HTTP endpoint stopped");
    Ok(())
}

/// Serves one TLS connection: the handshake (bounded by [`conn::TLS_HANDSHAKE`], given up when
/// the connection is shed or the server drains), then [`connection`].
#[cfg(feature = "tls")]
#[allow(clippy::too_many_arguments)]
async fn tls_connection(
    acceptor: Acceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    builder: &ConnBuilder,
    endpoint: Endpoint,
    slot: Slot,
    timing: Timing,
    drain: CancellationToken,
) {
    // Boxed: the TLS state (the handshake, the TLS stream) is larger than a cleartext
    // connection's, and every connection task would be sized for it.
    Box::pin(async move {
        let handshake = tokio::select! {
            r = tokio::time::timeout(conn::TLS_HANDSHAKE, acceptor.accept(tcp)) => r,
            () = slot.conn.evict.cancelled() => return,
            () = drain.cancelled() => return,
        };
        match handshake {
            Ok(Ok(stream)) => connection(stream, peer, builder, endpoint, slot, timing, drain).await,
            Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
            Err(_) => tracing::debug!("TLS handshake timed out"),
        }
    })
    .await
}

async fn pause(shutdown: &CancellationToken, wait: Duration) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = tokio::time::sleep(wait) => {}
    }
}

/// Completes at `deadline`; never without one.
async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What the watcher of a connection saw.
enum Watched {
    /// The connection was shed to admit a new one.
    Evicted,
    /// A graceful shutdown began.
    Drain,
    /// The check period (or the idle or closing deadline) came.
    Tick,
}

/// Waits for what ends or checks a connection: its eviction, the server's drain (unless already
/// draining), or `wake`.
async fn watch(evict: CancellationToken, drain: CancellationToken, draining: bool, wake: Instant) -> Watched {
    tokio::select! {
        biased;
        () = evict.cancelled() => Watched::Evicted,
        () = drain.cancelled(), if !draining => Watched::Drain,
        () = tokio::time::sleep_until(wake) => Watched::Tick,
    }
}

/// Serves one connection (HTTP/1.1 or HTTP/2) until it ends, is shed, idles out, stalls, or a
/// graceful shutdown (`drain`) closes it.
///
/// The connection's task wakes for every read and write; what watches it (two cancellations and
/// a timer) sits in a `FuturesUnordered`, which polls it only when one of its own wakers fired,
/// not at each of those wakes.
async fn connection<I>(
    io: I,
    peer: SocketAddr,
    builder: &ConnBuilder,
    endpoint: Endpoint,
    slot: Slot,
    timing: Timing,
    drain: CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let state = slot.conn.clone();
    let conn = builder.serve_connection(TokioIo::new(io), Tracked::new(endpoint, state.clone(), peer));
    tokio::pin!(conn);
    // The check period: stalls are noticed within half a stall timeout.
    let every = (timing.stall / 2).max(MIN_TIMEOUT);
    let mut draining = false;
    let mut closing: Option<Instant> = None;
    let mut watcher = FuturesUnordered::new();
    loop {
        let now = Instant::now();
        let mut wake = now + every;
        if let (None, Some(idle)) = (closing, state.idle_deadline(timing.idle)) {
            wake = wake.min(idle);
        }
        if let Some(hard) = closing {
            wake = wake.min(hard);
        }
        watcher.push(watch(state.evict.clone(), drain.clone(), draining, wake));
        let seen = tokio::select! {
            biased;
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            Some(seen) = watcher.next() => seen,
        };
        match seen {
            Watched::Evicted => {
                tracing::debug!("idle connection closed to admit a new one");
                return;
            }
            Watched::Drain => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            Watched::Tick => {
                if state.reap(timing.stall) == Reaped::Close {
                    tracing::debug!("connection closed: its client took nothing of a response");
                    return;
                }
                let now = Instant::now();
                if closing.is_some_and(|hard| now >= hard) {
                    return;
                }
                if closing.is_none() && state.idle_deadline(timing.idle).is_some_and(|d| now >= d) {
                    tracing::debug!(idle = ?timing.idle, "idle connection closed");
                    closing = Some(now + CLOSE_GRACE);
                    if !draining {
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_backoff_grows_is_capped_and_logs_once() {
        let mut b = Backoff::default();
        assert_eq!(b.recover(), None, "nothing to recover from");
        assert_eq!(b.fail(), (BACKOFF_MIN, true), "the first failure is logged");
        assert_eq!(b.fail(), (BACKOFF_MIN * 2, false));
        let mut last = Duration::ZERO;
        for _ in 0..20 {
            let (wait, log) = b.fail();
            assert!(!log && wait >= last && wait <= BACKOFF_MAX);
            last = wait;
        }
        assert_eq!(last, BACKOFF_MAX, "capped");
        assert_eq!(b.recover(), Some(22));
        assert_eq!(b.fail(), (BACKOFF_MIN, true), "a new burst starts small");
    }

    #[test]
    fn descriptor_exhaustion_is_recognised() {
        assert_eq!(out_of_descriptors(&std::io::Error::from_raw_os_error(24)), cfg!(unix));
        assert!(!out_of_descriptors(&std::io::Error::other("x")));
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
