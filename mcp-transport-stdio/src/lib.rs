//! # mcp-transport-stdio
//!
//! The stdio transport of the MCP server library: newline-delimited
//! JSON-RPC on the process's stdin and stdout, serving both protocol eras
//! on one process. A legacy client (2024-11-05 … 2025-11-25) sends
//! `initialize` and gets the process's one session; a modern client
//! (2026-07-28) sends `_meta` with every request and is served statelessly,
//! before or after a legacy handshake on the same pipe.
//!
//! Entry points: [`serve`] on the process's stdin/stdout, and [`serve_io`]
//! on any pair of byte streams (tests, sockets, custom pipes). Both return
//! once the input has ended and the admitted work has finished (or the
//! [drain timeout](StdioConfig::drain_timeout) has passed), after flushing
//! the output.
//!
//! ## Design
//!
//! The transport is a small pipeline of tasks (behaviour invariant 28), all
//! spawned on the caller's runtime; even the reading loop is a task of its
//! own rather than the caller's future, so that a frame never crosses from
//! `main` (outside the Tokio runtime's workers under `#[tokio::main]`) to a worker
//! and back:
//!
//! 1. **Reader** (`framing`): splits the input into lines within
//!    [`StdioConfig::max_frame_bytes`]. A longer line is discarded up to its
//!    newline and answered with -32600 "Message exceeds … bytes" (id
//!    `null`); serving continues. Blank lines are skipped, a trailing `\r`
//!    is tolerated. The next frame is read only once the previous one has
//!    been dispatched, which is the back-pressure on the client.
//! 2. **Coordinator** (`coordinator`): decodes each frame with
//!    `mcp-protocol` (size, depth, id and shape rules) and hands each
//!    message to the [`Engine`], the one
//!    pipeline every transport uses: decode errors are answered at once,
//!    client responses are delivered to the session's pending
//!    server-to-client request, `notifications/cancelled` is routed at once
//!    (never queued behind the request it cancels), other notifications go
//!    to a bounded queue handled in order, and requests go through the
//!    engine's checks (era, method, duplicate id, session) and are admitted
//!    to the pool. What the engine answers at once (a refusal, a legacy
//!    `initialize`) is written by the coordinator itself, so that the
//!    session exists before the next frame is read.
//! 3. **Workers** (`pool`, `exec`): at most
//!    [`max_workers`](StdioConfig::max_workers) requests run at once, at
//!    most [`max_queue`](StdioConfig::max_queue) more wait (FIFO); past
//!    that a request is answered at once with -32603 "Server is
//!    overloaded". Each request runs as the engine's
//!    [`Call`](mcp_runtime::Call) with its own cancellation token,
//!    registered in the process's [`SessionSlot`](mcp_runtime::SessionSlot)
//!    so that a duplicate id is refused and a cancellation finds it, queued
//!    or running. A cancelled request gets no answer. A batch runs as one
//!    job and is answered with one array. A job admitted while a worker is
//!    free and none is waiting is spawned at once by the coordinator; the
//!    others go through the pool's dispatcher, in admission order. A job is
//!    never run inside the coordinator: a handler that computes without
//!    yielding must not hold up the reading of a `notifications/cancelled`.
//! 4. **Writer** (`writer`): the only task that writes the output. It
//!    receives encoded frames through channels (the handlers' [`Sink`]s
//!    feed one of them, so progress, log messages and server-to-client
//!    requests travel the same way as responses), writes each followed by
//!    `\n`, flushes whenever it has nothing more to write, and releases a
//!    request's id only when its answer is written.
//!
//! Registry changes become legacy list-changed notifications (and
//! `notifications/resources/updated` for subscribed URIs) while a legacy
//! session exists (`notify`); modern clients never receive them.
//!
//! ## Sessions
//!
//! One legacy session per process, as in the reference implementation. A
//! second `initialize` is refused with -32600 "Session already initialized"; a
//! failed one (invalid params) leaves the process uninitialized, so the
//! client may retry. Requests sent before `initialize` get their normal
//! answers (an unknown method is -32601): the process never exits on them.
//!
//! ## Shutdown
//!
//! At end of input, or when the shutdown future of [`serve_until`] /
//! [`serve_io_until`] completes, the reader stops, the session is closed (its
//! pending server-to-client requests fail at once: no answer can arrive any
//! more), admitted requests run to completion for at most
//! [`drain_timeout`](StdioConfig::drain_timeout) (default 10 s), then are
//! cancelled (each handler then has the engine's `cancel_grace` to clean
//! up); the output is flushed and [`serve_io`] returns. A graceful shutdown
//! also ends open `subscriptions/listen` streams with `notifications/cancelled`
//! and their completion result. When stdin is not a pipe (a terminal), [`serve`]
//! reads it on a detached thread, so a read blocked on the terminal never keeps
//! the process alive after serving ended. If writing fails, the client
//! is gone: reading stops, work in flight is cancelled, and
//! [`StdioError::Write`] is returned.
//!
//! Its place in the workspace: `docs/ARCHITECTURE.md` (§2, §3); the
//! invariants it cites: `docs/INVARIANTS.md`.
//!
//! The crate writes nothing to stdout but the protocol; its logs go through
//! `tracing` (send them to stderr).
//!
//! [`Sink`]: mcp_runtime::Sink

mod config;
mod coordinator;
mod error;
mod exec;
mod framing;
mod notify;
mod pool;
mod state;
mod stdin;
mod writer;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::jsonrpc::DecodeLimits;
use mcp_runtime::Engine;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

pub use config::StdioConfig;
pub use error::StdioError;

use coordinator::Coordinator;

/// How long open listen streams may take to write their end once serving stops.
const LISTEN_WIND_DOWN: Duration = Duration::from_secs(1);
use framing::LineReader;
use pool::Pool;
use state::Shared;

/// Serves MCP on the process's stdin and stdout until stdin closes.
///
/// When stdin and stdout are pipes (as when a client spawns the server),
/// they are driven by the reactor as non-blocking pipes; otherwise (a file,
/// a terminal) stdin is read on a detached thread of its own and stdout
/// written through tokio's `stdout()`. The thread is never waited for: once
/// serving has ended, the process exits when `main` returns even while the
/// thread is still blocked reading a terminal. See [`serve_io`].
pub async fn serve(engine: Engine, config: StdioConfig) -> Result<(), StdioError> {
    serve_until(engine, config, std::future::pending()).await
}

/// Serves MCP on the process's stdin and stdout until stdin closes or
/// `shutdown` completes (a graceful shutdown, e.g. on
/// `tokio::signal::ctrl_c()`): see [`serve_io_until`] and [`serve`].
pub async fn serve_until(
    engine: Engine,
    config: StdioConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), StdioError> {
    // Boxed, whichever ends serve: the serving loop is instantiated once for the process's
    // stdio instead of once per kind of end (a vtable call per read or write of a buffer).
    let (reader, writer): (Box<dyn AsyncRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>) = 'ends: {
        #[cfg(unix)]
        if let Some((stdin, stdout)) = pipes() {
            break 'ends (Box::new(stdin), Box::new(stdout));
        }
        match stdin::spawn() {
            Some(stdin) => (Box::new(stdin), Box::new(tokio::io::stdout())),
            None => (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout())),
        }
    };
    serve_io_until(engine, config, reader, writer, shutdown).await
}

/// Non-blocking ends on duplicates of fds 0 and 1, when both are pipes.
#[cfg(unix)]
fn pipes() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;
    use tokio::net::unix::pipe;
    let is_pipe = |fd: &OwnedFd| {
        fd.try_clone()
            .map(std::fs::File::from)
            .and_then(|f| f.metadata())
            .is_ok_and(|m| m.file_type().is_fifo())
    };
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    // Both must be pipes before either is made non-blocking: a half switch
    // would leave the blocking fallback on a non-blocking descriptor.
    if !(is_pipe(&stdin) && is_pipe(&stdout)) {
        tracing::debug!("stdin or stdout is not a pipe: blocking stdio");
        return None;
    }
    let reader = pipe::Receiver::from_owned_fd(stdin).ok()?;
    let writer = pipe::Sender::from_owned_fd(stdout).ok()?;
    Some((reader, writer))
}

/// Serves MCP on `reader` and `writer` until `reader` ends.
///
/// Returns `Ok(())` once the input has ended, the admitted requests have
/// been answered (or cancelled when [`StdioConfig::drain_timeout`] passed)
/// and the output has been flushed and shut down. Protocol errors are
/// answered on the wire and never end serving; only I/O failures are
/// returned.
pub async fn serve_io<R, W>(engine: Engine, config: StdioConfig, reader: R, writer: W) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_io_until(engine, config, reader, writer, std::future::pending()).await
}

/// Serves MCP on `reader` and `writer` until `reader` ends or `shutdown`
/// completes.
///
/// A graceful shutdown stops reading (nothing more is admitted, and the
/// session is closed: its pending server-to-client requests fail, since no
/// answer can be read any more), ends every `subscriptions/listen` stream
/// with `notifications/cancelled` and its completion result, lets the
/// admitted requests finish within [`StdioConfig::drain_timeout`] (default
/// 10 s), then cancels the rest (each handler has the engine's
/// `cancel_grace` to clean up; a cancelled request gets no answer), flushes
/// the output and returns `Ok(())` (behaviour invariant 28).
pub async fn serve_io_until<R, W>(
    engine: Engine,
    config: StdioConfig,
    reader: R,
    writer: W,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // The serving loop runs as a task of the runtime, not in the caller's future: a caller is
    // often `main` under `#[tokio::main]`, which runs outside the Tokio runtime's workers, and every
    // frame would then cross threads twice (reader to workers and back), a context switch each
    // on a busy core. Dropping this future aborts the task, as dropping the loop itself would.
    let stop = CancellationToken::new();
    let mut serving = AbortOnDropHandle::new(tokio::spawn(run(engine, config, reader, writer, stop.clone())));
    tokio::pin!(shutdown);
    let joined = tokio::select! {
        joined = &mut serving => joined,
        () = &mut shutdown => {
            stop.cancel();
            (&mut serving).await
        }
    };
    joined.unwrap_or_else(|e| match e.try_into_panic() {
        Ok(panic) => std::panic::resume_unwind(panic),
        Err(e) => Err(StdioError::Write(std::io::Error::other(e))),
    })
}

/// The serving loop of [`serve_io_until`]; `stop` is its graceful shutdown.
async fn run<R, W>(
    engine: Engine,
    config: StdioConfig,
    reader: R,
    writer: W,
    stop: CancellationToken,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let cancel_grace = engine.config().cancel_grace;
    // Subscribe before anything runs, so that no change is missed.
    let changes = engine.changes();
    let (outlets, writer) = writer::spawn(writer);
    let shared = Arc::new(Shared::new(engine, outlets));
    let forwarder = mcp_runtime::background::spawn(notify::forward_changes(shared.clone(), changes));
    let (notifications, inbound) = notify::spawn_inbound(shared.clone(), config.notifications());
    let limits = DecodeLimits::new(config.max_frame_bytes, config.max_depth).with_max_batch(config.max_batch);
    let pool = Pool::new(
        config.workers(),
        config.max_queue,
        shared.slot.root().clone(),
        cancel_grace,
    );
    let coordinator = Coordinator::new(shared.clone(), pool, notifications, limits);
    tracing::debug!(?config, "stdio transport serving");

    let mut lines = LineReader::new(reader, config.max_frame_bytes);
    let read = loop {
        let next = tokio::select! {
            biased;
            () = writer.failed().cancelled() => break Ok(()),
            () = stop.cancelled() => {
                tracing::debug!("graceful shutdown: reading stops");
                // Listen streams end with their completion (before `input_closed`).
                shared.shutdown.cancel();
                break Ok(());
            }
            next = lines.next() => next,
        };
        match next {
            Ok(Some(input)) => coordinator.handle(input).await,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    drop(lines);
    shared.input_closed.cancel();

    let client_gone = writer.failed().is_cancelled();
    tracing::debug!(client_gone, "end of input; draining");
    if let Some(session) = shared.session() {
        // No client answer can arrive any more.
        session.close();
    }
    let drain = if client_gone {
        Duration::ZERO
    } else {
        config.drain_timeout
    };
    // Dropping the coordinator closes the notification queue.
    let pool = coordinator.into_pool();
    pool.drain(drain).await;
    if tokio::time::timeout(config.drain_timeout, inbound).await.is_err() {
        tracing::warn!("client notifications still being handled at shutdown");
    }
    shared.listens.close();
    if tokio::time::timeout(LISTEN_WIND_DOWN, shared.listens.wait())
        .await
        .is_err()
    {
        tracing::debug!("listen streams still ending at shutdown");
    }
    forwarder.abort();
    let written = writer.close().await;
    tracing::debug!("stdio transport stopped");
    match (read, written) {
        (_, Err(e)) => Err(StdioError::Write(e)),
        (Err(e), Ok(())) => Err(StdioError::Read(e)),
        (Ok(()), Ok(())) => Ok(()),
    }
}
