//! Where the messages a request emits go: progress, logs and (legacy)
//! server-to-client requests travel on the request's own stream.
//!
//! A call that became a task outlives its request: its messages go through
//! a [`Relay`], a sink whose stream can be swapped (legacy: the stream of the
//! call that created the task while it is open, then the stream of a waiting
//! `tasks/result`), or cut (modern: nothing more reaches the request's
//! stream once the call is handed to a task).

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, watch};

/// One encoded JSON-RPC message on its way to the client.
pub type Frame = Vec<u8>;

/// The outbound channel of one request (or of a whole stdio process).
///
/// A sink may be detached (`Sink::detached`): where nothing can be streamed
/// (simple HTTP mode), emitted notifications are dropped and server-to-client
/// requests fail at once.
#[derive(Debug, Clone)]
pub struct Sink {
    tx: Tx,
}

#[derive(Debug, Clone)]
enum Tx {
    Detached,
    Channel(mpsc::Sender<Frame>),
    Relay(Arc<Relay>),
}

impl Sink {
    /// A sink feeding a channel.
    pub fn new(tx: mpsc::Sender<Frame>) -> Self {
        Sink { tx: Tx::Channel(tx) }
    }

    /// A sink that cannot stream.
    pub fn detached() -> Self {
        Sink { tx: Tx::Detached }
    }

    /// A bounded channel and the sink feeding it.
    pub fn channel(capacity: usize) -> (Sink, mpsc::Receiver<Frame>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Sink::new(tx), rx)
    }

    /// A sink writing to whatever stream the relay is attached to.
    pub(crate) fn relay(relay: Arc<Relay>) -> Self {
        Sink { tx: Tx::Relay(relay) }
    }

    /// The channel this sink writes to right now, if any.
    fn sender(&self) -> Option<mpsc::Sender<Frame>> {
        match &self.tx {
            Tx::Detached => None,
            Tx::Channel(tx) => Some(tx.clone()),
            Tx::Relay(r) => r.sender(),
        }
    }

    /// Whether messages can be delivered at all.
    pub fn can_stream(&self) -> bool {
        self.sender().is_some_and(|t| !t.is_closed())
    }

    /// Sends a frame without waiting; `false` when it could not be delivered
    /// (no stream, the stream is gone, or its buffer is full).
    pub fn try_send(&self, frame: Frame) -> bool {
        match self.sender() {
            Some(tx) => tx.try_send(frame).is_ok(),
            None => false,
        }
    }

    /// Sends a frame; `false` when it could not be delivered (no stream, or
    /// the stream is gone).
    pub async fn send(&self, frame: Frame) -> bool {
        match self.sender() {
            Some(tx) => tx.send(frame).await.is_ok(),
            None => false,
        }
    }
}

/// A swappable stream for the messages of a call that became a task.
#[derive(Debug)]
pub(crate) struct Relay {
    current: Mutex<Option<Sink>>,
    /// Bumped on every attachment, so that a waiter sees a new stream.
    attached: watch::Sender<u64>,
}

impl Relay {
    /// A relay attached to `sink` (or to nothing).
    pub(crate) fn new(sink: Option<Sink>) -> Arc<Self> {
        Arc::new(Relay {
            current: Mutex::new(sink),
            attached: watch::Sender::new(0),
        })
    }

    fn sender(&self) -> Option<mpsc::Sender<Frame>> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().and_then(Sink::sender)
    }

    /// Sends the relay's messages to `sink` from now on.
    pub(crate) fn attach(&self, sink: Sink) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(sink);
        self.attached.send_modify(|n| *n += 1);
    }

    /// Cuts the relay off: its messages are dropped until the next attachment.
    pub(crate) fn detach(&self) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Waits until the relay can stream (returns at once when it can).
    pub(crate) async fn streaming(&self) {
        let mut rx = self.attached.subscribe();
        loop {
            if self.sender().is_some_and(|t| !t.is_closed()) {
                return;
            }
            if rx.changed().await.is_err() {
                // The sender lives as long as `self`: unreachable in practice.
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn relay_follows_its_attachment() {
        let relay = Relay::new(None);
        let sink = Sink::relay(relay.clone());
        assert!(!sink.can_stream());
        assert!(!sink.send(b"x".to_vec()).await);
        let (a, mut a_rx) = Sink::channel(4);
        let waiter = {
            let relay = relay.clone();
            tokio::spawn(async move { relay.streaming().await })
        };
        relay.attach(a);
        waiter.await.unwrap();
        assert!(sink.send(b"1".to_vec()).await);
        assert_eq!(a_rx.recv().await.unwrap(), b"1");
        relay.detach();
        assert!(!sink.can_stream());
        drop(a_rx);
    }
}
