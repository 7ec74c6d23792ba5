//! The flags that make several `everything` processes one logical server behind a load
//! balancer: `--redis URL` shares sessions, stream events, tasks and notifications through
//! Redis (`--redis-cluster NODES` through a Redis Cluster); `--state-key HEX` is the
//! request-state key every instance is given.
//!
//! ```text
//! everything --port 3001 --redis redis://127.0.0.1:6379 --state-key $KEY
//! everything --port 3002 --redis-cluster 10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000 --state-key $KEY
//! ```

use mcp_server::McpServerBuilder;
use mcp_server::protocol::request_state::StateKey;
use mcp_server::store::TaskKey;
use mcp_server::tasks::{Role, TaskRuns};
use mcp_store_redis::{
    RedisOccurrences, RedisOptions, RedisReplayCache, RedisStore, RedisStreamSlots, RedisTls, RedisWebhookSubscriptions,
};

/// Sharing state between instances.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct SharedArgs {
    /// Share legacy sessions, stream events, tasks and notifications with every instance
    /// started with the same Redis URL (redis://host:port; rediss://:password@host:port for
    /// TLS with a password).
    #[arg(long, value_name = "URL", conflicts_with = "redis_cluster")]
    redis: Option<String>,
    /// The same through a Redis Cluster: some of its nodes, comma-separated, as HOST:PORT or
    /// URLs; a HOST:PORT after a URL takes its scheme and password
    /// (rediss://:password@host1:7000,host2:7000,host3:7000 for TLS with a password).
    #[arg(long, value_name = "NODES")]
    redis_cluster: Option<String>,
    /// With rediss:// URLs: the PEM file of the CA that signed Redis's certificate (default:
    /// the platform's and the webpki roots).
    #[arg(long, value_name = "PEM")]
    redis_ca: Option<std::path::PathBuf>,
    /// The key prefix in Redis: instances of one logical server use the same one.
    #[arg(long, value_name = "PREFIX", default_value = "mcp")]
    redis_prefix: String,
    /// The request-state key shared by every instance: 64 hexadecimal digits (32 bytes).
    /// Without it each process seals request states with a random key of its own.
    #[arg(long, value_name = "HEX")]
    state_key: Option<String>,
    /// Seal task records at rest with this key (64 hexadecimal digits): no task result, status
    /// message or input request reaches the store in clear. Give every instance the same.
    #[arg(long, value_name = "HEX")]
    task_key: Option<String>,
    /// `both` (serve clients and run tasks), `front` (serve clients, run no task: tasks are
    /// queued for workers) or `worker` (run the tasks of the shared queue; no listener).
    #[arg(long, value_name = "ROLE", default_value = "both", value_parser = parse_role)]
    pub(crate) role: Role,
    /// The lease of a running resumable task, in milliseconds: how long a task whose worker
    /// died waits before another worker claims it.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    task_lease_ms: u64,
    /// Most tasks of the shared queue this instance runs at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_running_tasks: usize,
}

fn parse_role(name: &str) -> Result<Role, String> {
    Role::parse(name).ok_or_else(|| format!("unknown role {name:?} (both, front, worker)"))
}

/// What the instances share through Redis besides the runtime's store.
pub(crate) struct SharedSeams {
    /// The DPoP replay cache.
    pub(crate) replay: RedisReplayCache,
    /// The Events extension's occurrence log.
    pub(crate) occurrences: RedisOccurrences,
    /// The Events extension's webhook subscriptions.
    pub(crate) webhooks: RedisWebhookSubscriptions,
    /// The Events extension's push stream slots (a type's stream limit across the instances).
    pub(crate) slots: RedisStreamSlots,
}

impl SharedArgs {
    /// Applies the flags: connects to Redis (a bad URL or an unreachable Redis is an error).
    /// Returns the builder and, with Redis, what else every instance shares through it.
    pub(crate) async fn apply(
        &self,
        mut b: McpServerBuilder,
    ) -> Result<(McpServerBuilder, Option<SharedSeams>), Box<dyn std::error::Error>> {
        if let Some(hex) = &self.state_key {
            let key = StateKey::from_hex(hex).map_err(|e| format!("--state-key: {e} (64 hexadecimal digits)"))?;
            b = b.request_state_key(key);
        }
        let mut runs = TaskRuns::default();
        runs.role = self.role;
        runs.lease = std::time::Duration::from_millis(self.task_lease_ms.max(30));
        runs.max_running = self.max_running_tasks.max(1);
        b = b.task_runs(runs);
        if let Some(hex) = &self.task_key {
            let key = TaskKey::from_hex(hex).map_err(|e| format!("--task-key: {e}"))?;
            b = b.task_encryption_key(key);
        }
        if self.redis_ca.is_some() && self.redis.is_none() && self.redis_cluster.is_none() {
            return Err("--redis-ca needs --redis or --redis-cluster".into());
        }
        if self.redis.is_some() || self.redis_cluster.is_some() {
            let root_ca = match &self.redis_ca {
                Some(path) => Some(std::fs::read(path).map_err(|e| format!("--redis-ca {}: {e}", path.display()))?),
                None => None,
            };
            let options = RedisOptions {
                prefix: self.redis_prefix.clone(),
                tls: root_ca.map(|ca| RedisTls {
                    root_ca: Some(ca),
                    client: None,
                }),
                ..RedisOptions::default()
            };
            // The error names the URL without its password.
            let store = match (&self.redis, &self.redis_cluster) {
                (Some(url), _) => RedisStore::connect_with(url, options)
                    .await
                    .map_err(|e| format!("--redis: {e}"))?,
                (None, Some(nodes)) => RedisStore::connect_cluster_with(&cluster_urls(nodes)?, options)
                    .await
                    .map_err(|e| format!("--redis-cluster: {e}"))?,
                (None, None) => unreachable!("one of them is set"),
            };
            let seams = SharedSeams {
                replay: store.replay_cache(),
                occurrences: store.occurrence_log(),
                webhooks: store.webhook_subscriptions(),
                slots: store.stream_slots(),
            };
            return Ok((b.store(store), Some(seams)));
        }
        Ok((b, None))
    }
}

/// The node URLs of `--redis-cluster`: each item a URL, or HOST:PORT with the scheme and
/// credentials of the URL before it (`redis://` when none).
fn cluster_urls(nodes: &str) -> Result<Vec<String>, String> {
    let mut base = "redis://".to_owned();
    let mut urls = Vec::new();
    for node in nodes.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match node.split_once("://") {
            Some((scheme, rest)) => {
                let credentials = rest.rfind('@').map_or("", |at| &rest[..=at]);
                base = format!("{scheme}://{credentials}");
                urls.push(node.to_owned());
            }
            None => urls.push(format!("{base}{node}/")),
        }
    }
    if urls.is_empty() {
        return Err("--redis-cluster: no node given (HOST:PORT,HOST:PORT,…)".into());
    }
    Ok(urls)
}

#[cfg(test)]
mod tests {
    use super::cluster_urls;

    #[test]
    fn cluster_nodes_take_the_scheme_and_password_of_the_url_before() {
        assert_eq!(
            cluster_urls("127.0.0.1:7000, 127.0.0.1:7001").unwrap(),
            ["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"]
        );
        assert_eq!(
            cluster_urls("rediss://:pw@h1:7000,h2:7001").unwrap(),
            ["rediss://:pw@h1:7000", "rediss://:pw@h2:7001/"]
        );
        assert!(cluster_urls(" , ").is_err());
    }
}
