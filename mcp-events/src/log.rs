//! The occurrence log: where emitted occurrences (and the signals live streams act on) are
//! kept for a retention window, behind positions a cursor names.
//!
//! [`OccurrenceLog`] is the seam; [`MemoryLog`] keeps each event type's entries in a ring in
//! this process (bounded by count and age), under an epoch drawn when the process starts, so a
//! cursor from before a restart is stale (the client is told `truncated: true`). A log shared
//! by several instances implements the same trait over its store.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_protocol::RpcError;
use mcp_protocol::events::cursor::{Cursor, Position};
use mcp_runtime::store::{StoreError, StoreFuture};
use serde_json::{Map, Value};
use tokio::sync::watch;

/// One emitted occurrence, as kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Occurrence {
    /// Its id (the upstream's stable id when there is one).
    pub event_id: String,
    /// When it occurred, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The payload.
    pub data: Map<String, Value>,
}

/// Something live push streams of a type act on without it being an occurrence.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal {
    /// A recoverable failure: `notifications/events/error`, the stream stays open.
    Error(RpcError),
    /// Occurrences were skipped: a fresh `notifications/events/active` with `truncated: true`.
    Gap,
    /// The type's subscriptions end: `notifications/events/terminated`, then the stream closes.
    Terminate(RpcError),
}

/// An entry of the log.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An occurrence (what poll, push and webhook deliver).
    Occurrence(Occurrence),
    /// A signal (acted on by streams open when it was appended; never replayed).
    Signal(Signal),
}

/// An entry and its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Where it sits: a cursor at this position resumes after it.
    pub position: Position,
    /// What it is.
    pub record: Record,
}

/// What a read found.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// The log's epoch (cursors name it).
    pub epoch: u64,
    /// The entries after the position read from, oldest first (at most the limit asked).
    pub entries: Vec<Entry>,
    /// The position of the newest entry (where "now" is).
    pub head: Position,
    /// The position read from was not this log's, or entries after it were dropped by the
    /// retention: what follows starts later than asked.
    pub gap: bool,
}

impl Slice {
    /// The cursor of a position of this log.
    pub fn cursor(&self, position: Position) -> String {
        Cursor {
            epoch: self.epoch,
            position,
        }
        .encode()
    }
}

/// Where a read starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Now: nothing is read, the head is reported.
    Now,
    /// After a client's cursor (possibly another epoch's: then from now, with a gap).
    Cursor(Cursor),
    /// A client's cursor that is not one (a gap, from now).
    Stale,
}

/// The log seam. Every method is cheap to call concurrently.
pub trait OccurrenceLog: Send + Sync + 'static {
    /// Appends a record to the type `name`'s log; answers its position.
    fn append<'a>(&'a self, name: &'a str, record: Record) -> StoreFuture<'a, Position>;

    /// Reads up to `limit` entries of `name` after `from`.
    fn read<'a>(&'a self, name: &'a str, from: Start, limit: usize) -> StoreFuture<'a, Slice>;

    /// A receiver that changes whenever something is appended to `name` (by any instance).
    fn watch(&self, name: &str) -> watch::Receiver<u64>;
}

/// How long a [`MemoryLog`] keeps entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// At most this many entries per type (the oldest go first).
    pub max_entries: usize,
    /// Nothing older than this.
    pub max_age: Duration,
}

impl Default for Retention {
    /// 1,000 entries and 10 minutes per type.
    fn default() -> Self {
        Retention {
            max_entries: 1000,
            max_age: Duration::from_secs(600),
        }
    }
}

/// A log in this process's memory.
#[derive(Debug)]
pub struct MemoryLog {
    epoch: u64,
    retention: Retention,
    rings: Mutex<HashMap<String, Ring>>,
}

#[derive(Debug)]
struct Ring {
    /// (entry, when it was appended in ms) oldest first.
    entries: VecDeque<(Entry, u64)>,
    /// The last sequence number given.
    last: u64,
    changed: watch::Sender<u64>,
}

impl Ring {
    fn new() -> Self {
        Ring {
            entries: VecDeque::new(),
            last: 0,
            changed: watch::Sender::new(0),
        }
    }

    fn trim(&mut self, retention: Retention, now_ms: u64) {
        let floor = now_ms.saturating_sub(u64::try_from(retention.max_age.as_millis()).unwrap_or(u64::MAX));
        while self.entries.len() > retention.max_entries || self.entries.front().is_some_and(|(_, at)| *at < floor) {
            self.entries.pop_front();
        }
    }

    /// The sequence number of the oldest entry kept (`last + 1` when none is).
    fn oldest(&self) -> u64 {
        self.entries.front().map_or(self.last + 1, |(e, _)| e.position.lo)
    }
}

impl MemoryLog {
    /// A log with `retention`, under a fresh random epoch.
    pub fn new(retention: Retention) -> Self {
        MemoryLog {
            epoch: crate::time::random_u64(),
            retention,
            rings: Mutex::new(HashMap::new()),
        }
    }

    fn with_ring<T>(&self, name: &str, f: impl FnOnce(&mut Ring) -> T) -> T {
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        f(rings.entry(name.to_owned()).or_insert_with(Ring::new))
    }
}

impl Default for MemoryLog {
    fn default() -> Self {
        MemoryLog::new(Retention::default())
    }
}

impl OccurrenceLog for MemoryLog {
    fn append<'a>(&'a self, name: &'a str, record: Record) -> StoreFuture<'a, Position> {
        let now = crate::time::now_ms();
        let position = self.with_ring(name, |ring| {
            ring.last += 1;
            let position = Position::new(0, ring.last);
            ring.entries.push_back((Entry { position, record }, now));
            ring.trim(self.retention, now);
            ring.changed.send_replace(ring.last);
            position
        });
        Box::pin(std::future::ready(Ok(position)))
    }

    fn read<'a>(&'a self, name: &'a str, from: Start, limit: usize) -> StoreFuture<'a, Slice> {
        let now = crate::time::now_ms();
        let read = self.with_ring(name, |ring| {
            ring.trim(self.retention, now);
            let head = Position::new(0, ring.last);
            let mut read = Slice {
                epoch: self.epoch,
                entries: Vec::new(),
                head,
                gap: false,
            };
            let after = match from {
                Start::Now => return read,
                Start::Stale => {
                    read.gap = true;
                    return read;
                }
                Start::Cursor(c) if c.epoch != self.epoch || c.position.hi != 0 || c.position.lo > ring.last => {
                    read.gap = true;
                    return read;
                }
                Start::Cursor(c) => c.position.lo,
            };
            // Entries after `after` were dropped: the read starts at the oldest kept.
            read.gap = ring.oldest() > after + 1;
            read.entries = (ring.entries.iter())
                .filter(|(e, _)| e.position.lo > after)
                .take(limit)
                .map(|(e, _)| e.clone())
                .collect();
            read
        });
        Box::pin(std::future::ready(Ok::<_, StoreError>(read)))
    }

    fn watch(&self, name: &str) -> watch::Receiver<u64> {
        self.with_ring(name, |ring| ring.changed.subscribe())
    }
}

/// A shared log is a log (one kept by the application, given to several servers in turn).
impl<L: OccurrenceLog + ?Sized> OccurrenceLog for Arc<L> {
    fn append<'a>(&'a self, name: &'a str, record: Record) -> StoreFuture<'a, Position> {
        (**self).append(name, record)
    }

    fn read<'a>(&'a self, name: &'a str, from: Start, limit: usize) -> StoreFuture<'a, Slice> {
        (**self).read(name, from, limit)
    }

    fn watch(&self, name: &str) -> watch::Receiver<u64> {
        (**self).watch(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(id: &str) -> Record {
        Record::Occurrence(Occurrence {
            event_id: id.into(),
            at_ms: crate::time::now_ms(),
            data: Map::new(),
        })
    }

    fn cursor(log: &MemoryLog, lo: u64) -> Start {
        Start::Cursor(Cursor {
            epoch: log.epoch,
            position: Position::new(0, lo),
        })
    }

    #[tokio::test]
    async fn reads_resume_after_a_position_and_report_the_head() {
        let log = MemoryLog::default();
        let mut watch = log.watch("t");
        let now = log.read("t", Start::Now, 10).await.unwrap();
        assert_eq!(now.head, Position::START);
        assert!(!now.gap && now.entries.is_empty());
        let p1 = log.append("t", occurrence("a")).await.unwrap();
        assert!(watch.has_changed().unwrap());
        watch.mark_unchanged();
        log.append("t", occurrence("b")).await.unwrap();
        let all = log.read("t", cursor(&log, 0), 10).await.unwrap();
        assert_eq!(all.entries.len(), 2);
        assert_eq!(all.head, Position::new(0, 2));
        let rest = log
            .read(
                "t",
                Start::Cursor(Cursor {
                    epoch: log.epoch,
                    position: p1,
                }),
                10,
            )
            .await
            .unwrap();
        assert_eq!(rest.entries.len(), 1);
        assert!(!rest.gap);
        let limited = log.read("t", cursor(&log, 0), 1).await.unwrap();
        assert_eq!(limited.entries.len(), 1);
        // Another type's log is apart.
        assert_eq!(log.read("u", Start::Now, 10).await.unwrap().head, Position::START);
    }

    #[tokio::test]
    async fn foreign_future_and_trimmed_cursors_are_gaps() {
        let log = MemoryLog::new(Retention {
            max_entries: 2,
            max_age: Duration::from_secs(60),
        });
        for id in ["a", "b", "c"] {
            log.append("t", occurrence(id)).await.unwrap();
        }
        let trimmed = log.read("t", cursor(&log, 0), 10).await.unwrap();
        assert!(trimmed.gap);
        assert_eq!(trimmed.entries.len(), 2);
        assert!(!log.read("t", cursor(&log, 1), 10).await.unwrap().gap);
        let foreign = Start::Cursor(Cursor {
            epoch: log.epoch ^ 1,
            position: Position::new(0, 1),
        });
        let read = log.read("t", foreign, 10).await.unwrap();
        assert!(read.gap && read.entries.is_empty());
        assert!(log.read("t", cursor(&log, 99), 10).await.unwrap().gap);
        assert!(log.read("t", Start::Stale, 10).await.unwrap().gap);
    }
}
