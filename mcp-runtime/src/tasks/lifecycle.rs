//! The lifecycle of a task: transitions (first terminal outcome wins),
//! cancellation, client input, status notifications, waiting for the end.
//!
//! Every write is a read-modify-write of the record under the task's write
//! lock, checked against the pure transition table of `mcp-protocol`
//! ([`TaskStatus::can_transition`]): a terminal status never changes, so a
//! later outcome is a no-op.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_protocol::jsonrpc::encode_notification;
use mcp_protocol::model::task::{TaskPayload, task_notification};
use mcp_protocol::model::{ClientCapabilities, TaskStatus};
use mcp_protocol::mrtr::{check_input_requests, missing_capability};
use mcp_protocol::{Era, Revision, RpcError};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{TaskOutcome, TaskOwner, TaskRecord, TaskStoreError, Tasks};
use crate::api::task_link::{LinkFuture, TaskLink};
use crate::quota::ClientKey;
use crate::sink::{Relay, Sink};

/// The part of a task that lives in the process running its worker.
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) id: String,
    pub(crate) owner: TaskOwner,
    /// Who the task counts against while it runs (`crate::quota`).
    pub(crate) client: ClientKey,
    /// The worker's cancellation token (the handler's `Ctx::cancellation`).
    pub(crate) work: CancellationToken,
    /// Where the task's messages go (see [`Relay`]).
    pub(crate) relay: Arc<Relay>,
    status: watch::Sender<TaskStatus>,
    write: tokio::sync::Mutex<()>,
    /// Input responses brought by `tasks/update`, not yet taken by the worker.
    gathered: Mutex<Map<String, Value>>,
    /// Legacy server-to-client requests of the task waiting for an answer.
    client_requests: AtomicUsize,
    /// The attempt this process runs, for a task of the queue (0: a task run where it was
    /// accepted, outside the queue).
    pub(crate) attempt: u32,
    /// Whether the task runs again elsewhere when this process stops running it.
    #[cfg_attr(not(feature = "shared-store"), allow(dead_code))]
    pub(crate) resumable: bool,
    /// Set when this attempt may no longer write: another attempt holds the task, or it was
    /// handed back.
    pub(crate) fenced: AtomicBool,
}

impl Live {
    /// The live part of attempt `run.0` of a task of the queue, resumable when `run.1`.
    pub(super) fn run(
        id: String,
        owner: TaskOwner,
        client: ClientKey,
        work: CancellationToken,
        relay: Arc<Relay>,
        (attempt, resumable): (u32, bool),
    ) -> Arc<Self> {
        Arc::new(Live {
            id,
            owner,
            client,
            work,
            relay,
            status: watch::Sender::new(TaskStatus::Working),
            write: tokio::sync::Mutex::new(()),
            gathered: Mutex::new(Map::new()),
            client_requests: AtomicUsize::new(0),
            attempt,
            resumable,
            fenced: AtomicBool::new(false),
        })
    }

    /// Whether the task reached a terminal status.
    pub(crate) fn is_finished(&self) -> bool {
        self.status.borrow().is_terminal()
    }
}

/// The [`TaskLink`] of a 2025-11-25 task's handler context: server-to-client requests
/// carry the `related-task` `_meta`, move the task to `input_required` while they wait, and
/// travel on the stream of a waiting `tasks/result` when the call's own stream is gone.
#[derive(Debug)]
pub(crate) struct LegacyTaskLink {
    pub(crate) tasks: Arc<Tasks>,
    pub(crate) live: Arc<Live>,
}

impl TaskLink for LegacyTaskLink {
    fn id(&self) -> &str {
        &self.live.id
    }

    fn streaming(&self) -> LinkFuture<'_> {
        Box::pin(self.live.relay.streaming())
    }

    fn begin_client_request(&self) -> LinkFuture<'_> {
        Box::pin(async move {
            if self.live.client_requests.fetch_add(1, Ordering::SeqCst) == 0 {
                self.tasks
                    .set_status(&self.live, TaskStatus::Working, TaskStatus::InputRequired)
                    .await;
            }
        })
    }

    fn end_client_request(&self) -> LinkFuture<'_> {
        Box::pin(async move {
            if self.live.client_requests.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.tasks
                    .set_status(&self.live, TaskStatus::InputRequired, TaskStatus::Working)
                    .await;
            }
        })
    }
}

impl Tasks {
    /// Read-modify-write of a record under the task's write lock. `change`
    /// returns whether it changed anything; a change stamps `updated_at`,
    /// is stored, wakes the waiters and notifies subscribers. Returns the
    /// record as it is afterwards (`None` when it is gone).
    pub(crate) async fn update(
        &self,
        task_id: &str,
        change: impl FnOnce(&mut TaskRecord) -> bool,
    ) -> Result<Option<TaskRecord>, TaskStoreError> {
        let live = self.live(task_id);
        let rec = {
            let _write = match &live {
                Some(l) => Some(l.write.lock().await),
                None => None,
            };
            let Some(mut rec) = self.store.get(task_id).await? else {
                return Ok(None);
            };
            // Fencing: an attempt that lost the task (to a newer one, or handed back) writes
            // nothing more.
            if let Some(l) = &live
                && (l.fenced.load(Ordering::Acquire) || l.attempt != rec.attempt)
            {
                if !l.fenced.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        task = task_id,
                        attempt = l.attempt,
                        "a newer attempt runs the task: this one stops"
                    );
                    l.work.cancel();
                }
                return Ok(Some(rec));
            }
            if !change(&mut rec) {
                return Ok(Some(rec));
            }
            rec.updated_at_ms = self.now_ms().max(rec.updated_at_ms);
            self.store.put(rec.clone()).await?;
            if let Some(l) = &live {
                l.status.send_replace(rec.status);
            }
            rec
        };
        self.notify(&rec, live.as_deref()).await;
        Ok(Some(rec))
    }

    /// Moves a task from `from` to `to` (nothing when it is elsewhere).
    async fn set_status(&self, live: &Live, from: TaskStatus, to: TaskStatus) {
        let r = self
            .update(&live.id, |r| {
                let go = r.status == from && from.can_transition(to);
                if go {
                    r.status = to;
                }
                go
            })
            .await;
        if let Err(e) = r {
            tracing::error!(task = %live.id, error = %e, "task status could not be stored");
        }
    }

    /// Ends a task with its first terminal outcome; later ones are no-ops.
    /// Returns whether this outcome was the one recorded.
    pub(crate) async fn finish(
        &self,
        live: &Live,
        status: TaskStatus,
        outcome: Option<TaskOutcome>,
        message: Option<&str>,
    ) -> bool {
        if self.live(&live.id).is_none_or(|l| !std::ptr::eq(&*l, live)) {
            // Released with its session (here or on another instance): its record is deleted,
            // and writing the outcome would bring it back. Or a newer attempt of it runs here.
            tracing::debug!(task = %live.id, ?status, "outcome of a released task not stored");
            return false;
        }
        let mut won = false;
        let r = self
            .update(&live.id, |r| {
                if !r.status.can_transition(status) || !status.is_terminal() {
                    return false;
                }
                r.status = status;
                r.outcome = outcome;
                r.status_message = message.map(str::to_owned);
                r.input_requests.clear();
                won = true;
                true
            })
            .await;
        if let Err(e) = r {
            tracing::error!(task = %live.id, error = %e, "task outcome could not be stored");
        }
        if !won {
            tracing::debug!(task = %live.id, ?status, "later outcome ignored: the task already ended");
        }
        won
    }

    /// Fails a task with a generic internal error (its detail in the log).
    pub(crate) async fn fail(&self, live: &Live, message: &str) -> bool {
        let outcome = Some(TaskOutcome::Error(RpcError::internal()));
        self.finish(live, TaskStatus::Failed, outcome, Some(message)).await
    }

    /// Cancels a task: `cancelled` is recorded first (unless it already
    /// ended), then its worker's token is cancelled. Returns the record.
    pub(crate) async fn cancel(&self, task_id: &str) -> Result<Option<TaskRecord>, RpcError> {
        if self.live(task_id).is_none()
            && let Some(rec) = self.cancel_elsewhere(task_id).await?
        {
            return Ok(Some(rec));
        }
        let rec = self
            .update(task_id, |r| {
                let go = r.status.can_transition(TaskStatus::Cancelled);
                if go {
                    r.status = TaskStatus::Cancelled;
                    r.status_message = Some("Cancelled by the client".into());
                    r.input_requests.clear();
                }
                go
            })
            .await
            .map_err(|e| {
                tracing::error!(task = task_id, error = %e, "task cancellation could not be stored");
                RpcError::internal()
            })?;
        if let Some(live) = self.live(task_id) {
            live.work.cancel();
        }
        Ok(rec)
    }

    /// With a shared store, a task whose worker runs on another live instance is cancelled
    /// there (under that instance's write lock, so that the first terminal outcome still wins):
    /// the request is forwarded and the record read back once it ended. `None` when this
    /// instance must cancel it itself (no store, an unknown or dead owner, no answer in time).
    async fn cancel_elsewhere(&self, task_id: &str) -> Result<Option<TaskRecord>, RpcError> {
        const WAIT: Duration = Duration::from_secs(2);
        let Some(s) = self.sharing() else { return Ok(None) };
        let read = |e: TaskStoreError| {
            tracing::error!(task = task_id, error = %e, "task store read failed");
            RpcError::internal()
        };
        let Some(rec) = self.store.get(task_id).await.map_err(read)? else {
            return Ok(None);
        };
        if rec.status.is_terminal() {
            return Ok(Some(rec));
        }
        let Some(owner) = rec.instance.as_deref() else {
            return Ok(None);
        };
        if owner == s.instance() || !s.is_alive(owner).await.unwrap_or(false) {
            return Ok(None);
        }
        s.forward_cancel(owner, task_id).map_err(|e| e.unavailable())?;
        let deadline = tokio::time::Instant::now() + WAIT;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            match self.store.get(task_id).await.map_err(read)? {
                Some(r) if r.status.is_terminal() => return Ok(Some(r)),
                Some(_) => {}
                None => return Ok(None),
            }
        }
        tracing::warn!(
            task = task_id,
            owner,
            "the instance running the task did not cancel it in time"
        );
        Ok(None)
    }

    /// A modern task's handler needs client input: checks the requests
    /// against the client's declared capabilities (a missing one fails the
    /// task with -32021), parks the task in `input_required` with them, and
    /// waits until `tasks/update` answered every one. Returns the responses
    /// (`None` when the task ended meanwhile).
    pub(crate) async fn await_input(
        &self,
        live: &Live,
        requests: Map<String, Value>,
        caps: &ClientCapabilities,
        revision: Option<Revision>,
    ) -> Option<Map<String, Value>> {
        if let Err(why) = check_input_requests(&requests) {
            tracing::error!(task = %live.id, %why, "handler returned a malformed input request");
            self.fail(live, "Internal tool error").await;
            return None;
        }
        if let Some(required) = requests.values().find_map(|r| missing_capability(r, caps, revision)) {
            let e = RpcError::missing_capability(required);
            self.finish(live, TaskStatus::Failed, Some(TaskOutcome::Error(e)), None)
                .await;
            return None;
        }
        let mut status = live.status.subscribe();
        let parked = self
            .update(&live.id, |r| {
                let go = r.status.can_transition(TaskStatus::InputRequired);
                if go {
                    r.status = TaskStatus::InputRequired;
                    r.input_requests = requests;
                }
                go
            })
            .await;
        match parked {
            Ok(Some(r)) if r.status == TaskStatus::InputRequired => {}
            Ok(_) => return None,
            Err(e) => {
                tracing::error!(task = %live.id, error = %e, "task could not wait for input");
                self.fail(live, "Task store failure").await;
                return None;
            }
        }
        loop {
            let now = *status.borrow_and_update();
            match now {
                TaskStatus::Working => break,
                s if s.is_terminal() => return None,
                _ => {}
            }
            tokio::select! {
                changed = status.changed() => if changed.is_err() { return None },
                () = live.work.cancelled() => return None,
            }
        }
        Some(std::mem::take(
            &mut *live.gathered.lock().unwrap_or_else(PoisonError::into_inner),
        ))
    }

    /// `tasks/update`: records the responses to outstanding input requests
    /// (others are ignored); when none is left the task works again and its
    /// handler resumes with them. A task this process does not run goes to `runner`, the
    /// instance its record names.
    pub(crate) async fn feed_input(
        &self,
        task_id: &str,
        runner: Option<&str>,
        responses: &Map<String, Value>,
    ) -> Result<(), RpcError> {
        let Some(live) = self.live(task_id) else {
            match (self.sharing(), runner) {
                // Another instance runs the worker and gathers its input.
                (Some(s), Some(runner)) if runner != s.instance() => {
                    return s.forward_input(runner, task_id, responses).map_err(|e| e.unavailable());
                }
                _ => tracing::debug!(task = task_id, "input for a task no instance runs: ignored"),
            }
            return Ok(());
        };
        self.update(task_id, |r| {
            if r.status != TaskStatus::InputRequired {
                return false;
            }
            let mut gathered = live.gathered.lock().unwrap_or_else(PoisonError::into_inner);
            let mut any = false;
            for (k, v) in responses {
                if r.input_requests.remove(k).is_some() {
                    gathered.insert(k.clone(), v.clone());
                    any = true;
                }
            }
            if any && r.input_requests.is_empty() {
                r.status = TaskStatus::Working;
            }
            any
        })
        .await
        .map(|_| ())
        .map_err(|e| {
            tracing::error!(task = task_id, error = %e, "task input could not be stored");
            RpcError::internal()
        })
    }

    /// Waits until a task ends (for 2025-11-25 `tasks/result`): woken by
    /// status changes of a task this process runs, else polling the store. `on_read` sees each
    /// record read while it has not ended.
    pub(crate) async fn wait_terminal(
        &self,
        task_id: &str,
        owner: Option<&TaskOwner>,
        timeout: Duration,
        cancel: &CancellationToken,
        on_read: &mut (dyn FnMut(&TaskRecord) + Send),
    ) -> Result<TaskRecord, RpcError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let poll = Duration::from_millis(self.limits.poll_interval_ms.max(10));
        loop {
            let mut changes = self.live(task_id).map(|l| l.status.subscribe());
            let rec = self.lookup(task_id, owner).await?;
            if rec.status.is_terminal() {
                return Ok(rec);
            }
            on_read(&rec);
            let changed = async {
                match changes.as_mut() {
                    Some(rx) => {
                        let _ = rx.changed().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep(poll) => {}
                () = tokio::time::sleep_until(deadline) => {
                    return Err(RpcError::internal_with("The task did not end in time"));
                }
                () = cancel.cancelled() => return Err(RpcError::internal_with("Request cancelled")),
            }
        }
    }

    /// Announces a change: `notifications/tasks` to the `subscriptions/listen`
    /// streams that asked for the task (extension), or
    /// `notifications/tasks/status` on the task's stream when there is one
    /// (2025-11-25: the stream of the creating call while it is open, e.g.
    /// the stdio process stream, or of a waiting `tasks/result`).
    async fn notify(&self, rec: &TaskRecord, live: Option<&Live>) {
        let task = rec.task();
        match rec.owner.era() {
            Era::Modern => {
                let (_, params) = task_notification(&task, Era::Modern, payload(rec));
                if let Some(s) = self.sharing() {
                    s.task_changed(&rec.task_id, &params);
                }
                self.subscriptions.task_changed(&rec.task_id, params);
            }
            Era::Legacy => {
                let Some(live) = live else { return };
                let sink = Sink::relay(live.relay.clone());
                if sink.can_stream() {
                    let (method, params) = task_notification(&task, Era::Legacy, TaskPayload::None);
                    sink.send(encode_notification(method, Some(&Value::Object(params))))
                        .await;
                }
            }
        }
    }
}

/// What a task's `DetailedTask` inlines, from its record.
pub(crate) fn payload(rec: &TaskRecord) -> TaskPayload<'_> {
    match (rec.status, &rec.outcome) {
        (TaskStatus::InputRequired, _) => TaskPayload::InputRequests(&rec.input_requests),
        (TaskStatus::Completed, Some(TaskOutcome::Result(v))) => TaskPayload::Result(v),
        (TaskStatus::Failed, Some(TaskOutcome::Error(e))) => TaskPayload::Error(e),
        _ => TaskPayload::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerConfig;
    use crate::listen::{Limits, Subscriptions};
    use crate::tasks::InMemoryTaskStore;

    async fn task(tasks: &Tasks) -> Arc<Live> {
        let owner = TaskOwner::Principal("p".into());
        let (_, live) = tasks
            .create(
                owner,
                ClientKey::Principal("p".into()),
                None,
                CancellationToken::new(),
                Relay::new(None),
                None,
            )
            .await
            .unwrap();
        live
    }

    fn tasks() -> Arc<Tasks> {
        Tasks::new(
            &ServerConfig::default(),
            Arc::new(InMemoryTaskStore::new()),
            Arc::new(crate::store::MemoryQueue::new()),
            Arc::new(Subscriptions::new(Limits::unbounded(), None)),
        )
    }

    #[tokio::test]
    async fn first_terminal_outcome_wins() {
        let tasks = tasks();
        let live = task(&tasks).await;
        let first = Some(TaskOutcome::Result(serde_json::json!({"content": []})));
        assert!(tasks.finish(&live, TaskStatus::Completed, first.clone(), None).await);
        assert!(!tasks.fail(&live, "late").await);
        assert!(!tasks.finish(&live, TaskStatus::Cancelled, None, Some("late")).await);
        let rec = tasks.store().get(&live.id).await.unwrap().unwrap();
        assert_eq!(
            (rec.status, rec.outcome, rec.status_message),
            (TaskStatus::Completed, first, None)
        );
        // Cancelling an ended task records nothing, but still stops the worker.
        let after = tasks.cancel(&live.id).await.unwrap().unwrap();
        assert_eq!(after.status, TaskStatus::Completed);
        assert!(live.work.is_cancelled());
    }

    #[tokio::test]
    async fn input_round_trip_and_partial_answers() {
        let tasks = tasks();
        let live = task(&tasks).await;
        let mut requests = Map::new();
        for k in ["a", "b"] {
            requests.insert(k.into(), serde_json::json!({"method": "roots/list", "params": {}}));
        }
        let caps = ClientCapabilities::new(serde_json::json!({"roots": {}}).as_object().cloned().unwrap());
        let waiter = {
            let (tasks, live) = (tasks.clone(), live.clone());
            tokio::spawn(async move { tasks.await_input(&live, requests, &caps, None).await })
        };
        while tasks.store().get(&live.id).await.unwrap().unwrap().status != TaskStatus::InputRequired {
            tokio::task::yield_now().await;
        }
        let answer = |k: &str| {
            let mut m = Map::new();
            m.insert(k.into(), serde_json::json!({"roots": []}));
            m.insert("unknown".into(), serde_json::json!({}));
            m
        };
        tasks.feed_input(&live.id, None, &answer("a")).await.unwrap();
        let rec = tasks.store().get(&live.id).await.unwrap().unwrap();
        assert_eq!(rec.status, TaskStatus::InputRequired);
        assert_eq!(rec.input_requests.keys().collect::<Vec<_>>(), ["b"]);
        tasks.feed_input(&live.id, None, &answer("b")).await.unwrap();
        let got = waiter.await.unwrap().unwrap();
        assert_eq!(got.keys().collect::<Vec<_>>(), ["a", "b"]);
        let rec = tasks.store().get(&live.id).await.unwrap().unwrap();
        assert_eq!(rec.status, TaskStatus::Working);
        assert!(rec.input_requests.is_empty());
    }

    #[tokio::test]
    async fn undeclared_capability_fails_the_task() {
        let tasks = tasks();
        let live = task(&tasks).await;
        let mut requests = Map::new();
        requests.insert(
            "s".into(),
            serde_json::json!({"method": "sampling/createMessage", "params": {}}),
        );
        let got = tasks
            .await_input(&live, requests, &ClientCapabilities::default(), None)
            .await;
        assert!(got.is_none());
        let rec = tasks.store().get(&live.id).await.unwrap().unwrap();
        assert_eq!(rec.status, TaskStatus::Failed);
        assert!(matches!(rec.outcome, Some(TaskOutcome::Error(e)) if e.code == -32021));
    }
}
