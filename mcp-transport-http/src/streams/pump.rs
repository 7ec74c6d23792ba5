//! The one SSE stream pump: every long-lived stream of the transport is a [`Feed`] run by
//! [`run`] or [`body`].
//!
//! Either a stream's response body is the receiving end of a bounded channel (see
//! [`sse::channel`]) and its pump task ([`run`]) writes SSE chunks into the sender; or the
//! body is the pump itself ([`body`]: the `subscriptions/listen` streams, which are many and
//! mostly idle), taking the next chunk when the connection asks for one, with no task and no
//! channel. Both hand out the same chunks in the same order (one state machine, `Pump`); below,
//! "written" means taken by the body. What a stream carries differs (the GET stream's session events, a resumable POST stream's tape, a
//! call's own stream, a `subscriptions/listen` subscription, the 2024-11-05 pair's messages), but the way it is
//! written does not, and that part lives here, once:
//!
//! - **Opening.** [`Feed::open`] is written first, before anything else is watched: the
//!   priming event, a `retry:` field, a replay, the listen acknowledgement. A stream opened
//!   while the server is shutting down still starts with it.
//! - **Writing.** Each step the feed returns ([`Next`]) is written whole, chunk after chunk,
//!   nothing between them (no keep-alive inside a step). The pump asks for the next step only once the
//!   previous one is written, so a feed that reaches [`Feed::next`] again knows its last step
//!   reached the body (a resumable stream advances its reader's cursor there).
//! - **Keep-alive.** A `:` comment ([`sse::KEEP_ALIVE`]) every `keep_alive` (at least
//!   [`MIN_KEEP_ALIVE`]) while the feed has nothing ready, then [`Feed::on_keep_alive`]; a tick
//!   missed while the pump was busy writing is written once, not as a burst.
//! - **The client leaving.** The body being dropped (`tx.closed()`) or any write failing ends
//!   the stream at once, writing nothing more: [`Outcome::ClientGone`] (with [`body`], the
//!   body's drop drops the feed).
//! - **A client that stops reading.** A write blocks while the channel is full: the body is not
//!   being taken (a full TCP window, a closed HTTP/2 flow-control window). The server's stall
//!   watchdog ([`HttpConfig::stall_timeout`](crate::HttpConfig::stall_timeout), kept by
//!   `serve` on every response body) drops a body that made no progress for that long; the
//!   blocked write then fails and the stream ends as [`Outcome::ClientGone`], dropping the
//!   feed and its pending replies.
//! - **Shutdown.** The server's shutdown token ends the stream after the frame
//!   [`Feed::on_shutdown`] returns, if any (the listen stream's completion result):
//!   [`Outcome::Shutdown`].
//! - **The end.** [`Next::End`] writes its chunks then ends the stream ([`Outcome::Complete`]);
//!   [`Next::Stop`] ends it silently ([`Outcome::Stopped`]: a newer stream took over, the
//!   session ended, the server closed the stream for polling).
//!
//! The pump waits with a `biased` select, in this order: the client leaving, shutdown, the feed,
//! the keep-alive tick. A departed client is noticed before any more work, shutdown before a
//! busy feed could starve it, and a feed with frames ready is never delayed by a keep-alive.
//!
//! SSE framing stays in [`sse`]: a feed returns finished chunks
//! ([`sse::event`], [`sse::truncated`], …).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Bytes, HttpBody};
use hyper::body::Frame;
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::streams::sse;

/// The shortest keep-alive interval: a smaller configured one (even zero) is raised to this.
pub(crate) const MIN_KEEP_ALIVE: Duration = Duration::from_millis(10);

/// A step of a stream: what it does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Write these chunks (possibly none), then ask the feed again.
    Write(Vec<Bytes>),
    /// Write these chunks (possibly none), then end the stream: it is complete.
    End(Vec<Bytes>),
    /// End the stream now, writing nothing more.
    Stop,
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The feed returned [`Next::End`] and every chunk of it was written.
    Complete,
    /// The feed returned [`Next::Stop`].
    Stopped,
    /// The client left: the body was dropped, or a write failed.
    ClientGone,
    /// The server shut down (after the [`Feed::on_shutdown`] frame, if any, was offered).
    Shutdown,
}

/// The source of one stream's chunks, run by [`run`].
pub(crate) trait Feed: Send {
    /// The first step, written before the pump watches the client, shutdown or the clock.
    /// Nothing by default.
    fn open(&mut self) -> Next {
        Next::Write(Vec::new())
    }

    /// Waits for the next step. Called only once the previous step was written.
    ///
    /// Cancel safety: the pump drops this future whenever a keep-alive tick, the client leaving
    /// or shutdown comes first, and calls `next` again later; so wait first, and build the step
    /// with no `.await` after changing the feed's state.
    fn next(&mut self) -> impl Future<Output = Next> + Send;

    /// Called after each keep-alive comment was written (an open stream is activity).
    fn on_keep_alive(&mut self) {}

    /// Whether the pump writes keep-alive comments while the feed is idle (yes by default); a
    /// feed whose own frames keep the stream alive (an `events/stream`'s heartbeats, data
    /// frames that carry a cursor) says no.
    fn keeps_alive(&self) -> bool {
        true
    }

    /// At server shutdown: the last chunk to write before the stream ends (`None`: nothing).
    fn on_shutdown(&mut self) -> Option<Bytes> {
        None
    }
}

/// A [`Feed`] whose next step is polled in place: a [`body`] waiting on it holds no future.
pub(crate) trait PollFeed: Feed {
    /// [`Feed::next`], polled (`Pending` registers `cx`'s waker for the next step).
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next>;
}

/// Where a [`Pump`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// [`Feed::open`] not called yet.
    Opening,
    /// Waiting for the feed, shutdown or the clock once the pending chunks are out.
    Running,
    /// The stream ends with `outcome` once the pending chunks are out.
    Ending(Outcome),
}

/// One stream's state: the feed, the chunks of its current step not handed out yet, the
/// keep-alive clock. The state machine is here once; it is driven two ways: [`Pump::chunk`]
/// awaits the next chunk (for [`run`], which writes into a channel), [`Pump::poll_chunk`] polls
/// it in place (for [`body`]: no task, no channel, no stored future).
struct Pump<F> {
    feed: F,
    pending: std::vec::IntoIter<Bytes>,
    phase: Phase,
    /// A keep-alive comment was handed out: [`Feed::on_keep_alive`] runs before anything else.
    kept_alive: bool,
    /// The keep-alive clock (`None`: the feed keeps its stream alive itself).
    tick: Option<tokio::time::Interval>,
}

impl<F: Feed> Pump<F> {
    fn new(feed: F, keep_alive: Duration) -> Pump<F> {
        let tick = feed.keeps_alive().then(|| {
            let mut tick = tokio::time::interval(keep_alive.max(MIN_KEEP_ALIVE));
            tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
            // An interval's first tick is immediate: the first keep-alive is due one period
            // from now.
            tick.reset();
            tick
        });
        Pump {
            feed,
            pending: Vec::new().into_iter(),
            phase: Phase::Opening,
            kept_alive: false,
            tick,
        }
    }

    /// Takes a step's chunks.
    fn take(&mut self, step: Next) {
        match step {
            Next::Write(chunks) => self.pending = chunks.into_iter(),
            Next::End(chunks) => {
                self.pending = chunks.into_iter();
                self.phase = Phase::Ending(Outcome::Complete);
            }
            Next::Stop => self.phase = Phase::Ending(Outcome::Stopped),
        }
    }

    /// Runs the keep-alive hook if a comment was handed out since the last call.
    fn after_keep_alive(&mut self) {
        if std::mem::take(&mut self.kept_alive) {
            self.feed.on_keep_alive();
        }
    }

    /// What the stream has without waiting: a pending chunk, or its outcome once it ended
    /// (opening it first); `None` when it must wait for shutdown, the feed or the clock.
    fn ready(&mut self) -> Option<Result<Bytes, Outcome>> {
        loop {
            if let Some(chunk) = self.pending.next() {
                return Some(Ok(chunk));
            }
            match self.phase {
                Phase::Ending(outcome) => return Some(Err(outcome)),
                Phase::Opening => {
                    self.phase = Phase::Running;
                    let step = self.feed.open();
                    self.take(step);
                }
                Phase::Running => return None,
            }
        }
    }

    /// Whether the stream ended: its outcome is all that is left.
    fn ended(&self) -> bool {
        matches!(self.phase, Phase::Ending(_)) && self.pending.as_slice().is_empty()
    }

    /// Shutdown: the feed's last chunk, if any, then the end.
    fn shut(&mut self) {
        self.phase = Phase::Ending(Outcome::Shutdown);
        self.pending = self
            .feed
            .on_shutdown()
            .map(|last| vec![last])
            .unwrap_or_default()
            .into_iter();
    }

    /// A keep-alive tick: its comment, the hook to run before the next chunk.
    fn keep_alive(&mut self) -> Bytes {
        self.kept_alive = true;
        Bytes::from_static(sse::KEEP_ALIVE)
    }

    /// The next chunk of the stream, or its outcome once it ended. Called again only once the
    /// previous chunk was written; cancel safe (the state changes after the waiting).
    async fn chunk(&mut self, shutdown: &CancellationToken) -> Result<Bytes, Outcome> {
        self.after_keep_alive();
        loop {
            if let Some(chunk) = self.ready() {
                return chunk;
            }
            tokio::select! {
                biased;
                () = shutdown.cancelled() => self.shut(),
                step = self.feed.next() => self.take(step),
                () = tick(&mut self.tick) => return Ok(self.keep_alive()),
            }
        }
    }
}

impl<F: PollFeed> Pump<F> {
    /// [`Pump::chunk`], polled, in the same order: shutdown, the feed, the clock.
    fn poll_chunk(
        &mut self,
        mut shutdown: Pin<&mut WaitForCancellationFutureOwned>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Bytes, Outcome>> {
        self.after_keep_alive();
        loop {
            if let Some(chunk) = self.ready() {
                return Poll::Ready(chunk);
            }
            if shutdown.as_mut().poll(cx).is_ready() {
                self.shut();
            } else if let Poll::Ready(step) = self.feed.poll_next(cx) {
                self.take(step);
            } else if self.tick.as_mut().is_some_and(|t| t.poll_tick(cx).is_ready()) {
                return Poll::Ready(Ok(self.keep_alive()));
            } else {
                return Poll::Pending;
            }
        }
    }
}

/// The next keep-alive tick, or never.
async fn tick(tick: &mut Option<tokio::time::Interval>) {
    match tick {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Runs one stream: writes `feed`'s steps to `tx` (the response body's sender) with a
/// keep-alive comment every `keep_alive` while idle, until the feed ends it, the client leaves
/// or `shutdown` is cancelled. The feed is dropped before this returns.
pub(crate) async fn run<F: Feed>(
    feed: F,
    tx: mpsc::Sender<Bytes>,
    keep_alive: Duration,
    shutdown: CancellationToken,
) -> Outcome {
    let mut pump = Pump::new(feed, keep_alive);
    loop {
        let chunk = tokio::select! {
            biased;
            () = tx.closed(), if pump.phase == Phase::Running && pump.pending.as_slice().is_empty() => {
                return Outcome::ClientGone;
            }
            chunk = pump.chunk(&shutdown) => chunk,
        };
        match chunk {
            Ok(chunk) => {
                if tx.send(chunk).await.is_err() {
                    // The client may be gone already at shutdown: the stream ends either way.
                    return match pump.phase {
                        Phase::Ending(Outcome::Shutdown) => Outcome::Shutdown,
                        _ => Outcome::ClientGone,
                    };
                }
            }
            Err(outcome) => return outcome,
        }
    }
}

/// One stream as a response body: the same chunks as [`run`] writes, handed to the body as it
/// asks for them, with no task, no channel and no stored future between (a stream that may stay
/// open for hours holds its feed, its clock and its shutdown waiter, nothing more). The client
/// leaving drops the body, hence the feed; `hold` (a permit) lives as long as the stream.
pub(crate) fn body<F: PollFeed + Unpin + 'static, H: Send + Unpin + 'static>(
    feed: F,
    keep_alive: Duration,
    shutdown: CancellationToken,
    hold: H,
) -> axum::body::Body {
    axum::body::Body::new(PumpBody {
        pump: Pump::new(feed, keep_alive),
        shutdown: Box::pin(shutdown.cancelled_owned()),
        _hold: hold,
    })
}

/// The body [`body`] returns.
struct PumpBody<F, H> {
    pump: Pump<F>,
    /// The server's shutdown, waited on in place.
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    _hold: H,
}

impl<F: PollFeed + Unpin, H: Unpin> HttpBody for PumpBody<F, H> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        // Once ended, the pump answers its outcome again at every poll: the body stays ended.
        let this = self.get_mut();
        this.pump
            .poll_chunk(this.shutdown.as_mut(), cx)
            .map(|chunk| chunk.ok().map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.pump.ended()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::task::JoinHandle;
    use tokio::time::Instant;

    use super::*;

    /// The keep-alive interval of most tests.
    const PERIOD: Duration = Duration::from_secs(15);

    /// A feed scripted by the test: its steps come from a channel (`Stop` once it is closed).
    struct Script {
        /// The opening's chunks.
        opening: Vec<Bytes>,
        /// The steps, in order.
        steps: mpsc::UnboundedReceiver<Next>,
        /// Counts the keep-alive hook's calls.
        keep_alives: Arc<AtomicUsize>,
        /// The shutdown hook's frame.
        last: Option<Bytes>,
    }

    impl Feed for Script {
        fn open(&mut self) -> Next {
            Next::Write(std::mem::take(&mut self.opening))
        }

        async fn next(&mut self) -> Next {
            self.steps.recv().await.unwrap_or(Next::Stop)
        }

        fn on_keep_alive(&mut self) {
            self.keep_alives.fetch_add(1, Ordering::SeqCst);
        }

        fn on_shutdown(&mut self) -> Option<Bytes> {
            self.last.take()
        }
    }

    impl PollFeed for Script {
        fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
            self.steps.poll_recv(cx).map(|step| step.unwrap_or(Next::Stop))
        }
    }

    /// A [`body`] over a script, and the test's ends of it.
    struct BodyHarness {
        steps: mpsc::UnboundedSender<Next>,
        body: axum::body::BodyDataStream,
        keep_alives: Arc<AtomicUsize>,
        shutdown: CancellationToken,
        /// Dropped with the body (the permit a stream holds).
        held: Arc<()>,
    }

    fn start_body(opening: &[&'static [u8]], last: Option<&'static [u8]>) -> BodyHarness {
        let (steps, rx) = mpsc::unbounded_channel();
        let keep_alives = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        let held = Arc::new(());
        let feed = Script {
            opening: opening.iter().map(|c| Bytes::from_static(c)).collect(),
            steps: rx,
            keep_alives: keep_alives.clone(),
            last: last.map(Bytes::from_static),
        };
        let body = body(feed, PERIOD, shutdown.clone(), held.clone()).into_data_stream();
        BodyHarness {
            steps,
            body,
            keep_alives,
            shutdown,
            held,
        }
    }

    /// The body's next chunk (`None`: it ended).
    async fn body_next(body: &mut axum::body::BodyDataStream) -> Option<Vec<u8>> {
        use futures::StreamExt;
        body.next().await.map(|c| c.expect("infallible").to_vec())
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_hands_out_the_same_stream() {
        let mut h = start_body(&[b"prime"], Some(b"completion"));
        let opened = Instant::now();
        h.steps.send(Next::Write(chunks(&[b"a", b"b"]))).unwrap();
        for want in [&b"prime"[..], b"a", b"b", sse::KEEP_ALIVE] {
            assert_eq!(body_next(&mut h.body).await.as_deref(), Some(want));
        }
        assert_eq!(opened.elapsed(), PERIOD, "the keep-alive, one period after the opening");
        h.steps.send(Next::Write(chunks(&[b"c"]))).unwrap();
        assert_eq!(body_next(&mut h.body).await.as_deref(), Some(&b"c"[..]));
        assert_eq!(h.keep_alives.load(Ordering::SeqCst), 1, "the hook followed the comment");
        h.steps.send(Next::End(chunks(&[b"last"]))).unwrap();
        assert_eq!(body_next(&mut h.body).await.as_deref(), Some(&b"last"[..]));
        assert_eq!(body_next(&mut h.body).await, None, "the end");
        assert_eq!(body_next(&mut h.body).await, None, "and nothing after it");
        drop(h.body);
        assert_eq!(Arc::strong_count(&h.held), 1, "the hold goes with the body");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_ends_with_the_shutdown_frame() {
        let mut h = start_body(&[b"ack"], Some(b"completion"));
        assert_eq!(body_next(&mut h.body).await.as_deref(), Some(&b"ack"[..]));
        h.shutdown.cancel();
        // Shutdown goes before a feed with steps ready.
        h.steps.send(Next::Write(chunks(&[b"late"]))).unwrap();
        assert_eq!(body_next(&mut h.body).await.as_deref(), Some(&b"completion"[..]));
        assert_eq!(body_next(&mut h.body).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_wakes_for_a_step_while_waiting() {
        let mut h = start_body(&[], None);
        let steps = h.steps.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PERIOD / 2).await;
            steps.send(Next::Write(chunks(&[b"later"]))).unwrap();
        });
        let started = Instant::now();
        assert_eq!(body_next(&mut h.body).await.as_deref(), Some(&b"later"[..]));
        assert_eq!(started.elapsed(), PERIOD / 2, "woken by the step, not by the clock");
        drop(h.steps);
        assert_eq!(body_next(&mut h.body).await, None, "a closed script stops the stream");
    }

    /// A running pump and the test's ends of it.
    struct Harness {
        /// Feeds the script.
        steps: mpsc::UnboundedSender<Next>,
        /// The response body's end.
        body: mpsc::Receiver<Bytes>,
        /// The keep-alive hook's calls.
        keep_alives: Arc<AtomicUsize>,
        /// The server's shutdown token.
        shutdown: CancellationToken,
        /// The pump's task.
        pump: JoinHandle<Outcome>,
    }

    /// Spawns a pump over a script that opens with `opening` and offers `last` at shutdown.
    fn start(opening: &[&'static [u8]], last: Option<&'static [u8]>, keep_alive: Duration) -> Harness {
        let (steps, rx) = mpsc::unbounded_channel();
        let (tx, body) = sse::channel(4);
        let keep_alives = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        let feed = Script {
            opening: opening.iter().map(|c| Bytes::from_static(c)).collect(),
            steps: rx,
            keep_alives: keep_alives.clone(),
            last: last.map(Bytes::from_static),
        };
        let pump = tokio::spawn(run(feed, tx, keep_alive, shutdown.clone()));
        Harness {
            steps,
            body,
            keep_alives,
            shutdown,
            pump,
        }
    }

    /// Static chunks.
    fn chunks(c: &[&'static [u8]]) -> Vec<Bytes> {
        c.iter().map(|c| Bytes::from_static(c)).collect()
    }

    /// The next chunk the client receives (`None`: the body ended).
    async fn next(body: &mut mpsc::Receiver<Bytes>) -> Option<Vec<u8>> {
        body.recv().await.map(|b| b.to_vec())
    }

    #[tokio::test(start_paused = true)]
    async fn opening_then_steps_in_order() {
        let mut h = start(&[b"prime"], None, PERIOD);
        h.steps.send(Next::Write(chunks(&[b"a", b"b"]))).unwrap();
        h.steps.send(Next::Write(Vec::new())).unwrap();
        h.steps.send(Next::Write(chunks(&[b"c"]))).unwrap();
        for want in [&b"prime"[..], b"a", b"b", b"c"] {
            assert_eq!(next(&mut h.body).await.as_deref(), Some(want));
        }
        drop(h.steps);
        assert_eq!(next(&mut h.body).await, None, "a closed script stops the stream");
        assert_eq!(h.pump.await.unwrap(), Outcome::Stopped);
    }

    #[tokio::test(start_paused = true)]
    async fn keep_alive_when_idle() {
        let mut h = start(&[b"prime"], None, PERIOD);
        let opened = Instant::now();
        assert_eq!(next(&mut h.body).await.as_deref(), Some(&b"prime"[..]));
        assert_eq!(next(&mut h.body).await.as_deref(), Some(sse::KEEP_ALIVE));
        assert_eq!(opened.elapsed(), PERIOD, "one period after the stream opened");
        assert_eq!(next(&mut h.body).await.as_deref(), Some(sse::KEEP_ALIVE));
        assert_eq!(opened.elapsed(), PERIOD * 2);
        assert_eq!(h.keep_alives.load(Ordering::SeqCst), 2, "the hook follows each comment");
        // A write does not move the cadence; the next comment is still due at 3 periods.
        tokio::time::sleep(PERIOD / 2).await;
        h.steps.send(Next::Write(chunks(&[b"event"]))).unwrap();
        assert_eq!(next(&mut h.body).await.as_deref(), Some(&b"event"[..]));
        assert_eq!(next(&mut h.body).await.as_deref(), Some(sse::KEEP_ALIVE));
        assert_eq!(opened.elapsed(), PERIOD * 3);
        h.shutdown.cancel();
        assert_eq!(h.pump.await.unwrap(), Outcome::Shutdown);
    }

    #[tokio::test(start_paused = true)]
    async fn keep_alive_has_a_floor() {
        let mut h = start(&[], None, Duration::ZERO);
        let opened = Instant::now();
        assert_eq!(next(&mut h.body).await.as_deref(), Some(sse::KEEP_ALIVE));
        assert_eq!(opened.elapsed(), MIN_KEEP_ALIVE);
        h.shutdown.cancel();
        assert_eq!(h.pump.await.unwrap(), Outcome::Shutdown);
    }

    #[tokio::test(start_paused = true)]
    async fn a_missed_tick_is_written_once() {
        let (steps, rx) = mpsc::unbounded_channel();
        // Room for one chunk: a client that stops reading blocks the pump's writes.
        let (tx, mut body) = sse::channel(1);
        let feed = Script {
            opening: Vec::new(),
            steps: rx,
            keep_alives: Arc::new(AtomicUsize::new(0)),
            last: None,
        };
        let shutdown = CancellationToken::new();
        let pump = tokio::spawn(run(feed, tx, PERIOD, shutdown.clone()));
        let opened = Instant::now();
        steps.send(Next::Write(chunks(&[b"a", b"b"]))).unwrap();
        // The client reads nothing for five periods: the pump is stuck writing "b".
        tokio::time::sleep(PERIOD * 5).await;
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"a"[..]));
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"b"[..]));
        assert_eq!(next(&mut body).await.as_deref(), Some(sse::KEEP_ALIVE));
        assert_eq!(opened.elapsed(), PERIOD * 5, "the overdue tick, at once");
        assert_eq!(next(&mut body).await.as_deref(), Some(sse::KEEP_ALIVE));
        assert_eq!(opened.elapsed(), PERIOD * 6, "then one period later, not a burst");
        shutdown.cancel();
        assert_eq!(pump.await.unwrap(), Outcome::Shutdown);
    }

    #[tokio::test(start_paused = true)]
    async fn a_ready_feed_goes_before_the_keep_alive() {
        let (steps, rx) = mpsc::unbounded_channel();
        for c in [&b"a"[..], b"b", b"c"] {
            steps.send(Next::Write(vec![Bytes::from_static(c)])).unwrap();
        }
        let (tx, mut body) = sse::channel(1);
        let feed = Script {
            opening: Vec::new(),
            steps: rx,
            keep_alives: Arc::new(AtomicUsize::new(0)),
            last: None,
        };
        let shutdown = CancellationToken::new();
        let pump = tokio::spawn(run(feed, tx, PERIOD, shutdown.clone()));
        // The client reads nothing for two periods: the tick is overdue and steps are ready.
        tokio::time::sleep(PERIOD * 2).await;
        for want in [&b"a"[..], b"b", b"c", sse::KEEP_ALIVE] {
            assert_eq!(next(&mut body).await.as_deref(), Some(want));
        }
        shutdown.cancel();
        assert_eq!(pump.await.unwrap(), Outcome::Shutdown);
    }

    #[tokio::test(start_paused = true)]
    async fn stops_when_the_client_leaves() {
        let mut h = start(&[b"prime"], Some(b"never"), PERIOD);
        assert_eq!(next(&mut h.body).await.as_deref(), Some(&b"prime"[..]));
        let started = Instant::now();
        drop(h.body);
        assert_eq!(h.pump.await.unwrap(), Outcome::ClientGone);
        assert_eq!(started.elapsed(), Duration::ZERO, "noticed at once, not at a tick");
        assert_eq!(h.keep_alives.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_blocked_write_ends_when_the_body_is_dropped() {
        let (steps, rx) = mpsc::unbounded_channel();
        let (tx, body) = sse::channel(1);
        let feed = Script {
            opening: Vec::new(),
            steps: rx,
            keep_alives: Arc::new(AtomicUsize::new(0)),
            last: None,
        };
        let pump = tokio::spawn(run(feed, tx, PERIOD, CancellationToken::new()));
        // The client takes nothing: the pump blocks writing "b".
        steps.send(Next::Write(chunks(&[b"a", b"b", b"c"]))).unwrap();
        tokio::time::sleep(PERIOD * 3).await;
        assert!(!pump.is_finished(), "blocked, not ended");
        // The stall watchdog drops the body: the blocked write fails at once.
        drop(body);
        assert_eq!(pump.await.unwrap(), Outcome::ClientGone);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_write_is_the_client_leaving() {
        let (tx, body) = sse::channel(1);
        drop(body);
        let (steps, rx) = mpsc::unbounded_channel::<Next>();
        let feed = Script {
            opening: chunks(&[b"prime"]),
            steps: rx,
            keep_alives: Arc::new(AtomicUsize::new(0)),
            last: None,
        };
        let outcome = run(feed, tx, PERIOD, CancellationToken::new()).await;
        assert_eq!(outcome, Outcome::ClientGone);
        drop(steps);
    }

    #[tokio::test(start_paused = true)]
    async fn ends_with_the_last_chunk() {
        let mut h = start(&[b"prime"], Some(b"unused"), PERIOD);
        h.steps.send(Next::Write(chunks(&[b"a"]))).unwrap();
        h.steps.send(Next::End(chunks(&[b"b", b"last"]))).unwrap();
        h.steps.send(Next::Write(chunks(&[b"after the end"]))).unwrap();
        for want in [&b"prime"[..], b"a", b"b", b"last"] {
            assert_eq!(next(&mut h.body).await.as_deref(), Some(want));
        }
        assert_eq!(next(&mut h.body).await, None, "nothing after the end");
        assert_eq!(h.pump.await.unwrap(), Outcome::Complete);
    }

    #[tokio::test(start_paused = true)]
    async fn stop_is_silent() {
        let mut h = start(&[b"prime"], Some(b"unused"), PERIOD);
        h.steps.send(Next::Stop).unwrap();
        assert_eq!(next(&mut h.body).await.as_deref(), Some(&b"prime"[..]));
        assert_eq!(next(&mut h.body).await, None);
        assert_eq!(h.pump.await.unwrap(), Outcome::Stopped);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_writes_the_hook_frame_last() {
        let mut h = start(&[b"ack"], Some(b"completion"), PERIOD);
        assert_eq!(next(&mut h.body).await.as_deref(), Some(&b"ack"[..]));
        h.shutdown.cancel();
        // Shutdown goes before a feed with steps ready.
        h.steps.send(Next::Write(chunks(&[b"late"]))).unwrap();
        assert_eq!(next(&mut h.body).await.as_deref(), Some(&b"completion"[..]));
        assert_eq!(next(&mut h.body).await, None);
        assert_eq!(h.pump.await.unwrap(), Outcome::Shutdown);

        let mut h = start(&[b"prime"], None, PERIOD);
        h.shutdown.cancel();
        assert_eq!(next(&mut h.body).await.as_deref(), Some(&b"prime"[..]));
        assert_eq!(next(&mut h.body).await, None, "no hook frame: a silent end");
        assert_eq!(h.pump.await.unwrap(), Outcome::Shutdown);
    }

    #[tokio::test(start_paused = true)]
    async fn the_opening_is_written_even_at_shutdown() {
        let (steps, rx) = mpsc::unbounded_channel::<Next>();
        let (tx, mut body) = sse::channel(4);
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let feed = Script {
            opening: chunks(&[b"ack"]),
            steps: rx,
            keep_alives: Arc::new(AtomicUsize::new(0)),
            last: Some(Bytes::from_static(b"completion")),
        };
        assert_eq!(run(feed, tx, PERIOD, shutdown).await, Outcome::Shutdown);
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"ack"[..]));
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"completion"[..]));
        assert_eq!(next(&mut body).await, None);
        drop(steps);
    }
}
