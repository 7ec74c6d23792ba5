//! Admission and the bounded worker pool.
//!
//! A request (or a batch) is *admitted* when fewer than
//! `max_workers + max_queue` are admitted and unfinished; otherwise the
//! caller answers "Server is overloaded" at once. The admission count is
//! released only when a job has finished, so the decision depends on
//! nothing but what was admitted and what completed.
//!
//! Admitted jobs start in admission order (FIFO): at most `max_workers`
//! run at once, each holding a permit of a semaphore. When a permit is free
//! and no admitted job is waiting, a job starts where it was submitted: its
//! first poll runs on the reading task, and a job that completes in that poll
//! (most calls do) costs no hand-off to another task; one that waits moves to
//! a task of its own. Otherwise the job queues behind the others: one
//! dispatcher task takes them in order and waits for a permit before
//! spawning each. Every job's cancellation token is a child of the pool's
//! own, so that the pool can cancel all work (queued or running) when the
//! drain timeout passes.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long cancelled work may take, beyond the runtime's `cancel_grace`, to write its end
/// before it is aborted.
const WIND_DOWN: Duration = Duration::from_secs(1);

/// A unit of admitted work: a request or a batch, answer included.
pub(crate) type Job = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The pool is full (or shutting down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overloaded;

/// One admission, released when dropped (when its job has finished, or
/// when it was never submitted).
#[derive(Debug)]
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What the pool and its dispatcher share.
#[derive(Debug)]
struct Workers {
    /// One permit per job that may run at once.
    permits: Arc<Semaphore>,
    /// Jobs handed to the dispatcher that have not started yet: while one
    /// waits, a new job queues behind it.
    queued: AtomicUsize,
    /// The running jobs' tasks.
    running: TaskTracker,
    /// Cancelled when cancelled work outlived its grace: running jobs are dropped.
    abort: CancellationToken,
}

impl Workers {
    /// Runs `job` on a task of its own, holding `permit` and `slot` until it ends.
    fn spawn(&self, job: Job, permit: OwnedSemaphorePermit, slot: Slot) {
        let abort = self.abort.clone();
        self.running.spawn(async move {
            tokio::select! {
                biased;
                () = abort.cancelled() => {}
                r = AssertUnwindSafe(job).catch_unwind() => if r.is_err() {
                    tracing::error!("a stdio worker panicked");
                },
            }
            drop(permit);
            drop(slot);
        });
    }
}

/// The worker pool.
#[derive(Debug)]
pub(crate) struct Pool {
    tx: mpsc::UnboundedSender<(Job, Slot)>,
    admitted: Arc<AtomicUsize>,
    capacity: usize,
    workers: Arc<Workers>,
    stop: CancellationToken,
    /// How long cancelled work may run before it is aborted.
    grace: Duration,
    dispatcher: JoinHandle<()>,
}

impl Pool {
    /// A pool of `workers` (at least one) with `queue` waiting places;
    /// `stop` is cancelled when the drain timeout passes (every job's token
    /// descends from it); cancelled work is aborted after `cancel_grace`
    /// (the runtime's grace for cancelled handlers) and a second more.
    pub(crate) fn new(workers: usize, queue: usize, stop: CancellationToken, cancel_grace: Duration) -> Self {
        let count = workers.max(1);
        let (tx, rx) = mpsc::unbounded_channel();
        let workers = Arc::new(Workers {
            permits: Arc::new(Semaphore::new(count)),
            queued: AtomicUsize::new(0),
            running: TaskTracker::new(),
            abort: CancellationToken::new(),
        });
        Pool {
            tx,
            admitted: Arc::new(AtomicUsize::new(0)),
            capacity: count.saturating_add(queue),
            workers: workers.clone(),
            stop,
            grace: cancel_grace + WIND_DOWN,
            dispatcher: tokio::spawn(dispatch(rx, workers)),
        }
    }

    /// Reserves an admission, or refuses when the pool is full.
    pub(crate) fn reserve(&self) -> Result<Slot, Overloaded> {
        let cap = self.capacity;
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < cap).then_some(n + 1))
            .map_err(|_| Overloaded)?;
        Ok(Slot(self.admitted.clone()))
    }

    /// Starts an admitted job: here and now when a worker is free and no
    /// job waits (its first poll runs on the caller's task; it moves to a
    /// task of its own only if it has to wait), else behind the waiting ones.
    pub(crate) async fn submit(&self, slot: Slot, job: Job) {
        let w = &self.workers;
        // Only the submitting task adds to `queued`: once it reads 0, every
        // job submitted before has started, so starting this one keeps FIFO.
        if w.queued.load(Ordering::Acquire) == 0
            && let Ok(permit) = w.permits.clone().try_acquire_owned()
        {
            let mut job = job;
            let first = std::future::poll_fn(|cx| {
                Poll::Ready(std::panic::catch_unwind(AssertUnwindSafe(|| job.as_mut().poll(cx))))
            })
            .await;
            match first {
                Ok(Poll::Ready(())) => {}
                Ok(Poll::Pending) => w.spawn(job, permit, slot),
                Err(_) => tracing::error!("a stdio worker panicked"),
            }
            return;
        }
        w.queued.fetch_add(1, Ordering::AcqRel);
        if self.tx.send((job, slot)).is_err() {
            w.queued.fetch_sub(1, Ordering::AcqRel);
            tracing::error!("the stdio dispatcher has stopped; request dropped");
        }
    }

    /// Admits nothing more and waits for the admitted jobs, at most
    /// `timeout`; then cancels them, and aborts what is still running after
    /// a short grace period.
    pub(crate) async fn drain(self, timeout: Duration) {
        let Pool {
            tx,
            stop,
            grace,
            workers,
            dispatcher,
            ..
        } = self;
        drop(tx);
        let mut all = std::pin::pin!(async {
            // The dispatcher ends once it has started every queued job.
            if dispatcher.await.is_err() {
                tracing::error!("the stdio dispatcher failed");
            }
            workers.running.close();
            workers.running.wait().await;
        });
        if tokio::time::timeout(timeout, &mut all).await.is_ok() {
            return;
        }
        tracing::warn!(
            ?timeout,
            "requests still running at the end of serving; cancelling them"
        );
        stop.cancel();
        if tokio::time::timeout(grace, &mut all).await.is_ok() {
            return;
        }
        tracing::warn!("requests ignored their cancellation; aborting them");
        // Running jobs are dropped; queued ones start and are dropped at once.
        workers.abort.cancel();
        all.await;
    }
}

async fn dispatch(mut rx: mpsc::UnboundedReceiver<(Job, Slot)>, workers: Arc<Workers>) {
    while let Some((job, slot)) = rx.recv().await {
        // The semaphore is fair and this loop sequential: FIFO starts.
        let Ok(permit) = workers.permits.clone().acquire_owned().await else {
            break;
        };
        workers.spawn(job, permit, slot);
        // Started: the submitter may start the next job itself once none waits.
        workers.queued.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Notify;

    #[tokio::test]
    async fn admission_is_bounded_and_released() {
        let pool = Pool::new(1, 1, CancellationToken::new(), Duration::ZERO);
        let gate = Arc::new(Notify::new());
        let job = |g: Arc<Notify>| -> Job { Box::pin(async move { g.notified().await }) };
        async fn admit(pool: &Pool, j: Job) -> Result<(), Overloaded> {
            let slot = pool.reserve()?;
            pool.submit(slot, j).await;
            Ok(())
        }
        assert!(admit(&pool, job(gate.clone())).await.is_ok());
        assert!(admit(&pool, job(gate.clone())).await.is_ok());
        assert_eq!(admit(&pool, job(gate.clone())).await, Err(Overloaded));
        gate.notify_one();
        // One slot frees once the first job has finished.
        let admitted = pool.admitted.clone();
        while admitted.load(Ordering::Acquire) > 1 {
            tokio::task::yield_now().await;
        }
        assert!(admit(&pool, job(gate.clone())).await.is_ok());
        gate.notify_one();
        gate.notify_one();
        pool.drain(Duration::from_secs(5)).await;
        assert_eq!(admitted.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_job_that_completes_at_once_runs_in_place() {
        let pool = Pool::new(1, 0, CancellationToken::new(), Duration::ZERO);
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..3 {
            let seen = ran.clone();
            let job: Job = Box::pin(async move {
                seen.fetch_add(1, Ordering::AcqRel);
            });
            pool.submit(pool.reserve().unwrap(), job).await;
        }
        // Done before anything else ran, its admission released.
        assert_eq!(ran.load(Ordering::Acquire), 3);
        assert_eq!(pool.admitted.load(Ordering::Acquire), 0);
        pool.drain(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn waiting_jobs_start_in_order() {
        let pool = Pool::new(1, 8, CancellationToken::new(), Duration::ZERO);
        let gate = Arc::new(Notify::new());
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let first = gate.clone();
        let job: Job = Box::pin(async move { first.notified().await });
        pool.submit(pool.reserve().unwrap(), job).await;
        for i in 0..4 {
            let order = order.clone();
            let job: Job = Box::pin(async move { order.lock().unwrap().push(i) });
            pool.submit(pool.reserve().unwrap(), job).await;
        }
        gate.notify_one();
        pool.drain(Duration::from_secs(5)).await;
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    }

    #[tokio::test]
    async fn drain_cancels_after_the_timeout() {
        let stop = CancellationToken::new();
        let pool = Pool::new(2, 2, stop.clone(), Duration::ZERO);
        let token = stop.child_token();
        let seen = token.clone();
        let job: Job = Box::pin(async move { seen.cancelled().await });
        pool.submit(pool.reserve().unwrap(), job).await;
        pool.drain(Duration::from_millis(10)).await;
        assert!(token.is_cancelled());
    }

    #[tokio::test]
    async fn work_that_ignores_cancellation_is_aborted() {
        let pool = Pool::new(1, 2, CancellationToken::new(), Duration::ZERO);
        for _ in 0..2 {
            let job: Job = Box::pin(std::future::pending());
            pool.submit(pool.reserve().unwrap(), job).await;
        }
        let admitted = pool.admitted.clone();
        pool.drain(Duration::from_millis(10)).await;
        assert_eq!(admitted.load(Ordering::Acquire), 0);
    }
}
