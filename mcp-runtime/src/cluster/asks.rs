//! [`Asks`]: questions this instance puts to the others on the bus, each numbered and waiting
//! for its answer (the note carrying the answer names the asker and the number).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// Open questions whose answers are `T`.
#[derive(Debug)]
pub(super) struct Asks<T> {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<T>>>,
}

impl<T> Default for Asks<T> {
    fn default() -> Self {
        Asks {
            next: AtomicU64::new(0),
            waiting: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Asks<T> {
    fn waiting(&self) -> MutexGuard<'_, HashMap<u64, oneshot::Sender<T>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new question: its number (from 1), and where its answer arrives.
    pub(super) fn open(&self) -> (u64, oneshot::Receiver<T>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(n, tx);
        (n, rx)
    }

    /// The answer to question `n` (nothing when it is no longer waited for).
    pub(super) fn answer(&self, n: u64, value: T) {
        if let Some(tx) = self.waiting().remove(&n) {
            let _ = tx.send(value);
        }
    }

    /// Stops waiting for question `n` (it was not sent, or its wait is over).
    pub(super) fn close(&self, n: u64) {
        self.waiting().remove(&n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_answer_reaches_its_question_once() {
        let asks = Asks::<&str>::default();
        let (a, rx_a) = asks.open();
        let (b, rx_b) = asks.open();
        assert_ne!(a, b);
        asks.answer(b, "b");
        asks.answer(b, "again");
        asks.close(a);
        asks.answer(a, "late");
        assert_eq!(rx_b.await, Ok("b"));
        assert!(rx_a.await.is_err(), "a closed question hears nothing");
    }
}
