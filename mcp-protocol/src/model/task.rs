//! Tasks: the status machine and the wire shapes of both eras.
//!
//! One task model is rendered two ways:
//!
//! - **2025-11-25 core tasks** (legacy era): `ttl` and `pollInterval`; the
//!   `CreateTaskResult` nests the task under `task`; `tasks/get` and
//!   `tasks/cancel` answer `Result & Task`; `tasks/result` answers what the
//!   call would have returned, with the `related-task` `_meta`;
//!   `notifications/tasks/status` carries the task fields.
//! - **The `io.modelcontextprotocol/tasks` extension** (modern era): `ttlMs`
//!   and `pollIntervalMs`; the `CreateTaskResult` is flat with
//!   `resultType: "task"`; `tasks/get` answers a `DetailedTask` with the
//!   result, the error or the outstanding `inputRequests` inlined;
//!   `notifications/tasks` carries the same `DetailedTask`.
//!
//! Times are milliseconds since the Unix epoch, passed in (this crate reads
//! no clock), and rendered as ISO 8601 UTC timestamps.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::RpcError;
use crate::meta::RELATED_TASK;
use crate::revision::Era;

/// The status of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running (the initial status).
    Working,
    /// Waiting for client input.
    InputRequired,
    /// Ended with a result (in the extension, also a tool error with `isError`).
    Completed,
    /// Ended with a protocol error (in 2025-11-25, also a tool error).
    Failed,
    /// Cancelled by the client.
    Cancelled,
}

impl TaskStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the status is final (`completed`, `failed`, `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }

    /// Whether a task may move from `self` to `to`: `working` ⇄
    /// `input_required`, either of them to a terminal status; a terminal
    /// status never changes, and staying put is not a transition.
    pub fn can_transition(self, to: TaskStatus) -> bool {
        use TaskStatus::*;
        matches!(
            (self, to),
            (Working, InputRequired)
                | (InputRequired, Working)
                | (Working | InputRequired, Completed | Failed | Cancelled)
        )
    }
}

/// A task as both eras describe it (the fields of `Task`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Task {
    /// The task id (unguessable, server-minted).
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// A human-readable note on the status.
    pub status_message: Option<String>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Last update, milliseconds since the Unix epoch.
    pub last_updated_at_ms: u64,
    /// How long the task is kept from its creation (`None`: unlimited).
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// A working task created at `now_ms`.
    pub fn new(task_id: impl Into<String>, now_ms: u64, ttl_ms: Option<u64>, poll_interval_ms: Option<u64>) -> Self {
        Task {
            task_id: task_id.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now_ms,
            last_updated_at_ms: now_ms,
            ttl_ms,
            poll_interval_ms,
        }
    }

    /// The task fields for an era: `ttl`/`pollInterval` in the legacy era,
    /// `ttlMs`/`pollIntervalMs` in the modern one.
    pub fn render(&self, era: Era) -> Map<String, Value> {
        let (ttl, poll) = match era {
            Era::Legacy => ("ttl", "pollInterval"),
            Era::Modern => ("ttlMs", "pollIntervalMs"),
        };
        let mut m = Map::new();
        m.insert("taskId".into(), Value::String(self.task_id.clone()));
        m.insert("status".into(), Value::String(self.status.as_str().into()));
        if let Some(msg) = &self.status_message {
            m.insert("statusMessage".into(), Value::String(msg.clone()));
        }
        m.insert("createdAt".into(), Value::String(format_timestamp(self.created_at_ms)));
        m.insert(
            "lastUpdatedAt".into(),
            Value::String(format_timestamp(self.last_updated_at_ms)),
        );
        m.insert(ttl.into(), self.ttl_ms.map_or(Value::Null, Value::from));
        if let Some(p) = self.poll_interval_ms {
            m.insert(poll.into(), Value::from(p));
        }
        m
    }
}

/// What a `DetailedTask` inlines besides the task fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TaskPayload<'a> {
    /// Nothing (`working`, `cancelled`).
    None,
    /// The outstanding input requests (`input_required`).
    InputRequests(&'a Map<String, Value>),
    /// What the call returned (`completed`).
    Result(&'a Value),
    /// The protocol error the call ended with (`failed`).
    Error(&'a RpcError),
}

/// The `CreateTaskResult` of an era: `{task: Task}` (2025-11-25) or the flat
/// `Task & {resultType: "task"}` (extension).
pub fn create_task_result(task: &Task, era: Era) -> Value {
    match era {
        Era::Legacy => json!({ "task": Value::Object(task.render(era)) }),
        Era::Modern => {
            let mut m = task.render(era);
            m.insert("resultType".into(), Value::String("task".into()));
            Value::Object(m)
        }
    }
}

/// The extension's `DetailedTask`: the task fields plus `inputRequests`
/// (always present when `input_required`), `result` or `error`.
pub fn detailed_task(task: &Task, payload: TaskPayload<'_>) -> Map<String, Value> {
    let mut m = task.render(Era::Modern);
    match payload {
        TaskPayload::None if task.status == TaskStatus::InputRequired => {
            m.insert("inputRequests".into(), Value::Object(Map::new()));
        }
        TaskPayload::None => {}
        TaskPayload::InputRequests(r) => {
            m.insert("inputRequests".into(), Value::Object(r.clone()));
        }
        TaskPayload::Result(r) => {
            m.insert("result".into(), r.clone());
        }
        TaskPayload::Error(e) => {
            m.insert("error".into(), serde_json::to_value(e).unwrap_or(Value::Null));
        }
    }
    m
}

/// The result of `tasks/get`: `Result & Task` (2025-11-25) or the
/// `DetailedTask` (extension; `resultType` is added by the era's result
/// decoration).
pub fn get_task_result(task: &Task, era: Era, payload: TaskPayload<'_>) -> Value {
    match era {
        Era::Legacy => Value::Object(task.render(era)),
        Era::Modern => Value::Object(detailed_task(task, payload)),
    }
}

/// The result of a 2025-11-25 `tasks/list`.
pub fn list_tasks_result(tasks: &[Task], next_cursor: Option<String>) -> Value {
    let items: Vec<Value> = tasks.iter().map(|t| Value::Object(t.render(Era::Legacy))).collect();
    let mut m = Map::new();
    m.insert("tasks".into(), Value::Array(items));
    if let Some(c) = next_cursor {
        m.insert("nextCursor".into(), Value::String(c));
    }
    Value::Object(m)
}

/// The status notification of an era: `notifications/tasks/status` with the
/// task fields (2025-11-25), or `notifications/tasks` with the
/// `DetailedTask` (extension). Returns the method and the params.
pub fn task_notification(task: &Task, era: Era, payload: TaskPayload<'_>) -> (&'static str, Map<String, Value>) {
    match era {
        Era::Legacy => ("notifications/tasks/status", task.render(era)),
        Era::Modern => ("notifications/tasks", detailed_task(task, payload)),
    }
}

/// Adds `_meta["io.modelcontextprotocol/related-task"] = {taskId}` to a
/// result (what 2025-11-25 `tasks/result` answers with).
pub fn with_related_task(result: &mut Value, task_id: &str) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    let meta = obj.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(RELATED_TASK.into(), json!({ "taskId": task_id }));
    }
}

/// The `taskId` of a tasks method's params (-32602 when missing or not a
/// string).
pub fn task_id_param(params: &Map<String, Value>) -> Result<&str, RpcError> {
    match params.get("taskId") {
        Some(Value::String(id)) => Ok(id),
        _ => Err(RpcError::invalid_params("taskId must be a string")),
    }
}

/// The TTL a 2025-11-25 task-augmented request asks for (`task.ttl`, a
/// non-negative integer of milliseconds), if any.
pub fn requested_ttl(task: &Value) -> Option<u64> {
    task.get("ttl").and_then(Value::as_u64)
}

/// Formats milliseconds since the Unix epoch as an ISO 8601 UTC timestamp
/// with milliseconds (`2025-11-25T10:30:00.000Z`).
pub fn format_timestamp(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (the
/// days-to-civil algorithm of H. Hinnant, for non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskStatus::*;

    const ALL: [TaskStatus; 5] = [Working, InputRequired, Completed, Failed, Cancelled];

    #[test]
    fn transition_table() {
        let allowed = [
            (Working, InputRequired),
            (Working, Completed),
            (Working, Failed),
            (Working, Cancelled),
            (InputRequired, Working),
            (InputRequired, Completed),
            (InputRequired, Failed),
            (InputRequired, Cancelled),
        ];
        for from in ALL {
            for to in ALL {
                assert_eq!(
                    from.can_transition(to),
                    allowed.contains(&(from, to)),
                    "{from:?} -> {to:?}"
                );
            }
        }
        for s in ALL {
            assert_eq!(s.is_terminal(), matches!(s, Completed | Failed | Cancelled));
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
    }

    #[test]
    fn timestamps() {
        let table = [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_764_066_600_123, "2025-11-25T10:30:00.123Z"),
            (4_102_444_799_999, "2099-12-31T23:59:59.999Z"),
        ];
        for (ms, want) in table {
            assert_eq!(format_timestamp(ms), want);
        }
    }

    fn task() -> Task {
        Task::new("t1", 1_764_066_600_000, Some(60_000), Some(1000))
    }

    #[test]
    fn create_results_per_era() {
        let legacy = create_task_result(&task(), Era::Legacy);
        assert_eq!(
            legacy,
            json!({"task": {"taskId": "t1", "status": "working", "createdAt": "2025-11-25T10:30:00.000Z",
                "lastUpdatedAt": "2025-11-25T10:30:00.000Z", "ttl": 60000, "pollInterval": 1000}})
        );
        let modern = create_task_result(&task(), Era::Modern);
        assert_eq!(
            modern,
            json!({"taskId": "t1", "status": "working", "createdAt": "2025-11-25T10:30:00.000Z",
                "lastUpdatedAt": "2025-11-25T10:30:00.000Z", "ttlMs": 60000, "pollIntervalMs": 1000,
                "resultType": "task"})
        );
        let unlimited = Task::new("t2", 0, None, None);
        let v = create_task_result(&unlimited, Era::Modern);
        assert_eq!(v["ttlMs"], Value::Null);
        assert!(v.get("pollIntervalMs").is_none());
    }

    #[test]
    fn detailed_task_inlines_the_payload() {
        let mut t = task();
        t.status = Completed;
        let result = json!({"content": [{"type": "text", "text": "ok"}], "isError": true});
        let v = get_task_result(&t, Era::Modern, TaskPayload::Result(&result));
        assert_eq!(v["result"], result);
        assert!(v.get("error").is_none() && v.get("resultType").is_none());

        t.status = Failed;
        let e = RpcError::internal();
        let v = get_task_result(&t, Era::Modern, TaskPayload::Error(&e));
        assert_eq!(v["error"], json!({"code": -32603, "message": "Internal error"}));
        assert!(v.get("result").is_none());

        t.status = InputRequired;
        let v = get_task_result(&t, Era::Modern, TaskPayload::None);
        assert_eq!(v["inputRequests"], json!({}));
        let mut reqs = Map::new();
        reqs.insert("k".into(), json!({"method": "elicitation/create", "params": {}}));
        let v = get_task_result(&t, Era::Modern, TaskPayload::InputRequests(&reqs));
        assert_eq!(v["inputRequests"]["k"]["method"], "elicitation/create");

        // The legacy shape is the plain task, whatever the payload.
        let v = get_task_result(&t, Era::Legacy, TaskPayload::InputRequests(&reqs));
        assert!(v.get("inputRequests").is_none());
        assert_eq!(v["ttl"], 60000);
    }

    #[test]
    fn lists_notifications_and_related_task() {
        let v = list_tasks_result(&[task()], Some("c".into()));
        assert_eq!(v["tasks"][0]["taskId"], "t1");
        assert_eq!(v["nextCursor"], "c");
        assert!(list_tasks_result(&[], None).get("nextCursor").is_none());

        let (m, p) = task_notification(&task(), Era::Legacy, TaskPayload::None);
        assert_eq!((m, p.get("ttl").is_some()), ("notifications/tasks/status", true));
        let (m, p) = task_notification(&task(), Era::Modern, TaskPayload::None);
        assert_eq!((m, p.get("ttlMs").is_some()), ("notifications/tasks", true));

        let mut r = json!({"content": [], "_meta": {"k": 1}});
        with_related_task(&mut r, "t1");
        assert_eq!(r["_meta"], json!({"k": 1, RELATED_TASK: {"taskId": "t1"}}));
    }

    #[test]
    fn params() {
        let p = json!({"taskId": "x"}).as_object().cloned().unwrap();
        assert_eq!(task_id_param(&p).unwrap(), "x");
        for bad in [json!({}), json!({"taskId": 3})] {
            assert_eq!(task_id_param(bad.as_object().unwrap()).unwrap_err().code, -32602);
        }
        assert_eq!(requested_ttl(&json!({"ttl": 5000})), Some(5000));
        assert_eq!(requested_ttl(&json!({"ttl": -1})), None);
        assert_eq!(requested_ttl(&json!({})), None);
    }
}
