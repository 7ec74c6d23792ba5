//! The [`SessionRecords`] seam: the negotiated part of each legacy session, shared by every
//! instance, and the in-memory default.
//!
//! A record is what `initialize` negotiated plus what later requests changed (log level,
//! `notifications/initialized`, resource subscriptions). What only one process can hold (pending
//! server-to-client requests, requests in flight, open streams) is not in it: each instance keeps
//! a local [`Session`](crate::Session) built from the record, and the [`Bus`](super::Bus) carries
//! the rest.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use mcp_protocol::model::LoggingLevel;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::StoreFuture;
use super::events::MemoryEventLog;

/// One legacy session as stored: plain, serializable data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionRecord {
    /// The session id (`Mcp-Session-Id`).
    pub id: String,
    /// The principal that created it; another principal's lookup answers like an unknown id.
    pub principal: String,
    /// The negotiated revision, as spelled on the wire.
    pub revision: String,
    /// The capabilities the client declared.
    pub client_capabilities: Map<String, Value>,
    /// The client's `clientInfo`.
    pub client_info: Value,
    /// The minimum level of `notifications/message`.
    pub log_level: LoggingLevel,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The URIs subscribed to with `resources/subscribe`.
    pub subscriptions: BTreeSet<String>,
    /// The instances that hold a replica of the session (a DELETE waits until each live one
    /// has ended its replica).
    #[serde(default)]
    pub holders: BTreeSet<String>,
    /// Whether a 2025-11-25 task was created in the session (its end then deletes the
    /// session's tasks; a session without any is ended without asking the task store).
    #[serde(default)]
    pub tasks: bool,
}

impl SessionRecord {
    /// A fresh record, as `initialize` leaves it.
    pub fn new(
        id: impl Into<String>,
        principal: impl Into<String>,
        revision: impl Into<String>,
        client_capabilities: Map<String, Value>,
        client_info: Value,
    ) -> Self {
        SessionRecord {
            id: id.into(),
            principal: principal.into(),
            revision: revision.into(),
            client_capabilities,
            client_info,
            log_level: LoggingLevel::Info,
            initialized: false,
            subscriptions: BTreeSet::new(),
            holders: BTreeSet::new(),
            tasks: false,
        }
    }

    /// Applies one change.
    pub fn apply(&mut self, field: &SessionField) {
        match field {
            SessionField::LogLevel(l) => self.log_level = *l,
            SessionField::Initialized => self.initialized = true,
            SessionField::Subscribe(uri) => {
                self.subscriptions.insert(uri.clone());
            }
            SessionField::Unsubscribe(uri) => {
                self.subscriptions.remove(uri);
            }
            SessionField::Holder(instance) => {
                self.holders.insert(instance.clone());
            }
            SessionField::Tasks => self.tasks = true,
        }
    }
}

/// One change to a stored session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionField {
    /// `logging/setLevel`.
    LogLevel(LoggingLevel),
    /// `notifications/initialized`.
    Initialized,
    /// `resources/subscribe`.
    Subscribe(String),
    /// `resources/unsubscribe`.
    Unsubscribe(String),
    /// An instance holds a replica of the session.
    Holder(String),
    /// A 2025-11-25 task was created in the session.
    Tasks,
}

/// Where legacy session records live.
///
/// # Contract
///
/// - **Strong consistency.** Once `create` returns `Ok`, a `load` of that id from any instance
///   sharing the store returns the record: the runtime creates the record before answering the
///   `initialize` that minted it, and the client's next request may reach another instance.
/// - **Sliding expiry.** A record expires `ttl` after its last `create`, `load` or `touch`;
///   an expired record loads as `None`.
/// - **Changes.** `update` applies one [`SessionField`] to a live record (nothing happens when
///   it is absent).
/// - **Holders.** `hold` is `load` plus the `update`s naming an instance among the holders and
///   applying the changes the loading request makes, in one step where the backend can (the
///   default runs them one after the other).
/// - **Deletion.** `delete` removes the record and the session's stream events (those of the
///   [`EventLog`](super::EventLog) bundled with it in the [`Store`](super::Store)), and answers
///   the record as it was (`None` when it was absent: the events go either way).
pub trait SessionRecords: Send + Sync + 'static {
    /// Stores a new record.
    fn create<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()>;

    /// The record of a live session (its expiry is pushed back by `ttl`).
    fn load<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Pushes a live session's expiry back by `ttl`; `false` when there is no such record (it
    /// expired, was deleted, or the store lost it).
    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Applies one change to a live record.
    fn update<'a>(&'a self, id: &'a str, field: &'a SessionField) -> StoreFuture<'a, ()>;

    /// The record of a live session, with `instance` named among its holders and `changes`
    /// applied (its expiry pushed back by `ttl`): what an instance loads before it serves a
    /// replica. `changes` are those the request that made it load will make (its
    /// `notifications/initialized`), stored with the load rather than in a trip of their own.
    fn hold<'a>(
        &'a self,
        id: &'a str,
        instance: &'a str,
        ttl: Duration,
        changes: &'a [SessionField],
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let Some(mut record) = self.load(id, ttl).await? else {
                return Ok(None);
            };
            let holder = SessionField::Holder(instance.to_owned());
            let new_holder = (!record.holders.contains(instance)).then_some(&holder);
            for change in new_holder.into_iter().chain(changes) {
                self.update(id, change).await?;
                record.apply(change);
            }
            Ok(Some(record))
        })
    }

    /// Removes a record and the session's stream events; the record as it was, if it existed.
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>>;
}

/// The default: records in this process's memory, expiring on the Tokio clock.
#[derive(Debug, Default)]
pub struct MemorySessionRecords {
    records: DashMap<String, Entry>,
    sweep: Mutex<Option<Instant>>,
    /// The log whose streams a deleted session's go from ([`MemorySessionRecords::with_events`]).
    events: Option<Arc<MemoryEventLog>>,
}

#[derive(Debug, Clone)]
struct Entry {
    record: SessionRecord,
    expires: Instant,
}

impl MemorySessionRecords {
    /// An empty store (deleting a record touches no event log).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose deleted sessions' streams go from `events` too.
    pub fn with_events(events: Arc<MemoryEventLog>) -> Self {
        MemorySessionRecords {
            events: Some(events),
            ..Self::default()
        }
    }

    /// Drops expired records, at most once a second.
    fn sweep(&self, now: Instant) {
        let mut last = self.sweep.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            return;
        }
        *last = Some(now);
        drop(last);
        self.records.retain(|_, e| e.expires > now);
    }

    fn live(&self, id: &str, ttl: Option<Duration>) -> Option<SessionRecord> {
        let now = Instant::now();
        self.sweep(now);
        let mut e = self.records.get_mut(id)?;
        if e.expires <= now {
            drop(e);
            self.records.remove(id);
            return None;
        }
        if let Some(ttl) = ttl {
            e.expires = now + ttl;
        }
        Some(e.record.clone())
    }
}

impl SessionRecords for MemorySessionRecords {
    fn create<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        let now = Instant::now();
        self.sweep(now);
        self.records.insert(
            record.id.clone(),
            Entry {
                record: record.clone(),
                expires: now + ttl,
            },
        );
        Box::pin(async { Ok(()) })
    }

    fn load<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        let r = self.live(id, Some(ttl));
        Box::pin(async move { Ok(r) })
    }

    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        let live = self.live(id, Some(ttl)).is_some();
        Box::pin(async move { Ok(live) })
    }

    fn update<'a>(&'a self, id: &'a str, field: &'a SessionField) -> StoreFuture<'a, ()> {
        if self.live(id, None).is_some()
            && let Some(mut e) = self.records.get_mut(id)
        {
            e.record.apply(field);
        }
        Box::pin(async { Ok(()) })
    }

    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        let record = self
            .live(id, None)
            .and_then(|_| self.records.remove(id))
            .map(|(_, e)| e.record);
        if let Some(events) = &self.events {
            events.drop_session(id);
        }
        Box::pin(async move { Ok(record) })
    }
}
