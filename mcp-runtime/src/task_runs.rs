//! [`TaskRuns`]: the settings of tasks that outlive their instance (a resumable tool's tasks,
//! every task a front queues), in [`ServerConfig::task_runs`](crate::ServerConfig::task_runs).
//! The rules are in the tasks module's `runs`, the machinery in its `durable` (feature
//! `shared-store`).

use std::time::Duration;

/// The error message of a resumable task that stopped more often than
/// [`TaskRuns::max_attempts`] allows.
pub const GAVE_UP: &str = "Task failed: its runs stopped too many times";

/// The status message of a task a front queued, until a worker claims it.
pub const QUEUED: &str = "Waiting for a worker";

/// The status message of a task a stopping instance handed back to the queue.
pub const HANDED_BACK: &str = "Waiting for a worker: the instance running it stopped";

/// Which part of the work an instance does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Role {
    /// Accepts calls and runs tasks, its own and those the queue hands it (the default).
    #[default]
    Both,
    /// Accepts calls and answers everything, but runs no task: every call that becomes a task
    /// is queued, with its call, for a worker of another instance (`serve_workers`). Tasks are
    /// created at once (a modern call gets no inline window).
    Front,
    /// Runs the tasks the queue hands it, and serves no client (`serve_workers`).
    Worker,
}

impl Role {
    /// The role `--role` names: `both`, `front` or `worker`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "both" => Some(Role::Both),
            "front" => Some(Role::Front),
            "worker" => Some(Role::Worker),
            _ => None,
        }
    }

    /// Whether an instance of this role runs tasks.
    pub fn runs_tasks(self) -> bool {
        self != Role::Front
    }
}

/// How tasks that any worker may run are run (see the tasks guide).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskRuns {
    /// This instance's role (default [`Role::Both`]).
    pub role: Role,
    /// The lease of a running attempt, renewed every third of it (default 10 s): how long a
    /// task whose worker died waits before another worker claims it.
    pub lease: Duration,
    /// Most attempts of one task (default 5); a task whose last allowed attempt stopped fails
    /// with [`GAVE_UP`].
    pub max_attempts: u32,
    /// The wait before attempt 2 (default 1 s), doubled for each later attempt, at most 30 s.
    pub backoff: Duration,
    /// The largest checkpoint a run may save, as JSON (default 64 KiB); a larger one is refused
    /// with a tool error.
    pub max_checkpoint_bytes: usize,
    /// Most tasks from the queue this instance's workers run at once (default 64).
    pub max_running: usize,
    /// How often an idle worker asks the queue for a task (default 250 ms).
    pub poll: Duration,
}

impl Default for TaskRuns {
    fn default() -> Self {
        TaskRuns {
            role: Role::Both,
            lease: Duration::from_secs(10),
            max_attempts: 5,
            backoff: Duration::from_secs(1),
            max_checkpoint_bytes: 64 * 1024,
            max_running: 64,
            poll: Duration::from_millis(250),
        }
    }
}

#[cfg_attr(not(feature = "shared-store"), allow(dead_code))]
impl TaskRuns {
    /// The wait before attempt `attempt` runs.
    pub(crate) fn backoff_before(&self, attempt: u32) -> Duration {
        const MOST: Duration = Duration::from_secs(30);
        match attempt {
            0 | 1 => Duration::ZERO,
            n => self.backoff.saturating_mul(1 << (n - 2).min(16)).min(MOST),
        }
    }

    /// How often a lease is renewed.
    pub(crate) fn heartbeat(&self) -> Duration {
        (self.lease / 3).max(Duration::from_millis(10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_second_attempt_and_is_bounded() {
        let runs = TaskRuns::default();
        assert_eq!(runs.backoff_before(1), Duration::ZERO);
        assert_eq!(runs.backoff_before(2), Duration::from_secs(1));
        assert_eq!(runs.backoff_before(4), Duration::from_secs(4));
        assert_eq!(runs.backoff_before(40), Duration::from_secs(30));
    }
}
