//! Admission and the bounded worker pool.
//!
//! A request (or a batch) is *admitted* when fewer than
//! `max_workers + max_queue` are admitted and unfinished; otherwise the
//! caller answers "Server is overloaded" at once. The admission count is
//! released only when a job has finished, so the decision depends on
//! nothing but what was admitted and what completed.
//!
//! Admitted jobs start in admission order (FIFO). A job admitted while a
//! worker is free and none is waiting starts at once, spawned by the caller;
//! otherwise it waits in a queue, from which one dispatcher task takes each
//! job in turn and waits for one of `max_workers` permits of a fair
//! semaphore before spawning it. Every job's cancellation token is a
//! child of the pool's own, so that the pool can cancel all work (queued
//! or running) when the drain timeout passes.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::{JoinError, JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long cancelled work may take, beyond the engine's `cancel_grace`, to write its end
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

/// The running jobs and the permits they hold.
#[derive(Debug)]
struct Workers {
    permits: Arc<Semaphore>,
    /// The running jobs (aborted when the drain's grace has passed).
    running: Mutex<JoinSet<()>>,
    /// Waits for the running jobs.
    tracker: TaskTracker,
    /// Jobs queued for the dispatcher and not yet started.
    waiting: AtomicUsize,
}

impl Workers {
    /// Starts `job` on a worker (its permit held).
    fn start(&self, job: Job, permit: OwnedSemaphorePermit, slot: Slot) {
        let mut running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        running.spawn(self.tracker.track_future(async move {
            job.await;
            drop(permit);
            drop(slot);
        }));
        while let Some(r) = running.try_join_next() {
            report(r);
        }
    }
}

/// The worker pool.
#[derive(Debug)]
pub(crate) struct Pool {
    tx: mpsc::UnboundedSender<(Job, Slot)>,
    workers: Arc<Workers>,
    admitted: Arc<AtomicUsize>,
    capacity: usize,
    stop: CancellationToken,
    /// How long cancelled work may run before it is aborted.
    grace: Duration,
    dispatcher: JoinHandle<()>,
}

impl Pool {
    /// A pool of `workers` (at least one) with `queue` waiting places;
    /// `stop` is cancelled when the drain timeout passes (every job's token
    /// descends from it); cancelled work is aborted after `cancel_grace`
    /// (the engine's grace for cancelled handlers) and a second more.
    pub(crate) fn new(workers: usize, queue: usize, stop: CancellationToken, cancel_grace: Duration) -> Self {
        let count = workers.max(1);
        let (tx, rx) = mpsc::unbounded_channel();
        let workers = Arc::new(Workers {
            permits: Arc::new(Semaphore::new(count)),
            running: Mutex::new(JoinSet::new()),
            tracker: TaskTracker::new(),
            waiting: AtomicUsize::new(0),
        });
        Pool {
            tx,
            workers: workers.clone(),
            admitted: Arc::new(AtomicUsize::new(0)),
            capacity: count.saturating_add(queue),
            stop,
            grace: cancel_grace + WIND_DOWN,
            dispatcher: mcp_runtime::background::spawn(dispatch(rx, workers)),
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

    /// Starts an admitted job at once when a worker is free and no job is waiting; queues it
    /// otherwise (it starts when a worker is free, after those admitted before it).
    pub(crate) fn submit(&self, slot: Slot, job: Job) {
        let workers = &self.workers;
        // Only this caller adds waiting jobs, so none can appear between the check and the start.
        if workers.waiting.load(Ordering::Acquire) == 0
            && let Ok(permit) = workers.permits.clone().try_acquire_owned()
        {
            return workers.start(job, permit, slot);
        }
        workers.waiting.fetch_add(1, Ordering::AcqRel);
        if self.tx.send((job, slot)).is_err() {
            workers.waiting.fetch_sub(1, Ordering::AcqRel);
            tracing::error!("the stdio dispatcher has stopped; request dropped");
        }
    }

    /// Admits nothing more and waits for the admitted jobs, at most
    /// `timeout`; then cancels them, and aborts what is still running after
    /// a short grace period.
    pub(crate) async fn drain(self, timeout: Duration) {
        let Pool {
            tx,
            workers,
            stop,
            grace,
            mut dispatcher,
            ..
        } = self;
        drop(tx);
        if tokio::time::timeout(timeout, &mut dispatcher).await.is_ok() {
            return;
        }
        tracing::warn!(
            ?timeout,
            "requests still running at the end of serving; cancelling them"
        );
        stop.cancel();
        if tokio::time::timeout(grace, &mut dispatcher).await.is_ok() {
            return;
        }
        tracing::warn!("requests ignored their cancellation; aborting them");
        dispatcher.abort();
        workers
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .abort_all();
        let _ = dispatcher.await;
    }
}

/// Starts the queued jobs in turn, each once a worker is free; once the queue has closed, waits
/// for every running job (those started at once by [`Pool::submit`] included).
async fn dispatch(mut rx: mpsc::UnboundedReceiver<(Job, Slot)>, workers: Arc<Workers>) {
    while let Some((job, slot)) = rx.recv().await {
        // The semaphore is fair and this loop sequential: FIFO starts.
        let Ok(permit) = workers.permits.clone().acquire_owned().await else {
            break;
        };
        workers.waiting.fetch_sub(1, Ordering::AcqRel);
        workers.start(job, permit, slot);
    }
    workers.tracker.close();
    workers.tracker.wait().await;
    let mut running = std::mem::take(
        &mut *workers
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    while let Some(r) = running.try_join_next() {
        report(r);
    }
}

fn report(r: Result<(), JoinError>) {
    if let Err(e) = r
        && e.is_panic()
    {
        tracing::error!("a stdio worker panicked");
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
        let admit = |j: Job| pool.reserve().map(|s| pool.submit(s, j));
        assert!(admit(job(gate.clone())).is_ok());
        assert!(admit(job(gate.clone())).is_ok());
        assert_eq!(admit(job(gate.clone())), Err(Overloaded));
        gate.notify_one();
        // One slot frees once the first job has finished.
        let admitted = pool.admitted.clone();
        while admitted.load(Ordering::Acquire) > 1 {
            tokio::task::yield_now().await;
        }
        assert!(admit(job(gate.clone())).is_ok());
        gate.notify_one();
        gate.notify_one();
        pool.drain(Duration::from_secs(5)).await;
        assert_eq!(admitted.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn jobs_start_in_admission_order() {
        let pool = Pool::new(1, 8, CancellationToken::new(), Duration::ZERO);
        let order = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new(Notify::new());
        let job = |n: u32, gate: Option<Arc<Notify>>| -> Job {
            let order = order.clone();
            Box::pin(async move {
                order.lock().unwrap().push(n);
                if let Some(g) = gate {
                    g.notified().await;
                }
            })
        };
        // The first starts at once (a worker is free); the others wait for it, in order.
        pool.submit(pool.reserve().unwrap(), job(1, Some(gate.clone())));
        for n in 2..=4 {
            pool.submit(pool.reserve().unwrap(), job(n, None));
        }
        tokio::task::yield_now().await;
        assert_eq!(*order.lock().unwrap(), vec![1]);
        gate.notify_one();
        pool.drain(Duration::from_secs(5)).await;
        assert_eq!(*order.lock().unwrap(), vec![1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn drain_cancels_after_the_timeout() {
        let stop = CancellationToken::new();
        let pool = Pool::new(2, 2, stop.clone(), Duration::ZERO);
        let token = stop.child_token();
        let seen = token.clone();
        let job: Job = Box::pin(async move { seen.cancelled().await });
        pool.submit(pool.reserve().unwrap(), job);
        pool.drain(Duration::from_millis(10)).await;
        assert!(token.is_cancelled());
    }
}
