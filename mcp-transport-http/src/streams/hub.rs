//! The legacy GET stream: per-session event buffers, the fan-out of registry changes, replay
//! after `Last-Event-ID`, and the stream's [`Feed`] (run by the
//! [`pump`](mod@crate::streams::pump)).
//!
//! A session gets its channel when it first needs one (its first GET stream, resumable POST
//! stream or session-targeted notification); from then on events raised while no GET stream is
//! open are buffered too (the reference implementation lost them: invariant 19's gap). Events
//! raised before a session has a channel are not kept: most sessions never open a stream. A channel
//! is a ring buffer of the last `sse_buffer_size` events with increasing ids, and a `watch` that
//! says the newest id; a stream keeps a cursor (the last id it wrote) and, when woken, writes
//! every buffered event past its cursor. A cursor that fell behind the ring's start means events
//! were lost: the stream says so with one `notifications/replay_truncated` event.
//!
//! One GET stream per session carries the events (each message goes on exactly one stream):
//! a newer stream ends the older one.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use axum::body::Bytes;
use mcp_runtime::registry::{Change, ChangeFeed};
use mcp_runtime::{Engine, SessionHandle};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use mcp_protocol::event_id::seq_id;

use crate::streams::pump::{self, Feed, Next};
use crate::streams::resume::Streams;
use crate::streams::sse;
use crate::streams::wakes::Wakes;

/// The buffered events of one session.
#[derive(Debug, Default)]
struct Ring {
    /// The next id to hand out (ids start at 1).
    next: u64,
    /// The highest id evicted from the ring (0: none).
    evicted: u64,
    events: VecDeque<(u64, Bytes)>,
}

/// Where a stream resumes.
#[derive(Debug, PartialEq)]
enum Resume {
    /// Events after the cursor are buffered: write them.
    From(Vec<(u64, Bytes)>),
    /// Events after the cursor were lost (or the cursor is unknown).
    Truncated,
}

impl Ring {
    fn allocate(&mut self) -> u64 {
        self.next = self.next.max(1);
        let id = self.next;
        self.next += 1;
        id
    }

    fn push(&mut self, frame: Bytes, capacity: usize) -> u64 {
        let id = self.allocate();
        self.events.push_back((id, frame));
        while self.events.len() > capacity {
            if let Some((old, _)) = self.events.pop_front() {
                self.evicted = old;
            }
        }
        id
    }

    /// The newest id handed out (0: none).
    fn newest(&self) -> u64 {
        self.next.saturating_sub(1)
    }

    fn after(&self, cursor: u64) -> Resume {
        if cursor < self.evicted || cursor > self.newest() {
            return Resume::Truncated;
        }
        Resume::From(self.events.iter().filter(|(id, _)| *id > cursor).cloned().collect())
    }
}

/// The event channel of one session.
#[derive(Debug)]
pub(crate) struct Channel {
    session: SessionHandle,
    /// What wakes the streams of a shared session (its log watcher).
    pub(crate) wakes: Arc<Wakes>,
    ring: Mutex<Ring>,
    capacity: usize,
    /// The newest id pushed.
    latest: watch::Sender<u64>,
    /// Bumped by every new stream; a stream whose number is no longer current ends.
    generation: watch::Sender<u64>,
    /// The session's resumable POST streams.
    pub(crate) streams: Arc<Streams>,
    /// Shared sessions: whether this instance holds the session's GET stream (the newest one
    /// opened here), and so appends registry changes to the session's shared log.
    pub(crate) holder: AtomicBool,
    /// The session's takeover count when this instance became the holder: a GET stream opened
    /// elsewhere since then (even after this instance's stream ended) ends the holding.
    pub(crate) holder_since: std::sync::atomic::AtomicU64,
}

impl Channel {
    /// Whether this instance holds the shared session's GET stream: it opened the newest one.
    pub(crate) fn holds(&self) -> bool {
        self.holder.load(Ordering::Acquire) && self.wakes.takeover_count() == self.holder_since.load(Ordering::Acquire)
    }

    /// This instance opened the shared session's newest GET stream.
    pub(crate) fn hold(&self) {
        self.holder_since.store(self.wakes.takeover_count(), Ordering::Release);
        self.holder.store(true, Ordering::Release);
    }

    /// The session.
    pub(crate) fn session(&self) -> &SessionHandle {
        &self.session
    }

    fn ring(&self) -> MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest event id, and a receiver woken by every new event.
    pub(crate) fn watch(&self) -> (u64, watch::Receiver<u64>) {
        let rx = self.latest.subscribe();
        (self.ring().newest(), rx)
    }

    /// The events after `cursor`, or `None` when some were lost.
    pub(crate) fn events_after(&self, cursor: u64) -> Option<Vec<(u64, Bytes)>> {
        match self.ring().after(cursor) {
            Resume::From(events) => Some(events),
            Resume::Truncated => None,
        }
    }

    /// Buffers an event and wakes the stream.
    pub(crate) fn push(&self, frame: Bytes) {
        let id = self.ring().push(frame, self.capacity);
        self.latest.send_replace(id);
    }
}

/// The event channels of every live session of an endpoint.
#[derive(Debug)]
pub(crate) struct Hub {
    channels: Mutex<HashMap<Arc<str>, Arc<Channel>>>,
    capacity: usize,
    started: AtomicBool,
}

impl Hub {
    /// An empty hub keeping `capacity` events per session.
    pub(crate) fn new(capacity: usize) -> Self {
        Hub {
            channels: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            started: AtomicBool::new(false),
        }
    }

    fn channels(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<Channel>>> {
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The channel of a session, created on first use. A new channel becomes the session's
    /// outlet: the notifications meant for that session alone (`Session::notify`) are buffered
    /// and carried like the registry's, on its GET stream.
    pub(crate) fn channel(&self, session: &SessionHandle) -> Arc<Channel> {
        let mut created = None;
        let channel = self
            .channels()
            .entry(session.id().clone())
            .or_insert_with(|| {
                let c = Arc::new(Channel {
                    session: session.clone(),
                    wakes: Wakes::of(session),
                    ring: Mutex::new(Ring::default()),
                    capacity: self.capacity,
                    latest: watch::Sender::new(0),
                    generation: watch::Sender::new(0),
                    streams: Arc::new(if session.is_shared() {
                        Streams::shared(self.capacity, session.clone())
                    } else {
                        Streams::new(self.capacity)
                    }),
                    holder: AtomicBool::new(false),
                    holder_since: std::sync::atomic::AtomicU64::new(0),
                });
                created = Some(Arc::downgrade(&c));
                c
            })
            .clone();
        // A shared session's notifications go to its shared log (`Session::notify`), whichever
        // instance holds its stream.
        if let Some(weak) = created.filter(|_| !session.is_shared()) {
            // Weak: the channel owns the session, which owns its outlet.
            session.set_outlet(move |frame| match weak.upgrade() {
                Some(c) => {
                    c.push(Bytes::from(frame));
                    true
                }
                None => false,
            });
        }
        channel
    }

    /// Drops a session's channel.
    pub(crate) fn remove(&self, id: &str) {
        self.channels().remove(id);
    }

    /// Drops the channels of closed sessions.
    pub(crate) fn prune(&self) {
        self.channels().retain(|_, c| !c.session.is_closed());
    }

    /// Starts the fan-out of registry changes once (it needs a Tokio runtime: the first request
    /// or [`serve`](crate::serve) calls this).
    pub(crate) fn start_fan_out(self: &Arc<Self>, engine: &Engine, shutdown: &CancellationToken) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let rx = engine.changes();
        mcp_runtime::background::spawn(fan_out(Arc::downgrade(self), rx, shutdown.clone()));
    }

    /// Delivers one change to every session channel that wants it.
    fn deliver(&self, change: &Change) {
        let frame = Bytes::from(change.frame(None));
        let channels: Vec<Arc<Channel>> = self.channels().values().cloned().collect();
        for c in channels {
            if !c.session.wants(change) {
                continue;
            }
            if !c.session.is_shared() {
                c.push(frame.clone());
            } else if c.holds() {
                // Appended once, by the instance holding the session's GET stream.
                c.session.notify(frame.to_vec());
            }
        }
    }
}

async fn fan_out(hub: Weak<Hub>, mut feed: ChangeFeed, shutdown: CancellationToken) {
    loop {
        let changes = tokio::select! {
            _ = shutdown.cancelled() => return,
            c = feed.next() => c,
        };
        let (Some(hub), Some(changes)) = (hub.upgrade(), changes) else {
            return;
        };
        for change in &changes {
            hub.deliver(change);
        }
    }
}

/// What a GET stream needs to run.
pub(crate) struct StreamSpec {
    pub(crate) channel: Arc<Channel>,
    pub(crate) last_event_id: Option<String>,
    pub(crate) retry: Duration,
    pub(crate) keep_alive: Duration,
    pub(crate) shutdown: CancellationToken,
}

/// Runs one GET stream: priming (or replay), then live events, until the client leaves, the
/// session ends, a newer stream takes over, or the server shuts down.
pub(crate) async fn pump(spec: StreamSpec, tx: mpsc::Sender<Bytes>) {
    let StreamSpec {
        channel,
        last_event_id,
        retry,
        keep_alive,
        shutdown,
    } = spec;
    let feed = Live::new(channel, last_event_id.as_deref(), retry);
    pump::run(feed, tx, keep_alive, shutdown).await;
}

/// The [`Feed`] of a GET stream: its session's events past a cursor.
struct Live {
    /// The session's channel: its ring of events and the session itself.
    channel: Arc<Channel>,
    /// The stream's generation number: another one means a newer stream took over.
    mine: u64,
    /// Woken by every new stream of the session.
    generation: watch::Receiver<u64>,
    /// Woken by every event pushed.
    latest: watch::Receiver<u64>,
    /// The last event id written (or skipped past, after a truncation).
    cursor: u64,
    /// The opening: the priming event or `retry:` field, then any replay.
    opening: Vec<Bytes>,
}

impl Live {
    /// Takes the session's events over from any older stream, and prepares the opening: a
    /// priming event (whose id the ring allocates), or, when the client resumes after `last`, a
    /// `retry:` field and the events after it (or the truncation notice when some were lost).
    fn new(channel: Arc<Channel>, last: Option<&str>, retry: Duration) -> Self {
        let mut generation = channel.generation.subscribe();
        let mine = {
            let mut g = 0;
            channel.generation.send_modify(|n| {
                *n += 1;
                g = *n;
            });
            generation.mark_unchanged();
            g
        };
        let latest = channel.latest.subscribe();
        let (opening, cursor) = {
            let mut ring = channel.ring();
            match last {
                None => {
                    let id = ring.allocate();
                    (vec![sse::priming(&id.to_string(), retry)], id)
                }
                Some(last) => {
                    let parsed = mcp_protocol::event_id::parse_seq(last);
                    let resume = parsed.map_or(Resume::Truncated, |c| ring.after(c));
                    let newest = ring.newest();
                    let mut opening = vec![sse::retry(retry)];
                    let cursor = match resume {
                        Resume::From(events) => push_events(&mut opening, parsed.unwrap_or(newest), events),
                        Resume::Truncated => {
                            opening.push(sse::truncated(last));
                            newest
                        }
                    };
                    (opening, cursor)
                }
            }
        };
        Live {
            channel,
            mine,
            generation,
            latest,
            cursor,
            opening,
        }
    }
}

/// Frames `events` onto `out` with their ids; returns the cursor past them.
pub(crate) fn push_events<F: AsRef<[u8]>>(out: &mut Vec<Bytes>, mut cursor: u64, events: Vec<(u64, F)>) -> u64 {
    for (id, frame) in events {
        out.push(sse::event(Some(&seq_id(id)), frame.as_ref()));
        cursor = cursor.max(id);
    }
    cursor
}

impl Feed for Live {
    fn open(&mut self) -> Next {
        Next::Write(std::mem::take(&mut self.opening))
    }

    async fn next(&mut self) -> Next {
        loop {
            tokio::select! {
                biased;
                () = self.channel.session.closed().cancelled() => return Next::Stop,
                r = self.generation.changed() => {
                    if r.is_err() || *self.generation.borrow_and_update() != self.mine {
                        return Next::Stop;
                    }
                }
                r = self.latest.changed() => {
                    if r.is_err() {
                        return Next::Stop;
                    }
                    self.latest.mark_unchanged();
                    let ring = self.channel.ring();
                    let mut out = Vec::new();
                    self.cursor = match ring.after(self.cursor) {
                        Resume::From(events) => push_events(&mut out, self.cursor, events),
                        Resume::Truncated => {
                            out.push(sse::truncated(&self.cursor.to_string()));
                            ring.newest()
                        }
                    };
                    return Next::Write(out);
                }
            }
        }
    }

    fn on_keep_alive(&mut self) {
        // An open stream is activity: the idle sweep spares its session.
        self.channel.session.touch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(r: Resume) -> Option<Vec<u64>> {
        match r {
            Resume::From(e) => Some(e.into_iter().map(|(id, _)| id).collect()),
            Resume::Truncated => None,
        }
    }

    #[test]
    fn ring_window() {
        let mut r = Ring::default();
        assert_eq!(ids(r.after(0)), Some(vec![]));
        let prime = r.allocate();
        assert_eq!(prime, 1);
        for _ in 0..5 {
            r.push(Bytes::new(), 3);
        }
        // ids 2..=6 pushed, 2 and 3 evicted.
        assert_eq!(r.evicted, 3);
        assert_eq!(ids(r.after(6)), Some(vec![]));
        assert_eq!(ids(r.after(3)), Some(vec![4, 5, 6]));
        assert_eq!(ids(r.after(5)), Some(vec![6]));
        assert_eq!(ids(r.after(prime)), None, "events 2 and 3 were lost");
        assert_eq!(ids(r.after(7)), None, "an id from the future is unknown");
    }
}
