//! What every seam shares: the command connection, the key layout and the error mapping.

use mcp_runtime::StoreError;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, ServerErrorKind, Value};

/// The command connection: to one Redis, or to a Redis Cluster. Every seam sends the same
/// commands, scripts and pipelines on either (each touches keys of one slot only); a cluster
/// connection routes each by its first key's slot and follows the cluster's redirections.
#[derive(Clone)]
pub(crate) enum Commands {
    /// One Redis: a connection manager (reconnects on its own).
    Single(ConnectionManager),
    /// A Redis Cluster: a connection per node, the slot map refreshed when it changes.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Commands {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Commands::Single(c) => c.req_packed_command(cmd),
            Commands::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Commands::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Commands::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Commands::Single(c) => c.get_db(),
            Commands::Cluster(c) => c.get_db(),
        }
    }
}

/// How many shards task records are spread over (each its own hash tag, so its own slot of a
/// Redis Cluster).
pub(crate) const TASK_SHARDS: u8 = 16;

/// The shard of task `id`: FNV-1a of the id, modulo [`TASK_SHARDS`] (stable across processes
/// and versions: it names keys).
pub(crate) fn task_shard(id: &str) -> u8 {
    let hash = id
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    (hash % u32::from(TASK_SHARDS)) as u8
}

/// The command connection and the key layout, cloned into every seam.
#[derive(Clone)]
pub(crate) struct Conn {
    commands: Commands,
    pub(crate) keys: Keys,
}

impl Conn {
    pub(crate) fn new(commands: Commands, keys: Keys) -> Self {
        Conn { commands, keys }
    }

    /// A handle to send commands on (a cheap, shared handle: commands of every clone are
    /// multiplexed on the same connections).
    pub(crate) fn commands(&self) -> Commands {
        self.commands.clone()
    }
}

/// The names of every key, under one prefix (see the crate docs for the table).
///
/// Every key of one session carries the hash tag `{<session id>}`, every task record and its
/// shard's indexes the hash tag `{tasks:<shard>}`, so that in a Redis Cluster the keys one
/// script touches live on one slot, and the tasks spread over [`TASK_SHARDS`] slots.
#[derive(Clone, Debug)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    /// `<prefix>:{<session>}:session`: the session record (a hash).
    pub(crate) fn session(&self, session: &str) -> String {
        format!("{}:{{{session}}}:session", self.prefix)
    }

    /// `<prefix>:{<session>}:seq`: the id counters of a session's streams (a hash: field `<n>`
    /// is the newest id handed out on stream `n`, field `e<n>` the highest id evicted from it).
    pub(crate) fn seq(&self, session: &str) -> String {
        format!("{}:{{{session}}}:seq", self.prefix)
    }

    /// `<prefix>:{<session>}:ev:`: what the key of a stream starts with.
    pub(crate) fn stream_prefix(&self, session: &str) -> String {
        format!("{}:{{{session}}}:ev:", self.prefix)
    }

    /// `<prefix>:{<session>}:ev:<n>`: the events of one stream (a Redis stream, entry ids
    /// `0-<event id>`).
    pub(crate) fn stream(&self, session: &str, stream: u64) -> String {
        format!("{}{stream}", self.stream_prefix(session))
    }

    /// `<prefix>:{tasks:<shard>}:task:`: what the key of a task record of `shard` starts with.
    pub(crate) fn task_prefix(&self, shard: u8) -> String {
        format!("{}:{{tasks:{shard}}}:task:", self.prefix)
    }

    /// `<prefix>:{tasks:<shard>}:task:<id>`: one task record (a JSON string), in its id's shard.
    pub(crate) fn task(&self, id: &str) -> String {
        format!("{}{id}", self.task_prefix(task_shard(id)))
    }

    /// `<prefix>:{tasks:<shard>}:<name>`: an index of the tasks of one shard.
    pub(crate) fn tasks(&self, shard: u8, name: &str) -> String {
        format!("{}:{{tasks:{shard}}}:{name}", self.prefix)
    }

    /// `<prefix>:{tasks-of:<set>}`: the ids of the tasks of one owner or client, in a slot of
    /// their own (`set` is `o:<owner>` or `c:<client>`).
    pub(crate) fn tasks_of(&self, set: &str) -> String {
        format!("{}:{{tasks-of:{set}}}", self.prefix)
    }

    /// `<prefix>:{queue}:<name>`: a key of the task queue.
    pub(crate) fn queue(&self, name: &str) -> String {
        format!("{}:{{queue}}:{name}", self.prefix)
    }

    /// `<prefix>:instance:<id>`: an instance's heartbeat.
    pub(crate) fn instance(&self, id: &str) -> String {
        format!("{}:instance:{id}", self.prefix)
    }

    /// `<prefix>:mailbox:<id>`: an open mailbox's record.
    pub(crate) fn mailbox(&self, id: &str) -> String {
        format!("{}:mailbox:{id}", self.prefix)
    }

    /// `<prefix>:rate:<bucket>`: a rate-limit bucket's GCRA state (its theoretical arrival
    /// time in microseconds, a string).
    pub(crate) fn bucket(&self, bucket: &str) -> String {
        format!("{}:rate:{bucket}", self.prefix)
    }

    /// `<prefix>:dpop:<key>`: a DPoP proof already used (the key is a hash of the proof's key
    /// thumbprint and `jti`, made by `mcp-auth`).
    pub(crate) fn replay(&self, key: &str) -> String {
        format!("{}:dpop:{key}", self.prefix)
    }

    /// `<prefix>:{ev.<type>}:meta`: an event type's occurrence log counters and epoch (a hash;
    /// see `occurrences.rs`).
    #[cfg(feature = "events")]
    pub(crate) fn occurrences_meta(&self, name: &str) -> String {
        format!("{}:{{ev.{name}}}:meta", self.prefix)
    }

    /// `<prefix>:{ev.<type>}:log`: an event type's occurrences (a Redis stream, entry ids
    /// `0-<position>`).
    #[cfg(feature = "events")]
    pub(crate) fn occurrences(&self, name: &str) -> String {
        format!("{}:{{ev.{name}}}:log", self.prefix)
    }

    /// `<prefix>:{ev.<type>}:streams`: the open push streams of a limited type (a sorted set;
    /// see `stream_slots.rs`).
    #[cfg(feature = "events")]
    pub(crate) fn stream_slots(&self, name: &str) -> String {
        format!("{}:{{ev.{name}}}:streams", self.prefix)
    }

    /// `<prefix>:webhook:<id>`: one webhook subscription (a JSON string).
    #[cfg(feature = "events")]
    pub(crate) fn webhook(&self, id: &str) -> String {
        format!("{}:webhook:{id}", self.prefix)
    }

    /// `<prefix>:webhook-lease:<id>`: the holder of a webhook subscription's delivery lease.
    #[cfg(feature = "events")]
    pub(crate) fn webhook_lease(&self, id: &str) -> String {
        format!("{}:webhook-lease:{id}", self.prefix)
    }

    /// `<prefix>:webhooks`: the ids of every webhook subscription (a set).
    #[cfg(feature = "events")]
    pub(crate) fn webhooks(&self) -> String {
        format!("{}:webhooks", self.prefix)
    }

    /// `<prefix>:webhooks:type:<type>`: the ids of an event type's webhook subscriptions.
    #[cfg(feature = "events")]
    pub(crate) fn webhooks_of_type(&self, name: &str) -> String {
        format!("{}:webhooks:type:{name}", self.prefix)
    }

    /// `<prefix>:webhooks:of:<principal>`: the ids of a principal's webhook subscriptions.
    #[cfg(feature = "events")]
    pub(crate) fn webhooks_of(&self, principal: &str) -> String {
        format!("{}:webhooks:of:{principal}", self.prefix)
    }

    /// `<prefix>:bus`: the default bus channel.
    pub(crate) fn bus_channel(&self) -> String {
        format!("{}:bus", self.prefix)
    }
}

/// Whether an error means Redis cannot be reached right now (rather than that it refused the
/// command).
pub(crate) fn is_unavailable(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || matches!(
            e.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                )
        )
}

/// The store error for a Redis error: [`StoreError::Unavailable`] when Redis cannot be reached,
/// [`StoreError::Backend`] otherwise.
pub(crate) fn store_error(e: RedisError) -> StoreError {
    if is_unavailable(&e) {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Backend(e.to_string())
    }
}

/// A reply that does not have the shape the script promises.
pub(crate) fn bad_reply(what: &str) -> StoreError {
    StoreError::Backend(format!("unexpected reply from Redis: {what}"))
}

/// A duration in whole milliseconds, as `PEXPIRE` and `PX` take it.
pub(crate) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Parses a decimal reply.
pub(crate) fn parse_u64(bytes: &[u8], what: &str) -> Result<u64, StoreError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad_reply(what))
}
