//! The [`Bus`] seam: messages to every instance of a server, and the in-memory default.
//!
//! The bus carries opaque bytes; the runtime defines what they say (list changes, resource
//! updates, session ends and changes, responses and cancellations for a request another
//! instance holds, new stream events, task control, HTTP+SSE pair messages for the instance
//! holding the pair). Delivery is at most once, like Redis
//! pub/sub: a subscriber that could not keep up, or lost its connection, is told so with
//! [`BusEvent::Gap`] and reacts as to a lag (every list is re-announced, streams re-read their
//! logs), so a loss is never silent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use super::StoreError;

/// The backlog of one subscriber of the in-memory bus.
const BACKLOG: usize = 4096;

/// What a bus subscription yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusEvent {
    /// A message, as published.
    Message(Arc<[u8]>),
    /// Messages may have been lost since the last one (a backlog overflowed, or the connection
    /// to the backend dropped and came back).
    Gap,
}

/// Messages to every instance.
///
/// # Contract
///
/// - `publish` never waits: it queues the message and fails only when the bus cannot take it
///   (the backend is unreachable and its queue is full), so the caller can answer with a clear
///   error instead of losing it silently.
/// - Every subscription receives every message published after it was made, by any instance
///   (the publisher's own included), in publish order per publisher, or a [`BusEvent::Gap`]
///   where some were lost.
pub trait Bus: Send + Sync + 'static {
    /// Sends a message to every instance.
    fn publish(&self, message: Vec<u8>) -> Result<(), StoreError>;

    /// Receives every message published from now on.
    fn subscribe(&self) -> mpsc::Receiver<BusEvent>;
}

#[derive(Debug)]
struct Subscriber {
    tx: mpsc::Sender<BusEvent>,
    /// A message was dropped: a `Gap` is owed before the next one.
    lost: AtomicBool,
}

/// The subscriptions of one process to a bus, and the delivery rule every bus implementation
/// shares: each subscription has a bounded backlog; a message that does not fit is dropped and
/// a [`BusEvent::Gap`] is owed before the next one, so a loss is never silent.
#[derive(Debug, Default)]
pub struct Fanout {
    subscribers: Mutex<Vec<Subscriber>>,
}

impl Fanout {
    /// No subscription yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new subscription.
    pub fn subscribe(&self) -> mpsc::Receiver<BusEvent> {
        let (tx, rx) = mpsc::channel(BACKLOG);
        self.lock().push(Subscriber {
            tx,
            lost: AtomicBool::new(false),
        });
        rx
    }

    /// Delivers a message to every subscription (a `Gap` first where one is owed).
    pub fn deliver(&self, message: &Arc<[u8]>) {
        let mut subscribers = self.lock();
        subscribers.retain(|s| !s.tx.is_closed());
        for s in subscribers.iter() {
            if s.lost.load(Ordering::Acquire) {
                if s.tx.try_send(BusEvent::Gap).is_err() {
                    continue;
                }
                s.lost.store(false, Ordering::Release);
            }
            if s.tx.try_send(BusEvent::Message(message.clone())).is_err() {
                s.lost.store(true, Ordering::Release);
            }
        }
    }

    /// Tells every subscription that messages may have been lost (a reconnect).
    pub fn gap(&self) {
        let mut subscribers = self.lock();
        subscribers.retain(|s| !s.tx.is_closed());
        for s in subscribers.iter() {
            let owed = s.tx.try_send(BusEvent::Gap).is_err();
            s.lost.store(owed, Ordering::Release);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        self.subscribers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The default: a bus between the runtimes of this process.
#[derive(Debug, Default)]
pub struct MemoryBus {
    fanout: Fanout,
}

impl MemoryBus {
    /// A bus with no subscriber.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Bus for MemoryBus {
    fn publish(&self, message: Vec<u8>) -> Result<(), StoreError> {
        self.fanout.deliver(&Arc::from(message));
        Ok(())
    }

    fn subscribe(&self) -> mpsc::Receiver<BusEvent> {
        self.fanout.subscribe()
    }
}
