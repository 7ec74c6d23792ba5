//! The [`Bus`] seam: messages to every instance of a server, and the in-memory default.
//!
//! The bus carries opaque bytes; the runtime defines what they say (list changes, resource
//! updates, session ends and changes, responses and cancellations for a request another
//! instance holds, new stream events, task control, mail for the instance holding its
//! mailbox). Delivery is at most once, like Redis
//! pub/sub: a subscriber that could not keep up, or lost its connection, is told so with
//! [`BusEvent::Gap`] and reacts as to a lag (every list is re-announced, streams re-read their
//! logs), so a loss is never silent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use crate::store::error::StoreError;

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

/// Messages to every instance, and to one process.
///
/// # Contract
///
/// - `publish` and `publish_to` never wait: they queue the message and fail only when the bus
///   cannot take it (the backend is unreachable and its queue is full), so the caller can
///   answer with a clear error instead of losing it silently.
/// - Every subscription receives every message published after it was made, by any instance
///   (the publisher's own included), and every message published to its process's
///   [`address`](Bus::address), in publish order per publisher (the two kinds interleaved as
///   they were published), or a [`BusEvent::Gap`] where some were lost.
///
/// A message for one instance (the end of a session to the instances holding it, a reply to
/// the instance that asked) goes to that instance's address when the bus has addresses; a bus
/// without them delivers it to every instance, and the others ignore it. Addresses only spare
/// the instances a message is not for: with many instances, a message for one then costs one
/// delivery instead of one per instance.
pub trait Bus: Send + Sync + 'static {
    /// Sends a message to every instance.
    fn publish(&self, message: Vec<u8>) -> Result<(), StoreError>;

    /// Sends a message to the process listening at `address` (another process's
    /// [`address`](Bus::address)). The default sends it to every instance, as
    /// [`publish`](Bus::publish) does.
    fn publish_to(&self, address: &str, message: Vec<u8>) -> Result<(), StoreError> {
        let _ = address;
        self.publish(message)
    }

    /// Receives every message published from now on, and every message published to this
    /// process's address.
    fn subscribe(&self) -> mpsc::Receiver<BusEvent>;

    /// Where messages for this process alone go, if the bus can address processes: a
    /// non-empty name without a `.`, the same for every subscription of this bus. The bus
    /// listens there before it is handed out, so a subscription receives what is sent to the
    /// address from the moment it is made, with no wait for the backend. `None` (the
    /// default): every message reaches every instance.
    fn address(&self) -> Option<&str> {
        None
    }
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
