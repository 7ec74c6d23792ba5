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
//! empty, and once more (with a shutdown) when the transport stops.

use std::io;

use mcp_runtime::{Frame, InFlightGuard, Sink};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
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

/// Starts the writer on `out`.
pub(crate) fn spawn<W>(out: W) -> (Outlets, WriterTask)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sink, sink_rx) = mpsc::channel(OUTBOUND_CAPACITY);
    let (responses, resp_rx) = mpsc::channel(OUTBOUND_CAPACITY);
    let finish = CancellationToken::new();
    let failed = CancellationToken::new();
    let handle = tokio::spawn(run(out, Inlets { sink_rx, resp_rx }, finish.clone(), failed.clone()));
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
) -> io::Result<()> {
    let mut out = BufWriter::new(out);
    let mut result = write_loop(&mut out, &mut inlets, &finish).await;
    if result.is_ok() {
        result = out.shutdown().await;
    }
    if let Err(e) = &result {
        tracing::error!(error = %e, "writing to the client failed");
        failed.cancel();
    }
    result
}

async fn write_loop<W: AsyncWrite + Unpin>(
    out: &mut BufWriter<W>,
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
                    write_item(out, item).await?;
                }
                return out.flush().await;
            }
        };
        write_item(out, first).await?;
        while let Some(item) = inlets.try_next() {
            write_item(out, item).await?;
        }
        out.flush().await?;
    }
}

async fn write_item<W: AsyncWrite + Unpin>(out: &mut BufWriter<W>, item: Item) -> io::Result<()> {
    let frame = match item {
        Item::Frame(f) => f,
        Item::Response(Outbound { frame, guards }) => {
            // The ids become free before the client can see their answers.
            drop(guards);
            frame
        }
    };
    debug_assert!(!frame.contains(&b'\n'), "frames are compact JSON");
    out.write_all(&frame).await?;
    out.write_all(b"\n").await
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_runtime::InFlight;
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
