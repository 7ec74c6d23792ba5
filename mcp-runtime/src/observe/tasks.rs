//! The metrics and spans of task runs (issue #43): how many tasks wait and run, how often one
//! ran again or was lost, how long a task waited for a worker, and one span per attempt (see
//! the [module docs](super#tasks)). These names are this library's own: OpenTelemetry's MCP
//! conventions have none for tasks yet.

use mcp_protocol::Params;
use tracing::Span;

/// Gauge: tasks waiting in the queue for a worker, due or delayed (sampled by each instance's
/// workers every few seconds: every instance reports the same shared queue).
pub const TASKS_QUEUED: &str = "mcp.server.tasks.queued";
/// Gauge: attempts of tasks of the queue running on this instance.
pub const TASKS_RUNNING: &str = "mcp.server.tasks.running";
/// Counter: attempts started again after an earlier one stopped (attempt 2 and later).
pub const TASKS_RETRIED: &str = "mcp.server.tasks.retried";
/// Counter: the retried attempts that started from a checkpoint.
pub const TASKS_RESUMED: &str = "mcp.server.tasks.resumed";
/// Counter: tasks that failed because their run stopped and could not run again (the tool is
/// not resumable, the attempts ran out, the tool is gone), labelled `reason`.
pub const TASKS_LOST: &str = "mcp.server.tasks.lost";
/// Counter: running tasks a draining instance gave back to the queue.
pub const TASKS_HANDED_BACK: &str = "mcp.server.tasks.handed_back";
/// Histogram, seconds: how long a task claimed from the queue had waited since its last write
/// (queued by a front, handed back, or the last checkpoint of an attempt that stopped).
pub const TASK_QUEUE_AGE: &str = "mcp.server.tasks.queue_age";
/// The `tracing` name of the span of one attempt of a task of the queue.
pub const ATTEMPT_SPAN: &str = "mcp.task.attempt";

/// An attempt started: its span (in the trace of the call that created the task, from the
/// `traceparent` its `_meta` carried), and the retry counters for attempt 2 and later. A first
/// attempt that starts inline, before its task exists, gets its task id later
/// ([`named`]).
pub(crate) fn attempt(task_id: Option<&str>, attempt: u32, tool: &str, params: Option<&Params>, resumed: bool) -> Span {
    if attempt > 1 {
        metrics::counter!(TASKS_RETRIED).increment(1);
        if resumed {
            metrics::counter!(TASKS_RESUMED).increment(1);
        }
    }
    let span = tracing::info_span!(
        target: "mcp_runtime::observe",
        "mcp.task.attempt",
        otel.name = format_args!("task attempt {tool}").to_string(),
        otel.kind = "internal",
        mcp.task.id = task_id,
        mcp.task.attempt = attempt,
        gen_ai.tool.name = tool,
        trace_id = tracing::field::Empty,
        parent_span_id = tracing::field::Empty,
        trace_flags = tracing::field::Empty,
        tracestate = tracing::field::Empty,
    );
    if !span.is_disabled() {
        super::trace::record_trace(&span, params, None);
    }
    span
}

/// The attempt's call became task `task_id`.
pub(crate) fn named(span: &Span, task_id: &str) {
    span.record("mcp.task.id", task_id);
}

/// A task failed because its run stopped and it cannot run again.
pub(crate) fn lost(reason: &'static str) {
    metrics::counter!(TASKS_LOST, "reason" => reason).increment(1);
}

/// Running tasks went back to the queue.
pub(crate) fn handed_back(n: usize) {
    metrics::counter!(TASKS_HANDED_BACK).increment(n as u64);
}

/// A claimed task had waited `seconds` since its last write.
pub(crate) fn waited(seconds: f64) {
    metrics::histogram!(TASK_QUEUE_AGE).record(seconds);
}

/// The sampled sizes: `queued` in the shared queue (when it answered), `running` here.
pub(crate) fn sizes(queued: Option<usize>, running: usize) {
    if let Some(q) = queued {
        metrics::gauge!(TASKS_QUEUED).set(q as f64);
    }
    metrics::gauge!(TASKS_RUNNING).set(running as f64);
}
