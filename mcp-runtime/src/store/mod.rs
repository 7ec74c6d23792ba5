//! The store seams: where the state that several instances of one server must share lives.
//!
//! A single process needs none of this: with no store configured, sessions, stream events,
//! server-to-client requests and tasks live in the process's memory, as they always did. Behind a
//! load balancer that does not pin clients, the legacy era's state must be shared: a session
//! minted on instance A is used on B, a stream resumes on B from an event id, a client's answer to A's
//! `elicitation/create` reaches B, a task created on A is read on B, a list change raised on B
//! reaches a stream held by A. A [`Store`] bundles the seams that make that work:
//!
//! - [`SessionRecords`]: the negotiated part of each legacy session (revision, client info and
//!   capabilities, principal, log level, resource subscriptions), with a sliding idle expiry;
//! - [`EventLog`]: the events of each session's streams, behind event ids and replay
//!   from an event id, bounded per stream, written before they are sent;
//! - [`TaskStore`]: task records (sealed at rest by `SealedTaskStore` when a task key is
//!   configured);
//! - [`TaskQueue`]: the tasks waiting for a worker and the attempt of each that runs, under
//!   leases (not yet read by the runtime: the workers of issue #43 will);
//! - [`Bus`]: messages to every instance: list changes and resource updates, the client's
//!   responses and cancellations that reached an instance which does not hold the waiting
//!   request, session ends and changes, new stream events, task control, mail for the
//!   instance holding its mailbox (and what it made of it);
//! - [`Membership`]: which instances are alive (the tasks of a dead one are failed by recovery);
//! - [`MailboxRecords`]: which instance holds each open mailbox, and for which principal, so
//!   that mail for it reaching any instance is forwarded there (see [`crate::mailbox`]);
//! - [`RateBuckets`]: the rate-limit buckets of the `RateLimit` middleware, so that a client
//!   gets its rate once across every instance, not once per instance.
//!
//! Each seam is an object-safe trait whose methods return boxed futures ([`StoreFuture`]), with an
//! in-memory implementation ([`Store::memory`]): several runtimes of one process can share it
//! (which is how the contract tests and the multi-instance tests run without a network), and a
//! backend such as Redis (the `mcp-store-redis` crate) implements the same traits.
//!
//! The request-state key ring is configuration, not a store: every instance is given the same
//! key (`ServerConfig::request_state_key`, and `request_state_old_keys` during a rotation).

mod buckets;
mod bus;
mod error;
mod events;
mod mailboxes;
mod members;
mod queue;
mod quota;
#[cfg(feature = "shared-store")]
mod sealed;
mod sessions;
mod tasks;

use std::sync::Arc;

pub use buckets::{Admission, MemoryBuckets, RateBuckets};
pub use bus::{Bus, BusEvent, Fanout, MemoryBus};
pub use error::{StoreError, StoreFuture};
pub use events::{EventLog, MemoryEventLog, Replay, StreamKey};
pub use mailboxes::{MailboxRecord, MailboxRecords, MemoryMailboxRecords};
pub use members::{Membership, MemoryMembership};
pub use queue::{Claim, MemoryQueue, QueueDepth, TaskQueue};
pub use quota::{Quota, QuotaError};
#[cfg(feature = "shared-store")]
pub use sealed::{SealedTaskStore, TaskKey, TaskKeyError};
pub use sessions::{MemorySessionRecords, SessionField, SessionRecord, SessionRecords};
pub use tasks::{InMemoryTaskStore, Sealed, TaskCall, TaskOutcome, TaskOwner, TaskRecord, TaskStore, TaskStoreError};

/// The shared state of a server that runs as several instances: one value of each seam.
///
/// Cheap to clone; every instance of one logical server is given a `Store` over the same
/// backend (for example the same Redis).
#[derive(Clone)]
pub struct Store {
    /// Legacy session records.
    pub sessions: Arc<dyn SessionRecords>,
    /// Stream events and replay.
    pub events: Arc<dyn EventLog>,
    /// Task records.
    pub tasks: Arc<dyn TaskStore>,
    /// The tasks waiting for a worker, and the attempt of each that runs.
    pub queue: Arc<dyn TaskQueue>,
    /// Messages to every instance.
    pub bus: Arc<dyn Bus>,
    /// Live instances.
    pub members: Arc<dyn Membership>,
    /// Rate-limit buckets (used by the `RateLimit` middleware a server is built with).
    pub buckets: Arc<dyn RateBuckets>,
    /// The open mailboxes and the instances holding them.
    pub mailboxes: Arc<dyn MailboxRecords>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

impl Store {
    /// Whether the backend can be reached now (one light round trip: Redis answers `PING`):
    /// what a readiness probe asks. Backends answer it through their
    /// [`Membership::check`]; a store in this process's memory is always reachable. Callers
    /// bound it with a timeout of their own and cache the answer briefly.
    pub fn check(&self) -> StoreFuture<'_, ()> {
        self.members.check()
    }

    /// A store in this process's memory. Runtimes given clones of it share it as separate
    /// instances would share a backend (one bus, one set of records).
    pub fn memory() -> Store {
        let events = Arc::new(MemoryEventLog::new());
        Store {
            sessions: Arc::new(MemorySessionRecords::with_events(events.clone())),
            events,
            tasks: Arc::new(InMemoryTaskStore::new()),
            queue: Arc::new(MemoryQueue::new()),
            bus: Arc::new(MemoryBus::new()),
            members: Arc::new(MemoryMembership::new()),
            buckets: Arc::new(MemoryBuckets::new()),
            mailboxes: Arc::new(MemoryMailboxRecords::new()),
        }
    }
}
