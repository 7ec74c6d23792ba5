//! Redis implementation of every store seam of [`mcp_runtime::store`]: session records, stream
//! events, task records, the bus, membership, rate-limit buckets and mailbox records, so
//! that several instances of one MCP server share their state through one Redis; and of `mcp-auth`'s DPoP replay cache
//! ([`RedisStore::replay_cache`]), so that a DPoP proof is single-use across them.
//!
//! ```no_run
//! # mod mcp_server { pub mod store { pub use mcp_runtime::store::Store; } pub mod redis { pub use mcp_store_redis::*; } }
//! # async fn run() -> Result<(), mcp_store_redis::RedisStoreError> {
//! let store: mcp_server::store::Store = mcp_server::redis::RedisStore::connect("redis://127.0.0.1/").await?.into();
//! # let _ = store;
//! # Ok(())
//! # }
//! ```
//!
//! [`RedisStore::connect`] fails at once with [`RedisStoreError`] when Redis cannot be reached
//! (or does not answer `PING`) at start. Once connected, the store uses two connections: one
//! multiplexed command connection ([`redis::aio::ConnectionManager`][conn-manager], shared by
//! every seam and every clone) and one subscriber connection for the bus, owned by a
//! background task, subscribed to the channel to every instance and to this store's own (its
//! [address](mcp_runtime::store::Bus::address), drawn at connect: a message for the instances
//! of this process only wakes this process).
//!
//! [conn-manager]: https://docs.rs/redis/latest/redis/aio/struct.ConnectionManager.html
//!
//! # Redis Cluster
//!
//! [`RedisStore::connect_cluster`] (or [`RedisStore::connect_cluster_with`], with options) takes
//! some of a cluster's nodes instead of one URL; every seam then works the same way:
//!
//! ```no_run
//! # mod mcp_server { pub mod store { pub use mcp_runtime::store::Store; } pub mod redis { pub use mcp_store_redis::*; } }
//! # async fn run() -> Result<(), mcp_store_redis::RedisStoreError> {
//! let nodes = ["redis://10.0.0.5:7000/", "redis://10.0.0.6:7000/", "redis://10.0.0.7:7000/"];
//! let store: mcp_server::store::Store = mcp_server::redis::RedisStore::connect_cluster(&nodes).await?.into();
//! # let _ = store;
//! # Ok(())
//! # }
//! ```
//!
//! The command connection is then a [cluster connection][cluster-conn] (it learns the slot map
//! from the first node that answers, sends each command to the primary of its keys' slot, and
//! follows the cluster when slots move or a replica is promoted); the bus subscribes on one
//! node, given or reported by the cluster (see [the bus](#when-redis-goes-away) below). Passwords and `rediss://` go in
//! the URLs as for one Redis (every node with the same password), and [`RedisOptions::tls`]
//! applies to every node. [`testing::RedisCluster`] starts a real six-node cluster for tests.
//!
//! [cluster-conn]: https://docs.rs/redis/latest/redis/cluster_async/struct.ClusterConnection.html
//!
//! # Key layout
//!
//! Every key starts with [`RedisOptions::prefix`] (`mcp` by default, written `P` below). Every
//! key of one session carries the hash tag `{<session id>}`, and every task record and the
//! indexes of its shard (16 shards, by task id) the hash tag `{tasks:<shard>}`, so that in a
//! Redis Cluster the keys one script touches live on one slot, and tasks spread over the
//! primaries. (The scripts of a session build the names of its stream keys, and those of tasks
//! the names of the records, from a prefix they are given: always under the same hash tag as
//! their first key.)
//!
//! | key | type | holds |
//! | --- | --- | --- |
//! | `P:{<sid>}:session` | hash | a session record: `record` (JSON, as created), `logLevel`, `initialized`, `tasks`, `s:<uri>` per resource subscription, `h:<instance>` per instance holding a replica; `PEXPIRE` = the sliding ttl |
//! | `P:{<sid>}:seq` | hash | per stream `n` of the session: `<n>` = newest id handed out, `l<n>` = id of the newest event stored, `e<n>` = highest id lost (evicted by the bound, or expired with the stream key) |
//! | `P:{<sid>}:ev:<n>` | stream | the kept events of stream `n`: entry id `0-<event id>`, field `f` = the frame |
//! | `P:{tasks:<shard>}:task:<id>` | string | a task record (JSON), in its id's shard (FNV-1a of the id, modulo 16); with a ttl, expires one hour after its expiry time, a backstop (the runtime deletes expired tasks itself) |
//! | `P:{tasks:<shard>}:all` | set | the shard's task ids |
//! | `P:{tasks:<shard>}:expiry` | sorted set | the shard's task ids scored by `expires_at_ms` |
//! | `P:{tasks:<shard>}:unfinished` | set | the shard's task ids in `working` or `input_required` |
//! | `P:{tasks:<shard>}:index:owner`, `P:{tasks:<shard>}:index:client` | hash | task id → the owner and client sets it is in |
//! | `P:{tasks-of:o:<owner>}` | set | the task ids of one owner (`p:<principal>` or `s:<len>:<principal>:<session>`), in a slot of its own |
//! | `P:{tasks-of:c:<client>}` | set | the task ids counted against one client (`p<len>:<principal>`, or `a:<address>` for an anonymous caller), in a slot of its own |
//! | `P:{queue}:client`, `P:{queue}:attempt` | hash | the task queue: task id → the client whose line it waits in, and its last attempt |
//! | `P:{queue}:line:<client>` | list | a client's due tasks, in order |
//! | `P:{queue}:ring` | list | the clients with a due task, in turn |
//! | `P:{queue}:leases`, `P:{queue}:delayed` | sorted set | task ids by the end of their lease, and by when a delayed one becomes due (ms, Redis's clock) |
//! | `P:instance:<id>` | string | an instance's heartbeat, `PX` = its ttl |
//! | `P:mailbox:<id>` | string | an open mailbox's record (JSON: id, principal, the instance holding it; the HTTP transport's 2024-11-05 HTTP+SSE pairs are mailboxes); `PX` = the mailbox ttl, refreshed by the holder, deleted when it closes |
//! | `P:rate:<bucket>` | string | a rate-limit bucket: its GCRA theoretical arrival time (µs on Redis's clock); `PX` = until the bucket is full again |
//! | `P:dpop:<hash>` | string | a DPoP proof already used (`1`; the hash of its key's thumbprint and `jti`); `PX` = as long as the proof could be accepted |
//! | `P:{ev.<type>}:meta` | hash | (feature `events`) an event type's occurrence log: `epoch`, `n` = newest position, `e` = highest position lost |
//! | `P:{ev.<type>}:log` | stream | (feature `events`) its occurrences: entry id `0-<position>`, fields `r` = the record, `t` = when appended (ms) |
//! | `P:{ev.<type>}:streams` | sorted set | (feature `events`) the open push streams of a limited type, scored by the end of their slot (ms, Redis's clock) |
//! | `P:webhook:<id>` | string | (feature `events`) a webhook subscription (JSON); `PXAT` = a minute after its grant ends, none for a grant without expiry |
//! | `P:webhooks`, `P:webhooks:type:<type>`, `P:webhooks:of:<principal>` | set | (feature `events`) webhook subscription ids: all, of a type, of a principal |
//! | `P:webhook-lease:<id>` | string | (feature `events`) the instance delivering a subscription; `PX` = the lease |
//! | `P:bus` (or [`RedisOptions::bus_channel`]) | channel | bus messages to every instance |
//! | `{P:bus}:<address>` | channel | bus messages to the instances of one process (its bus's address: 16 hex digits drawn at connect; in the slot of `P:bus`, so that a batch of publishes goes to one node) |
//!
//! In a Redis Cluster every operation stays on one slot: a session's scripts and pipelines touch
//! its `{<sid>}` keys only, a task's script its shard's `{tasks:<shard>}` keys only (its owner's
//! and client's sets are written by single commands after it), the queue's scripts its
//! `{queue}` keys only, and the untagged keys
//! (`P:instance:<id>`, `P:rate:<bucket>`, `P:dpop:<hash>`) are each read and written alone, by
//! a single command or a script of that one key. The bus channels are classic ones (`PUBLISH`
//! reaches every node's subscribers), not sharded ones.
//!
//! The event keys of a session follow its record's expiry: an append gives the counters and the
//! stream key the record's remaining lifetime, and the record's `load` and `touch` push the
//! counters' back with its own, so the events of a session that expired without being deleted
//! go with it, and so does a stream that had no append for a whole ttl (a cursor into it then
//! replays as truncated: the counters outlive the stream, so a loss is never silent). Events of
//! a stream whose session has no record never expire; `delete_session` drops them.
//!
//! # Round trips
//!
//! Each operation is one command, one atomic pipeline (`MULTI`/`EXEC`) or one Lua script
//! (`EVALSHA`), so one round trip. The first call of a script after Redis (re)started costs two
//! more (`NOSCRIPT`, `SCRIPT LOAD`).
//!
//! | operation | Redis | round trips |
//! | --- | --- | --- |
//! | session create | `MULTI` `DEL` `HSET` `PEXPIRE` `EXEC` | 1 |
//! | session load | script: `HGETALL`, `PEXPIRE` the record and the event counters | 1 |
//! | session hold (load, naming the instance a holder, with the loading request's changes) | script: `EXISTS`, `HSET h:<instance>` and `HSET`/`HDEL` each change (`initialized`), `PEXPIRE` both, `HGETALL` | 1 |
//! | session touch | script: `PEXPIRE` the record and the event counters | 1 |
//! | session update | script: `EXISTS`, then `HSET` or `HDEL` one field | 1 |
//! | session delete (with its stream events) | script: `HGETALL`, `DEL` the record, `HKEYS` the counters, `DEL` each stream and the counters | 1 |
//! | event append | script: `EXISTS`, `HINCRBY`, `XADD 0-<id>`, `HSET l<n>`, `XLEN`, trim (`XRANGE … COUNT`, `XTRIM MAXLEN`, `HSET e<n>`) when over capacity, `PTTL` the record, `PEXPIRE` | 1 |
//! | event allocate | script: `HINCRBY`, `PTTL`/`PEXPIRE` | 1 |
//! | replay read (`after`) | script: `HMGET` the counters, `EXISTS`, `XRANGE (0-<cursor> +` | 1 |
//! | delete a session's events | script: `HKEYS`, `DEL` each stream and the counters | 1 |
//! | publish | none for the caller (a bounded queue); the publisher task sends up to 256 queued messages as one pipeline of `PUBLISH` | 1 per batch |
//! | task get / put / delete | `GET` / script / script | 1 |
//! | task list / recover | script: `SMEMBERS`, `GET` each | 1 |
//! | task count / count for principal / expired | `SCARD` / `SCARD` / `ZRANGEBYSCORE` | 1 |
//! | heartbeat / alive / leave | `SET PX` / `EXISTS` / `DEL` | 1 |
//! | reachability check (`Store::check`, the HTTP `/readyz` probe) | `PING`, unanswered after 800 ms = unreachable | 1 |
//! | mailbox open / load / refresh / close | `SET PX` / `GET` / `PEXPIRE` / `DEL` | 1 |
//! | rate-limit acquire | script: `TIME`, `GET`, `SET PX` when allowed | 1 |
//! | DPoP replay check | `SET NX PX` | 1 |
//! | occurrence append / read (feature `events`) | script: the epoch (`HGET`, `HSET` the first time), `HINCRBY`, `XADD 0-<position>`, the retention's trim (`XLEN`, `XRANGE … COUNT`, `XTRIM MINID`, `HSET e`) / the same trim, `HGET` the head and the loss, `XRANGE (0-<cursor> +` | 1 |
//! | occurrence head (a watched type, every 200 ms) | `HGET` | 1 |
//! | webhook subscription put / get / remove | `SET PXAT`, `SADD` ×3 / `GET` / `GET`, `DEL`, `SREM` ×3 | 4 / 1 / 5 |
//! | webhook subscriptions listed (all, of a type, of a principal) | `SMEMBERS`, `EXISTS` each (`SREM` the expired) | 1 + n |
//! | webhook lease take or renew | script: `GET`, `SET PX` | 1 |
//!
//! Scripts are sent with `EVALSHA`; on `NOSCRIPT` (a Redis that restarted or flushed its script
//! cache) the script is loaded and run again, transparently.
//!
//! # When Redis goes away
//!
//! - **Commands** fail with [`StoreError::Unavailable`](mcp_runtime::StoreError::Unavailable)
//!   (connection refused, dropped or timed out; a reply takes at most 3 s) instead of
//!   waiting: the runtime answers the request that needed the store with a clear error. Any
//!   other Redis error (a script error, a reply of the wrong shape) is
//!   [`StoreError::Backend`](mcp_runtime::StoreError::Backend). Nothing panics on a reply.
//! - **Reconnection** is the connection manager's (a cluster connection's: per node, likewise): a command that finds the connection dropped
//!   starts a reconnection in the background (a couple of attempts with backoff); commands
//!   issued meanwhile wait for it (well under the timeouts) and fail if it fails; the next
//!   command after Redis is back reconnects, and everything works again.
//! - **Publishing** queues up to [`RedisOptions::max_pending_publishes`] messages while Redis is
//!   away; a batch the publisher could not send after a few retries is dropped with a warning,
//!   and `publish` answers `Unavailable` once the queue is full. (A batch retried after a
//!   connection dropped mid-send may, rarely, be delivered twice.)
//! - **Subscribers** keep their receivers: the listener task reconnects with backoff (100 ms
//!   doubling to 3 s) and, once subscribed again, sends every subscriber a
//!   [`BusEvent::Gap`](mcp_runtime::store::BusEvent::Gap), so the runtime re-announces lists
//!   and re-reads stream logs. A subscriber connection that stops answering pings (every 5 s)
//!   is treated as dropped. On a cluster the reconnection tries the next node first, then the
//!   others in turn (the node it was on may be gone for good): the nodes given, and those the
//!   cluster reports (`CLUSTER NODES`, asked before each attempt), so one seed node is enough.
//! - **A cluster primary dies**: until the cluster promotes its replica, commands for its slots
//!   (and, with `cluster-require-full-coverage yes`, every command) fail; the cluster connection
//!   retries them within the 3 s reply bound, then they fail with
//!   [`StoreError::Unavailable`](mcp_runtime::StoreError::Unavailable) as above. Once a replica
//!   is primary, the connection learns the new slot map and the moved keys are served again
//!   (what the old primary had not yet replicated is lost with it).
//! - What Redis lost (a restart without persistence, a flush) is lost to every instance alike:
//!   sessions are unknown (clients re-initialize; an instance holding one checks its record
//!   again within `ServerConfig::session_check_interval`, 2 s by default, and ends it too), event
//!   cursors replay as truncated, tasks are gone. A session record that does not decode is
//!   treated as gone (logged), not as an outage.
//! - **Readiness**: [`Store::check`](mcp_runtime::Store::check) sends `PING` (unanswered
//!   after 800 ms counts as unreachable); the HTTP transport's `/readyz` asks it (at most about
//!   once a second) and answers 503 while Redis is away, 200 again once it answers, so that a
//!   balancer sends no new clients to an instance that cannot serve them.

mod buckets;
mod bus;
mod conn;
mod events;
mod mailboxes;
mod members;
mod nodes;
#[cfg(feature = "events")]
mod occurrences;
mod options;
mod queue;
mod replay;
mod sessions;
#[cfg(feature = "events")]
mod stream_slots;
mod tasks;
pub mod testing;
#[cfg(feature = "events")]
mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::Store;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::{Client, Value};
use tokio::time::timeout;

use crate::buckets::RedisBuckets;
use crate::bus::RedisBus;
use crate::conn::{Commands, Conn, Keys};
use crate::events::RedisEventLog;
use crate::mailboxes::RedisMailboxRecords;
use crate::members::RedisMembership;
use crate::nodes::{Discovery, Nodes};
#[cfg(feature = "events")]
pub use crate::occurrences::{RedisOccurrences, WAKE_POLL};
pub use crate::options::RedisOptions;
#[cfg(feature = "tls")]
pub use crate::options::RedisTls;
use crate::queue::RedisQueue;
pub use crate::replay::RedisReplayCache;
use crate::sessions::RedisSessionRecords;
#[cfg(feature = "events")]
pub use crate::stream_slots::RedisStreamSlots;
use crate::tasks::RedisTaskStore;
#[cfg(feature = "events")]
pub use crate::webhooks::RedisWebhookSubscriptions;

/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a reply may take.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long `connect` may take in all.
const CONNECT_DEADLINE: Duration = Duration::from_secs(5);
/// How many times the connection manager retries a reconnection before failing the commands
/// waiting for it (the next command starts another).
const RECONNECT_RETRIES: usize = 2;
/// The longest wait between two reconnection attempts.
const RECONNECT_MAX_DELAY: Duration = Duration::from_millis(500);

/// Why [`RedisStore::connect`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedisStoreError {
    /// The URL is not a Redis URL.
    #[error("invalid Redis URL {url}: {reason}")]
    InvalidUrl {
        /// The URL, without its password.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Redis could not be reached, or refused the connection (authentication, `PING`).
    #[error("cannot connect to Redis at {url}: {reason}")]
    Connect {
        /// The URL, without its password.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The options are not usable.
    #[error("invalid Redis store options: {0}")]
    InvalidOptions(String),
}

/// Every store seam on one Redis. Cheap to clone: clones share the connections.
///
/// Turn it into the runtime's [`Store`] with [`RedisStore::into_store`] (or `Store::from`).
#[derive(Clone)]
pub struct RedisStore {
    sessions: Arc<RedisSessionRecords>,
    events: Arc<RedisEventLog>,
    tasks: Arc<RedisTaskStore>,
    queue: Arc<RedisQueue>,
    bus: Arc<RedisBus>,
    members: Arc<RedisMembership>,
    buckets: Arc<RedisBuckets>,
    mailboxes: Arc<RedisMailboxRecords>,
    replay: RedisReplayCache,
    #[cfg(feature = "events")]
    occurrences: RedisOccurrences,
    #[cfg(feature = "events")]
    webhooks: RedisWebhookSubscriptions,
    #[cfg(feature = "events")]
    slots: RedisStreamSlots,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisStore")
    }
}

/// Refuses options the key layout cannot take.
fn check(options: &RedisOptions) -> Result<(), RedisStoreError> {
    if options.prefix.contains(['{', '}']) {
        return Err(RedisStoreError::InvalidOptions(format!(
            "the key prefix {:?} holds a brace, which would break the hash tags",
            options.prefix
        )));
    }
    Ok(())
}

fn connect_error(shown: &str, reason: String) -> RedisStoreError {
    RedisStoreError::Connect {
        url: shown.to_owned(),
        reason,
    }
}

/// The URL without the password, for errors and logs.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}://***@{}", &url[..scheme_end], &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// The TLS certificates of `options`, when it has some.
#[cfg(feature = "tls")]
fn certificates(options: &RedisOptions) -> Option<redis::TlsCertificates> {
    let tls = options.tls.as_ref()?;
    let client_tls = tls.client.as_ref().map(|(cert, key)| redis::ClientTlsConfig {
        client_cert: cert.clone(),
        client_key: key.clone(),
    });
    Some(redis::TlsCertificates {
        client_tls,
        root_cert: tls.root_ca.clone(),
    })
}

/// rustls needs a process-wide provider for a `rediss://` URL: ring, unless the application
/// installed one.
fn provide_tls(url: &str) {
    #[cfg(feature = "tls")]
    if url.starts_with("rediss:") {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let _ = url;
}

/// The client for `url`: with the TLS settings of `options` when it has some (a `rediss://`
/// URL without them trusts the platform's and the webpki roots).
fn open(url: &str, options: &RedisOptions) -> redis::RedisResult<Client> {
    provide_tls(url);
    #[cfg(feature = "tls")]
    if let Some(certificates) = certificates(options) {
        return Client::build_with_tls(url, certificates);
    }
    let _ = options;
    Client::open(url)
}

/// The client of a cluster whose nodes include `urls`, with the TLS settings of `options`.
fn open_cluster(urls: &[String], options: &RedisOptions) -> redis::RedisResult<ClusterClient> {
    for url in urls {
        provide_tls(url);
    }
    let builder = ClusterClient::builder(urls.iter().map(String::as_str))
        .connection_timeout(CONNECT_TIMEOUT)
        .response_timeout(RESPONSE_TIMEOUT);
    #[cfg(feature = "tls")]
    let builder = match certificates(options) {
        Some(certificates) => builder.certs(certificates),
        None => builder,
    };
    let _ = options;
    builder.build()
}

impl RedisStore {
    /// Connects with the default [`RedisOptions`].
    pub async fn connect(url: &str) -> Result<RedisStore, RedisStoreError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Connects: opens the command connection (checked with `PING`) and the bus's subscriber
    /// connection, and starts the bus's background tasks (so it must be called within a Tokio
    /// runtime). Fails within a few seconds when Redis cannot be reached.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<RedisStore, RedisStoreError> {
        check(&options)?;
        let shown = redact(url);
        let client = open(url, &options).map_err(|e| RedisStoreError::InvalidUrl {
            url: shown.clone(),
            reason: e.to_string(),
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(RECONNECT_RETRIES)
            .set_max_delay(RECONNECT_MAX_DELAY);
        let manager = timeout(
            CONNECT_DEADLINE,
            ConnectionManager::new_with_config(client.clone(), config),
        )
        .await
        .map_err(|_| connect_error(&shown, "timed out".into()))?
        .map_err(|e| connect_error(&shown, e.to_string()))?;
        Self::start(
            Commands::Single(manager),
            Nodes::new(vec![client], None),
            options,
            shown,
        )
        .await
    }

    /// Connects to a Redis Cluster with the default [`RedisOptions`]; see
    /// [`RedisStore::connect_cluster_with`].
    pub async fn connect_cluster<S: AsRef<str>>(nodes: &[S]) -> Result<RedisStore, RedisStoreError> {
        Self::connect_cluster_with(nodes, RedisOptions::default()).await
    }

    /// Connects to a Redis Cluster through some of its nodes (`redis://` or `rediss://` URLs,
    /// all with the same password, if any): the command connection is a cluster connection
    /// (it learns the slot map from the first node that answers, routes each command to the
    /// primary of its keys' slot and follows the cluster when slots move or a replica is
    /// promoted; checked with `PING` to every primary), and the bus's subscriber connection is
    /// to one node: one of `nodes` or another the cluster reports (`CLUSTER NODES`), moving to
    /// the next when it goes away. Nodes the cluster reports are reached with the first URL's
    /// scheme and credentials. Fails within a few seconds when the cluster cannot be reached.
    pub async fn connect_cluster_with<S: AsRef<str>>(
        nodes: &[S],
        options: RedisOptions,
    ) -> Result<RedisStore, RedisStoreError> {
        check(&options)?;
        let urls: Vec<String> = nodes.iter().map(|n| n.as_ref().to_owned()).collect();
        let shown = urls.iter().map(|u| redact(u)).collect::<Vec<_>>().join(",");
        if urls.is_empty() {
            return Err(RedisStoreError::InvalidUrl {
                url: shown,
                reason: "a cluster needs at least one node URL".into(),
            });
        }
        let invalid = |e: redis::RedisError| RedisStoreError::InvalidUrl {
            url: shown.clone(),
            reason: e.to_string(),
        };
        let cluster = open_cluster(&urls, &options).map_err(invalid)?;
        let clients = urls
            .iter()
            .map(|u| open(u, &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let connection = timeout(CONNECT_DEADLINE, cluster.get_async_connection())
            .await
            .map_err(|_| connect_error(&shown, "timed out".into()))?
            .map_err(|e| connect_error(&shown, e.to_string()))?;
        let commands = Commands::Cluster(connection);
        let discovery = Discovery {
            commands: commands.clone(),
            base: nodes::base(&urls[0]),
            options: options.clone(),
            open,
        };
        Self::start(commands, Nodes::new(clients, Some(discovery)), options, shown).await
    }

    /// Checks the command connection with `PING`, subscribes the bus and builds the seams.
    async fn start(
        mut commands: Commands,
        mut nodes: Nodes,
        options: RedisOptions,
        shown: String,
    ) -> Result<RedisStore, RedisStoreError> {
        let _: Value = timeout(RESPONSE_TIMEOUT, redis::cmd("PING").query_async(&mut commands))
            .await
            .map_err(|_| connect_error(&shown, "PING timed out".into()))?
            .map_err(|e| connect_error(&shown, format!("PING failed: {e}")))?;

        let keys = Keys::new(&options.prefix);
        let channel = options.bus_channel.clone().unwrap_or_else(|| keys.bus_channel());
        let channels = bus::Channels::new(channel);
        let pubsub = nodes
            .subscribe(&channels.listened())
            .await
            .map_err(|e| connect_error(&shown, format!("subscribing to {}: {e}", channels.everyone)))?;
        let bus = RedisBus::start(commands.clone(), nodes, pubsub, channels, options.max_pending_publishes);
        let conn = Conn::new(commands, keys);
        tracing::debug!(url = %shown, prefix = %options.prefix, "connected to Redis");
        Ok(RedisStore {
            sessions: Arc::new(RedisSessionRecords::new(conn.clone())),
            events: Arc::new(RedisEventLog::new(conn.clone())),
            tasks: Arc::new(RedisTaskStore::new(conn.clone())),
            queue: Arc::new(RedisQueue::new(conn.clone())),
            bus: Arc::new(bus),
            members: Arc::new(RedisMembership::new(conn.clone())),
            buckets: Arc::new(RedisBuckets::new(conn.clone())),
            mailboxes: Arc::new(RedisMailboxRecords::new(conn.clone())),
            #[cfg(feature = "events")]
            occurrences: RedisOccurrences::new(conn.clone()),
            #[cfg(feature = "events")]
            webhooks: RedisWebhookSubscriptions::new(conn.clone()),
            #[cfg(feature = "events")]
            slots: RedisStreamSlots::new(conn.clone()),
            replay: RedisReplayCache::new(conn),
        })
    }

    /// The DPoP replay cache on this Redis, for `mcp_auth::DpopOptions::replay_cache` (feature
    /// `jwt` of `mcp-auth`): every instance given one refuses a proof any of them accepted.
    pub fn replay_cache(&self) -> RedisReplayCache {
        self.replay.clone()
    }

    /// The Events extension's occurrence log on this Redis (feature `events`), for
    /// `EventsBuilder::log`: every instance given one appends to and reads the same log, so
    /// cursors resume anywhere and long polls and push streams wake for occurrences emitted on
    /// any instance.
    #[cfg(feature = "events")]
    pub fn occurrence_log(&self) -> RedisOccurrences {
        self.occurrences.clone()
    }

    /// The Events extension's webhook subscriptions on this Redis (feature `events`), for
    /// `EventsBuilder::subscriptions`: every instance sees every subscription, one at a time
    /// delivers each (under a lease), and another takes over within the lease when it stops.
    #[cfg(feature = "events")]
    pub fn webhook_subscriptions(&self) -> RedisWebhookSubscriptions {
        self.webhooks.clone()
    }

    /// The Events extension's push stream slots on this Redis (feature `events`), for
    /// `EventsBuilder::stream_slots`: a type's stream limit holds across every instance given
    /// them, and the slots of an instance that died free themselves within three heartbeats.
    #[cfg(feature = "events")]
    pub fn stream_slots(&self) -> RedisStreamSlots {
        self.slots.clone()
    }

    /// The runtime's [`Store`] over this Redis.
    pub fn into_store(self) -> Store {
        Store {
            sessions: self.sessions,
            events: self.events,
            tasks: self.tasks,
            queue: self.queue,
            bus: self.bus,
            members: self.members,
            buckets: self.buckets,
            mailboxes: self.mailboxes,
        }
    }
}

impl From<RedisStore> for Store {
    fn from(store: RedisStore) -> Store {
        store.into_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_passwords() {
        assert_eq!(redact("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
        assert_eq!(redact("redis://user:secret@host:6379/0"), "redis://***@host:6379/0");
        assert_eq!(redact("rediss://:p@ss@host/"), "rediss://***@host/");
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn keys_carry_their_hash_tags() {
        let k = Keys::new("mcp");
        assert_eq!(k.session("mcp_abc"), "mcp:{mcp_abc}:session");
        assert_eq!(k.seq("mcp_abc"), "mcp:{mcp_abc}:seq");
        assert_eq!(k.stream("mcp_abc", 0), "mcp:{mcp_abc}:ev:0");
        assert_eq!(
            k.task("t1"),
            format!("mcp:{{tasks:{}}}:task:t1", crate::conn::task_shard("t1"))
        );
        assert_eq!(k.tasks(3, "all"), "mcp:{tasks:3}:all");
        assert_eq!(k.tasks_of("c:a:127.0.0.1"), "mcp:{tasks-of:c:a:127.0.0.1}");
        assert_eq!(k.instance("i"), "mcp:instance:i");
        assert_eq!(k.bucket("p5:alice"), "mcp:rate:p5:alice");
        assert_eq!(k.mailbox("mcp_abc"), "mcp:mailbox:mcp_abc");
        assert_eq!(k.replay("h4sh"), "mcp:dpop:h4sh");
        assert_eq!(k.bus_channel(), "mcp:bus");
    }

    #[tokio::test]
    async fn bad_options_and_urls_are_refused() {
        let bad = RedisOptions {
            prefix: "a{b".into(),
            ..RedisOptions::default()
        };
        assert!(matches!(
            RedisStore::connect_with("redis://127.0.0.1/", bad).await,
            Err(RedisStoreError::InvalidOptions(_))
        ));
        assert!(matches!(
            RedisStore::connect("http://nowhere").await,
            Err(RedisStoreError::InvalidUrl { .. })
        ));
    }
}
