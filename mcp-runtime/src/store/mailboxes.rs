//! The [`MailboxRecords`] seam: which instance holds each open mailbox (see
//! [`crate::mailbox`]), and for whom, and the in-memory default.
//!
//! A mailbox lives on the instance whose transport opened it; the messages sent to it may reach
//! any instance. The instance a message reaches reads the mailbox's record to answer an unknown
//! mailbox and another principal's alike, and to know where to forward the message (over the
//! [`Bus`](super::Bus)). The holder writes the record before its transport names the mailbox to
//! the client, refreshes it while it holds the mailbox, and deletes it when the mailbox closes;
//! a record whose holder died expires with its ttl.

use std::time::Duration;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::StoreFuture;

/// One open mailbox as stored: plain, serializable data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MailboxRecord {
    /// The mailbox's id (the transport's name for it, which its client uses).
    pub id: String,
    /// The principal that opened it; another principal's lookup answers like an unknown id.
    pub principal: String,
    /// The instance holding it.
    pub holder: String,
}

impl MailboxRecord {
    /// The record of a mailbox `holder` opened for `principal`.
    pub fn new(id: impl Into<String>, principal: impl Into<String>, holder: impl Into<String>) -> Self {
        MailboxRecord {
            id: id.into(),
            principal: principal.into(),
            holder: holder.into(),
        }
    }
}

/// Where the records of open mailboxes live.
///
/// # Contract
///
/// - **Strong consistency.** Once `open` returns `Ok`, a `load` of that id from any instance
///   sharing the store returns the record: the holder writes it before its transport names the
///   mailbox to the client, whose first message may reach another instance.
/// - **Expiry.** A record expires `ttl` after its last `open` or `refresh` (`load` does not
///   extend it: only the holder keeps its mailboxes alive); an expired record loads as `None`.
/// - **Deletion.** `close` removes the record (nothing happens when it is absent).
pub trait MailboxRecords: Send + Sync + 'static {
    /// Stores the record of a mailbox being opened, for `ttl`.
    fn open<'a>(&'a self, record: &'a MailboxRecord, ttl: Duration) -> StoreFuture<'a, ()>;

    /// The record of an open mailbox.
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<MailboxRecord>>;

    /// Pushes a mailbox's expiry back to `ttl` from now; `false` when there is no such record (it
    /// expired, was closed, or the store lost it).
    fn refresh<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Removes a mailbox's record (it closed).
    fn close<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
}

/// The default: mailbox records in this process's memory, expiring on the Tokio clock.
#[derive(Debug, Default)]
pub struct MemoryMailboxRecords {
    records: DashMap<String, (MailboxRecord, Instant)>,
}

impl MemoryMailboxRecords {
    /// No mailbox yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops expired records (on every `open`: the map holds only what lives, plus what
    /// expired since the last mailbox opened).
    fn sweep(&self, now: Instant) {
        self.records.retain(|_, (_, until)| *until > now);
    }
}

impl MailboxRecords for MemoryMailboxRecords {
    fn open<'a>(&'a self, record: &'a MailboxRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        let now = Instant::now();
        self.sweep(now);
        self.records.insert(record.id.clone(), (record.clone(), now + ttl));
        Box::pin(async { Ok(()) })
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<MailboxRecord>> {
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
        let store = MemoryMailboxRecords::new();
        let record = MailboxRecord::new("m1", "alice", "i1");
        store.open(&record, Duration::from_secs(10)).await.unwrap();
        assert_eq!(store.load("m1").await.unwrap(), Some(record.clone()));
        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(store.refresh("m1", Duration::from_secs(10)).await.unwrap());
        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(store.load("m1").await.unwrap().is_some(), "refreshed at 8 s");
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(store.load("m1").await.unwrap(), None, "expired");
        assert!(!store.refresh("m1", Duration::from_secs(10)).await.unwrap());
        assert_eq!(store.load("m2").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_closed_record_is_gone() {
        let store = MemoryMailboxRecords::new();
        store
            .open(&MailboxRecord::new("m1", "alice", "i1"), Duration::from_secs(10))
            .await
            .unwrap();
        store.close("m1").await.unwrap();
        assert_eq!(store.load("m1").await.unwrap(), None);
        store.close("m1").await.unwrap();
    }
}
