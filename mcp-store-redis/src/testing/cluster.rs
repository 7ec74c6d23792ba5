//! A real Redis Cluster for tests: six `redis-server` children in cluster mode on loopback
//! ports (three primaries, three replicas), created with `redis-cli --cluster create`, each
//! killed on drop. A node that stops answering is declared failed after
//! [`NODE_TIMEOUT_MS`], so a killed primary's replica takes over within a few seconds.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, unique_prefix};

/// `cluster-node-timeout` of every node (ms): how long a node may be silent before it is
/// failed over.
pub const NODE_TIMEOUT_MS: u64 = 1000;

/// How many nodes: three primaries, one replica each.
const NODES: usize = 6;

const MISSING: &str = "redis-server or redis-cli not found: install the Debian package redis-server \
    (`apt-get install -y redis-server`, which has both), or run `cargo xtask ci` (which installs it)";

/// Six `redis-server` children forming one Redis Cluster on `127.0.0.1`, killed on drop.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<Node>,
    password: Option<String>,
    tls: Option<ClusterTls>,
    dir: PathBuf,
}

/// The PEM files of a cluster on TLS only ([`RedisCluster::with_tls`]).
#[derive(Debug, Clone)]
pub struct ClusterTls {
    /// Every node's certificate (it must name `127.0.0.1`).
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
    /// The CA that signed it.
    pub ca: PathBuf,
}

#[derive(Debug)]
struct Node {
    port: u16,
    child: Option<Child>,
}

impl RedisCluster {
    /// Starts a cluster without a password. Panics when it cannot (`redis-server` missing, or
    /// the cluster never reaches `cluster_state:ok`).
    pub fn start() -> RedisCluster {
        Self::start_with(None, None)
    }

    /// Starts a cluster whose nodes require `password` (`requirepass`, and `masterauth` for
    /// the replicas).
    pub fn with_password(password: &str) -> RedisCluster {
        Self::start_with(Some(password), None)
    }

    /// Starts a cluster on TLS only (clients, the cluster bus and replication; no plain port),
    /// whose nodes require `password` when given; its [`RedisCluster::urls`] are `rediss://`.
    pub fn with_tls(tls: ClusterTls, password: Option<&str>) -> RedisCluster {
        Self::start_with(password, Some(tls))
    }

    fn start_with(password: Option<&str>, tls: Option<ClusterTls>) -> RedisCluster {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(password, tls.clone()) {
                Ok(cluster) => return cluster,
                Err(e) => last = e,
            }
        }
        panic!("cannot start a Redis Cluster: {last}");
    }

    fn try_start(password: Option<&str>, tls: Option<ClusterTls>) -> Result<RedisCluster, String> {
        let dir = std::env::temp_dir().join(format!("mcp-redis-{}", unique_prefix("cluster").replace(':', "-")));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut cluster = RedisCluster {
            nodes: Vec::new(),
            password: password.map(str::to_owned),
            tls,
            dir,
        };
        let mut taken = Vec::new();
        for _ in 0..NODES {
            let mut pick = || loop {
                let p = free_port();
                if !taken.contains(&p) {
                    taken.push(p);
                    return p;
                }
            };
            let (port, bus) = (pick(), pick());
            let child = cluster.spawn(port, bus)?;
            cluster.nodes.push(Node {
                port,
                child: Some(child),
            });
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for port in cluster.ports() {
            while cluster.cli(port, &["PING"]).as_deref() != Ok("PONG") {
                if Instant::now() > deadline {
                    return Err(format!("redis-server on {port} does not answer PING"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut create = cluster.cli_command();
        create.arg("--cluster").arg("create");
        for port in cluster.ports() {
            create.arg(format!("127.0.0.1:{port}"));
        }
        create.args(["--cluster-replicas", "1", "--cluster-yes"]);
        let out = create.output().map_err(|e| format!("cannot run redis-cli: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        cluster.wait_ok(Duration::from_secs(30))?;
        Ok(cluster)
    }

    fn spawn(&self, port: u16, bus: u16) -> Result<Child, String> {
        let conf = self.dir.join(format!("nodes-{port}.conf"));
        let mut cmd = Command::new("redis-server");
        match &self.tls {
            None => cmd.args(["--port", &port.to_string()]),
            Some(tls) => cmd
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args([
                    "--tls-cluster",
                    "yes",
                    "--tls-replication",
                    "yes",
                    "--tls-auth-clients",
                    "no",
                ])
                .arg("--tls-cert-file")
                .arg(&tls.cert)
                .arg("--tls-key-file")
                .arg(&tls.key)
                .arg("--tls-ca-cert-file")
                .arg(&tls.ca),
        };
        cmd.args(["--cluster-port", &bus.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--cluster-enabled", "yes", "--cluster-config-file"])
            .arg(&conf)
            .args(["--cluster-node-timeout", &NODE_TIMEOUT_MS.to_string()])
            // A replica takes over however long it was cut off from its primary.
            .args(["--cluster-replica-validity-factor", "0"])
            .arg("--dir")
            .arg(&self.dir);
        if let Some(p) = &self.password {
            cmd.args(["--requirepass", p, "--masterauth", p]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        match cmd.spawn() {
            Ok(c) => Ok(c),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{MISSING}"),
            Err(e) => Err(format!("cannot run redis-server: {e}")),
        }
    }

    fn cli_command(&self) -> Command {
        let mut cmd = Command::new("redis-cli");
        if let Some(p) = &self.password {
            cmd.args(["-a", p, "--no-auth-warning"]);
        }
        if let Some(tls) = &self.tls {
            cmd.arg("--tls").arg("--cacert").arg(&tls.ca);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Runs `redis-cli -p <port> <args>` and returns its output, trimmed.
    pub fn cli(&self, port: u16, args: &[&str]) -> Result<String, String> {
        let out = self
            .cli_command()
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    panic!("{MISSING}")
                }
                format!("cannot run redis-cli: {e}")
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(format!("redis-cli -p {port} {args:?} failed"))
        }
    }

    /// The nodes' URLs (`redis://[:password@]127.0.0.1:<port>/`, `rediss://` on TLS), the live
    /// ones and the killed.
    pub fn urls(&self) -> Vec<String> {
        let auth = self.password.as_ref().map(|p| format!(":{p}@")).unwrap_or_default();
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        self.ports()
            .into_iter()
            .map(|p| format!("{scheme}://{auth}127.0.0.1:{p}/"))
            .collect()
    }

    /// The nodes' ports.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// The ports of the nodes still running.
    pub fn live_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect()
    }

    /// The port of the primary that serves `key`'s slot now, as a live node sees the cluster.
    pub fn primary_of(&self, key: &str) -> Result<u16, String> {
        let port = *self.live_ports().first().ok_or("no node is running")?;
        let slot: u16 = self
            .cli(port, &["CLUSTER", "KEYSLOT", key])?
            .parse()
            .map_err(|_| "CLUSTER KEYSLOT answered no number".to_owned())?;
        let nodes = self.cli(port, &["CLUSTER", "NODES"])?;
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                continue;
            }
            let serves = fields[8..].iter().any(|range| {
                let mut ends = range.splitn(2, '-').map(str::parse::<u16>);
                match (ends.next(), ends.next()) {
                    (Some(Ok(a)), Some(Ok(b))) => (a..=b).contains(&slot),
                    (Some(Ok(a)), None) => a == slot,
                    _ => false,
                }
            });
            if serves {
                let address = fields[1].split('@').next().unwrap_or_default();
                return address
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| format!("no port in {address}"));
            }
        }
        Err(format!("no live primary serves slot {slot}"))
    }

    /// The port of a replica of the primary on `port`.
    pub fn replica_of(&self, port: u16) -> Result<u16, String> {
        let id = self.cli(port, &["CLUSTER", "MYID"])?;
        let nodes = self.cli(port, &["CLUSTER", "NODES"])?;
        nodes
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 3 && f[2].contains("slave") && f[3] == id)
            .and_then(|f| f[1].split('@').next()?.rsplit(':').next()?.parse().ok())
            .ok_or_else(|| format!("the primary on {port} has no replica"))
    }

    /// Kills the node on `port` (SIGKILL) and waits for it to be gone.
    pub fn kill(&mut self, port: u16) {
        for node in &mut self.nodes {
            if node.port == port
                && let Some(mut c) = node.child.take()
            {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// Waits until the replicas of the primary on `port` have every write it took (their
    /// replication offset has reached its own).
    pub fn wait_replicated(&self, port: u16, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            let info = self.cli(port, &["INFO", "replication"])?;
            let field = |name: &str| -> Option<String> {
                info.lines()
                    .find_map(|l| l.trim().strip_prefix(name).map(str::to_owned))
            };
            let own: Option<u64> = field("master_repl_offset:").and_then(|v| v.parse().ok());
            let replica: Option<u64> = field("slave0:").and_then(|v| {
                v.split(',')
                    .find_map(|kv| kv.strip_prefix("offset="))
                    .and_then(|o| o.parse().ok())
            });
            match (own, replica) {
                (Some(own), Some(replica)) if replica >= own => return Ok(()),
                _ if Instant::now() > deadline => {
                    return Err(format!("the replicas of {port} are behind: {info}"));
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Waits until every running node says `cluster_state:ok` with every slot served, and
    /// every running replica's link to its primary is up.
    pub fn wait_ok(&self, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            let mut missing = None;
            for port in self.live_ports() {
                let info = self.cli(port, &["CLUSTER", "INFO"]).unwrap_or_default();
                if !info.contains("cluster_state:ok") || !info.contains("cluster_slots_ok:16384") {
                    missing = Some(format!("node {port} is not ok: {info}"));
                    break;
                }
                let replication = self.cli(port, &["INFO", "replication"]).unwrap_or_default();
                if replication.contains("role:slave") && !replication.contains("master_link_status:up") {
                    missing = Some(format!("replica {port} is not in sync"));
                    break;
                }
            }
            match missing {
                None => return Ok(()),
                Some(why) if Instant::now() > deadline => return Err(why),
                Some(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut c) = node.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
