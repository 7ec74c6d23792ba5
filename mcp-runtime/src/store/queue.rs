//! [`TaskQueue`]: the tasks waiting for a worker and the tasks being run, shared by every
//! instance, so that a task outlives the instance that accepted it (issue #43).
//!
//! # The rules
//!
//! - **At least once, one attempt at a time.** A worker [`claim`](TaskQueue::claim)s a task
//!   with a lease that its heartbeat [`renew`](TaskQueue::renew)s. Each claim starts a new
//!   attempt, numbered from 1. When a lease lapses (the worker was killed, its host went away,
//!   the network was cut) the task is claimed again, as the next attempt, by whichever worker
//!   asks next.
//! - **Fencing.** Every call after a claim names its attempt. Once a newer attempt exists, an
//!   older one's `renew`, `finish` and `release` answer `false` and change nothing, so a
//!   worker that lost its lease learns it at its next heartbeat and stops writing. Two workers
//!   run the same task for at most one lease. A lease that lapsed is taken back only when a
//!   claim finds it: until then its own attempt may still renew it (nobody else runs the task).
//! - **Fair across clients.** Tasks wait in one line per client (the key the stored-task bound
//!   counts, [`TaskRecord::counted_as`](crate::TaskRecord::counted_as)), and claims take the
//!   clients in turn: one client's 10,000 queued tasks do not starve another client's one.
//!   Within a client's line, tasks are claimed in the order they were queued; a task whose
//!   lease lapsed goes back to the front of its line.
//! - **Delays.** [`enqueue`](TaskQueue::enqueue) and [`release`](TaskQueue::release) take a
//!   delay (a retry's backoff); the task is not claimed before it ends.
//! - **One clock.** Leases and delays are durations, measured by the queue's own clock (Redis's
//!   for the Redis queue), so that instances whose clocks disagree never disagree about a
//!   lease.
//!
//! The queue holds task ids and its own bookkeeping only; what a task is (its record, its
//! arguments, its checkpoint) is in the [`TaskStore`](crate::TaskStore).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::store::error::StoreFuture;

/// A task a worker claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Claim {
    /// The task.
    pub task_id: String,
    /// The client whose line it waited in.
    pub client: String,
    /// The attempt this claim starts (1 for the first): the fencing token every later call for
    /// the task names.
    pub attempt: u32,
}

impl Claim {
    /// A claim of attempt `attempt` of `task_id`, from `client`'s line (for queue backends).
    pub fn new(task_id: impl Into<String>, client: impl Into<String>, attempt: u32) -> Self {
        Claim {
            task_id: task_id.into(),
            client: client.into(),
            attempt,
        }
    }
}

/// Where tasks wait for a worker, and which attempt of each runs (see the module docs).
///
/// Errors are the store's ([`StoreError`](crate::StoreError)): a worker that cannot reach the
/// queue claims nothing and fails nothing.
pub trait TaskQueue: Send + Sync + 'static {
    /// Queues task `task_id` in `client`'s line, to be claimed once `delay` has passed. A task
    /// already queued or running is left as it is (queuing is idempotent).
    fn enqueue<'a>(&'a self, task_id: &'a str, client: &'a str, delay: Duration) -> StoreFuture<'a, ()>;

    /// Records `task_id` (in `client`'s line) as claimed at once by the caller, for `lease`: the
    /// instance that accepted a task runs its first attempt itself. The attempt it starts (1 for
    /// a task the queue did not know), or `None` when the queue already knows the task.
    fn hold<'a>(&'a self, task_id: &'a str, client: &'a str, lease: Duration) -> StoreFuture<'a, Option<u32>>;

    /// Claims the next task, holding it for `lease`: the clients in turn, each line in order, a
    /// task whose lease lapsed first. `None` when no task is due.
    fn claim(&self, lease: Duration) -> StoreFuture<'_, Option<Claim>>;

    /// Extends attempt `attempt`'s lease on `task_id` to `lease` from now: `false` when that
    /// attempt no longer holds the task (a newer attempt claimed it, or it ended).
    fn renew<'a>(&'a self, task_id: &'a str, attempt: u32, lease: Duration) -> StoreFuture<'a, bool>;

    /// Removes `task_id` from the queue as attempt `attempt` ended it: `false` (and nothing
    /// removed) when that attempt no longer holds it.
    fn finish<'a>(&'a self, task_id: &'a str, attempt: u32) -> StoreFuture<'a, bool>;

    /// Gives attempt `attempt`'s task back, to be claimed again (as the next attempt) once
    /// `delay` has passed: a draining worker's hand-back, a retry after a backoff. `false`
    /// when that attempt no longer holds it.
    fn release<'a>(&'a self, task_id: &'a str, attempt: u32, delay: Duration) -> StoreFuture<'a, bool>;

    /// How many tasks wait (due or delayed) and how many are held by a worker.
    fn depth(&self) -> StoreFuture<'_, QueueDepth>;
}

/// The size of a queue (for metrics and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueDepth {
    /// Tasks waiting for a worker, due or delayed.
    pub queued: usize,
    /// Tasks a worker holds a lease on (lapsed leases included until the next claim).
    pub running: usize,
}

impl QueueDepth {
    /// `queued` tasks waiting and `running` held (for queue backends).
    pub fn new(queued: usize, running: usize) -> Self {
        QueueDepth { queued, running }
    }
}

/// The queue in this process's memory: the same rules, for one process (or several runtimes
/// of one process sharing it). Its clock is tokio's, so a paused test clock drives leases.
#[derive(Debug)]
pub struct MemoryQueue {
    start: tokio::time::Instant,
    state: Mutex<Lines>,
}

/// A task the queue knows.
#[derive(Debug)]
struct Entry {
    client: String,
    /// The last attempt claimed (0: never claimed).
    attempt: u32,
    /// When the current lease ends (ms on the queue's clock), while a worker holds the task.
    leased_until: Option<u64>,
}

#[derive(Debug, Default)]
struct Lines {
    tasks: HashMap<String, Entry>,
    /// Each client's due tasks, in order.
    lines: HashMap<String, VecDeque<String>>,
    /// The clients with a due task, in turn.
    ring: VecDeque<String>,
    /// `(lease end, task)` of the tasks held.
    leases: BTreeSet<(u64, String)>,
    /// `(due time, task)` of the delayed tasks.
    delayed: BTreeSet<(u64, String)>,
}

impl Lines {
    /// Puts a due task in its client's line (at the front for a task whose lease lapsed).
    fn make_due(&mut self, task_id: String, front: bool) {
        let Some(entry) = self.tasks.get(&task_id) else {
            return;
        };
        let line = self.lines.entry(entry.client.clone()).or_default();
        if line.is_empty() {
            self.ring.push_back(entry.client.clone());
        }
        if front {
            line.push_front(task_id);
        } else {
            line.push_back(task_id);
        }
    }

    /// Moves the lapsed leases and the ended delays at `now` into their lines.
    fn settle(&mut self, now: u64) {
        while let Some((until, id)) = self.leases.first().cloned().filter(|(until, _)| *until <= now) {
            self.leases.remove(&(until, id.clone()));
            if let Some(e) = self.tasks.get_mut(&id) {
                e.leased_until = None;
            }
            self.make_due(id, true);
        }
        while let Some((due, id)) = self.delayed.first().cloned().filter(|(due, _)| *due <= now) {
            self.delayed.remove(&(due, id.clone()));
            self.make_due(id, false);
        }
    }

    /// Waits `task_id` for `delay` from `now`, or makes it due at once.
    fn wait(&mut self, task_id: &str, now: u64, delay: Duration) {
        let delay = millis(delay);
        if delay == 0 {
            self.make_due(task_id.to_owned(), false);
        } else {
            self.delayed.insert((now + delay, task_id.to_owned()));
        }
    }

    /// The lease end of `task_id` when attempt `attempt` holds it.
    fn held_by(&self, task_id: &str, attempt: u32) -> Option<u64> {
        self.tasks
            .get(task_id)
            .filter(|e| e.attempt == attempt)
            .and_then(|e| e.leased_until)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 4)
}

impl Default for MemoryQueue {
    fn default() -> Self {
        MemoryQueue {
            start: tokio::time::Instant::now(),
            state: Mutex::default(),
        }
    }
}

impl MemoryQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn now(&self) -> u64 {
        millis(self.start.elapsed())
    }

    fn lines(&self) -> MutexGuard<'_, Lines> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl TaskQueue for MemoryQueue {
    fn enqueue<'a>(&'a self, task_id: &'a str, client: &'a str, delay: Duration) -> StoreFuture<'a, ()> {
        let now = self.now();
        let mut s = self.lines();
        if !s.tasks.contains_key(task_id) {
            let entry = Entry {
                client: client.to_owned(),
                attempt: 0,
                leased_until: None,
            };
            s.tasks.insert(task_id.to_owned(), entry);
            s.wait(task_id, now, delay);
        }
        Box::pin(async { Ok(()) })
    }

    fn hold<'a>(&'a self, task_id: &'a str, client: &'a str, lease: Duration) -> StoreFuture<'a, Option<u32>> {
        let until = self.now() + millis(lease);
        let mut s = self.lines();
        let held = (!s.tasks.contains_key(task_id)).then(|| {
            let entry = Entry {
                client: client.to_owned(),
                attempt: 1,
                leased_until: Some(until),
            };
            s.tasks.insert(task_id.to_owned(), entry);
            s.leases.insert((until, task_id.to_owned()));
            1
        });
        Box::pin(async move { Ok(held) })
    }

    fn claim(&self, lease: Duration) -> StoreFuture<'_, Option<Claim>> {
        let now = self.now();
        let mut s = self.lines();
        s.settle(now);
        let mut claimed = None;
        while let Some(client) = s.ring.pop_front() {
            let Some(line) = s.lines.get_mut(&client) else {
                continue;
            };
            let Some(id) = line.pop_front() else {
                s.lines.remove(&client);
                continue;
            };
            if line.is_empty() {
                s.lines.remove(&client);
            } else {
                s.ring.push_back(client.clone());
            }
            let until = now + millis(lease);
            let Some(e) = s.tasks.get_mut(&id) else {
                continue;
            };
            e.attempt += 1;
            e.leased_until = Some(until);
            let attempt = e.attempt;
            s.leases.insert((until, id.clone()));
            claimed = Some(Claim {
                task_id: id,
                client,
                attempt,
            });
            break;
        }
        Box::pin(async move { Ok(claimed) })
    }

    fn renew<'a>(&'a self, task_id: &'a str, attempt: u32, lease: Duration) -> StoreFuture<'a, bool> {
        let now = self.now();
        let mut s = self.lines();
        let renewed = match s.held_by(task_id, attempt) {
            Some(until) => {
                let next = now + millis(lease);
                s.leases.remove(&(until, task_id.to_owned()));
                s.leases.insert((next, task_id.to_owned()));
                if let Some(e) = s.tasks.get_mut(task_id) {
                    e.leased_until = Some(next);
                }
                true
            }
            None => false,
        };
        Box::pin(async move { Ok(renewed) })
    }

    fn finish<'a>(&'a self, task_id: &'a str, attempt: u32) -> StoreFuture<'a, bool> {
        let mut s = self.lines();
        let finished = match s.held_by(task_id, attempt) {
            Some(until) => {
                s.leases.remove(&(until, task_id.to_owned()));
                s.tasks.remove(task_id);
                true
            }
            None => false,
        };
        Box::pin(async move { Ok(finished) })
    }

    fn release<'a>(&'a self, task_id: &'a str, attempt: u32, delay: Duration) -> StoreFuture<'a, bool> {
        let now = self.now();
        let mut s = self.lines();
        let released = match s.held_by(task_id, attempt) {
            Some(until) => {
                s.leases.remove(&(until, task_id.to_owned()));
                if let Some(e) = s.tasks.get_mut(task_id) {
                    e.leased_until = None;
                }
                s.wait(task_id, now, delay);
                true
            }
            None => false,
        };
        Box::pin(async move { Ok(released) })
    }

    fn depth(&self) -> StoreFuture<'_, QueueDepth> {
        let s = self.lines();
        let running = s.leases.len();
        let depth = QueueDepth {
            queued: s.tasks.len() - running,
            running,
        };
        Box::pin(async move { Ok(depth) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(10);

    async fn claim(q: &MemoryQueue) -> Option<(String, u32)> {
        q.claim(LEASE).await.unwrap().map(|c| (c.task_id, c.attempt))
    }

    #[tokio::test(start_paused = true)]
    async fn clients_take_turns_and_each_line_keeps_its_order() {
        let q = MemoryQueue::new();
        for n in 0..3 {
            q.enqueue(&format!("a{n}"), "p1:a", Duration::ZERO).await.unwrap();
        }
        q.enqueue("b0", "p1:b", Duration::ZERO).await.unwrap();
        q.enqueue("a0", "p1:a", Duration::ZERO).await.unwrap();
        let order: Vec<_> = [claim(&q).await, claim(&q).await, claim(&q).await, claim(&q).await]
            .into_iter()
            .map(|c| c.unwrap().0)
            .collect();
        assert_eq!(order, ["a0", "b0", "a1", "a2"], "b's one task is not behind a's line");
        assert_eq!(claim(&q).await, None, "queuing a known task again adds nothing");
        assert_eq!(q.depth().await.unwrap(), QueueDepth { queued: 0, running: 4 });
    }

    #[tokio::test(start_paused = true)]
    async fn a_lapsed_lease_is_claimed_again_as_the_next_attempt_and_fences_the_old_one() {
        let q = MemoryQueue::new();
        q.enqueue("t", "c", Duration::ZERO).await.unwrap();
        q.enqueue("u", "c", Duration::ZERO).await.unwrap();
        assert_eq!(claim(&q).await, Some(("t".into(), 1)));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(q.renew("t", 1, LEASE).await.unwrap(), "renewed within its lease");
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(claim(&q).await, Some(("t".into(), 2)), "first in its line again");
        assert!(!q.renew("t", 1, LEASE).await.unwrap(), "the old attempt is fenced");
        assert!(!q.finish("t", 1).await.unwrap());
        assert!(!q.release("t", 1, Duration::ZERO).await.unwrap());
        assert!(q.finish("t", 2).await.unwrap());
        assert_eq!(claim(&q).await, Some(("u".into(), 1)));
        assert_eq!(claim(&q).await, None, "a finished task is gone");
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_task_runs_its_first_attempt_where_it_was_accepted() {
        let q = MemoryQueue::new();
        assert_eq!(q.hold("t", "c", LEASE).await.unwrap(), Some(1));
        assert_eq!(q.hold("t", "c", LEASE).await.unwrap(), None, "held once");
        assert_eq!(claim(&q).await, None, "nobody else claims it while its lease runs");
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(claim(&q).await, Some(("t".into(), 2)));
    }

    #[tokio::test(start_paused = true)]
    async fn delays_hold_a_task_back_until_they_end() {
        let q = MemoryQueue::new();
        q.enqueue("later", "c", Duration::from_secs(2)).await.unwrap();
        assert_eq!(claim(&q).await, None);
        assert_eq!(q.depth().await.unwrap().queued, 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(claim(&q).await, Some(("later".into(), 1)));
        assert!(q.release("later", 1, Duration::from_secs(1)).await.unwrap());
        assert_eq!(claim(&q).await, None, "released with a backoff");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(claim(&q).await, Some(("later".into(), 2)));
    }
}
