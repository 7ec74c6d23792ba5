//! What one instance does for a request another instance received: completing a URL-mode
//! elicitation whose record it holds, and streaming the messages of a task it runs to a
//! 2025-11-25 `tasks/result` waiting elsewhere.
//!
//! - **Elicitation completion.** [`Cluster::complete_elicitation`] publishes the id and the
//!   principal; the instance holding the record completes it (its
//!   `notifications/elicitation/complete` goes to the session's log, like any session event, and
//!   from there to whichever instance streams it) and answers. No answer within
//!   [`ANSWER_WAIT`] is "not found", as for an unknown id: a record lives on the instance whose
//!   handler elicited, and goes with it.
//! - **Task messages.** A `tasks/result` for a task another instance runs follows it
//!   ([`Cluster::follow`]): the instance running it attaches the task's relay to a sink whose
//!   frames it publishes to the follower, and the follower writes them to the waiting request's
//!   stream. The client's answers reach the running instance as every response does (request
//!   ids carry the instance). When the follower stops waiting (the task ended, the client left,
//!   the wait timed out) it says so and the running instance detaches: later messages wait for
//!   the next `tasks/result`, as in one process. A frame that reaches an instance no longer
//!   following is dropped, and the runner told to detach.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use super::asks::Asks;
use super::{Cluster, Note};
use crate::sink::Sink;
use crate::tasks::Following;

/// How long an instance waits for another to answer (an elicitation completion).
const ANSWER_WAIT: Duration = Duration::from_secs(1);
/// Frames of a followed task waiting to be published.
const FOLLOW_QUEUE: usize = 32;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The bookkeeping of requests served across instances.
#[derive(Debug, Default)]
pub(super) struct OnBehalf {
    /// Numbers followers.
    next: AtomicU64,
    /// Elicitation completions asked of the other instances.
    asks: Asks<()>,
    /// Tasks another instance runs whose `tasks/result` waits here: the follower's number and
    /// its stream.
    following: Mutex<HashMap<String, (u64, Sink)>>,
    /// Tasks run here that a `tasks/result` elsewhere follows: the follower's instance and the
    /// attachment's number.
    followed: Mutex<HashMap<String, (String, u64)>>,
}

impl OnBehalf {
    fn number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }
}

impl Cluster {
    /// Completes a URL-mode elicitation this instance does not hold: `true` once the instance
    /// holding it answered that it completed it.
    pub(crate) async fn complete_elicitation(&self, id: &str, principal: &str) -> bool {
        let (ask, rx) = self.on_behalf.asks.open();
        let sent = self.publish(Note::CompleteElicitation {
            id: id.to_owned(),
            principal: principal.to_owned(),
            ask,
        });
        let done = sent.is_ok() && matches!(tokio::time::timeout(ANSWER_WAIT, rx).await, Ok(Ok(())));
        self.on_behalf.asks.close(ask);
        done
    }

    /// Sends the messages of `task` (run by `runner`, another instance) to `sink` until the
    /// returned guard is dropped.
    pub(crate) fn follow(&self, runner: &str, task: &str, sink: Sink) -> Following {
        let number = self.on_behalf.number();
        lock(&self.on_behalf.following).insert(task.to_owned(), (number, sink));
        let _ = self.publish_to(runner, Note::TaskFollow { task: task.to_owned() });
        let cluster = self.me.get().cloned().unwrap_or_default();
        let runner = runner.to_owned();
        let task = task.to_owned();
        Following::new(move || {
            let Some(c) = cluster.upgrade() else { return };
            let mine = {
                let mut following = lock(&c.on_behalf.following);
                let mine = following.get(&task).is_some_and(|(n, _)| *n == number);
                if mine {
                    following.remove(&task);
                }
                mine
            };
            // A newer `tasks/result` here follows the task now: the runner keeps sending here.
            if mine {
                let _ = c.publish_to(&runner, Note::TaskUnfollow { task });
            }
        })
    }
}

/// Applies a note of this module's sent by instance `from`; the others are returned.
pub(super) fn apply(cluster: &Arc<Cluster>, from: &str, note: Note) -> Option<Note> {
    match note {
        Note::CompleteElicitation { id, principal, ask } => {
            let held = cluster.elicitations.get().and_then(Weak::upgrade);
            if held.is_some_and(|e| e.complete(&id, &principal).is_ok()) {
                let _ = cluster.publish_to(from, Note::Answer { ask });
            }
        }
        Note::Answer { ask } => cluster.on_behalf.asks.answer(ask, ()),
        Note::TaskFollow { task } => attach_follower(cluster, from, task),
        Note::TaskFrame { task, frame } => {
            let mut following = lock(&cluster.on_behalf.following);
            let sink = following.get(&task).map(|(_, s)| s.clone());
            match sink {
                Some(sink) if sink.can_stream() => {
                    if !sink.try_send(frame.into_bytes()) {
                        tracing::debug!(task, "a followed task's message found no room; dropped");
                    }
                }
                // The waiting request's client left: the runner waits for the next one.
                Some(_) => {
                    following.remove(&task);
                    drop(following);
                    let _ = cluster.publish_to(from, Note::TaskUnfollow { task });
                }
                None => {
                    drop(following);
                    let _ = cluster.publish_to(from, Note::TaskUnfollow { task });
                }
            }
        }
        Note::TaskUnfollow { task } => {
            let live = cluster.tasks.get().and_then(Weak::upgrade).and_then(|t| t.live(&task));
            let mut followed = lock(&cluster.on_behalf.followed);
            if followed.get(&task).is_some_and(|(follower, _)| follower == from) {
                followed.remove(&task);
                if let Some(live) = live {
                    live.relay.detach();
                }
            }
        }
        other => return Some(other),
    }
    None
}

/// A `tasks/result` on `from` follows `task`: if it runs here, its relay's messages are
/// published to `from` from now on (until the relay is attached elsewhere or detached).
fn attach_follower(cluster: &Arc<Cluster>, from: &str, task: String) {
    let Some(live) = cluster.tasks.get().and_then(Weak::upgrade).and_then(|t| t.live(&task)) else {
        return;
    };
    if live.is_finished() {
        return;
    }
    let number = cluster.on_behalf.number();
    lock(&cluster.on_behalf.followed).insert(task.clone(), (from.to_owned(), number));
    let (sink, mut frames) = Sink::channel(FOLLOW_QUEUE);
    live.relay.attach(sink);
    let weak = Arc::downgrade(cluster);
    let to = from.to_owned();
    crate::background::spawn(async move {
        // Ends when the relay lets the sink go: attached elsewhere, detached, or the task gone.
        while let Some(frame) = frames.recv().await {
            let Some(c) = weak.upgrade() else { return };
            let note = Note::TaskFrame {
                task: task.clone(),
                frame: String::from_utf8_lossy(&frame).into_owned(),
            };
            if let Err(e) = c.publish_to(&to, note) {
                tracing::debug!(task, error = %e, "a followed task's message was not published");
            }
        }
        if let Some(c) = weak.upgrade() {
            let mut followed = lock(&c.on_behalf.followed);
            if followed.get(&task).is_some_and(|(_, n)| *n == number) {
                followed.remove(&task);
            }
        }
    });
}
