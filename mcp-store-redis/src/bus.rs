//! [`Bus`] on Redis pub/sub: a channel to every instance and one per process (its address), a
//! publisher task and a listener task.
//!
//! - `publish` and `publish_to` put the message in a bounded queue and return; the publisher
//!   task sends what is queued as one pipeline of `PUBLISH`es on the command connection, in
//!   queue order (so one publisher's messages keep their order across channels for a
//!   subscriber of several), retrying a batch that failed because Redis could not be reached a
//!   few times, then dropping it with a warning.
//! - The process's address is drawn at connect, and its channel subscribed with the channel to
//!   every instance before the bus is handed out: a message published to the address only
//!   wakes this process.
//! - The listener task owns a connection of its own in subscriber mode. It pings it now and
//!   then; when the connection drops (or a ping goes unanswered), it reconnects with backoff
//!   and, once subscribed again, hands every subscriber a [`BusEvent::Gap`]. On a Redis
//!   Cluster the channel is a classic one (`PUBLISH` reaches the subscribers of every node), so
//!   the connection is to any one node; when that node goes away it moves to the next node
//!   named in the options.
//! - Each subscriber has a bounded queue; one that overflows is owed a `Gap`, as with the
//!   in-memory bus.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mcp_runtime::StoreError;
use mcp_runtime::store::{Bus, BusEvent, Fanout};
use redis::Value;
use redis::aio::PubSub;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{MissedTickBehavior, sleep, timeout};

use crate::conn::{Commands, is_unavailable};
use crate::nodes::Nodes;

/// How many queued messages go in one pipeline.
const BATCH: usize = 256;
/// How many times a batch that could not reach Redis is tried again.
const PUBLISH_RETRIES: u32 = 3;
/// The first wait before a retry of a batch (doubled each time).
const PUBLISH_BACKOFF: Duration = Duration::from_millis(50);
/// How often the subscriber connection is pinged, and how long the answer may take.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING_TIMEOUT: Duration = Duration::from_secs(3);
/// The waits between reconnection attempts of the subscriber connection.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(3);

/// The channels of a bus: to every instance, and to this process.
#[derive(Debug, Clone)]
pub(crate) struct Channels {
    /// The channel to every instance.
    pub(crate) everyone: String,
    /// This process's address (its channel: [`Channels::to`]).
    address: String,
}

impl Channels {
    /// The channel to every instance, and a fresh address (16 hex digits from the OS CSPRNG:
    /// two processes drawing the same one would only hear each other's messages, which the
    /// runtime ignores by their recipient).
    pub(crate) fn new(everyone: String) -> Self {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            panic!("the operating system's random number generator failed");
        }
        let address = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Channels { everyone, address }
    }

    /// The channel of `address`: `{<everyone>}:<address>`, or `<everyone>:<address>` when the
    /// channel to everyone has a hash tag of its own. Either way it is in the same cluster slot
    /// as the channel to everyone, so that a Redis Cluster connection sends a batch of
    /// publishes to one node, in order.
    fn to(&self, address: &str) -> String {
        if has_hash_tag(&self.everyone) {
            format!("{}:{address}", self.everyone)
        } else {
            format!("{{{}}}:{address}", self.everyone)
        }
    }

    /// The channels this process listens to.
    pub(crate) fn listened(&self) -> [String; 2] {
        [self.everyone.clone(), self.to(&self.address)]
    }
}

/// Whether Redis Cluster hashes only part of `name`: the part between its first `{` and the
/// first `}` after it, when that part is not empty.
fn has_hash_tag(name: &str) -> bool {
    name.find('{')
        .is_some_and(|open| name[open + 1..].find('}').is_some_and(|len| len > 0))
}

/// A message waiting to be published: its channel (`None`: to every instance) and bytes.
type Queued = (Option<String>, Vec<u8>);

/// The bus over Redis pub/sub.
pub(crate) struct RedisBus {
    queue: mpsc::Sender<Queued>,
    channels: Channels,
    subscribers: Arc<Fanout>,
    /// Dropped with the bus: the listener task then ends.
    _stop: oneshot::Sender<()>,
}

impl RedisBus {
    /// Starts the publisher and the listener; `pubsub` is already subscribed to the
    /// [`listened`](Channels::listened) channels.
    pub(crate) fn start(conn: Commands, nodes: Nodes, pubsub: PubSub, channels: Channels, max_pending: usize) -> Self {
        let (queue, rx) = mpsc::channel(max_pending.max(1));
        let (stop, stopped) = oneshot::channel();
        let subscribers = Arc::new(Fanout::new());
        tokio::spawn(publisher(conn, channels.everyone.clone(), rx, subscribers.clone()));
        tokio::spawn(listener(
            nodes,
            channels.listened(),
            pubsub,
            subscribers.clone(),
            stopped,
        ));
        RedisBus {
            queue,
            channels,
            subscribers,
            _stop: stop,
        }
    }

    fn queue(&self, message: Queued) -> Result<(), StoreError> {
        self.queue.try_send(message).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                StoreError::Unavailable("the bus cannot reach Redis: its publish queue is full".into())
            }
            mpsc::error::TrySendError::Closed(_) => StoreError::Unavailable("the bus publisher stopped".into()),
        })
    }
}

impl Bus for RedisBus {
    fn publish(&self, message: Vec<u8>) -> Result<(), StoreError> {
        self.queue((None, message))
    }

    fn publish_to(&self, address: &str, message: Vec<u8>) -> Result<(), StoreError> {
        self.queue((Some(self.channels.to(address)), message))
    }

    fn subscribe(&self) -> mpsc::Receiver<BusEvent> {
        self.subscribers.subscribe()
    }

    fn address(&self) -> Option<&str> {
        Some(&self.channels.address)
    }
}

/// Sends what is queued, a batch per round trip, in queue order. A batch Redis would not take
/// is a gap for this process's subscribers at once (the others see it from the numbers the
/// runtime puts in its messages).
async fn publisher(mut conn: Commands, everyone: String, mut rx: mpsc::Receiver<Queued>, subscribers: Arc<Fanout>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let mut pipe = redis::pipe();
        for (to, m) in &batch {
            let channel = to.as_ref().unwrap_or(&everyone);
            pipe.cmd("PUBLISH").arg(channel).arg(m.as_slice()).ignore();
        }
        let mut attempt = 0;
        loop {
            match pipe.exec_async(&mut conn).await {
                Ok(()) => break,
                Err(e) if attempt < PUBLISH_RETRIES && is_unavailable(&e) => {
                    sleep(PUBLISH_BACKOFF * 2u32.pow(attempt)).await;
                    attempt += 1;
                }
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        messages = batch.len(),
                        "bus messages dropped: PUBLISH to Redis failed; a gap for every subscriber"
                    );
                    subscribers.gap();
                    break;
                }
            }
        }
        batch.clear();
    }
    tracing::debug!("bus publisher stopped");
}

/// Feeds the subscribers from the subscriber connection, reconnecting when it drops (to the
/// next node of a cluster first: the one it was on may be gone for good).
async fn listener(
    mut nodes: Nodes,
    channels: [String; 2],
    first: PubSub,
    subscribers: Arc<Fanout>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut current = Some(first);
    let mut delay = RECONNECT_MIN;
    loop {
        let pubsub = match current.take() {
            Some(p) => p,
            None => match nodes.subscribe(&channels).await {
                Ok(p) => {
                    tracing::info!(channel = %channels[0], "bus subscriber connection to Redis restored");
                    delay = RECONNECT_MIN;
                    subscribers.gap();
                    p
                }
                Err(e) => {
                    tracing::debug!(error = %e, retry_in = ?delay, "bus subscriber cannot reach Redis");
                    tokio::select! {
                        _ = &mut stop => return,
                        () = sleep(delay) => {}
                    }
                    delay = (delay * 2).min(RECONNECT_MAX);
                    continue;
                }
            },
        };
        let (mut sink, mut stream) = pubsub.split();
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        ping.tick().await;
        loop {
            tokio::select! {
                _ = &mut stop => return,
                msg = stream.next() => match msg {
                    Some(msg) => subscribers.deliver(&Arc::from(msg.get_payload_bytes())),
                    None => {
                        tracing::warn!(channel = %channels[0], "bus subscriber connection to Redis lost; reconnecting");
                        break;
                    }
                },
                _ = ping.tick() => {
                    match timeout(PING_TIMEOUT, sink.ping::<Value>()).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => {
                            tracing::warn!(channel = %channels[0], error = %e, "bus subscriber ping failed; reconnecting");
                            break;
                        }
                        Err(_) => {
                            tracing::warn!(channel = %channels[0], "bus subscriber ping unanswered; reconnecting");
                            break;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Channels, has_hash_tag};

    #[test]
    fn a_process_channel_is_in_the_slot_of_the_channel_to_everyone() {
        assert!(has_hash_tag("{app}:bus") && has_hash_tag("a{b}c{d}"));
        assert!(!has_hash_tag("mcp:bus") && !has_hash_tag("a{}b{c}") && !has_hash_tag("a}b{"));
        let plain = Channels::new("mcp:bus".into());
        let [everyone, mine] = plain.listened();
        assert_eq!(everyone, "mcp:bus");
        assert_eq!(mine, format!("{{mcp:bus}}:{}", plain.address));
        let tagged = Channels::new("{app}:bus".into());
        assert_eq!(tagged.to("ab"), "{app}:bus:ab");
        assert_eq!(plain.address.len(), 16);
        assert!(plain.address.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
