//! The machinery of tasks that outlive their instance (see [`runs`](super::runs) for the rules
//! and the settings): the checkpoints of a resumable run, the lease a running attempt renews,
//! the workers that claim tasks from the queue and run them again, and the hand-back of a
//! draining instance. Compiled with the `shared-store` feature only: a server of one process has
//! no other instance for a task to outlive it on.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::meta::parse_modern_meta;
use mcp_protocol::model::{ClientCapabilities, TaskStatus};
use mcp_protocol::{Era, Method, Params, RequestId, Revision};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{INSTANCE_STOPPED, LegacyTaskLink, Live, TaskCall, TaskOwner, TaskRecord, Tasks};
use crate::api::HandlerError;
use crate::api::ctx::{CtxInner, Origin, Recorded};
use crate::api::resume::{ResumeLink, SaveFuture};
use crate::api::task_link::TaskLink;
use crate::api::{Ctx, States};
use crate::background::Background;
use crate::catalog::{Registry, ToolEntry};
use crate::elicitation::Elicitations;
use crate::observe::tasks as observe;
use crate::quota::ClientKey;
use crate::session::Session;
use crate::sink::{Relay, Sink};
use crate::store::Claim;
use crate::task_runs::{GAVE_UP, HANDED_BACK};

/// How often the workers report the queue's size.
const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// The [`ResumeLink`] of a resumable task's run: its attempt, its last checkpoint, and the live
/// task (set once the call is a task).
#[derive(Debug)]
pub(crate) struct Resumption {
    tasks: Weak<Tasks>,
    attempt: u32,
    live: OnceLock<Arc<Live>>,
    last: Mutex<Option<Value>>,
}

impl Resumption {
    pub(crate) fn new(tasks: &Arc<Tasks>, attempt: u32, last: Option<Value>) -> Arc<Self> {
        Arc::new(Resumption {
            tasks: Arc::downgrade(tasks),
            attempt,
            live: OnceLock::new(),
            last: Mutex::new(last),
        })
    }

    /// The call is the task `live` now: checkpoints are stored with it from here on, the one
    /// saved before included.
    pub(crate) async fn became(&self, live: Arc<Live>) {
        let _ = self.live.set(live.clone());
        let last = self.last();
        if let (Some(tasks), Some(checkpoint)) = (self.tasks.upgrade(), last) {
            store_checkpoint(&tasks, &live, checkpoint).await.ok();
        }
    }
}

/// Writes `checkpoint` into the record of the running `live` task.
async fn store_checkpoint(tasks: &Tasks, live: &Live, checkpoint: Value) -> Result<(), HandlerError> {
    tasks
        .update(&live.id, |r| {
            let go = !r.status.is_terminal();
            if go {
                r.checkpoint = Some(checkpoint);
            }
            go
        })
        .await
        .map(|_| ())
        .map_err(|e| HandlerError::internal(format_args!("the checkpoint could not be stored: {e}")))
}

impl ResumeLink for Resumption {
    fn task_id(&self) -> Option<String> {
        self.live.get().map(|l| l.id.clone())
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }

    fn last(&self) -> Option<Value> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn save(&self, checkpoint: Value) -> SaveFuture<'_> {
        Box::pin(async move {
            let Some(tasks) = self.tasks.upgrade() else {
                return Ok(());
            };
            let max = tasks.limits.runs.max_checkpoint_bytes;
            let size = serde_json::to_vec(&checkpoint).map_or(usize::MAX, |b| b.len());
            if size > max {
                return Err(HandlerError::tool(format_args!(
                    "Checkpoint refused: {size} bytes, over the bound of {max}"
                )));
            }
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(checkpoint.clone());
            match self.live.get() {
                Some(live) => store_checkpoint(&tasks, live, checkpoint).await,
                // Still inline: stored with the task when the call becomes one.
                None => Ok(()),
            }
        })
    }
}

/// Finds a legacy session by id for its principal, on this instance or loaded from the shared
/// store (`Runtime::find_session`): the session a claimed 2025-11-25 task runs in, so that its
/// server-to-client requests are asked in it.
pub(crate) type FindSession = Box<
    dyn Fn(String, String) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Arc<Session>>> + Send>>
        + Send
        + Sync,
>;

/// What a worker needs to run a claimed task's call: the catalog, the legacy sessions, and what
/// every handler's context is given.
pub(crate) struct WorkerEnv {
    pub(crate) registry: Arc<Registry>,
    pub(crate) find_session: FindSession,
    pub(crate) advertised: Vec<Revision>,
    pub(crate) client_request_timeout: Duration,
    pub(crate) logging: bool,
    pub(crate) state: States,
    pub(crate) elicitations: Arc<Elicitations>,
}

/// Why a claimed task cannot run again: its call fails with this message.
#[derive(Debug, Clone, Copy, thiserror::Error)]
enum Unrunnable {
    #[error("{INSTANCE_STOPPED}")]
    NotResumable,
    #[error("{GAVE_UP}")]
    GaveUp,
    #[error("Task failed: its tool is no longer offered")]
    NoTool,
    #[error("Task failed: its call could not be read again")]
    BadCall,
}

impl Unrunnable {
    /// The `reason` label of the lost-task counter.
    fn reason(self) -> &'static str {
        match self {
            Unrunnable::NotResumable => "not_resumable",
            Unrunnable::GaveUp => "attempts",
            Unrunnable::NoTool => "tool",
            Unrunnable::BadCall => "call",
        }
    }
}

impl TaskCall {
    /// The call of `ctx` (a `tools/call`) as a worker elsewhere runs it again.
    pub(crate) fn of(ctx: &Ctx, resumable: bool) -> TaskCall {
        let mut params = match serde_json::from_str::<Value>(ctx.params().text()) {
            Ok(Value::Object(p)) => p,
            _ => serde_json::Map::new(),
        };
        params.remove("task");
        let auth = ctx.auth();
        let legacy = ctx.era() == Era::Legacy;
        TaskCall {
            params: Value::Object(params),
            principal: auth.principal.to_string(),
            scopes: auth.scopes.clone(),
            claims: auth.claims.clone(),
            revision: legacy.then(|| ctx.revision().map(|r| r.as_str().to_owned())).flatten(),
            client_capabilities: legacy.then(|| ctx.client_capabilities().raw().clone()),
            client_info: legacy.then(|| ctx.client_info().cloned()).flatten(),
            resumable,
        }
    }
}

impl Tasks {
    /// Stops claiming tasks from the queue (a drain begins).
    pub(crate) fn stop_claiming(&self) {
        self.stopping.cancel();
    }

    /// Waits until no task runs here.
    pub(crate) async fn all_ended(&self) {
        while self
            .live
            .iter()
            .any(|l| !l.is_finished() && !l.fenced.load(Ordering::Acquire))
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The end of a drain's grace: every task still running here is handed back. A resumable
    /// one goes back to the queue at once, with its checkpoint, for another instance to claim;
    /// any other fails with [`INSTANCE_STOPPED`]. Returns how many went back to the queue.
    pub(crate) async fn hand_back(&self) -> usize {
        self.stop_claiming();
        let running: Vec<Arc<Live>> = self
            .live
            .iter()
            .filter(|l| !l.is_finished() && !l.fenced.load(Ordering::Acquire))
            .map(|l| l.clone())
            .collect();
        let mut queued = 0;
        for live in running {
            if live.resumable {
                // Nothing this attempt does from now on is stored.
                live.fenced.store(true, Ordering::Release);
                live.work.cancel();
                let released = self.release(&live).await;
                queued += usize::from(released);
                continue;
            }
            self.fail_stopped(&live).await;
            observe::lost("stopped");
            live.work.cancel();
        }
        observe::handed_back(queued);
        if queued > 0 {
            tracing::info!(tasks = queued, "running tasks handed back to the queue");
        }
        queued
    }

    /// Fails a task whose instance stops.
    async fn fail_stopped(&self, live: &Live) {
        let e = mcp_protocol::RpcError::internal_with(INSTANCE_STOPPED);
        self.finish(
            live,
            TaskStatus::Failed,
            Some(super::TaskOutcome::Error(e)),
            Some(INSTANCE_STOPPED),
        )
        .await;
    }

    /// Renews the lease of `live`'s attempt until the task ends here: a lease the queue no
    /// longer gives this attempt fences it (its work is cancelled and nothing it does later is
    /// stored). A store that does not answer is tried again at the next beat; its lease may
    /// lapse meanwhile, and the next answer says so.
    pub(super) fn keep_lease(self: &Arc<Self>, live: Arc<Live>) {
        let tasks = Arc::downgrade(self);
        let (lease, every) = (self.limits.runs.lease, self.limits.runs.heartbeat());
        crate::background::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = live.work.cancelled() => break,
                }
                let Some(tasks) = tasks.upgrade() else { break };
                if live.is_finished() || live.fenced.load(Ordering::Acquire) {
                    break;
                }
                match tasks.queue.renew(&live.id, live.attempt, lease).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(task = %live.id, attempt = live.attempt, "lease lost: another worker runs the task; this attempt stops");
                        live.fenced.store(true, Ordering::Release);
                        live.work.cancel();
                        break;
                    }
                    Err(e) => tracing::warn!(task = %live.id, error = %e, "lease not renewed; trying again"),
                }
            }
        });
    }

    /// Gives a fenced attempt's task back to the queue, its record saying it waits.
    pub(super) async fn release(&self, live: &Live) -> bool {
        let id = live.id.as_str();
        let stored = self
            .store_change(id, |r| {
                r.status_message = Some(HANDED_BACK.into());
                r.instance = None;
                if r.status == TaskStatus::InputRequired {
                    r.status = TaskStatus::Working;
                    r.input_requests.clear();
                }
            })
            .await;
        if let Err(e) = stored {
            tracing::warn!(task = id, error = %e, "a handed-back task's record could not be stored");
        }
        match self.queue.release(id, live.attempt, Duration::ZERO).await {
            Ok(released) => released,
            Err(e) => {
                tracing::warn!(task = id, error = %e, "a task could not be handed back; its lease will lapse");
                false
            }
        }
    }

    /// A read-modify-write of a record no live task of this process guards (a claimed task
    /// before its run starts, a handed-back one).
    async fn store_change(
        &self,
        task_id: &str,
        change: impl FnOnce(&mut TaskRecord),
    ) -> Result<Option<TaskRecord>, crate::store::StoreError> {
        let Some(mut rec) = self.store.get(task_id).await? else {
            return Ok(None);
        };
        change(&mut rec);
        rec.updated_at_ms = self.now_ms().max(rec.updated_at_ms);
        self.store.put(rec.clone()).await?;
        Ok(Some(rec))
    }

    /// The workers of this instance, as a service of the engine's driver: they claim tasks
    /// from the queue (at most [`TaskRuns::max_running`] at once) and run them, until the
    /// instance stops claiming. The first call only.
    pub(crate) fn workers(self: &Arc<Self>, env: WorkerEnv) -> Option<Background> {
        if !self.limits.runs.role.runs_tasks() {
            return None;
        }
        self.workers.set(()).ok()?;
        let me = Arc::downgrade(self);
        let env = Arc::new(env);
        let runs = self.limits.runs.clone();
        let stopping = self.stopping.clone();
        let slots = Arc::new(tokio::sync::Semaphore::new(runs.max_running.max(1)));
        let mut sampled = tokio::time::Instant::now();
        let mut failing = false;
        Some(crate::background::boxed(async move {
            loop {
                if sampled.elapsed() >= SAMPLE_EVERY
                    && let Some(tasks) = me.upgrade()
                {
                    sampled = tokio::time::Instant::now();
                    tasks.sample().await;
                }
                let permit = tokio::select! {
                    p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                    () = stopping.cancelled() => break,
                };
                let Some(tasks) = me.upgrade() else { break };
                let claimed = tasks.queue.claim(runs.lease).await;
                // An outage is logged once, when it begins, and once when it ends.
                match (&claimed, failing) {
                    (Err(e), false) => {
                        tracing::warn!(error = %e, "the task queue cannot be read: claiming nothing until it can")
                    }
                    (Ok(_), true) => tracing::info!("the task queue can be read again"),
                    _ => {}
                }
                failing = claimed.is_err();
                if let Ok(Some(claim)) = claimed {
                    let env = env.clone();
                    crate::background::spawn(async move {
                        tasks.run_claimed(&env, claim).await;
                        drop(permit);
                    });
                    continue;
                }
                drop((tasks, permit));
                tokio::select! {
                    () = tokio::time::sleep(runs.poll) => {}
                    () = stopping.cancelled() => break,
                }
            }
        }))
    }

    /// Reports the queue's size and the attempts running here.
    async fn sample(&self) {
        let queued = self.queue.depth().await.ok().map(|d| d.queued);
        let running = self
            .live
            .iter()
            .filter(|l| l.attempt > 0 && !l.is_finished() && !l.fenced.load(Ordering::Acquire))
            .count();
        observe::sizes(queued, running);
    }

    /// Runs a task the queue handed this instance: again from its checkpoint for a resumable
    /// task, or fails it when it cannot run again. Returns once its run ended.
    async fn run_claimed(self: &Arc<Self>, env: &WorkerEnv, claim: Claim) {
        let (id, attempt) = (claim.task_id.as_str(), claim.attempt);
        let rec = match self.store.get(id).await {
            Ok(rec) => rec,
            Err(e) => {
                // Its lease lapses and it is claimed again once the store answers.
                tracing::warn!(task = id, error = %e, "a claimed task could not be read");
                return;
            }
        };
        let Some(rec) = rec.filter(|r| !r.status.is_terminal()) else {
            // Ended (or gone) while it waited.
            let _ = self.queue.finish(id, attempt).await;
            return;
        };
        observe::waited(self.now_ms().saturating_sub(rec.updated_at_ms) as f64 / 1000.0);
        let runnable = self.runnable(env, &rec, attempt);
        let (call, tool) = match runnable {
            Ok(found) => found,
            Err(why) => {
                tracing::info!(task = id, attempt, %why, "a claimed task cannot run again: failed");
                observe::lost(why.reason());
                let message = why.to_string();
                let mut rec = rec;
                if let Err(e) = self.interrupt(&mut rec, &message).await {
                    tracing::warn!(task = id, error = %e, "the failed task could not be stored");
                }
                let _ = self.queue.finish(id, attempt).await;
                return;
            }
        };
        let wait = self.limits.runs.backoff_before(attempt);
        if !wait.is_zero() && !self.wait_holding(id, attempt, wait).await {
            return;
        }
        // The record names this attempt before it runs: an older attempt's writes stop here.
        let me = self.sharing().map(|s| s.instance().to_owned());
        let started = self
            .store_change(id, |r| {
                r.attempt = attempt;
                r.instance = me;
                r.status = TaskStatus::Working;
                r.input_requests.clear();
                // A task a front queued starts its first attempt here; a later one resumes.
                r.status_message = (attempt > 1).then(|| format!("Resumed: attempt {attempt}"));
            })
            .await;
        let rec = match started {
            Ok(Some(rec)) if !rec.status.is_terminal() => rec,
            Ok(_) => {
                let _ = self.queue.finish(id, attempt).await;
                return;
            }
            Err(e) => {
                tracing::warn!(task = id, error = %e, "a claimed task could not be started");
                return;
            }
        };
        let params = Params::from_value(call.params.clone());
        let span = observe::attempt(
            Some(id),
            attempt,
            &tool.def.name,
            params.as_ref(),
            rec.checkpoint.is_some(),
        );
        tracing::info!(parent: &span, task = id, attempt, "task claimed from the queue");
        let client = rec
            .client
            .as_deref()
            .and_then(ClientKey::parse)
            .unwrap_or_else(|| ClientKey::Principal(rec.owner.principal().into()));
        // A 2025-11-25 task runs in its session (loaded here from the store), and ends with it.
        let session = match &rec.owner {
            TaskOwner::Session { principal, session } => (env.find_session)(session.clone(), principal.clone()).await,
            TaskOwner::Principal(_) => None,
        };
        let work = session
            .as_ref()
            .map_or_else(CancellationToken::new, |s| s.closed().child_token());
        let relay = Relay::new(None);
        let live = Live::run(id.to_owned(), rec.owner.clone(), client, work, relay, (attempt, true));
        let Some(ctx) = self.claimed_ctx(env, &rec, &call, &live, session) else {
            observe::lost(Unrunnable::BadCall.reason());
            let mut rec = rec;
            let _ = self.interrupt(&mut rec, &Unrunnable::BadCall.to_string()).await;
            let _ = self.queue.finish(id, attempt).await;
            return;
        };
        self.live.insert(id.to_owned(), live.clone());
        self.keep_lease(live.clone());
        let args = match call.params.get("arguments") {
            Some(Value::Object(a)) => a.clone(),
            _ => serde_json::Map::new(),
        };
        super::handoff::run_claimed(self.clone(), live, tool, args, ctx)
            .instrument(span)
            .await;
    }

    /// Whether a claimed task can run again: its call kept, resumable (or never run), within
    /// the attempts, its tool still offered.
    fn runnable(
        &self,
        env: &WorkerEnv,
        rec: &TaskRecord,
        attempt: u32,
    ) -> Result<(TaskCall, Arc<ToolEntry>), Unrunnable> {
        let call = rec.call.clone().ok_or(Unrunnable::NotResumable)?;
        if !call.resumable && rec.attempt > 0 {
            return Err(Unrunnable::NotResumable);
        }
        if attempt > self.limits.runs.max_attempts {
            return Err(Unrunnable::GaveUp);
        }
        let name = call
            .params
            .get("name")
            .and_then(Value::as_str)
            .ok_or(Unrunnable::BadCall)?;
        let tool = env.registry.snapshot().tool(name).cloned().ok_or(Unrunnable::NoTool)?;
        Ok((call, tool))
    }

    /// Waits `wait` (a retry's backoff) holding the claim's lease; `false` when it was lost.
    async fn wait_holding(&self, id: &str, attempt: u32, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        let (lease, every) = (self.limits.runs.lease, self.limits.runs.heartbeat());
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + every)).await;
            if let Ok(false) = self.queue.renew(id, attempt, lease).await {
                return false;
            }
        }
        true
    }

    /// The handler's context of a claimed task's call: the caller as recorded, no stream (the
    /// task's messages reach its clients through the task's status and results).
    fn claimed_ctx(
        self: &Arc<Self>,
        env: &WorkerEnv,
        rec: &TaskRecord,
        call: &TaskCall,
        live: &Arc<Live>,
        session: Option<Arc<Session>>,
    ) -> Option<Ctx> {
        let params = Params::from_value(call.params.clone())?;
        let origin = match (rec.owner.era(), session) {
            (Era::Modern, _) => Origin::Modern(Arc::new(parse_modern_meta(Some(&params), &env.advertised).ok()?)),
            (Era::Legacy, Some(session)) => Origin::Session(session),
            // Its session is gone: the facts it recorded, and no server-to-client request.
            (Era::Legacy, None) => Origin::Recorded(Arc::new(Recorded {
                revision: Revision::parse(call.revision.as_deref()?)?,
                client_capabilities: ClientCapabilities::new(call.client_capabilities.clone().unwrap_or_default()),
                client_info: call.client_info.clone(),
            })),
        };
        let auth = AuthInfo::new(call.principal.as_str())
            .with_scopes(call.scopes.clone())
            .with_claims(call.claims.clone())
            .into_shared();
        let task: Option<Arc<dyn TaskLink>> = (rec.owner.era() == Era::Legacy).then(|| {
            Arc::new(LegacyTaskLink {
                tasks: self.clone(),
                live: live.clone(),
            }) as Arc<dyn TaskLink>
        });
        let link = Resumption::new(self, live.attempt, rec.checkpoint.clone());
        let _ = link.live.set(live.clone());
        Some(Ctx::new(CtxInner {
            auth,
            remote: None,
            origin,
            request_id: RequestId::String(format!("{}/{}", live.id, live.attempt).into()),
            method: Method::ToolsCall,
            params,
            progress_token: None,
            cancel: live.work.clone(),
            sink: Sink::relay(live.relay.clone()),
            attachments: crate::attachments::Attachments::default(),
            client_request_timeout: env.client_request_timeout,
            logging: env.logging,
            input_responses: None,
            request_state: None,
            task,
            resume: Some(link),
            elicitations: env.elicitations.clone(),
            state: env.state.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::store::{QueueDepth, StoreError, StoreFuture, TaskQueue};

    /// A queue whose store is unreachable: every call fails, and claims are counted.
    #[derive(Default)]
    struct Unreachable {
        claims: AtomicUsize,
    }

    fn down<'a, T: Send + 'a>() -> StoreFuture<'a, T> {
        Box::pin(async { Err(StoreError::Unavailable("redis is away".into())) })
    }

    impl TaskQueue for Unreachable {
        fn enqueue<'a>(&'a self, _: &'a str, _: &'a str, _: Duration) -> StoreFuture<'a, ()> {
            down()
        }
        fn hold<'a>(&'a self, _: &'a str, _: &'a str, _: Duration) -> StoreFuture<'a, Option<u32>> {
            down()
        }
        fn claim(&self, _: Duration) -> StoreFuture<'_, Option<Claim>> {
            self.claims.fetch_add(1, Ordering::SeqCst);
            down()
        }
        fn renew<'a>(&'a self, _: &'a str, _: u32, _: Duration) -> StoreFuture<'a, bool> {
            down()
        }
        fn finish<'a>(&'a self, _: &'a str, _: u32) -> StoreFuture<'a, bool> {
            down()
        }
        fn release<'a>(&'a self, _: &'a str, _: u32, _: Duration) -> StoreFuture<'a, bool> {
            down()
        }
        fn depth(&self) -> StoreFuture<'_, QueueDepth> {
            down()
        }
    }

    #[tokio::test]
    async fn a_checkpoint_over_the_bound_is_refused_and_one_within_it_is_stored() {
        let mut config = crate::ServerConfig::default();
        config.task_runs.max_checkpoint_bytes = 64;
        let subscriptions = Arc::new(crate::listen::Subscriptions::new(
            crate::listen::Limits::unbounded(),
            None,
        ));
        let store = Arc::new(crate::store::InMemoryTaskStore::new());
        let queue = Arc::new(crate::store::MemoryQueue::new());
        let tasks = Tasks::new(&config, store.clone(), queue, subscriptions);
        let call = TaskCall {
            params: serde_json::json!({"name": "count"}),
            principal: "p".into(),
            scopes: Vec::new(),
            claims: serde_json::Map::new(),
            revision: None,
            client_capabilities: None,
            client_info: None,
            resumable: true,
        };
        let owner = TaskOwner::Principal("p".into());
        let client = ClientKey::Principal("p".into());
        let (rec, live) = tasks
            .create(
                owner,
                client,
                None,
                CancellationToken::new(),
                Relay::new(None),
                Some(call),
            )
            .await
            .unwrap();
        assert_eq!(
            (rec.attempt, live.attempt),
            (1, 1),
            "the first attempt runs where it was accepted"
        );
        let link = Resumption::new(&tasks, 1, None);
        link.became(live.clone()).await;
        let big = serde_json::json!({"rows": "x".repeat(100)});
        match link.save(big).await {
            Err(HandlerError::Tool(message)) => assert!(message.contains("over the bound of 64"), "{message}"),
            other => panic!("refused with a tool error, not {other:?}"),
        }
        link.save(serde_json::json!(7)).await.unwrap();
        assert_eq!(link.last(), Some(serde_json::json!(7)));
        let stored = crate::store::TaskStore::get(&*store, &rec.task_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            stored.checkpoint,
            Some(serde_json::json!(7)),
            "the one within the bound is stored"
        );
        live.work.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn workers_that_cannot_reach_the_queue_claim_nothing_fail_nothing_and_keep_asking() {
        let queue = Arc::new(Unreachable::default());
        let store = Arc::new(crate::store::InMemoryTaskStore::new());
        let subscriptions = Arc::new(crate::listen::Subscriptions::new(
            crate::listen::Limits::unbounded(),
            None,
        ));
        let tasks = Tasks::new(
            &crate::ServerConfig::default(),
            store.clone(),
            queue.clone(),
            subscriptions,
        );
        let env = WorkerEnv {
            registry: Arc::new(Registry::new()),
            find_session: Box::new(|_, _| Box::pin(async { None })),
            advertised: Vec::new(),
            client_request_timeout: Duration::from_secs(1),
            logging: false,
            state: States::default(),
            elicitations: Arc::new(Elicitations::new(Duration::from_secs(60), 1)),
        };
        let workers = tokio::spawn(tasks.workers(env).expect("the workers, once"));
        tokio::time::sleep(Duration::from_secs(5)).await;
        let asked = queue.claims.load(Ordering::SeqCst);
        assert!(
            (10..=30).contains(&asked),
            "asked again every poll, not in a loop: {asked}"
        );
        assert_eq!(
            crate::store::TaskStore::count(&*store).await.unwrap(),
            0,
            "nothing failed or written"
        );
        tasks.stop_claiming();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(workers.is_finished(), "they stop once the instance stops claiming");
    }
}
