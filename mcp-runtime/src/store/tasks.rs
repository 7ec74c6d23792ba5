//! The [`TaskStore`]: where task records live, and the in-memory default.
//!
//! The runtime keeps two things per task: the **record** (status, times,
//! outcome, outstanding input requests: plain data, in the store) and the
//! **live part** (the worker's cancellation token, waiters, gathered input:
//! in the process that runs the worker). A store only ever sees records, so
//! a durable or shared store (a database, a key-value service) can be
//! plugged in with [`Storage::Tasks`](crate::Storage::Tasks).

use std::borrow::Cow;

use dashmap::DashMap;
use mcp_protocol::model::{Task, TaskStatus};
use mcp_protocol::{Era, RpcError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::quota::ClientKey;
use crate::store::error::{StoreError, StoreFuture};

/// Why a task store operation failed (the store seams' error). The caller gets a generic
/// -32603; the detail goes to the log.
pub type TaskStoreError = StoreError;

/// Who owns a task. Another owner's task reads as not found.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskOwner {
    /// A 2025-11-25 task: the legacy session that created it (and the
    /// session's principal, for the per-principal bound).
    Session {
        /// The session's principal.
        principal: String,
        /// The session id.
        session: String,
    },
    /// An extension task: the principal that created it.
    Principal(String),
}

impl TaskOwner {
    /// The principal the task counts against.
    pub fn principal(&self) -> &str {
        match self {
            TaskOwner::Session { principal, .. } | TaskOwner::Principal(principal) => principal,
        }
    }

    /// The era whose wire shapes the task uses.
    pub fn era(&self) -> Era {
        match self {
            TaskOwner::Session { .. } => Era::Legacy,
            TaskOwner::Principal(_) => Era::Modern,
        }
    }
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskOutcome {
    /// What the call returned, rendered for the client's revision.
    Result(Value),
    /// The protocol error the call ended with.
    Error(RpcError),
}

/// The sealed part of a task record (`SealedTaskStore`, feature `shared-store`): its outcome,
/// status message and input requests, encrypted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Sealed {
    /// The id of the key that sealed it.
    pub key: String,
    /// The nonce (base64).
    pub nonce: String,
    /// The ciphertext and its tag (base64).
    pub data: String,
}

/// What a worker needs to run a task's call again, on any instance: kept with a task that may
/// be run by another instance than the one that accepted it (a resumable tool's task, or any
/// task accepted by a front that runs none). Sealed at rest with the rest of the task's data.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "shared-store", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "shared-store", serde(rename_all = "camelCase"))]
#[non_exhaustive]
pub struct TaskCall {
    /// The `tools/call` params as received (`name`, `arguments`, `_meta`), without `task`.
    pub params: Value,
    /// The caller's principal.
    pub principal: String,
    /// The caller's granted scopes.
    #[cfg_attr(feature = "shared-store", serde(default))]
    pub scopes: Vec<String>,
    /// The caller's claims.
    #[cfg_attr(feature = "shared-store", serde(default))]
    pub claims: Map<String, Value>,
    /// A 2025-11-25 task's negotiated revision (a modern call names its own in `_meta`).
    #[cfg_attr(feature = "shared-store", serde(default))]
    pub revision: Option<String>,
    /// A 2025-11-25 task's client capabilities, as its session declared them.
    #[cfg_attr(feature = "shared-store", serde(default))]
    pub client_capabilities: Option<Map<String, Value>>,
    /// A 2025-11-25 task's client implementation.
    #[cfg_attr(feature = "shared-store", serde(default))]
    pub client_info: Option<Value>,
    /// Whether an attempt whose worker stopped runs again, from the last checkpoint (the tool
    /// is resumable); otherwise the task fails with [`INSTANCE_STOPPED`](crate::tasks::INSTANCE_STOPPED).
    #[cfg_attr(feature = "shared-store", serde(default))]
    pub resumable: bool,
}

/// A task as stored: plain, serializable data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task id.
    pub task_id: String,
    /// Who may see it.
    pub owner: TaskOwner,
    /// The current status.
    pub status: TaskStatus,
    /// A note on the status.
    #[serde(default)]
    pub status_message: Option<String>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Last update, milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// Lifetime from creation (`None`: unlimited).
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    #[serde(default)]
    pub poll_interval_ms: Option<u64>,
    /// How it ended (terminal statuses but `cancelled`).
    #[serde(default)]
    pub outcome: Option<TaskOutcome>,
    /// The input requests still waiting for an answer (`input_required`).
    #[serde(default)]
    pub input_requests: Map<String, Value>,
    /// The instance running the task's worker, when the store is shared by several instances
    /// (recovery fails the unfinished tasks of instances that are gone).
    #[serde(default)]
    pub instance: Option<String>,
    /// The client the stored-task bound counts the record against: the creating caller's
    /// principal, or an anonymous caller's address (as [`counted_as`](Self::counted_as) spells
    /// it). `None` in a record written before it was kept: it counts against its owner's
    /// principal.
    #[serde(default)]
    pub client: Option<String>,
    /// The outcome, status message and input requests sealed at rest, when a task key is
    /// configured (`SealedTaskStore`, feature `shared-store`): those fields are then empty in
    /// what the store holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<Sealed>,
    /// How to run the call again, for a task any worker may run (see [`TaskCall`]; feature
    /// `shared-store`).
    #[cfg(feature = "shared-store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<TaskCall>,
    /// The attempt that runs (or last ran) the task, from the queue's claims: 0 for a task
    /// that never went through the queue.
    #[serde(default)]
    pub attempt: u32,
    /// The last checkpoint a resumable run saved (`Ctx::checkpoint`), which the next attempt
    /// starts from (feature `shared-store`).
    #[cfg(feature = "shared-store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Value>,
}

impl TaskRecord {
    /// A working task created at `now_ms`.
    pub fn new(
        task_id: impl Into<String>,
        owner: TaskOwner,
        now_ms: u64,
        ttl_ms: Option<u64>,
        poll_interval_ms: Option<u64>,
    ) -> Self {
        TaskRecord {
            task_id: task_id.into(),
            owner,
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            ttl_ms,
            poll_interval_ms,
            outcome: None,
            input_requests: Map::new(),
            instance: None,
            client: None,
            sealed: None,
            #[cfg(feature = "shared-store")]
            call: None,
            attempt: 0,
            #[cfg(feature = "shared-store")]
            checkpoint: None,
        }
    }

    /// The key of the client the record counts against (`TaskStore::count_for_client`):
    /// `p<len>:<principal>` for a principal, `a:<address>` for an anonymous caller (an IPv6
    /// one as its `/64`).
    pub fn counted_as(&self) -> Cow<'_, str> {
        match &self.client {
            Some(client) => Cow::Borrowed(client),
            None => Cow::Owned(ClientKey::Principal(self.owner.principal().into()).to_string()),
        }
    }

    /// Whether the task is one of the queue's (it keeps its call): run again, or failed, by the
    /// worker that claims it, never by recovery.
    pub(crate) fn queued(&self) -> bool {
        #[cfg(feature = "shared-store")]
        return self.call.is_some();
        #[cfg(not(feature = "shared-store"))]
        false
    }

    /// When the task expires, if it does.
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms.map(|t| self.created_at_ms.saturating_add(t))
    }

    /// The wire task.
    pub fn task(&self) -> Task {
        let mut t = Task::new(
            self.task_id.clone(),
            self.created_at_ms,
            self.ttl_ms,
            self.poll_interval_ms,
        );
        t.status = self.status;
        t.status_message = self.status_message.clone();
        t.last_updated_at_ms = self.updated_at_ms;
        t
    }

    /// The key tasks are listed (and paginated) by: creation time, then id.
    pub(crate) fn list_key(&self) -> String {
        format!("{:020}/{}", self.created_at_ms, self.task_id)
    }
}

/// Where task records live.
///
/// # Contract
///
/// - **Strong consistency.** Once `put` returns `Ok`, a `get` for that id,
///   from any instance sharing the store, returns the record. The runtime
///   writes a task before the `CreateTaskResult` naming it, so a client's
///   immediate `tasks/get` must resolve.
/// - **Whole-record writes.** `put` inserts or replaces the whole record.
///   Transitions are read-modify-write under a per-task lock held by the
///   process that runs the task, so a store needs no transactions for tasks
///   of one instance.
/// - **Owners and clients.** `list` returns the records of exactly one owner;
///   `count_for_client` and `list_for_client` count and return the records
///   counted against one client ([`TaskRecord::counted_as`]: a principal,
///   whatever sessions its records belong to, or an anonymous caller's
///   address), for the per-client bound on stored records.
/// - **Expiry.** `expired` returns the ids whose `expires_at_ms` is at or
///   before `now_ms`; the runtime cancels their workers and `delete`s them.
/// - **Restarts and dead instances.** `recover` returns the records left in `working` or
///   `input_required` (their workers may be gone). The runtime calls it once before the first
///   task operation and, with a shared store, on every sweep; it fails the records whose
///   worker is gone ("Task interrupted by a restart"): every one a store of one process
///   returns, and for a shared store those whose `instance` is neither this one nor a live one
///   (the record's `instance` names the instance running the worker). The in-memory store
///   returns its unfinished records; a fresh one has none.
///
/// Errors are answered with a generic -32603 and logged.
pub trait TaskStore: Send + Sync + 'static {
    /// The record of a task, if stored.
    fn get<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Inserts or replaces a record.
    fn put(&self, record: TaskRecord) -> StoreFuture<'_, ()>;

    /// Removes a record (nothing happens when it is absent).
    fn delete<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()>;

    /// The records of one owner, in any order.
    fn list<'a>(&'a self, owner: &'a TaskOwner) -> StoreFuture<'a, Vec<TaskRecord>>;

    /// How many records the store holds.
    fn count(&self) -> StoreFuture<'_, usize>;

    /// How many records count against `client` ([`TaskRecord::counted_as`]).
    fn count_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, usize>;

    /// The records that count against `client`, in any order (the runtime drops the oldest
    /// finished one to make room for a new task of that client).
    fn list_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, Vec<TaskRecord>>;

    /// The ids of the records expired at `now_ms`.
    fn expired(&self, now_ms: u64) -> StoreFuture<'_, Vec<String>>;

    /// The unfinished records whose worker may be gone (see the trait docs).
    fn recover(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// The default store: a concurrent map in this process's memory. Tasks do
/// not survive a restart and are not shared between instances.
#[derive(Debug, Default)]
pub struct InMemoryTaskStore {
    records: DashMap<String, TaskRecord>,
}

impl InMemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TaskStore for InMemoryTaskStore {
    fn get<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let r = self.records.get(task_id).map(|r| r.clone());
        Box::pin(async move { Ok(r) })
    }

    fn put(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        self.records.insert(record.task_id.clone(), record);
        Box::pin(async { Ok(()) })
    }

    fn delete<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        self.records.remove(task_id);
        Box::pin(async { Ok(()) })
    }

    fn list<'a>(&'a self, owner: &'a TaskOwner) -> StoreFuture<'a, Vec<TaskRecord>> {
        let v = self
            .records
            .iter()
            .filter(|r| r.owner == *owner)
            .map(|r| r.clone())
            .collect();
        Box::pin(async move { Ok(v) })
    }

    fn count(&self) -> StoreFuture<'_, usize> {
        let n = self.records.len();
        Box::pin(async move { Ok(n) })
    }

    fn count_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, usize> {
        let n = self.records.iter().filter(|r| r.counted_as() == client).count();
        Box::pin(async move { Ok(n) })
    }

    fn list_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, Vec<TaskRecord>> {
        let v = self
            .records
            .iter()
            .filter(|r| r.counted_as() == client)
            .map(|r| r.clone())
            .collect();
        Box::pin(async move { Ok(v) })
    }

    fn recover(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        let v = self
            .records
            .iter()
            .filter(|r| !r.status.is_terminal())
            .map(|r| r.clone())
            .collect();
        Box::pin(async move { Ok(v) })
    }

    fn expired(&self, now_ms: u64) -> StoreFuture<'_, Vec<String>> {
        let v = self
            .records
            .iter()
            .filter(|r| r.expires_at_ms().is_some_and(|e| e <= now_ms))
            .map(|r| r.key().clone())
            .collect();
        Box::pin(async move { Ok(v) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, owner: TaskOwner, at: u64, ttl: Option<u64>) -> TaskRecord {
        TaskRecord::new(id, owner, at, ttl, None)
    }

    #[tokio::test]
    async fn in_memory_store() {
        let s = InMemoryTaskStore::new();
        let alice = TaskOwner::Principal("alice".into());
        let alice_session = TaskOwner::Session {
            principal: "alice".into(),
            session: "s1".into(),
        };
        s.put(rec("a", alice.clone(), 10, Some(100))).await.unwrap();
        s.put(rec("b", alice_session.clone(), 20, None)).await.unwrap();
        s.put(rec("c", TaskOwner::Principal("bob".into()), 30, Some(5)))
            .await
            .unwrap();
        assert_eq!(s.get("a").await.unwrap().unwrap().owner, alice);
        assert!(s.get("zz").await.unwrap().is_none());
        assert_eq!(s.list(&alice).await.unwrap().len(), 1);
        assert_eq!(s.list(&alice_session).await.unwrap()[0].task_id, "b");
        assert_eq!(s.count().await.unwrap(), 3);
        assert_eq!(
            s.count_for_client("p5:alice").await.unwrap(),
            2,
            "both of alice's owners"
        );
        let mut anonymous = rec("d", TaskOwner::Principal("anonymous".into()), 40, None);
        anonymous.client = Some("a:127.0.0.2".into());
        s.put(anonymous).await.unwrap();
        assert_eq!(s.count_for_client("a:127.0.0.2").await.unwrap(), 1);
        assert_eq!(
            s.count_for_client("p9:anonymous").await.unwrap(),
            0,
            "counted by its address"
        );
        assert_eq!(s.list_for_client("a:127.0.0.2").await.unwrap()[0].task_id, "d");
        s.delete("d").await.unwrap();
        assert_eq!(s.expired(35).await.unwrap(), vec!["c".to_owned()]);
        assert_eq!(s.expired(200).await.unwrap().len(), 2);
        s.delete("c").await.unwrap();
        assert_eq!(s.count().await.unwrap(), 2);
        assert_eq!(s.recover().await.unwrap().len(), 2, "the unfinished ones");
    }

    #[test]
    fn records_serialize_for_durable_stores() {
        let mut r = rec("a", TaskOwner::Principal("p".into()), 1, Some(2));
        r.status = TaskStatus::Failed;
        r.outcome = Some(TaskOutcome::Error(RpcError::internal()));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["status"], "failed");
        let back: TaskRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        assert_eq!(r.task().status, TaskStatus::Failed);
        assert_eq!(r.owner.era(), Era::Modern);
    }
}
