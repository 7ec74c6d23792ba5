//! The single writer: the only task that touches the output.
//!
//! Two channels feed it. The *sink* channel carries what handlers emit
//! while they run (progress, log messages, server-to-client requests), the
//! legacy list-changed notifications and the notifications meant for the
//! session alone (`notifications/elicitation/complete`); it is the channel behind every
//! request's [`Sink`]. The *response* channel carries responses, each with
//! the in-flight guards of the requests it answers, so that an id stays
//! "in flight" (and a reuse of it is refused) until its answer is written.
//! The guards are released just before the answer's bytes are written: a
//! client can only see an answer once its id is free again, so reusing an
//! answered id is never refused by a race.
//!
//! The sink channel is read first: a handler's progress sent before it
//! returned is always written before its response. Each frame is followed
//! by `\n`; the output is flushed whenever both channels are momentarily
//! empty, before a response that follows notifications (which then waits a
//! short read turn, see [`Output`]), and once more (with a shutdown) when the
//! transport stops.

use std::io;
use std::time::Duration;

use mcp_runtime::{Frame, InFlightGuard, Sink};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Capacity of each outbound channel. Senders wait when it is full (the
/// client is not reading): nothing with a reply is dropped.
const OUTBOUND_CAPACITY: usize = 256;

/// A response on its way out, with the guards of the ids it answers.
#[derive(Debug)]
pub(crate) struct Outbound {
    /// The encoded response (a single response or a batch array).
    pub(crate) frame: Frame,
    /// Released when the frame is written.
    pub(crate) guards: Vec<InFlightGuard>,
}

/// The senders feeding the writer. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Outlets {
    sink: mpsc::Sender<Frame>,
    responses: mpsc::Sender<Outbound>,
}

impl Outlets {
    /// A sink for a request's handler (or for server notifications).
    pub(crate) fn sink(&self) -> Sink {
        Sink::new(self.sink.clone())
    }

    /// Queues a server notification; `false` when the writer is gone.
    pub(crate) async fn notify(&self, frame: Frame) -> bool {
        self.sink.send(frame).await.is_ok()
    }

    /// Queues a server notification without waiting; `false` when the
    /// writer is gone or its queue is full (a notification has no reply).
    pub(crate) fn try_notify(&self, frame: Frame) -> bool {
        self.sink.try_send(frame).is_ok()
    }

    /// Queues a response; the guards are released when it is written.
    pub(crate) async fn respond(&self, frame: Frame, guards: Vec<InFlightGuard>) {
        if self.responses.send(Outbound { frame, guards }).await.is_err() {
            tracing::debug!("response dropped: the writer has stopped");
        }
    }
}

/// The running writer task.
#[derive(Debug)]
pub(crate) struct WriterTask {
    finish: CancellationToken,
    failed: CancellationToken,
    handle: JoinHandle<io::Result<()>>,
}

impl WriterTask {
    /// A token cancelled when writing failed (the client is gone).
    pub(crate) fn failed(&self) -> &CancellationToken {
        &self.failed
    }

    /// Writes what is still queued, flushes and shuts the output down.
    pub(crate) async fn close(self) -> io::Result<()> {
        self.finish.cancel();
        match self.handle.await {
            Ok(r) => r,
            Err(e) => Err(io::Error::other(e)),
        }
    }
}

/// How long a response that follows notifications waits after they were flushed, so that the
/// client reads them on their own (see [`Output`]). Measured with both official TypeScript SDK
/// clients on a 2-core machine running 3 times more work than cores: flushing alone (no wait)
/// and 0.5 to 5 ms still lost 1 to 4 % of the last progress notifications, 10 and 20 ms lost
/// none of 200 calls per client; with an idle machine 0 ms was already enough.
const READ_TURN: Duration = Duration::from_millis(10);

/// Starts the writer on `out`.
pub(crate) fn spawn<W>(out: W) -> (Outlets, WriterTask)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    spawn_with(out, READ_TURN)
}

/// Starts the writer on `out` with the given read turn.
fn spawn_with<W>(out: W, read_turn: Duration) -> (Outlets, WriterTask)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sink, sink_rx) = mpsc::channel(OUTBOUND_CAPACITY);
    let (responses, resp_rx) = mpsc::channel(OUTBOUND_CAPACITY);
    let finish = CancellationToken::new();
    let failed = CancellationToken::new();
    let handle = tokio::spawn(run(
        out,
        Inlets { sink_rx, resp_rx },
        finish.clone(),
        failed.clone(),
        read_turn,
    ));
    (Outlets { sink, responses }, WriterTask { finish, failed, handle })
}

struct Inlets {
    sink_rx: mpsc::Receiver<Frame>,
    resp_rx: mpsc::Receiver<Outbound>,
}

enum Item {
    Frame(Frame),
    Response(Outbound),
}

impl Inlets {
    /// The next item without waiting, sink first.
    fn try_next(&mut self) -> Option<Item> {
        if let Ok(f) = self.sink_rx.try_recv() {
            return Some(Item::Frame(f));
        }
        self.resp_rx.try_recv().ok().map(Item::Response)
    }
}

async fn run<W: AsyncWrite + Unpin>(
    out: W,
    mut inlets: Inlets,
    finish: CancellationToken,
    failed: CancellationToken,
    read_turn: Duration,
) -> io::Result<()> {
    let mut out = Output::new(out, read_turn);
    let mut result = write_loop(&mut out, &mut inlets, &finish).await;
    if result.is_ok() {
        result = out.out.shutdown().await;
    }
    if let Err(e) = &result {
        tracing::error!(error = %e, "writing to the client failed");
        failed.cancel();
    }
    result
}

async fn write_loop<W: AsyncWrite + Unpin>(
    out: &mut Output<W>,
    inlets: &mut Inlets,
    finish: &CancellationToken,
) -> io::Result<()> {
    loop {
        let first = tokio::select! {
            biased;
            Some(f) = inlets.sink_rx.recv() => Item::Frame(f),
            Some(o) = inlets.resp_rx.recv() => Item::Response(o),
            () = finish.cancelled() => {
                while let Some(item) = inlets.try_next() {
                    out.write(item).await?;
                }
                return out.flush().await;
            }
        };
        out.write(first).await?;
        while let Some(item) = inlets.try_next() {
            out.write(item).await?;
        }
        out.flush().await?;
    }
}

/// The buffered output and what it remembers about notifications written to it.
///
/// Why a response can wait: the official TypeScript SDK clients (v1 `@modelcontextprotocol/sdk`,
/// v2 `@modelcontextprotocol/client`) handle every message of one read of the pipe in a
/// synchronous loop, dispatching a notification one microtask later but settling a response at
/// once, which also drops the request's progress handler. A progress notification that arrives
/// in the same read as its response is therefore discarded as "unknown token" (measured: the
/// last of the fixture's 3 progress notifications was lost on every call when both went out in
/// one flush). Notifications are written before their response, but that alone does not keep
/// them out of the same read. So a response that follows notifications is written only after
/// the notifications were flushed and `read_turn` has passed since, giving the client a read of
/// its own for them. Only responses that follow freshly flushed notifications wait, at most one
/// `read_turn` each, and a run of responses pays once; a server that emits nothing between its
/// responses never waits.
struct Output<W> {
    out: BufWriter<W>,
    /// How long after notifications were flushed a following response waits.
    read_turn: Duration,
    /// Notifications are in the buffer, not yet flushed.
    unflushed_notifications: bool,
    /// When notifications were last flushed, until a response has waited for them.
    notified_at: Option<Instant>,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    fn new(out: W, read_turn: Duration) -> Self {
        Output {
            out: BufWriter::new(out),
            read_turn,
            unflushed_notifications: false,
            notified_at: None,
        }
    }

    async fn write(&mut self, item: Item) -> io::Result<()> {
        let frame = match item {
            Item::Frame(f) => {
                self.unflushed_notifications = true;
                f
            }
            Item::Response(Outbound { frame, guards }) => {
                if self.unflushed_notifications {
                    self.flush().await?;
                }
                if let Some(at) = self.notified_at.take() {
                    let until = at + self.read_turn;
                    if Instant::now() < until {
                        tokio::time::sleep_until(until).await;
                    }
                }
                // The ids become free before the client can see their answers.
                drop(guards);
                frame
            }
        };
        debug_assert!(!frame.contains(&b'\n'), "frames are compact JSON");
        self.out.write_all(&frame).await?;
        self.out.write_all(b"\n").await
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.out.flush().await?;
        if std::mem::take(&mut self.unflushed_notifications) {
            self.notified_at = Some(Instant::now());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_runtime::InFlight;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};
    use tokio::io::AsyncReadExt;
    use tokio_util::sync::CancellationToken;

    #[tokio::test]
    async fn writes_lines_and_releases_guards() {
        let (a, mut b) = tokio::io::duplex(1024);
        let (outlets, task) = spawn(a);
        let in_flight = InFlight::new();
        let guard = in_flight.begin(1.into(), CancellationToken::new()).unwrap();
        assert!(outlets.notify(b"{\"n\":1}".to_vec()).await);
        outlets.respond(b"{\"r\":1}".to_vec(), vec![guard]).await;
        drop(outlets);
        task.close().await.unwrap();
        let mut s = String::new();
        b.read_to_string(&mut s).await.unwrap();
        assert_eq!(s, "{\"n\":1}\n{\"r\":1}\n");
        assert!(in_flight.is_empty());
    }

    /// What each flush delivered, and when.
    type Flushes = Arc<Mutex<Vec<(String, Instant)>>>;

    /// An output that records its flushes.
    #[derive(Default)]
    struct Recording {
        pending: Vec<u8>,
        flushes: Flushes,
    }

    impl AsyncWrite for Recording {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.pending.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            if !self.pending.is_empty() {
                let text = String::from_utf8(std::mem::take(&mut self.pending)).unwrap();
                self.flushes.lock().unwrap().push((text, Instant::now()));
            }
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// A writer on a [`Recording`] and its flushes.
    fn recorded(read_turn: Duration) -> (Outlets, WriterTask, Flushes) {
        let out = Recording::default();
        let flushes = out.flushes.clone();
        let (outlets, task) = spawn_with(out, read_turn);
        (outlets, task, flushes)
    }

    fn texts(flushes: &Mutex<Vec<(String, Instant)>>) -> Vec<String> {
        flushes.lock().unwrap().iter().map(|(t, _)| t.clone()).collect()
    }

    /// Lets the writer run until it waits (its output never blocks): no timer is involved, so
    /// whatever it has not written by then it is holding back.
    async fn settle() {
        for _ in 0..32 {
            tokio::task::yield_now().await;
        }
    }

    /// A read turn no test waits for.
    const FOREVER: Duration = Duration::from_secs(24 * 3600);

    #[tokio::test]
    async fn a_response_after_notifications_waits_for_their_read() {
        let (outlets, task, flushes) = recorded(FOREVER);
        let in_flight = InFlight::new();
        let guard = in_flight.begin(1.into(), CancellationToken::new()).unwrap();
        assert!(outlets.notify(b"{\"n\":1}".to_vec()).await);
        outlets.respond(b"{\"r\":1}".to_vec(), vec![guard]).await;
        settle().await;
        // The notification went out in a flush of its own; the response waits its turn, and
        // its id stays in flight until it is written.
        assert_eq!(texts(&flushes), ["{\"n\":1}\n"]);
        assert!(!in_flight.is_empty());
        task.handle.abort();
    }

    #[tokio::test]
    async fn responses_alone_are_never_held() {
        let (outlets, task, flushes) = recorded(FOREVER);
        outlets.respond(b"{\"r\":1}".to_vec(), Vec::new()).await;
        outlets.respond(b"{\"r\":2}".to_vec(), Vec::new()).await;
        settle().await;
        assert_eq!(texts(&flushes), ["{\"r\":1}\n{\"r\":2}\n"]);
        // Notifications written after them are not held either; the next response is.
        assert!(outlets.notify(b"{\"n\":1}".to_vec()).await);
        settle().await;
        assert_eq!(texts(&flushes)[1..], ["{\"n\":1}\n"]);
        outlets.respond(b"{\"r\":3}".to_vec(), Vec::new()).await;
        settle().await;
        assert_eq!(texts(&flushes).len(), 2);
        task.handle.abort();
    }

    #[tokio::test]
    async fn the_read_turn_separates_notifications_from_their_response() {
        // Real time, but only a lower bound is checked: a slow machine waits longer, never less.
        let turn = Duration::from_millis(20);
        let (outlets, task, flushes) = recorded(turn);
        assert!(outlets.notify(b"{\"n\":1}".to_vec()).await);
        assert!(outlets.notify(b"{\"n\":2}".to_vec()).await);
        for r in 1..=3 {
            outlets.respond(format!("{{\"r\":{r}}}").into_bytes(), Vec::new()).await;
        }
        drop(outlets);
        task.close().await.unwrap();
        let flushes = flushes.lock().unwrap().clone();
        let texts: Vec<&str> = flushes.iter().map(|(t, _)| t.as_str()).collect();
        // One wait for the whole run of responses.
        assert_eq!(texts, ["{\"n\":1}\n{\"n\":2}\n", "{\"r\":1}\n{\"r\":2}\n{\"r\":3}\n"]);
        assert!(flushes[1].1 - flushes[0].1 >= turn);
    }

    #[tokio::test]
    async fn a_closed_output_is_reported() {
        let (a, b) = tokio::io::duplex(8);
        drop(b);
        let (outlets, task) = spawn(a);
        outlets.respond(b"{}".to_vec(), Vec::new()).await;
        task.failed().cancelled().await;
        assert!(task.close().await.is_err());
    }
}
