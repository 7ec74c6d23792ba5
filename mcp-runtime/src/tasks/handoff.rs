//! The hand-off of a running call to a task (behaviour invariants 9–12).
//!
//! The handler runs in a worker task that reports its outcome through a
//! [`Handoff`] slot: to the request while the call is inline, to the task
//! once it is handed off. The switch happens under the slot's lock, after
//! the task is stored, so that exactly one of two things happens: the
//! outcome is answered in place (and the task, whose id nobody saw, is
//! discarded), or the task gets it. A worker that ends without reporting
//! fails its task.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::model::render::finalize;
use mcp_protocol::model::task::{create_task_result, requested_ttl};
use mcp_protocol::model::{CallToolResult, TaskStatus};
use mcp_protocol::{Era, Params, RpcError};
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "shared-store")]
use super::TaskCall;
#[cfg(feature = "shared-store")]
use super::durable::Resumption;
use super::{LegacyTaskLink, Live, TaskOutcome, TaskOwner, Tasks};
use crate::api::task_link::TaskLink;
use crate::api::{Ctx, InputRequired};
use crate::catalog::ToolEntry;
use crate::exec::RoundLimits;
use crate::exec::rounds::Rounds;
use crate::exec::tool::{Arguments, Settled, execute, in_place};
#[cfg(feature = "shared-store")]
use crate::observe::tasks as observe;
use crate::reply::Reply;
use crate::sink::{Relay, Sink};
#[cfg(feature = "shared-store")]
use tracing::Instrument;

/// Where the worker's outcome goes.
enum Slot {
    /// To the request, still waiting inline.
    Inline(Option<oneshot::Sender<Settled>>),
    /// To the task.
    Task(Arc<Live>),
}

/// The slot a worker reports through.
struct Handoff {
    slot: Mutex<Slot>,
}

/// What became of an offered outcome.
enum Offered {
    /// The request took it (or is gone).
    Answered,
    /// The call is a task now: the outcome is the task's.
    Task(Arc<Live>, Settled),
}

impl Handoff {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn offer(&self, settled: Settled) -> Offered {
        let mut slot = self.lock();
        match &mut *slot {
            Slot::Inline(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(settled);
                }
                Offered::Answered
            }
            Slot::Task(live) => Offered::Task(live.clone(), settled),
        }
    }
}

/// Fails the task of a worker that ends without reporting (aborted, or its
/// runtime shut down): the inline request sees its sender dropped.
struct WorkerGuard {
    handoff: Arc<Handoff>,
    tasks: Arc<Tasks>,
    reported: bool,
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        if self.reported {
            return;
        }
        let mut slot = self.handoff.lock();
        match &mut *slot {
            Slot::Inline(tx) => drop(tx.take()),
            Slot::Task(live) => {
                let (tasks, live) = (self.tasks.clone(), live.clone());
                tracing::error!(task = %live.id, "task worker ended without an outcome");
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        tasks.fail(&live, "Task worker ended without an outcome").await;
                    });
                }
            }
        }
    }
}

/// Runs a call to its end, reporting each outcome through the slot; input
/// requests of a task park it until `tasks/update` answers them, then the
/// handler runs again with the responses.
async fn run_worker(
    tasks: Arc<Tasks>,
    handoff: Arc<Handoff>,
    limits: RoundLimits,
    tool: Arc<ToolEntry>,
    args: Map<String, Value>,
    ctx: Ctx,
) {
    let mut guard = WorkerGuard {
        handoff: handoff.clone(),
        tasks: tasks.clone(),
        reported: false,
    };
    let mut ctx = ctx;
    let again = || args.clone();
    let arguments = Arguments {
        text: None,
        read: &again,
    };
    loop {
        let settled = execute(limits, &tool, arguments, ctx.clone()).await;
        match handoff.offer(settled) {
            Offered::Answered => break,
            Offered::Task(live, Settled::Input(ir, round)) => {
                let InputRequired { requests, state } = *ir;
                let caps = round.client_capabilities().clone();
                match tasks.await_input(&live, requests, &caps, round.revision()).await {
                    Some(fresh) => {
                        let mut responses = round.input_responses().cloned().unwrap_or_default();
                        responses.extend(fresh);
                        ctx = round.next_round(responses, state);
                    }
                    None => break,
                }
            }
            Offered::Task(live, settled) => {
                tasks.settle(&live, settled).await;
                break;
            }
        }
    }
    guard.reported = true;
    let live = match &*handoff.lock() {
        Slot::Task(live) => Some(live.clone()),
        Slot::Inline(_) => None,
    };
    if let Some(live) = live {
        tasks.end_attempt(&live).await;
    }
}

#[cfg(feature = "shared-store")]
/// Runs a task the queue handed this instance (`Tasks::run_claimed`) to its end.
pub(super) async fn run_claimed(
    tasks: Arc<Tasks>,
    live: Arc<Live>,
    tool: Arc<ToolEntry>,
    args: Map<String, Value>,
    ctx: Ctx,
) {
    let handoff = Arc::new(Handoff {
        slot: Mutex::new(Slot::Task(live)),
    });
    let limits = tasks.limits.run;
    run_worker(tasks, handoff, limits, tool, args, ctx).await;
}

impl Tasks {
    /// Records a worker's final outcome. A tool error completes the task
    /// with `isError` in the extension and fails it in 2025-11-25; a
    /// protocol error or a panic fails it; a cancelled run cancels it.
    async fn settle(&self, live: &Live, settled: Settled) {
        let era = live.owner.era();
        match settled {
            Settled::Done(Ok(out)) => {
                let mut v = out.render();
                let is_error = v.get("isError").and_then(Value::as_bool) == Some(true);
                if era == Era::Modern {
                    finalize(Era::Modern, &mut v, None, None);
                }
                let status = match (era, is_error) {
                    (Era::Legacy, true) => TaskStatus::Failed,
                    _ => TaskStatus::Completed,
                };
                self.finish(live, status, Some(TaskOutcome::Result(v)), None).await;
            }
            Settled::Done(Err(e)) => {
                self.finish(live, TaskStatus::Failed, Some(TaskOutcome::Error(e)), None)
                    .await;
            }
            Settled::Panicked => {
                self.fail(live, "Internal tool error").await;
            }
            Settled::Input(..) => {
                tracing::error!(task = %live.id, "input request outside a task round");
                self.fail(live, "Internal tool error").await;
            }
            Settled::Cancelled => {
                self.finish(live, TaskStatus::Cancelled, None, Some("Cancelled")).await;
            }
        }
    }
}

impl Tasks {
    /// Legacy (2025-11-25) task-augmented call: the task is created at once
    /// (refused over the bounds, the handler never runs), the worker starts,
    /// and the nested `CreateTaskResult` is the answer.
    pub(crate) async fn task_first(
        self: &Arc<Self>,
        ctx: Ctx,
        tool: Arc<ToolEntry>,
        args: Map<String, Value>,
        task: Option<&Value>,
    ) -> Reply {
        let Some(session) = ctx.session().cloned() else {
            return Reply::Error(RpcError::internal());
        };
        let owner = TaskOwner::Session {
            principal: ctx.principal().to_owned(),
            session: session.id().to_string(),
        };
        // The session's end deletes its tasks, wherever it ends.
        if let Err(e) = session.mark_tasks().await {
            return Reply::Error(e.unavailable());
        }
        #[cfg(feature = "shared-store")]
        if !self.limits.runs.role.runs_tasks() {
            let call = TaskCall::of(&ctx, tool.resumable);
            return match self
                .queue_call(owner, ctx.client(), task.and_then(requested_ttl), call)
                .await
            {
                Ok(rec) => Reply::Result(create_task_result(&rec.task(), Era::Legacy)),
                Err(e) => Reply::Error(e),
            };
        }
        // The task outlives the request; it ends with its session.
        let work = session.closed().child_token();
        let relay = Relay::new(Some(ctx.sink().clone()));
        let ttl = task.and_then(requested_ttl);
        #[cfg(feature = "shared-store")]
        let call = tool.resumable.then(|| TaskCall::of(&ctx, true));
        #[cfg(not(feature = "shared-store"))]
        let call = None;
        let created = self.create(owner, ctx.client(), ttl, work.clone(), relay.clone(), call);
        let (rec, live) = match created.await {
            Ok(created) => created,
            Err(e) => return Reply::Error(e),
        };
        let link: Arc<dyn TaskLink> = Arc::new(LegacyTaskLink {
            tasks: self.clone(),
            live: live.clone(),
        });
        #[cfg_attr(not(feature = "shared-store"), allow(unused_mut))]
        let mut wctx = ctx.for_task(work, Sink::relay(relay), Some(link));
        // A resumable tool's first attempt has its span, as the later ones.
        #[cfg(feature = "shared-store")]
        let span = match tool.resumable {
            true => observe::attempt(Some(&rec.task_id), 1, &tool.def.name, Some(ctx.params()), false),
            false => tracing::Span::none(),
        };
        #[cfg(feature = "shared-store")]
        if tool.resumable {
            let resumption = Resumption::new(self, 1, None);
            resumption.became(live.clone()).await;
            wctx = wctx.resuming(resumption);
        }
        let handoff = Arc::new(Handoff {
            slot: Mutex::new(Slot::Task(live)),
        });
        let worker = run_worker(self.clone(), handoff, self.limits.run, tool, args, wctx);
        #[cfg(feature = "shared-store")]
        let worker = worker.instrument(span);
        crate::background::spawn(worker);
        Reply::Result(create_task_result(&rec.task(), Era::Legacy))
    }

    /// Modern call from a client that declared the extension: runs inline for
    /// `task_inline_ms`; an outcome inside the window (or during the hand-off)
    /// is answered in place, else the running call is handed to a task and
    /// the flat `CreateTaskResult` is the answer.
    pub(crate) async fn escalate(
        self: &Arc<Self>,
        rounds: &Rounds,
        ctx: Ctx,
        tool: Arc<ToolEntry>,
        args: Map<String, Value>,
        params: &Params,
    ) -> Reply {
        #[cfg(feature = "shared-store")]
        if !self.limits.runs.role.runs_tasks() {
            // A front runs nothing: the call is a task for a worker at once.
            let owner = TaskOwner::Principal(ctx.principal().to_owned());
            let call = TaskCall::of(&ctx, tool.resumable);
            return match self.queue_call(owner, ctx.client(), None, call).await {
                Ok(rec) => Reply::Result(create_task_result(&rec.task(), Era::Modern)),
                Err(e) => Reply::Error(e),
            };
        }
        let request_cancel = ctx.cancellation().clone();
        let revision = ctx.revision();
        let work = CancellationToken::new();
        // The work stops with the request until it is handed off.
        let stop_with_request = work.clone().drop_guard();
        let relay = Relay::new(Some(ctx.sink().clone()));
        #[cfg_attr(not(feature = "shared-store"), allow(unused_mut))]
        let mut wctx = ctx.for_task(work.clone(), Sink::relay(relay.clone()), None);
        // A resumable tool's run knows its attempt from the start, its task once handed off.
        #[cfg(feature = "shared-store")]
        let resumption = tool.resumable.then(|| Resumption::new(self, 1, None));
        #[cfg(feature = "shared-store")]
        if let Some(r) = &resumption {
            wctx = wctx.resuming(r.clone());
        }
        #[cfg(feature = "shared-store")]
        let call = tool.resumable.then(|| TaskCall::of(&ctx, true));
        #[cfg(not(feature = "shared-store"))]
        let call = None;
        let (tx, mut rx) = oneshot::channel();
        let handoff = Arc::new(Handoff {
            slot: Mutex::new(Slot::Inline(Some(tx))),
        });
        let limits = self.limits.run;
        #[cfg(feature = "shared-store")]
        let span = match tool.resumable {
            true => observe::attempt(None, 1, &tool.def.name, Some(ctx.params()), false),
            false => tracing::Span::none(),
        };
        let worker = run_worker(self.clone(), handoff.clone(), limits, tool, args, wctx);
        #[cfg(feature = "shared-store")]
        let worker = worker.instrument(span.clone());
        crate::background::spawn(worker);

        let window = self.limits.inline_window;
        tokio::select! {
            settled = &mut rx => return in_place_or_gone(rounds, params, revision, settled.ok()),
            () = tokio::time::sleep(window) => {}
            () = request_cancel.cancelled() => return Reply::Cancelled,
        }
        if let Ok(settled) = rx.try_recv() {
            return in_place_or_gone(rounds, params, revision, Some(settled));
        }
        let owner = TaskOwner::Principal(ctx.principal().to_owned());
        let (rec, live) = match self
            .create(owner, ctx.client(), None, work.clone(), relay.clone(), call)
            .await
        {
            Ok(created) => created,
            // Over the bounds: the work stops (the guard cancels it).
            Err(e) => return Reply::Error(e),
        };
        let early = {
            let mut slot = handoff.lock();
            match rx.try_recv() {
                Err(oneshot::error::TryRecvError::Empty) => {
                    *slot = Slot::Task(live.clone());
                    None
                }
                Ok(settled) => Some(Some(settled)),
                Err(oneshot::error::TryRecvError::Closed) => Some(None),
            }
        };
        if let Some(settled) = early {
            // The outcome arrived during the hand-off: nobody saw the task.
            self.discard(&live).await;
            return in_place_or_gone(rounds, params, revision, settled);
        }
        stop_with_request.disarm();
        // Nothing more of the call reaches the request's stream.
        relay.detach();
        #[cfg(feature = "shared-store")]
        if let Some(r) = resumption {
            observe::named(&span, &rec.task_id);
            r.became(live.clone()).await;
        }
        tracing::debug!(task = %rec.task_id, "call handed off to a task");
        Reply::Result(create_task_result(&rec.task(), Era::Modern))
    }
}

/// Answers an inline outcome (`None`: the worker vanished).
fn in_place_or_gone(
    rounds: &Rounds,
    params: &Params,
    revision: Option<mcp_protocol::Revision>,
    settled: Option<Settled>,
) -> Reply {
    match settled {
        Some(s) => in_place(rounds, params, revision, s),
        None => Reply::Result(CallToolResult::error("Internal tool error").render(revision)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerConfig;
    use crate::listen::{Limits, Subscriptions};
    use crate::tasks::InMemoryTaskStore;

    #[tokio::test]
    async fn a_worker_dropped_without_an_outcome_fails_its_task() {
        let tasks = Tasks::new(
            &ServerConfig::default(),
            Arc::new(InMemoryTaskStore::new()),
            Arc::new(crate::store::MemoryQueue::new()),
            Arc::new(Subscriptions::new(Limits::unbounded(), None)),
        );
        let owner = TaskOwner::Principal("p".into());
        let (rec, live) = tasks
            .create(
                owner,
                crate::quota::ClientKey::Principal("p".into()),
                None,
                CancellationToken::new(),
                Relay::new(None),
                None,
            )
            .await
            .unwrap();
        let handoff = Arc::new(Handoff {
            slot: Mutex::new(Slot::Task(live)),
        });
        // A worker that never reports, aborted.
        let guard = WorkerGuard {
            handoff,
            tasks: tasks.clone(),
            reported: false,
        };
        let worker = tokio::spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        worker.abort();
        let _ = worker.await;
        for _ in 0..100 {
            let r = tasks.store().get(&rec.task_id).await.unwrap().unwrap();
            if r.status == TaskStatus::Failed {
                assert_eq!(
                    r.status_message.as_deref(),
                    Some("Task worker ended without an outcome")
                );
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the task was not failed");
    }

    #[tokio::test]
    async fn an_inline_worker_dropped_closes_the_request_slot() {
        let tasks = Tasks::new(
            &ServerConfig::default(),
            Arc::new(InMemoryTaskStore::new()),
            Arc::new(crate::store::MemoryQueue::new()),
            Arc::new(Subscriptions::new(Limits::unbounded(), None)),
        );
        let (tx, rx) = oneshot::channel();
        let handoff = Arc::new(Handoff {
            slot: Mutex::new(Slot::Inline(Some(tx))),
        });
        drop(WorkerGuard {
            handoff,
            tasks,
            reported: false,
        });
        assert!(rx.await.is_err());
    }
}
