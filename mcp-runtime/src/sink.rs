//! Where the messages a request emits go: progress, logs and (legacy)
//! server-to-client requests travel on the request's own stream.

use tokio::sync::mpsc;

/// One encoded JSON-RPC message on its way to the client.
pub type Frame = Vec<u8>;

/// The outbound channel of one request (or of a whole stdio process).
///
/// A sink may be detached (`Sink::detached`): where nothing can be streamed
/// (simple HTTP mode), emitted notifications are dropped and server-to-client
/// requests fail at once.
#[derive(Debug, Clone)]
pub struct Sink {
    tx: Option<mpsc::Sender<Frame>>,
}

impl Sink {
    /// A sink feeding a channel.
    pub fn new(tx: mpsc::Sender<Frame>) -> Self {
        Sink { tx: Some(tx) }
    }

    /// A sink that cannot stream.
    pub fn detached() -> Self {
        Sink { tx: None }
    }

    /// A bounded channel and the sink feeding it.
    pub fn channel(capacity: usize) -> (Sink, mpsc::Receiver<Frame>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Sink::new(tx), rx)
    }

    /// Whether messages can be delivered at all.
    pub fn can_stream(&self) -> bool {
        self.tx.as_ref().is_some_and(|t| !t.is_closed())
    }

    /// Sends a frame; `false` when it could not be delivered (no stream, or
    /// the stream is gone).
    pub async fn send(&self, frame: Frame) -> bool {
        match &self.tx {
            Some(tx) => tx.send(frame).await.is_ok(),
            None => false,
        }
    }
}
