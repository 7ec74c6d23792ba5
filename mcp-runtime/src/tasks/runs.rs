//! Runs of tasks that any worker may run, and that outlive the instance running them (issue
//! #43): a resumable tool's tasks.
//!
//! # The design
//!
//! - **The call is kept.** A resumable tool's task keeps its call with its record
//!   ([`TaskCall`]: the params as received, the caller's identity, a legacy session's client
//!   facts), so that any instance can run it again. It is sealed at rest with the rest of the
//!   task's data when a task key is configured.
//! - **Leases.** The instance that accepted the task runs its first attempt at once, under a
//!   lease of the [`TaskQueue`](crate::store::TaskQueue) ([`hold`](crate::store::TaskQueue::hold)),
//!   which a heartbeat renews every third of [`TaskRuns::lease`](crate::tasks::TaskRuns::lease). When the lease lapses (the
//!   process was killed, its host went away, the network was cut) a worker of any instance claims
//!   the task as the next attempt and runs it again, from its last checkpoint, after
//!   [`TaskRuns::backoff`](crate::tasks::TaskRuns::backoff) (doubling per attempt, at most 30 s), up to
//!   [`TaskRuns::max_attempts`](crate::tasks::TaskRuns::max_attempts).
//! - **Fencing.** Every write of a running attempt is checked against the attempt the record
//!   names, and a heartbeat the queue answers "not yours" stops the attempt (its token is
//!   cancelled, and nothing it does later is stored): two workers run one task for at most one
//!   lease, and only the newest writes.
//! - **Drain.** A stopping instance stops claiming, lets its running tasks finish within the
//!   grace, then hands the rest back (`Tasks::hand_back`): a resumable task goes back to the
//!   queue at once (another instance claims it with its checkpoint), any other fails with a
//!   message saying its instance stopped.
//!
//! The machinery is in `durable`, compiled with the `shared-store` feature only (a server of one
//! process has no other instance for a task to outlive it on); these settings exist either way.
//!
//! A task that is not resumable runs as it always did, in the process that accepted it; when that
//! process stops the task fails with [`INSTANCE_STOPPED`](super::INSTANCE_STOPPED).

use std::sync::atomic::Ordering;

use super::{Live, Tasks};

impl Tasks {
    /// The worker of `live`'s attempt ended: the queue forgets the task (unless the attempt was
    /// fenced or handed back).
    pub(super) async fn end_attempt(&self, live: &Live) {
        if live.attempt == 0 || live.fenced.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = self.queue.finish(&live.id, live.attempt).await {
            tracing::warn!(task = %live.id, error = %e, "the queue could not be told a task ended; its lease will lapse");
        }
    }
}
