//! The [`PairRecords`] seam: which instance holds each open 2024-11-05 HTTP+SSE pair (the
//! stream of the pair), and for whom, and the in-memory default.
//!
//! A pair's stream lives on the instance that answered its GET; its POSTs may reach any
//! instance. The instance a POST reaches reads the pair's record to answer an unknown pair and
//! another principal's alike (`404`), and to know where to forward the message (over the
//! [`Bus`](super::Bus)). The holder writes the record before the stream names its message path,
//! refreshes it while the stream is open, and deletes it when the stream ends; a record whose
//! holder died expires with its ttl.

use std::time::Duration;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::StoreFuture;

/// One open pair as stored: plain, serializable data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PairRecord {
    /// The pair's id (the `sessionId` of its message path).
    pub id: String,
    /// The principal that opened it; another principal's lookup answers like an unknown id.
    pub principal: String,
    /// The instance holding its stream.
    pub holder: String,
}

impl PairRecord {
    /// The record of a pair `holder` opened for `principal`.
    pub fn new(id: impl Into<String>, principal: impl Into<String>, holder: impl Into<String>) -> Self {
        PairRecord {
            id: id.into(),
            principal: principal.into(),
            holder: holder.into(),
        }
    }
}

/// Where the records of open HTTP+SSE pairs live.
///
/// # Contract
///
/// - **Strong consistency.** Once `open` returns `Ok`, a `load` of that id from any instance
///   sharing the store returns the record: the holder writes it before the stream names the
///   message path, and the client's first POST may reach another instance.
/// - **Expiry.** A record expires `ttl` after its last `open` or `refresh` (`load` does not
///   extend it: only the holder keeps its pairs alive); an expired record loads as `None`.
/// - **Deletion.** `close` removes the record (nothing happens when it is absent).
pub trait PairRecords: Send + Sync + 'static {
    /// Stores the record of a pair whose stream is opening, for `ttl`.
    fn open<'a>(&'a self, record: &'a PairRecord, ttl: Duration) -> StoreFuture<'a, ()>;

    /// The record of an open pair.
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<PairRecord>>;

    /// Pushes a pair's expiry back to `ttl` from now; `false` when there is no such record (it
    /// expired, was closed, or the store lost it).
    fn refresh<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Removes a pair's record (its stream ended).
    fn close<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
}

/// The default: pair records in this process's memory, expiring on the Tokio clock.
#[derive(Debug, Default)]
pub struct MemoryPairRecords {
    records: DashMap<String, (PairRecord, Instant)>,
}

impl MemoryPairRecords {
    /// No pair yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops expired records (on every `open`: the map holds only what lives, plus what
    /// expired since the last pair opened).
    fn sweep(&self, now: Instant) {
        self.records.retain(|_, (_, until)| *until > now);
    }
}

impl PairRecords for MemoryPairRecords {
    fn open<'a>(&'a self, record: &'a PairRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        let now = Instant::now();
        self.sweep(now);
        self.records.insert(record.id.clone(), (record.clone(), now + ttl));
        Box::pin(async { Ok(()) })
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<PairRecord>> {
        let now = Instant::now();
        let r = self.records.get(id).filter(|e| e.1 > now).map(|e| e.0.clone());
        Box::pin(async move { Ok(r) })
    }

    fn refresh<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        let now = Instant::now();
        let live = match self.records.get_mut(id) {
            Some(mut e) if e.1 > now => {
                e.1 = now + ttl;
                true
            }
            _ => false,
        };
        Box::pin(async move { Ok(live) })
    }

    fn close<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.records.remove(id);
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_record_lives_until_its_ttl_unless_refreshed() {
        let store = MemoryPairRecords::new();
        let record = PairRecord::new("p1", "alice", "i1");
        store.open(&record, Duration::from_secs(10)).await.unwrap();
        assert_eq!(store.load("p1").await.unwrap(), Some(record.clone()));
        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(store.refresh("p1", Duration::from_secs(10)).await.unwrap());
        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(store.load("p1").await.unwrap().is_some(), "refreshed at 8 s");
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(store.load("p1").await.unwrap(), None, "expired");
        assert!(!store.refresh("p1", Duration::from_secs(10)).await.unwrap());
        assert_eq!(store.load("p2").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_closed_record_is_gone() {
        let store = MemoryPairRecords::new();
        store
            .open(&PairRecord::new("p1", "alice", "i1"), Duration::from_secs(10))
            .await
            .unwrap();
        store.close("p1").await.unwrap();
        assert_eq!(store.load("p1").await.unwrap(), None);
        store.close("p1").await.unwrap();
    }
}
