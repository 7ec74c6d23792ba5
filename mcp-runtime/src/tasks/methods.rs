//! The tasks methods of both eras.
//!
//! | method | 2025-11-25 (legacy) | extension (modern) |
//! | --- | --- | --- |
//! | `tasks/get` | `Result & Task` | `DetailedTask` (result, error or input requests inlined) |
//! | `tasks/result` | blocks until the task ends; what the call returned + `related-task` `_meta`, or its error | -32601 (catalogue) |
//! | `tasks/list` | the caller's tasks, paginated | -32601 (catalogue) |
//! | `tasks/cancel` | the cancelled `Task`; a task that already ended is -32602 | `{}` acknowledgement, also for an ended task |
//! | `tasks/update` | -32601 (catalogue) | records `inputResponses`, `{}` acknowledgement |
//!
//! In the modern era every tasks method of a client that did not declare
//! the extension is -32021 (the route refuses it, `Method::extension`). An unknown id, an expired task and another
//! owner's task are the same -32602.

use mcp_protocol::cursor::paginate;
use mcp_protocol::model::task::{get_task_result, list_tasks_result, task_id_param, with_related_task};
use mcp_protocol::model::{Task, TaskStatus};
use mcp_protocol::mrtr::parse_input_responses;
use mcp_protocol::{Era, Method, RpcError};
use serde_json::{Map, Value};

use super::lifecycle::payload;
use super::{TaskOutcome, TaskOwner, TaskRecord, Tasks};
use crate::api::Ctx;

/// The owner a request acts as: its session (legacy), its principal
/// (modern), or nobody (a legacy request without a session owns no task).
pub(crate) fn owner_of(ctx: &Ctx) -> Option<TaskOwner> {
    match (ctx.era(), ctx.session()) {
        (Era::Modern, _) => Some(TaskOwner::Principal(ctx.principal().to_owned())),
        (Era::Legacy, Some(s)) => Some(TaskOwner::Session {
            principal: ctx.principal().to_owned(),
            session: s.id().to_string(),
        }),
        (Era::Legacy, None) => None,
    }
}

impl Tasks {
    /// Runs a tasks method (see the module docs).
    pub(crate) async fn serve(
        &self,
        ctx: &Ctx,
        method: &Method,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        // A modern client that did not declare the tasks extension was refused by the route.
        let era = ctx.era();
        let owner = owner_of(ctx);
        match (method, era) {
            (Method::TasksGet, _) => {
                let rec = self.lookup(task_id_param(params)?, owner.as_ref()).await?;
                Ok(get_task_result(&rec.task(), era, payload(&rec)))
            }
            (Method::TasksCancel, _) => self.cancel_task(task_id_param(params)?, owner.as_ref(), era).await,
            (Method::TasksResult, Era::Legacy) => self.task_result(ctx, task_id_param(params)?, owner.as_ref()).await,
            (Method::TasksList, Era::Legacy) => self.list_tasks(params, owner.as_ref()).await,
            (Method::TasksUpdate, Era::Modern) => {
                let id = task_id_param(params)?;
                let responses = params
                    .get("inputResponses")
                    .ok_or_else(|| RpcError::invalid_params("inputResponses must be an object"))
                    .and_then(parse_input_responses)?;
                let rec = self.lookup(id, owner.as_ref()).await?;
                self.feed_input(id, rec.instance.as_deref(), responses).await?;
                Ok(Value::Object(Map::new()))
            }
            (other, _) => Err(RpcError::method_not_found(other.as_str())),
        }
    }

    async fn cancel_task(&self, id: &str, owner: Option<&TaskOwner>, era: Era) -> Result<Value, RpcError> {
        let rec = self.lookup(id, owner).await?;
        let ended = || RpcError::invalid_params("Task already ended");
        if era == Era::Legacy && rec.status.is_terminal() {
            return Err(ended());
        }
        let after = self.cancel(id).await?;
        match era {
            Era::Modern => Ok(Value::Object(Map::new())),
            Era::Legacy => match after {
                Some(r) if r.status == TaskStatus::Cancelled => Ok(Value::Object(r.task().render(Era::Legacy))),
                // It ended on its own between the check and the cancellation.
                Some(_) => Err(ended()),
                None => Err(RpcError::invalid_params("Task not found")),
            },
        }
    }

    /// 2025-11-25 `tasks/result`: waits for the end (the request's stream
    /// carries the task's server-to-client requests meanwhile, wherever the
    /// task runs), then answers
    /// exactly what the call would have, with the `related-task` `_meta`.
    async fn task_result(&self, ctx: &Ctx, id: &str, owner: Option<&TaskOwner>) -> Result<Value, RpcError> {
        let rec = self.lookup(id, owner).await?;
        // The task's messages come on this request's stream while it waits: from the relay of
        // a task run here, through the bus from one run elsewhere (the instance its record
        // names: followed again whenever the record names another, as when a worker claims a
        // queued task, or runs it again after its instance stopped).
        let mut following = None;
        let mut followed: Option<String> = None;
        let mut follow = |rec: &TaskRecord| {
            if !ctx.sink().can_stream() || followed.as_deref() == Some(rec.instance.as_deref().unwrap_or("")) {
                return;
            }
            followed = Some(rec.instance.clone().unwrap_or_default());
            if let Some(live) = self.live(id) {
                live.relay.attach(ctx.sink().clone());
                return;
            }
            if let (Some(s), Some(runner)) = (self.sharing(), rec.instance.as_deref())
                && runner != s.instance()
            {
                // The guard of the previous runner, if any, is dropped: it stops sending here.
                following = Some(s.follow(runner, id, ctx.sink().clone()));
            }
        };
        follow(&rec);
        let timeout = self.limits.result_timeout;
        let rec = self
            .wait_terminal(id, owner, timeout, ctx.cancellation(), &mut follow)
            .await?;
        drop(following);
        match rec.outcome {
            Some(TaskOutcome::Result(mut v)) => {
                with_related_task(&mut v, id);
                Ok(v)
            }
            Some(TaskOutcome::Error(e)) => Err(e),
            None => Err(RpcError::internal_with("Task was cancelled")),
        }
    }

    async fn list_tasks(&self, params: &Map<String, Value>, owner: Option<&TaskOwner>) -> Result<Value, RpcError> {
        let cursor = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.as_str()),
            Some(_) => return Err(RpcError::invalid_params("Invalid cursor")),
        };
        let Some(owner) = owner else {
            return Ok(list_tasks_result(&[], None));
        };
        self.ensure_recovered().await;
        let records = self.store().list(owner).await.map_err(|e| {
            tracing::error!(error = %e, "task store list failed");
            RpcError::internal()
        })?;
        let now = self.now_ms();
        let mut keyed: Vec<(String, TaskRecord)> = records
            .into_iter()
            .filter(|r| r.expires_at_ms().is_none_or(|e| e > now))
            .map(|r| (r.list_key(), r))
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        let (page, next) = paginate(&keyed, |(k, _)| k, cursor, self.limits.page_size)?;
        let tasks: Vec<Task> = page.iter().map(|(_, r)| r.task()).collect();
        Ok(list_tasks_result(&tasks, next))
    }
}
