//! The nodes the bus's subscriber connection may be opened to: the one Redis, or the nodes of
//! a cluster. Classic `PUBLISH` in a cluster reaches the subscribers of every node, replicas
//! included, so any one will do; the subscriber moves to another when its node goes away. On a
//! cluster the list starts with the nodes given and grows with those the cluster reports
//! (`CLUSTER NODES`, asked at connect and before each reconnection), so a single seed node is
//! enough.

use std::time::Duration;

use redis::aio::PubSub;
use redis::{Client, RedisError, Value};
use tokio::time::timeout;

use crate::conn::Commands;
use crate::options::RedisOptions;

/// How long connecting and subscribing may take.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(3);
/// The candidate nodes, in the order they are tried.
pub(crate) struct Nodes {
    /// Each node's `host:port` and its client.
    clients: Vec<(String, Client)>,
    /// The node to try first next time.
    next: usize,
    /// On a cluster: how to learn of, and reach, the nodes not given.
    discovery: Option<Discovery>,
}

/// How the subscriber learns of a cluster's nodes and opens clients to them.
pub(crate) struct Discovery {
    /// The cluster connection `CLUSTER NODES` is asked on.
    pub(crate) commands: Commands,
    /// What a node's URL starts with: the first URL's scheme and credentials
    /// (`rediss://:password@`).
    pub(crate) base: String,
    /// The TLS settings of every node.
    pub(crate) options: RedisOptions,
    /// Opens a client for a URL with the options' TLS settings.
    pub(crate) open: fn(&str, &RedisOptions) -> redis::RedisResult<Client>,
}

impl Nodes {
    /// The nodes of `clients`; on a cluster, `discovery` adds those the cluster reports.
    pub(crate) fn new(clients: Vec<Client>, discovery: Option<Discovery>) -> Self {
        let clients = clients
            .into_iter()
            .map(|c| (c.get_connection_info().addr().to_string(), c))
            .collect();
        Nodes {
            clients,
            next: 0,
            discovery,
        }
    }

    /// Connects a subscriber connection to the first node that takes it, trying them in turn
    /// from the one after the node last used (on a cluster, after asking it for its nodes),
    /// and subscribes it to the channels. The last node's error when none does.
    pub(crate) async fn subscribe(&mut self, channels: &[String]) -> Result<PubSub, RedisError> {
        self.discover().await;
        let mut last = None;
        for _ in 0..self.clients.len() {
            let i = self.next % self.clients.len();
            self.next = i + 1;
            let (address, client) = &self.clients[i];
            match subscribe(client, channels).await {
                Ok(p) => {
                    tracing::debug!(node = %address, "bus subscriber connected");
                    return Ok(p);
                }
                Err(e) => {
                    tracing::debug!(node = %address, error = %e, "bus subscriber cannot use this Redis node");
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| {
            RedisError::from(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no Redis node to subscribe on",
            ))
        }))
    }

    /// Adds the cluster's nodes not known yet (none when the cluster does not answer: the known
    /// ones are tried all the same).
    async fn discover(&mut self) {
        let Some(discovery) = &mut self.discovery else {
            return;
        };
        let asked = timeout(
            SUBSCRIBE_TIMEOUT,
            redis::cmd("CLUSTER")
                .arg("NODES")
                .query_async::<Value>(&mut discovery.commands),
        )
        .await;
        let text = match asked {
            Ok(Ok(Value::BulkString(b))) => String::from_utf8_lossy(&b).into_owned(),
            Ok(Ok(Value::VerbatimString { text, .. })) => text,
            Ok(Ok(_)) | Ok(Err(_)) | Err(_) => {
                tracing::debug!("the Redis Cluster did not list its nodes; the known ones are tried");
                return;
            }
        };
        for address in addresses(&text) {
            if self.clients.iter().any(|(known, _)| *known == address) {
                continue;
            }
            let url = format!("{}{address}/", discovery.base);
            match (discovery.open)(&url, &discovery.options) {
                Ok(client) => {
                    tracing::debug!(node = %address, "bus subscriber learned of a Redis Cluster node");
                    self.clients.push((address, client));
                }
                Err(e) => tracing::debug!(node = %address, error = %e, "a Redis Cluster node cannot be used"),
            }
        }
    }
}

/// The `host:port` of every node of a `CLUSTER NODES` reply that is not failed (an IPv6 host
/// in brackets).
fn addresses(nodes: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in nodes.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(address), Some(flags)) = (fields.get(1), fields.get(2)) else {
            continue;
        };
        if flags
            .split(',')
            .any(|f| matches!(f, "fail" | "fail?" | "noaddr" | "handshake"))
        {
            continue;
        }
        // `ip:port@cport[,hostname]`
        let address = address.split(['@', ',']).next().unwrap_or_default();
        let Some((host, port)) = address.rsplit_once(':') else {
            continue;
        };
        if host.is_empty() || port.parse::<u16>().is_err() {
            continue;
        }
        out.push(if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        });
    }
    out
}

/// What the URL of a node the cluster reports starts with: the scheme and credentials of `url`
/// (`rediss://:password@` for `rediss://:password@host:port/`).
pub(crate) fn base(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "redis://".to_owned();
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let credentials = authority.rfind('@').map_or("", |at| &authority[..=at]);
    format!("{scheme}://{credentials}")
}

/// Connects a subscriber connection to one node and subscribes it to the channel.
async fn subscribe(client: &Client, channels: &[String]) -> Result<PubSub, RedisError> {
    let attempt = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channels).await?;
        Ok(pubsub)
    };
    match timeout(SUBSCRIBE_TIMEOUT, attempt).await {
        Ok(r) => r,
        Err(_) => Err(RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "subscribing to the bus channel timed out",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_are_read_from_the_reply() {
        let reply = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master,fail - 0 1426238318243 3 connected 10923-16383
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca ::1:30001@31001 myself,master - 0 0 1 connected 0-5460
6ec23923021cf3ffec47632106199cb7f496ce01 :0@0 master,noaddr - 0 0 0 disconnected
";
        assert_eq!(addresses(reply), ["127.0.0.1:30004", "127.0.0.1:30002", "[::1]:30001"]);
    }

    #[test]
    fn node_urls_keep_the_scheme_and_credentials() {
        assert_eq!(base("rediss://:pw@h:7000/"), "rediss://:pw@");
        assert_eq!(base("redis://user:p@ss@h:7000"), "redis://user:p@ss@");
        assert_eq!(base("redis://h:7000/"), "redis://");
    }
}
