//! Tasks: long-running tool calls, for both eras.
//!
//! - **2025-11-25 core tasks** (legacy): a `tools/call` with `params.task`
//!   on a tool whose `task_support` allows it creates the task at once
//!   ([`TaskMode::TaskFirst`](mcp_protocol::task_mode::TaskMode)) and answers
//!   the nested `CreateTaskResult`; `tasks/get`, `tasks/result` (blocks until
//!   the task ends), `tasks/list` and `tasks/cancel` serve it. The owner is
//!   the session.
//! - **The `io.modelcontextprotocol/tasks` extension** (modern): a call from
//!   a client that declared the extension runs inline for `task_inline_ms`,
//!   then is handed to a task and answered with the flat `CreateTaskResult`
//!   ([`TaskMode::Escalate`](mcp_protocol::task_mode::TaskMode)); `tasks/get`
//!   inlines the result, the error or the outstanding input requests;
//!   `tasks/update` brings input responses; `tasks/cancel` acknowledges. The
//!   owner is the principal.
//!
//! The rules of the hand-off (`handoff`): the task is stored before the
//! `CreateTaskResult` naming it is returned; an outcome that arrives while
//! escalating is answered in place (no task); the first terminal outcome
//! wins and later ones are no-ops (`lifecycle`); a worker that ends without
//! an outcome fails its task; cancellation reaches the handler's
//! `CancellationToken`; over `max_tasks_total` running tasks, or
//! `max_tasks_per_principal` running tasks of one client (a principal, or an
//! anonymous caller's address), the call is refused with -32603 naming the
//! bound and its work is stopped; the stored records of one client (again a
//! principal, or an anonymous caller's address) are bounded by
//! `max_stored_tasks_per_principal`, that client's oldest finished task making room.
//! Records live in a [`TaskStore`] (`store`); expired ones are swept every
//! `task_sweep_interval`.

#[cfg(feature = "shared-store")]
pub(crate) mod durable;
mod handoff;
mod lifecycle;
mod methods;
mod runs;
mod sharing;

use std::sync::{Arc, OnceLock, Weak};

use dashmap::DashMap;
use mcp_protocol::RpcError;
use mcp_protocol::model::TaskStatus;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::exec::RoundLimits;
use crate::listen::Subscriptions;
use crate::quota::ClientKey;
use crate::sink::Relay;

pub use crate::store::{
    InMemoryTaskStore, StoreFuture, TaskCall, TaskOutcome, TaskOwner, TaskRecord, TaskStore, TaskStoreError,
};
pub use crate::task_runs::{GAVE_UP, HANDED_BACK, QUEUED, Role, TaskRuns};
pub(crate) use lifecycle::{LegacyTaskLink, Live};
#[cfg(feature = "shared-store")]
pub(crate) use sharing::Following;
pub(crate) use sharing::Sharing;

/// The status message (and error message) of a task interrupted by a restart.
pub const INTERRUPTED: &str = "Task interrupted by a restart";
/// The status message (and error message) of a task whose instance stopped (its heartbeat
/// lapsed) while running it, with a shared store.
pub const INSTANCE_STOPPED: &str = "Task interrupted: the server instance running it stopped";

/// The task settings taken from the configuration.
#[derive(Debug, Clone)]
struct Limits {
    /// How long a modern call that may become a task runs inline first.
    inline_window: std::time::Duration,
    /// The limits of a task's handler runs (its deadline is the task's lifetime).
    run: RoundLimits,
    /// How long a 2025-11-25 `tasks/result` waits.
    result_timeout: std::time::Duration,
    /// Page size of `tasks/list`.
    page_size: usize,
    poll_interval_ms: u64,
    ttl_ms: u64,
    sweep_interval: std::time::Duration,
    max_total: usize,
    max_per_principal: usize,
    max_stored_per_principal: usize,
    /// How tasks of the queue run.
    #[cfg(feature = "shared-store")]
    runs: TaskRuns,
}

/// The clock of tasks: wall-clock milliseconds, advanced by the runtime's
/// monotonic clock (so that a paused test clock drives expiry too).
#[derive(Debug)]
struct Clock {
    wall_ms: u64,
    start: tokio::time::Instant,
}

impl Clock {
    fn new() -> Self {
        Clock {
            wall_ms: crate::exec::rounds::now_ms(),
            start: tokio::time::Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.wall_ms.saturating_add(self.start.elapsed().as_millis() as u64)
    }
}

/// The tasks of one runtime: the store, the live parts of the tasks this
/// process runs, and the bounds.
pub(crate) struct Tasks {
    store: Arc<dyn TaskStore>,
    /// Where resumable tasks are leased to the worker running them.
    queue: Arc<dyn crate::store::TaskQueue>,
    /// Cancelled when this instance stops claiming tasks (a drain).
    #[cfg(feature = "shared-store")]
    stopping: CancellationToken,
    #[cfg(feature = "shared-store")]
    workers: OnceLock<()>,
    live: DashMap<String, Arc<Live>>,
    subscriptions: Arc<Subscriptions>,
    clock: Clock,
    limits: Limits,
    admission: tokio::sync::Mutex<()>,
    recovered: tokio::sync::OnceCell<()>,
    sweeper: OnceLock<()>,
    me: Weak<Tasks>,
    /// The other instances, when tasks are shared by several (the cluster, through its
    /// [`Sharing`] port).
    sharing: OnceLock<Arc<dyn Sharing>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("live", &self.live.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Why a task could not be created.
#[derive(Debug, thiserror::Error)]
enum CreateError {
    /// Over `max_tasks_total`.
    #[error("too many running tasks")]
    TooManyRunning,
    /// Over `max_tasks_per_principal`.
    #[error("too many running tasks for one client")]
    TooManyRunningForClient,
    /// At `max_stored_tasks_per_principal`, none of them finished.
    #[error("too many stored tasks for one principal, none finished")]
    TooManyStored,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] TaskStoreError),
    /// The random number generator failed.
    #[error("the operating system's random number generator failed")]
    Random,
}

impl Tasks {
    pub(crate) fn new(
        config: &ServerConfig,
        store: Arc<dyn TaskStore>,
        queue: Arc<dyn crate::store::TaskQueue>,
        subscriptions: Arc<Subscriptions>,
    ) -> Arc<Self> {
        // With a task key, records are sealed before they reach the store.
        #[cfg(feature = "shared-store")]
        let store: Arc<dyn TaskStore> = match &config.task_encryption_key {
            Some(key) => Arc::new(crate::store::SealedTaskStore::new(
                store,
                key.clone(),
                config.task_encryption_old_keys.clone(),
            )),
            None => store,
        };
        Arc::new_cyclic(|me| Tasks {
            store,
            queue,
            #[cfg(feature = "shared-store")]
            stopping: CancellationToken::new(),
            #[cfg(feature = "shared-store")]
            workers: OnceLock::new(),
            live: DashMap::new(),
            subscriptions,
            clock: Clock::new(),
            limits: Limits {
                inline_window: std::time::Duration::from_millis(config.task_inline_ms),
                run: RoundLimits {
                    handler_timeout: config.task_ttl,
                    ..RoundLimits::of(config)
                },
                result_timeout: config.task_result_timeout,
                page_size: config.page_size,
                poll_interval_ms: config.task_poll_interval_ms,
                ttl_ms: config.task_ttl.as_millis() as u64,
                sweep_interval: config.task_sweep_interval,
                max_total: config.max_tasks_total,
                max_per_principal: config.max_tasks_per_principal,
                max_stored_per_principal: config.max_stored_tasks_per_principal,
                #[cfg(feature = "shared-store")]
                runs: config.task_runs.clone(),
            },
            admission: tokio::sync::Mutex::new(()),
            recovered: tokio::sync::OnceCell::new(),
            sweeper: OnceLock::new(),
            me: me.clone(),
            sharing: OnceLock::new(),
        })
    }

    #[cfg(feature = "shared-store")]
    /// Shares the tasks with the other instances of a store: records name this instance, and
    /// control of a task another instance runs is forwarded to it.
    pub(crate) fn share(&self, sharing: Arc<dyn Sharing>) {
        let _ = self.sharing.set(sharing);
    }

    /// The other instances, if tasks are shared.
    pub(crate) fn sharing(&self) -> Option<&Arc<dyn Sharing>> {
        self.sharing.get()
    }

    #[cfg(feature = "shared-store")]
    /// The open `subscriptions/listen` subscriptions.
    pub(crate) fn subscriptions(&self) -> &Arc<Subscriptions> {
        &self.subscriptions
    }

    /// The store.
    pub(crate) fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The live part of a task this process runs.
    pub(crate) fn live(&self, task_id: &str) -> Option<Arc<Live>> {
        self.live.get(task_id).map(|l| l.clone())
    }

    /// Whether this process knows the task and `owner` owns it (the
    /// ownership check of `subscriptions/listen` `taskIds`).
    pub(crate) fn owns(&self, task_id: &str, owner: &TaskOwner) -> bool {
        self.live.get(task_id).is_some_and(|l| l.owner == *owner)
    }

    /// [`Tasks::owns`], and with a shared store also a task another instance runs (its record
    /// names the owner).
    pub(crate) async fn owns_anywhere(&self, task_id: &str, owner: &TaskOwner) -> bool {
        if self.owns(task_id, owner) {
            return true;
        }
        if self.sharing.get().is_none() {
            return false;
        }
        matches!(self.store.get(task_id).await, Ok(Some(r)) if r.owner == *owner && !r.status.is_terminal())
    }

    /// Marks the tasks a previous run left unfinished as failed (once, before
    /// the first task operation; retried later if the store fails). With a shared store this
    /// also runs on every sweep: the unfinished tasks of instances that are gone are failed.
    pub(crate) async fn ensure_recovered(&self) {
        let done = self.recovered.get_or_try_init(|| self.recover()).await;
        if let Err(e) = done {
            tracing::error!(error = %e, "task store recovery failed; will retry");
        }
    }

    /// Fails the unfinished tasks whose worker is gone: all of them for a store of one process
    /// (a previous run left them), those of dead instances for a shared store.
    async fn recover(&self) -> Result<(), TaskStoreError> {
        for mut rec in self.store.recover().await? {
            // A task of the queue is run again, or failed, by the worker that claims it.
            if rec.status.is_terminal() || self.live.contains_key(&rec.task_id) || rec.queued() {
                continue;
            }
            if let (Some(sharing), Some(instance)) = (self.sharing.get(), rec.instance.as_deref()) {
                if instance == sharing.instance() || sharing.is_alive(instance).await? {
                    continue;
                }
                tracing::info!(task = %rec.task_id, instance, "task of an instance that is gone: failed");
                self.interrupt(&mut rec, INSTANCE_STOPPED).await?;
            } else {
                tracing::info!(task = %rec.task_id, "task interrupted by a restart: failed");
                self.interrupt(&mut rec, INTERRUPTED).await?;
            }
        }
        Ok(())
    }

    /// Fails an unfinished task whose worker is gone, with `why` as its message, and stores it.
    async fn interrupt(&self, rec: &mut TaskRecord, why: &str) -> Result<(), TaskStoreError> {
        rec.status = TaskStatus::Failed;
        rec.status_message = Some(why.into());
        rec.outcome = Some(TaskOutcome::Error(RpcError::internal_with(why)));
        rec.input_requests.clear();
        rec.updated_at_ms = self.now_ms();
        self.store.put(rec.clone()).await
    }

    /// A record read for its owner, failed first when it is unfinished and the instance
    /// running it stopped (its heartbeat lapsed): a reader learns it at once, not at the next
    /// sweep. A liveness question the store cannot answer leaves the record as it is.
    async fn checked(&self, mut rec: TaskRecord) -> TaskRecord {
        if rec.status.is_terminal() || self.live.contains_key(&rec.task_id) || rec.queued() {
            return rec;
        }
        let (Some(sharing), Some(instance)) = (self.sharing.get(), rec.instance.clone()) else {
            return rec;
        };
        if instance == sharing.instance() || !matches!(sharing.is_alive(&instance).await, Ok(false)) {
            return rec;
        }
        tracing::info!(task = %rec.task_id, instance, "task of an instance that stopped: failed as it is read");
        if let Err(e) = self.interrupt(&mut rec, INSTANCE_STOPPED).await {
            tracing::warn!(task = %rec.task_id, error = %e, "the failed task could not be stored");
        }
        rec
    }

    /// Creates a working task for `owner` (store first, then the live part):
    /// refused over the bounds.
    pub(crate) async fn create(
        &self,
        owner: TaskOwner,
        client: ClientKey,
        requested_ttl_ms: Option<u64>,
        work: CancellationToken,
        relay: Arc<Relay>,
        call: Option<TaskCall>,
    ) -> Result<(TaskRecord, Arc<Live>), RpcError> {
        self.ensure_recovered().await;
        let created = self.admit(owner, client, requested_ttl_ms, work, relay, call).await;
        created.map_err(|e| self.refusal(e))
    }

    /// The answer to a call whose task could not be created.
    fn refusal(&self, e: CreateError) -> RpcError {
        match e {
            CreateError::TooManyRunning => {
                tracing::warn!(limit = self.limits.max_total, "task refused: too many running tasks");
                RpcError::too_many_running_tasks()
            }
            CreateError::TooManyRunningForClient => {
                tracing::warn!(
                    limit = self.limits.max_per_principal,
                    "task refused: too many running tasks for one client"
                );
                RpcError::too_many_running_tasks_for_client()
            }
            CreateError::TooManyStored => {
                tracing::warn!(
                    limit = self.limits.max_stored_per_principal,
                    "task refused: too many stored tasks, none finished"
                );
                RpcError::too_many_stored_tasks_for_client()
            }
            other => {
                tracing::error!(error = %other, "task could not be created");
                RpcError::internal()
            }
        }
    }

    #[cfg(feature = "shared-store")]
    /// A front's task (`Role::Front`): recorded with its call and queued for a worker of another
    /// instance; nothing of it runs here. Refused when the client's stored tasks are at their
    /// bound, none finished.
    pub(crate) async fn queue_call(
        &self,
        owner: TaskOwner,
        client: ClientKey,
        requested_ttl_ms: Option<u64>,
        call: TaskCall,
    ) -> Result<TaskRecord, RpcError> {
        self.ensure_recovered().await;
        let queued = async {
            let _admission = self.admission.lock().await;
            let counted_as = client.to_string();
            self.room_for(&counted_as).await?;
            let mut rec = self.record(owner, requested_ttl_ms)?;
            rec.call = Some(call);
            rec.client = Some(counted_as.clone());
            rec.status_message = Some(QUEUED.into());
            self.store.put(rec.clone()).await?;
            if let Err(e) = self
                .queue
                .enqueue(&rec.task_id, &counted_as, std::time::Duration::ZERO)
                .await
            {
                let _ = self.store.delete(&rec.task_id).await;
                return Err(CreateError::Store(e));
            }
            Ok(rec)
        };
        queued.await.map_err(|e| self.refusal(e))
    }

    /// Makes room for one more stored task of `counted_as` (its oldest finished one goes).
    async fn room_for(&self, counted_as: &str) -> Result<(), CreateError> {
        if self.store.count_for_client(counted_as).await? >= self.limits.max_stored_per_principal {
            self.make_room(counted_as).await?;
        }
        Ok(())
    }

    /// A new working record of `owner`, its ttl as asked within the configured one.
    fn record(&self, owner: TaskOwner, requested_ttl_ms: Option<u64>) -> Result<TaskRecord, CreateError> {
        let id = mint_task_id().ok_or(CreateError::Random)?;
        let ttl = requested_ttl_ms.map_or(self.limits.ttl_ms, |t| t.min(self.limits.ttl_ms));
        Ok(TaskRecord::new(
            id,
            owner,
            self.now_ms(),
            Some(ttl),
            Some(self.limits.poll_interval_ms),
        ))
    }

    async fn admit(
        &self,
        owner: TaskOwner,
        client: ClientKey,
        requested_ttl_ms: Option<u64>,
        work: CancellationToken,
        relay: Arc<Relay>,
        call: Option<TaskCall>,
    ) -> Result<(TaskRecord, Arc<Live>), CreateError> {
        let _admission = self.admission.lock().await;
        // Running tasks count; finished ones keep their results without blocking new work.
        let (mut running, mut mine) = (0, 0);
        for live in self.live.iter().filter(|l| !l.is_finished()) {
            running += 1;
            mine += usize::from(live.client == client);
        }
        if running >= self.limits.max_total {
            return Err(CreateError::TooManyRunning);
        }
        if mine >= self.limits.max_per_principal {
            return Err(CreateError::TooManyRunningForClient);
        }
        // Stored records count against the client (an anonymous caller's address), as the
        // running ones do: one client's records never take another's room.
        let counted_as = client.to_string();
        self.room_for(&counted_as).await?;
        let mut rec = self.record(owner.clone(), requested_ttl_ms)?;
        let id = rec.task_id.clone();
        rec.instance = self.sharing.get().map(|s| s.instance().to_owned());
        // A resumable task runs its first attempt here, under a lease of the queue.
        let run = call.as_ref().map_or((0, false), |c| (1, c.resumable));
        rec.attempt = run.0;
        #[cfg(feature = "shared-store")]
        {
            rec.call = call;
        }
        rec.client = Some(counted_as.clone());
        self.store.put(rec.clone()).await?;
        #[cfg(feature = "shared-store")]
        if run.0 > 0 {
            match self.queue.hold(&id, &counted_as, self.limits.runs.lease).await {
                Ok(Some(_)) => {}
                held => {
                    let _ = self.store.delete(&id).await;
                    return Err(match held {
                        Err(e) => CreateError::Store(e),
                        _ => CreateError::Store(TaskStoreError::Backend(format!("task {id} already queued"))),
                    });
                }
            }
        }
        let live = Live::run(id.clone(), owner, client, work, relay, run);
        self.live.insert(id, live.clone());
        #[cfg(feature = "shared-store")]
        if run.0 > 0
            && let Some(me) = self.me.upgrade()
        {
            me.keep_lease(live.clone());
        }
        Ok((rec, live))
    }

    /// Deletes the oldest finished task counted against `client` to make room for a new one,
    /// or fails when every stored task of the client is still running.
    async fn make_room(&self, client: &str) -> Result<(), CreateError> {
        let oldest = self
            .store
            .list_for_client(client)
            .await?
            .into_iter()
            .filter(|r| r.status.is_terminal())
            .min_by_key(|r| r.updated_at_ms)
            .ok_or(CreateError::TooManyStored)?;
        tracing::debug!(task = %oldest.task_id, "oldest finished task dropped to make room");
        self.live.remove(&oldest.task_id);
        self.store.delete(&oldest.task_id).await?;
        Ok(())
    }

    /// Deletes every task of a legacy session that ended: their workers are cancelled and
    /// their records deleted (nobody can reach them any more). Returns how many were removed.
    pub(crate) async fn release_session(&self, principal: &str, session: &str) -> usize {
        let owner = TaskOwner::Session {
            principal: principal.to_owned(),
            session: session.to_owned(),
        };
        let records = match self.store.list(&owner).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "the tasks of an ended session could not be listed");
                return 0;
            }
        };
        let mut n = 0;
        for rec in records {
            if let Some((_, live)) = self.live.remove(&rec.task_id) {
                live.work.cancel();
            }
            match self.store.delete(&rec.task_id).await {
                Ok(()) => n += 1,
                Err(e) => tracing::error!(task = %rec.task_id, error = %e, "task of an ended session not deleted"),
            }
        }
        n
    }

    #[cfg(feature = "shared-store")]
    /// A session ended on another instance, which deletes its tasks' records: this instance's
    /// workers of those tasks (cancelled as the session closes here) store nothing more.
    pub(crate) fn forget_session(&self, session: &str) {
        self.live
            .retain(|_, l| !matches!(&l.owner, TaskOwner::Session { session: s, .. } if s == session));
    }

    /// Forgets a task whose id was never handed out (the outcome arrived
    /// while escalating).
    pub(crate) async fn discard(&self, live: &Live) {
        self.live.remove(&live.id);
        self.end_attempt(live).await;
        if let Err(e) = self.store.delete(&live.id).await {
            tracing::error!(task = %live.id, error = %e, "discarded task could not be deleted");
        }
    }

    /// The record of a task `owner` owns; anything else (unknown, expired,
    /// another owner's, no owner at all) is -32602, the same answer.
    pub(crate) async fn lookup(&self, task_id: &str, owner: Option<&TaskOwner>) -> Result<TaskRecord, RpcError> {
        self.ensure_recovered().await;
        let rec = self.store.get(task_id).await.map_err(|e| {
            tracing::error!(task = task_id, error = %e, "task store read failed");
            RpcError::internal()
        })?;
        match (rec, owner) {
            (Some(r), Some(o)) if r.owner == *o && !self.is_expired(&r) => Ok(self.checked(r).await),
            _ => Err(RpcError::invalid_params("Task not found")),
        }
    }

    fn is_expired(&self, rec: &TaskRecord) -> bool {
        rec.expires_at_ms().is_some_and(|e| e <= self.now_ms())
    }

    /// Removes the expired tasks: their workers are cancelled, their records
    /// deleted. Returns how many were removed.
    pub(crate) async fn sweep(&self) -> usize {
        let ids = match self.store.expired(self.now_ms()).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %e, "task sweep failed");
                return 0;
            }
        };
        let mut n = 0;
        for id in ids {
            if let Some((_, live)) = self.live.remove(&id) {
                live.work.cancel();
            }
            match self.store.delete(&id).await {
                Ok(()) => n += 1,
                Err(e) => tracing::error!(task = %id, error = %e, "expired task could not be deleted"),
            }
        }
        if n > 0 {
            tracing::debug!(removed = n, "expired tasks swept");
        }
        n
    }

    /// The periodic sweep of expired tasks (and, with a shared store, of the tasks of instances
    /// that are gone), as a service of the engine's driver: the first call only. It ends with
    /// the runtime.
    pub(crate) fn sweeper(&self) -> Option<crate::background::Background> {
        self.sweeper.set(()).ok()?;
        let me = self.me.clone();
        let every = self.limits.sweep_interval.max(std::time::Duration::from_millis(10));
        Some(crate::background::boxed(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(tasks) = me.upgrade() else { break };
                tasks.sweep().await;
                if tasks.sharing.get().is_some()
                    && let Err(e) = tasks.recover().await
                {
                    tracing::warn!(error = %e, "recovery of the tasks of dead instances failed");
                }
            }
        }))
    }
}

/// A fresh task id: 32 hex digits from the OS CSPRNG (`None` if it fails).
fn mint_task_id() -> Option<String> {
    crate::mint::random_id::<16>("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_hex() {
        let a = mint_task_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, mint_task_id().unwrap());
    }
}
