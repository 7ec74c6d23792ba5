//! The task-mode decision: how a tool call runs (behaviour invariant 8).
//!
//! Written once here and used by every transport through the runtime.

use serde::{Deserialize, Serialize};

use crate::error::RpcError;
use crate::revision::Era;

/// The id of the 2026-07-28 tasks extension.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a tool may, or must, run as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task when the client supports tasks, else inline.
    Optional,
    /// Only as a task: a client without task support is refused.
    Required,
}

/// How one tool call is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    /// Run inline and answer with the tool result.
    Inline,
    /// Refuse with -32021 naming the tasks extension ([`refusal`]).
    Refuse,
    /// Legacy: create the task first and answer with its handle.
    TaskFirst,
    /// Modern: run inline for the inline window, then hand the call to a task.
    Escalate,
}

/// Decides the mode of a tool call.
///
/// `tasks_enabled` is, in the legacy era, whether the request is task-augmented
/// (`params.task`, negotiated through the core `tasks` capability); in the
/// modern era, whether the request declared the tasks extension in its
/// client capabilities. A client that enabled nothing never gets a task.
pub fn task_mode(support: TaskSupport, tasks_enabled: bool, era: Era) -> TaskMode {
    match (support, tasks_enabled, era) {
        (TaskSupport::Forbidden, _, _) => TaskMode::Inline,
        (TaskSupport::Optional, false, _) => TaskMode::Inline,
        (TaskSupport::Required, false, _) => TaskMode::Refuse,
        (_, true, Era::Legacy) => TaskMode::TaskFirst,
        (_, true, Era::Modern) => TaskMode::Escalate,
    }
}

/// The -32021 error of [`TaskMode::Refuse`] (and of task methods called by a
/// client that did not declare the extension).
pub fn refusal() -> RpcError {
    RpcError::undeclared_extension(TASKS_EXTENSION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskMode::*;
    use TaskSupport::*;
    use serde_json::json;

    #[test]
    fn mode_table() {
        let table = [
            (Forbidden, false, Era::Legacy, Inline),
            (Forbidden, true, Era::Legacy, Inline),
            (Forbidden, false, Era::Modern, Inline),
            (Forbidden, true, Era::Modern, Inline),
            (Optional, false, Era::Legacy, Inline),
            (Optional, false, Era::Modern, Inline),
            (Optional, true, Era::Legacy, TaskFirst),
            (Optional, true, Era::Modern, Escalate),
            (Required, false, Era::Legacy, Refuse),
            (Required, false, Era::Modern, Refuse),
            (Required, true, Era::Legacy, TaskFirst),
            (Required, true, Era::Modern, Escalate),
        ];
        for (support, enabled, era, want) in table {
            assert_eq!(task_mode(support, enabled, era), want, "{support:?} {enabled} {era:?}");
        }
    }

    #[test]
    fn refusal_names_the_extension() {
        let e = refusal();
        assert_eq!(e.code, -32021);
        assert_eq!(
            e.data.unwrap()["requiredCapabilities"],
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
    }
}
