//! Resumable POST streams (SEP-1699): the buffer of one legacy call's stream, the readers that
//! follow it (the POST response, then any GET that resumes it), and the per-session table.
//!
//! A streamed legacy call of a session writes its frames, then its reply, to a [`Tape`]
//! instead of straight to the response. A reader follows the tape from a cursor: the POST
//! response starts with a priming event (`retry:`, id `<stream>-0`, empty data), a resuming GET
//! with a `retry:` field, then both write every event after their cursor with the id
//! `<stream>-<seq>`, so that `Last-Event-ID` names the stream it came from and never resumes
//! another. One reader at a time: a newer one ends the older.
//!
//! Bounds: while a reader is attached the call waits for it when `capacity` events are unread
//! (back-pressure, as with a plain stream); with no reader the tape keeps the newest `capacity`
//! events (a reader that resumes before the lost ones gets one `notifications/replay_truncated`)
//! and always the reply. A tape is dropped once a reader has written its end; a finished tape
//! that no reader delivered is kept for a later GET, at most [`RETAINED`] per session (oldest
//! dropped first), and every tape goes with its session.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use mcp_runtime::SessionHandle;

use crate::streams::pump::{self, Feed, Next, Outcome};
use crate::streams::sse;

/// Finished, undelivered streams kept per session for a late resumption.
pub(crate) const RETAINED: usize = 16;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Default)]
struct State {
    events: VecDeque<(u64, Bytes)>,
    /// The next sequence number (0 is the priming event's).
    next: u64,
    /// The highest sequence number evicted (0: none).
    evicted: u64,
    /// The stream's end: the last sequence number and the reply (`None`: cancelled, no reply).
    end: Option<(u64, Option<Bytes>)>,
    /// The attached reader: its generation and the last sequence number it wrote.
    reader: Option<(u64, u64)>,
}

/// What a reader writes next.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Batch {
    /// Events after the cursor were lost (or the cursor is unknown).
    pub(crate) truncated: bool,
    /// Where the events resume: the cursor, or past the lost ones when truncated.
    pub(crate) from: u64,
    /// The events to write, in order.
    pub(crate) events: Vec<(u64, Bytes)>,
    /// After these events the stream is over.
    pub(crate) done: bool,
}

/// The buffer of one POST stream.
#[derive(Debug)]
pub(crate) struct Tape {
    number: u64,
    capacity: usize,
    state: Mutex<State>,
    /// Bumped by every push and by the end.
    latest: watch::Sender<u64>,
    /// Bumped by every reader that attaches.
    readers: watch::Sender<u64>,
    /// A reader advanced or left: a waiting producer may go on.
    room: Notify,
    /// A shared session: every event (then the reply and an empty end marker) is also appended
    /// to the session's log of this stream, so that another instance can resume it.
    mirror: Option<SessionHandle>,
}

impl Tape {
    fn new(number: u64, capacity: usize, mirror: Option<SessionHandle>) -> Self {
        Tape {
            mirror,
            number,
            capacity: capacity.max(1),
            state: Mutex::new(State {
                next: 1,
                ..State::default()
            }),
            latest: watch::Sender::new(0),
            readers: watch::Sender::new(0),
            room: Notify::new(),
        }
    }

    /// The stream's number (the first part of its event ids).
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Appends a frame, waiting while an attached reader has `capacity` events unread.
    pub(crate) async fn push(&self, frame: Bytes) {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut st = lock(&self.state);
                let unread = st.reader.map_or(0, |(_, cursor)| (st.next - 1).saturating_sub(cursor));
                if unread < self.capacity as u64 {
                    let seq = st.next;
                    st.next += 1;
                    if let Some(session) = &self.mirror {
                        // Under the lock: the log's ids follow the tape's sequence numbers.
                        session.log_event(self.number, frame.to_vec());
                    }
                    st.events.push_back((seq, frame));
                    while st.events.len() > self.capacity {
                        if let Some((old, _)) = st.events.pop_front() {
                            st.evicted = old;
                        }
                    }
                    drop(st);
                    self.latest.send_modify(|n| *n += 1);
                    return;
                }
            }
            room.await;
        }
    }

    /// Ends the stream, with the reply (`None`: the call was cancelled and answers nothing).
    pub(crate) fn finish(&self, reply: Option<Bytes>) {
        let mut st = lock(&self.state);
        if let Some(session) = &self.mirror {
            if let Some(reply) = &reply {
                session.log_event(self.number, reply.to_vec());
            }
            session.log_event(self.number, Vec::new());
        }
        let last = if reply.is_some() { st.next } else { st.next - 1 };
        st.next = last + 1;
        st.end = Some((last, reply));
        drop(st);
        self.latest.send_modify(|n| *n += 1);
    }

    /// Whether a reader at `cursor` has nothing left to receive.
    pub(crate) fn consumed(&self, cursor: u64) -> bool {
        lock(&self.state).end.as_ref().is_some_and(|(last, _)| cursor >= *last)
    }

    /// What a reader at `cursor` writes next.
    fn after(&self, cursor: u64) -> Batch {
        let st = lock(&self.state);
        let mut batch = Batch {
            truncated: cursor < st.evicted || cursor >= st.next,
            ..Batch::default()
        };
        let from = if batch.truncated {
            st.evicted.max(cursor.min(st.next - 1))
        } else {
            cursor
        };
        batch.from = from;
        batch.events = st.events.iter().filter(|(seq, _)| *seq > from).cloned().collect();
        if let Some((last, reply)) = &st.end {
            if let Some(reply) = reply
                && *last > from
            {
                batch.events.push((*last, reply.clone()));
            }
            batch.done = true;
        }
        batch
    }

    fn attach(&self, cursor: u64) -> u64 {
        let mut generation = 0;
        self.readers.send_modify(|n| {
            *n += 1;
            generation = *n;
        });
        lock(&self.state).reader = Some((generation, cursor));
        self.room.notify_waiters();
        generation
    }

    fn advance(&self, generation: u64, cursor: u64) {
        let mut st = lock(&self.state);
        if let Some((g, c)) = &mut st.reader
            && *g == generation
        {
            *c = cursor;
            drop(st);
            self.room.notify_waiters();
        }
    }

    fn detach(&self, generation: u64) {
        let mut st = lock(&self.state);
        if st.reader.is_some_and(|(g, _)| g == generation) {
            st.reader = None;
            drop(st);
            self.room.notify_waiters();
        }
    }
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    tapes: HashMap<u64, Arc<Tape>>,
    retained: VecDeque<u64>,
}

/// The POST streams of one session.
#[derive(Debug)]
pub(crate) struct Streams {
    table: Mutex<Table>,
    capacity: usize,
    /// A shared session: stream numbers start at a random base (unique across instances) and
    /// every tape is mirrored to the session's logs.
    shared: Option<SessionHandle>,
}

impl Streams {
    /// No stream yet; each will keep `capacity` events.
    pub(crate) fn new(capacity: usize) -> Self {
        Streams {
            table: Mutex::new(Table::default()),
            capacity,
            shared: None,
        }
    }

    /// The streams of a session shared by several instances: numbered from a random base, so
    /// that two instances never hand out the same number, and mirrored to the shared logs.
    pub(crate) fn shared(capacity: usize, session: SessionHandle) -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write(session.id().as_bytes());
        // Below 2^48: event ids stay exact in clients that parse them as doubles.
        let base = (h.finish() & 0xFFFF_FFFF) << 16;
        Streams {
            table: Mutex::new(Table {
                next: base,
                ..Table::default()
            }),
            capacity,
            shared: Some(session),
        }
    }

    /// Opens a stream with the next number (from 1, or from the shared base).
    pub(crate) fn open(&self) -> Arc<Tape> {
        let mut t = lock(&self.table);
        t.next += 1;
        let number = t.next;
        let tape = Arc::new(Tape::new(number, self.capacity, self.shared.clone()));
        t.tapes.insert(number, tape.clone());
        tape
    }

    /// A stream still held.
    pub(crate) fn get(&self, number: u64) -> Option<Arc<Tape>> {
        lock(&self.table).tapes.get(&number).cloned()
    }

    /// A stream ended; it stays for a resumption until delivered or pushed out.
    pub(crate) fn finished(&self, number: u64) {
        let mut t = lock(&self.table);
        if !t.tapes.contains_key(&number) {
            return;
        }
        t.retained.push_back(number);
        while t.retained.len() > RETAINED {
            if let Some(old) = t.retained.pop_front() {
                t.tapes.remove(&old);
            }
        }
    }

    /// A reader wrote the stream's end: nothing is left to resume.
    fn delivered(&self, number: u64) {
        let mut t = lock(&self.table);
        t.tapes.remove(&number);
        t.retained.retain(|n| *n != number);
    }
}

/// What a reader of a POST stream needs.
pub(crate) struct Follow {
    pub(crate) streams: Arc<Streams>,
    pub(crate) tape: Arc<Tape>,
    /// `None`: a new stream (priming event first); else the resumed cursor.
    pub(crate) from: Option<u64>,
    /// When the server closes this reader (SEP-1699 polling).
    pub(crate) close_at: Option<Instant>,
    pub(crate) retry: Duration,
    pub(crate) keep_alive: Duration,
    pub(crate) shutdown: CancellationToken,
    /// The session's `closed` token.
    pub(crate) session: CancellationToken,
}

/// Detaches a reader however it ends.
struct Attached(Arc<Tape>, u64);

impl Drop for Attached {
    fn drop(&mut self) {
        self.0.detach(self.1);
    }
}

/// Writes a POST stream to one response until its end, the client leaves, a newer reader takes
/// over, the server closes it for polling, the session ends or the server shuts down.
pub(crate) async fn follow(f: Follow, tx: mpsc::Sender<Bytes>) {
    let Follow {
        streams,
        tape,
        from,
        close_at,
        retry,
        keep_alive,
        shutdown,
        session,
    } = f;
    let number = tape.number();
    let mut readers = tape.readers.subscribe();
    let mine = tape.attach(from.unwrap_or(0));
    readers.mark_unchanged();
    let _attached = Attached(tape.clone(), mine);
    let latest = tape.latest.subscribe();
    let first = match from {
        None => sse::priming(&format!("{number}-0"), retry),
        Some(_) => sse::retry(retry),
    };
    let mut reader = Reader {
        tape,
        mine,
        readers,
        latest,
        cursor: from.unwrap_or(0),
        queue: VecDeque::new(),
        done: false,
        writing: None,
        first: Some(first),
        close_at,
        session,
    };
    reader.load();
    if pump::run(reader, tx, keep_alive, shutdown).await == Outcome::Complete {
        streams.delivered(number);
    }
}

/// The [`Feed`] of one reader of a tape: its events past the cursor, one per step, then the
/// end.
///
/// One event per step because the pump asks for the next step only once the previous one is
/// written: that is when the tape learns the reader's new cursor, event by event, which is
/// what paces a producer waiting for room (see [`Tape::push`]).
struct Reader {
    /// The stream followed.
    tape: Arc<Tape>,
    /// The reader's generation: another one means a newer reader took over.
    mine: u64,
    /// Woken by every reader that attaches.
    readers: watch::Receiver<u64>,
    /// Woken by every push and by the end.
    latest: watch::Receiver<u64>,
    /// Where the next batch starts: past every chunk queued.
    cursor: u64,
    /// Chunks to write, each with the sequence number the reader reaches once it is written
    /// (`None`: the truncation notice).
    queue: VecDeque<(Bytes, Option<u64>)>,
    /// The queue ends with the stream's end.
    done: bool,
    /// The sequence number of the chunk the pump is writing.
    writing: Option<u64>,
    /// The priming event or `retry:` field, written first.
    first: Option<Bytes>,
    /// When the server closes this reader (SEP-1699 polling).
    close_at: Option<Instant>,
    /// The session's `closed` token.
    session: CancellationToken,
}

impl Reader {
    /// Queues the tape's events past the cursor (after a truncation notice when some were
    /// lost), and notes whether the stream's end is among them.
    fn load(&mut self) {
        self.latest.mark_unchanged();
        let number = self.tape.number();
        let batch = self.tape.after(self.cursor);
        if batch.truncated {
            let notice = sse::truncated(&format!("{number}-{}", self.cursor));
            self.queue.push_back((notice, None));
            self.cursor = batch.from;
        }
        for (seq, frame) in batch.events {
            let event = sse::event(Some(&format!("{number}-{seq}")), &frame);
            self.queue.push_back((event, Some(seq)));
            self.cursor = seq;
        }
        self.done = batch.done;
    }

    /// The next queued chunk (the last one ends the stream once the end is queued), or `None`
    /// when the reader has to wait for the tape.
    fn step(&mut self) -> Option<Next> {
        match self.queue.pop_front() {
            Some((chunk, seq)) => {
                self.writing = seq;
                let chunks = vec![chunk];
                Some(if self.queue.is_empty() && self.done {
                    Next::End(chunks)
                } else {
                    Next::Write(chunks)
                })
            }
            None if self.done => Some(Next::End(Vec::new())),
            None => None,
        }
    }
}

/// Waits until `at`, or forever.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Feed for Reader {
    fn open(&mut self) -> Next {
        Next::Write(self.first.take().into_iter().collect())
    }

    async fn next(&mut self) -> Next {
        if let Some(seq) = self.writing.take() {
            // Written: a producer waiting for room may go on.
            self.tape.advance(self.mine, seq);
        }
        if let Some(step) = self.step() {
            return step;
        }
        loop {
            tokio::select! {
                biased;
                () = self.session.cancelled() => return Next::Stop,
                r = self.readers.changed() => {
                    if r.is_err() || *self.readers.borrow_and_update() != self.mine {
                        return Next::Stop;
                    }
                }
                r = self.latest.changed() => {
                    if r.is_err() {
                        return Next::Stop;
                    }
                    self.load();
                    if let Some(step) = self.step() {
                        return step;
                    }
                }
                () = until(self.close_at) => {
                    tracing::debug!(
                        stream = self.tape.number(),
                        "POST stream closed by the server; the client resumes with GET"
                    );
                    return Next::Stop;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(b: &Batch) -> Vec<u64> {
        b.events.iter().map(|(s, _)| *s).collect()
    }

    #[tokio::test]
    async fn window_end_and_reply() {
        let tape = Tape::new(1, 2, None);
        for _ in 0..3 {
            tape.push(Bytes::from_static(b"{}")).await;
        }
        // seqs 1..=3 pushed with no reader, 1 evicted.
        let b = tape.after(0);
        assert!(b.truncated && !b.done);
        assert_eq!(seqs(&b), vec![2, 3]);
        assert_eq!(seqs(&tape.after(2)), vec![3]);
        tape.finish(Some(Bytes::from_static(b"reply")));
        let b = tape.after(3);
        assert_eq!(seqs(&b), vec![4], "the reply is never evicted");
        assert!(b.done && !b.truncated);
        assert!(!tape.consumed(3));
        assert!(tape.consumed(4));
        let cancelled = Tape::new(2, 4, None);
        cancelled.push(Bytes::new()).await;
        cancelled.finish(None);
        assert!(cancelled.consumed(1), "a cancelled stream ends after its last event");
        assert!(cancelled.after(1).done);
    }

    #[tokio::test]
    async fn an_attached_reader_holds_the_producer() {
        let tape = Arc::new(Tape::new(1, 1, None));
        let g = tape.attach(0);
        tape.push(Bytes::new()).await;
        let producer = {
            let tape = tape.clone();
            tokio::spawn(async move { tape.push(Bytes::new()).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!producer.is_finished(), "waits for the reader");
        tape.advance(g, 1);
        producer.await.expect("pushed once the reader advanced");
        let producer = {
            let tape = tape.clone();
            tokio::spawn(async move { tape.push(Bytes::new()).await })
        };
        tape.detach(g);
        producer.await.expect("pushed once the reader left");
        assert_eq!(tape.after(0).events.len(), 1, "no reader: the newest events only");
    }

    #[test]
    fn table_retains_a_bounded_number() {
        let streams = Streams::new(4);
        let tapes: Vec<_> = (0..RETAINED + 2).map(|_| streams.open()).collect();
        for t in &tapes {
            streams.finished(t.number());
        }
        assert!(streams.get(1).is_none() && streams.get(2).is_none(), "oldest dropped");
        assert!(streams.get(3).is_some());
        streams.delivered(3);
        assert!(streams.get(3).is_none());
    }
}
