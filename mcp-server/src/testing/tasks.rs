//! Task-capable tools: a `tools/call` that may become a task, and following the task to its
//! result, in either era.

use std::collections::HashSet;
use std::time::Duration;

use mcp_protocol::Era;
use mcp_protocol::model::CallToolResult;
use serde_json::{Map, Value, json};

use super::client::TestClient;
use super::exchange::{ClientError, ServerRequest, decode};

/// What a `tools/call` sent by [`TestClient::call_tool_as_task`] answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// The tool's result, inline.
    Done(CallToolResult),
    /// The call became a task: follow it with [`TestClient::task_result`].
    Task(TaskInfo),
}

impl ToolCall {
    /// The task, if the call became one.
    pub fn task(&self) -> Option<&TaskInfo> {
        match self {
            ToolCall::Task(t) => Some(t),
            ToolCall::Done(_) => None,
        }
    }
}

/// A task as the server reported it (`CreateTaskResult`, `tasks/get`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task id.
    pub task_id: String,
    /// Its status: `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// The task object as sent (legacy: the nested `task`; modern: the flat result).
    pub raw: Value,
}

impl TaskInfo {
    fn from_task(task: &Value) -> Result<Self, ClientError> {
        let field = |k: &str| task.get(k).and_then(Value::as_str).map(str::to_owned);
        match (field("taskId"), field("status")) {
            (Some(task_id), Some(status)) => Ok(TaskInfo {
                task_id,
                status,
                raw: task.clone(),
            }),
            _ => Err(ClientError::Unexpected(format!("not a task: {task}"))),
        }
    }

    /// Whether the task has ended (`completed`, `failed`, `cancelled`).
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

/// How long [`TestClient::task_result`] waits for a modern task before giving up.
const TASK_DEADLINE: Duration = Duration::from_secs(60);

impl TestClient {
    /// `tools/call` asking for a task where the era lets the client ask: a legacy client adds
    /// `task: {}` (2025-11-25 core tasks); a modern client only declares the tasks extension
    /// ([`TestClientBuilder::tasks_extension`](super::TestClientBuilder::tasks_extension)) and
    /// the server decides (a call that outlasts its short inline window becomes a task).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: impl serde::Serialize,
    ) -> Result<ToolCall, ClientError> {
        let arguments = serde_json::to_value(arguments).map_err(|e| ClientError::Unexpected(e.to_string()))?;
        let mut params = json!({"name": name, "arguments": arguments});
        if self.era() == Era::Legacy {
            params["task"] = json!({});
        }
        let result = self.request("tools/call", params).await?;
        if let Some(task) = result.get("task").filter(|t| t.is_object()) {
            return Ok(ToolCall::Task(TaskInfo::from_task(task)?));
        }
        if result.get("resultType").and_then(Value::as_str) == Some("task") {
            return Ok(ToolCall::Task(TaskInfo::from_task(&result)?));
        }
        Ok(ToolCall::Done(decode("tools/call", result)?))
    }

    /// `tasks/get`: the task's current state.
    pub async fn get_task(&self, task_id: &str) -> Result<TaskInfo, ClientError> {
        let result = self.request("tasks/get", json!({ "taskId": task_id })).await?;
        TaskInfo::from_task(&result)
    }

    /// `tasks/cancel` (the answer: legacy, the cancelled task; modern, an acknowledgement).
    pub async fn cancel_task(&self, task_id: &str) -> Result<Value, ClientError> {
        self.request("tasks/cancel", json!({ "taskId": task_id })).await
    }

    /// Waits for a task's result: what the `tools/call` would have returned.
    ///
    /// Legacy: `tasks/result`, which blocks until the task ends; server-to-client requests
    /// the task makes meanwhile travel on its stream and are answered from the script.
    /// Modern: `tasks/get` every `pollIntervalMs` (at most 50 ms here); outstanding
    /// `inputRequests` are answered from the script with `tasks/update`. A failed task is its
    /// [`ClientError::Rpc`], a cancelled one [`ClientError::Cancelled`].
    pub async fn task_result(&self, task_id: &str) -> Result<CallToolResult, ClientError> {
        if self.era() == Era::Legacy {
            let result = self.request("tasks/result", json!({ "taskId": task_id })).await?;
            return decode("tasks/result", result);
        }
        let deadline = tokio::time::Instant::now() + TASK_DEADLINE;
        let mut answered = HashSet::new();
        loop {
            let task = self.request("tasks/get", json!({ "taskId": task_id })).await?;
            match task.get("status").and_then(Value::as_str) {
                Some("completed") => {
                    return decode("tasks/get result", task.get("result").cloned().unwrap_or_default());
                }
                Some("failed") => {
                    let error = task.get("error").cloned().unwrap_or_default();
                    return Err(ClientError::Rpc(decode("tasks/get error", error)?));
                }
                Some("cancelled") => return Err(ClientError::Cancelled),
                Some("input_required") => self.update_task(task_id, &task, &mut answered).await?,
                _ => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ClientError::Unexpected(format!(
                    "task {task_id} did not end in {TASK_DEADLINE:?}"
                )));
            }
            let poll = task.get("pollIntervalMs").and_then(Value::as_u64).unwrap_or(50).min(50);
            tokio::time::sleep(Duration::from_millis(poll)).await;
        }
    }

    /// Answers a modern task's outstanding input requests with `tasks/update` (each key once).
    async fn update_task(
        &self,
        task_id: &str,
        task: &Value,
        answered: &mut HashSet<String>,
    ) -> Result<(), ClientError> {
        let mut responses = Map::new();
        let requests = task.get("inputRequests").and_then(Value::as_object);
        for (key, req) in requests.into_iter().flatten() {
            if answered.contains(key) {
                continue;
            }
            let method = req.get("method").and_then(Value::as_str).unwrap_or_default();
            let params = req.get("params").cloned().unwrap_or_else(|| json!({}));
            let reply = self
                .script()
                .reply(method, &params)
                .ok_or_else(|| ClientError::Unscripted(method.to_owned()))?;
            if let Ok(v) = &reply {
                responses.insert(key.clone(), v.clone());
            }
            self.record_server_request(ServerRequest {
                method: method.to_owned(),
                params,
                key: Some(key.clone()),
                reply,
            });
            answered.insert(key.clone());
        }
        if !responses.is_empty() {
            self.request(
                "tasks/update",
                json!({ "taskId": task_id, "inputResponses": responses }),
            )
            .await?;
        }
        Ok(())
    }
}
