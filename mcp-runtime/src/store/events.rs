//! The [`EventLog`] seam: the events of each session's streams, behind event ids and replay
//! from an event id, and the in-memory default.
//!
//! Every stream of a session has its own log: the session's own stream (`0`: the messages meant
//! for the session alone) and each resumable stream of a request (SEP-1699). Ids are allocated by the log, increasing from 1 within a stream, so that
//! whichever instance writes an event, a client resuming on any instance names the same
//! event. A log keeps the newest `capacity` events; a cursor older than the oldest one kept, or
//! newer than the newest id handed out, is answered [`Replay::Truncated`] (the stream then says
//! so with `notifications/replay_truncated`, behaviour invariant 19).

use std::collections::VecDeque;

use dashmap::DashMap;

use super::StoreFuture;

/// One stream's log: a session and the stream's number in it (0: the session's own stream).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamKey {
    /// The session id.
    pub session: String,
    /// The stream's number: 0 for the session's own stream, a request's stream's number otherwise.
    pub stream: u64,
}

impl StreamKey {
    /// The session's own log (stream `0`): the messages meant for the session alone.
    pub fn own(session: impl Into<String>) -> Self {
        StreamKey {
            session: session.into(),
            stream: 0,
        }
    }
}

/// Where a stream resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// The events after the cursor, oldest first (possibly none).
    From(Vec<(u64, Vec<u8>)>),
    /// Events after the cursor were lost.
    Truncated,
    /// The cursor is past every id the stream handed out (or the stream is unknown): what it
    /// names is not stored yet. A stream whose ids are stored before they are sent never sees
    /// it from an honest client; a stream mirrored after writing (a request's stream of a
    /// shared session) does, until the mirror catches up.
    Ahead,
}

/// Where stream events live.
///
/// # Contract
///
/// - **Ids.** `append` and `allocate` hand out the next id of the stream, increasing from 1,
///   atomically: two instances appending to one stream never get the same id, and a log's
///   events are in id order. `allocate` takes an id without storing an event (the priming
///   event of a stream).
/// - **Stored before sent.** The runtime appends an event and writes it to a client only once
///   `append` returned its id.
/// - **Bounds.** After an append the stream keeps its newest `capacity` events.
/// - **Replay.** `after(key, cursor)` returns every kept event whose id is greater than
///   `cursor`, `Truncated` when an event after `cursor` was dropped, or `Ahead` when `cursor`
///   is greater than the newest id handed out (an unknown stream has handed out none: cursor 0
///   replays nothing, any other is ahead).
/// - **Deletion.** `delete_session` drops every stream of a session.
pub trait EventLog: Send + Sync + 'static {
    /// Stores an event; returns its id.
    fn append<'a>(&'a self, key: &'a StreamKey, frame: &'a [u8], capacity: usize) -> StoreFuture<'a, u64>;

    /// Hands out the next id without storing an event.
    fn allocate<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, u64>;

    /// The events after a cursor.
    fn after<'a>(&'a self, key: &'a StreamKey, cursor: u64) -> StoreFuture<'a, Replay>;

    /// Drops every stream of a session.
    fn delete_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;
}

/// One stream's events in memory.
#[derive(Debug, Default)]
struct Ring {
    /// The newest id handed out (0: none).
    newest: u64,
    /// The highest id dropped from the ring (0: none).
    evicted: u64,
    events: VecDeque<(u64, Vec<u8>)>,
}

impl Ring {
    fn allocate(&mut self) -> u64 {
        self.newest += 1;
        self.newest
    }

    fn after(&self, cursor: u64) -> Replay {
        if cursor < self.evicted {
            return Replay::Truncated;
        }
        if cursor > self.newest {
            return Replay::Ahead;
        }
        Replay::From(self.events.iter().filter(|(id, _)| *id > cursor).cloned().collect())
    }
}

/// The default: every stream's ring in this process's memory.
#[derive(Debug, Default)]
pub struct MemoryEventLog {
    rings: DashMap<StreamKey, Ring>,
}

impl MemoryEventLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops every stream of a session.
    pub(crate) fn drop_session(&self, session: &str) {
        self.rings.retain(|k, _| k.session != session);
    }
}

impl EventLog for MemoryEventLog {
    fn append<'a>(&'a self, key: &'a StreamKey, frame: &'a [u8], capacity: usize) -> StoreFuture<'a, u64> {
        let mut ring = self.rings.entry(key.clone()).or_default();
        let id = ring.allocate();
        ring.events.push_back((id, frame.to_vec()));
        while ring.events.len() > capacity.max(1) {
            if let Some((old, _)) = ring.events.pop_front() {
                ring.evicted = old;
            }
        }
        Box::pin(async move { Ok(id) })
    }

    fn allocate<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, u64> {
        let id = self.rings.entry(key.clone()).or_default().allocate();
        Box::pin(async move { Ok(id) })
    }

    fn after<'a>(&'a self, key: &'a StreamKey, cursor: u64) -> StoreFuture<'a, Replay> {
        let r = match self.rings.get(key) {
            Some(ring) => ring.after(cursor),
            None if cursor == 0 => Replay::From(Vec::new()),
            None => Replay::Ahead,
        };
        Box::pin(async move { Ok(r) })
    }

    fn delete_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.drop_session(session);
        Box::pin(async { Ok(()) })
    }
}
