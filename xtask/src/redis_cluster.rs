//! A throwaway Redis Cluster for the scale-out legs: [`RedisCluster::start`] runs six
//! `redis-server` children in cluster mode on free loopback ports (three primaries, three
//! replicas; `cluster-node-timeout` 1 s), creates the cluster with `redis-cli --cluster create
//! … --cluster-replicas 1 --cluster-yes`, waits for `cluster_state:ok` on every node, and
//! kills them all when dropped. Both binaries come from the distribution's `redis-server`
//! package ([`crate::redis::ensure_redis_server`]; `redis-cli` is in its dependency
//! `redis-tools`).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::redis::ensure_redis_server;
use crate::util::{self, ChildGuard, Result};

/// Three primaries, one replica each.
const NODES: usize = 6;
/// `cluster-node-timeout`: how long a node may be silent before its replica takes over.
const NODE_TIMEOUT_MS: u64 = 1000;
/// How long the nodes may take to answer, and the cluster to be ok once created.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Six `redis-server` children forming one Redis Cluster on `127.0.0.1`: their logs and
/// cluster files under `target/redis/cluster-<first port>/` (kept for a look after a failed
/// pass); killed when dropped.
pub(crate) struct RedisCluster {
    nodes: Vec<Node>,
    dir: PathBuf,
}

struct Node {
    child: ChildGuard,
    port: u16,
}

impl RedisCluster {
    /// Finds or installs `redis-server` and `redis-cli`, starts the nodes, creates the cluster
    /// and waits until every node says `cluster_state:ok`. Retries once with other ports when a
    /// node exits first (another process may have taken its port in between).
    pub(crate) fn start() -> Result<Self> {
        let server = ensure_redis_server()?;
        let cli = util::ensure_system_binary("redis-cli", "redis-tools")?;
        let mut last = String::new();
        for _ in 0..2 {
            match Self::try_start(&server, &cli) {
                Ok(cluster) => return Ok(cluster),
                Err(why) => {
                    eprintln!("xtask: {why}; retrying on other ports");
                    last = why;
                }
            }
        }
        Err(last)
    }

    fn try_start(server: &Path, cli: &Path) -> Result<Self> {
        let mut ports = Vec::with_capacity(2 * NODES);
        while ports.len() < 2 * NODES {
            let port = util::free_port()?;
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
        let dir = util::target_dir().join("redis").join(format!("cluster-{}", ports[0]));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut cluster = RedisCluster {
            nodes: Vec::with_capacity(NODES),
            dir,
        };
        for pair in ports.chunks(2) {
            let (port, bus) = (pair[0], pair[1]);
            let log = cluster.dir.join(format!("redis-{port}.log"));
            let out = File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
            let err = out
                .try_clone()
                .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
            let mut cmd = Command::new(server);
            cmd.args(["--port", &port.to_string(), "--cluster-port", &bus.to_string()])
                .args([
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                ])
                .args(["--cluster-enabled", "yes", "--cluster-config-file"])
                .arg(format!("nodes-{port}.conf"))
                .args(["--cluster-node-timeout", &NODE_TIMEOUT_MS.to_string()])
                .current_dir(&cluster.dir)
                .stdin(Stdio::null())
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err));
            println!("$ {} >{} 2>&1 &", util::display(&cmd), log.display());
            cluster.nodes.push(Node {
                child: ChildGuard::spawn(&mut cmd)?,
                port,
            });
        }
        let deadline = Instant::now() + START_TIMEOUT;
        for port in cluster.ports() {
            while query(cli, port, &["PING"]).as_deref() != Some("PONG") {
                cluster.ensure_running()?;
                if Instant::now() >= deadline {
                    return Err(format!("redis-server on port {port} did not answer PING"));
                }
                thread::sleep(Duration::from_millis(50));
            }
        }
        let mut create = Command::new(cli);
        create.args(["--cluster", "create"]);
        for port in cluster.ports() {
            create.arg(format!("127.0.0.1:{port}"));
        }
        create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null());
        util::run_with_timeout(&mut create, START_TIMEOUT)
            .and_then(|status| util::check_status(&util::display(&create), status))?;
        for port in cluster.ports() {
            loop {
                let info = query(cli, port, &["CLUSTER", "INFO"]).unwrap_or_default();
                if info.contains("cluster_state:ok") {
                    break;
                }
                cluster.ensure_running()?;
                if Instant::now() >= deadline {
                    return Err(format!(
                        "the Redis Cluster node on port {port} is not ok within {} s: {info}",
                        START_TIMEOUT.as_secs()
                    ));
                }
                thread::sleep(Duration::from_millis(100));
            }
        }
        println!("redis: cluster {} is up", cluster.nodes());
        Ok(cluster)
    }

    fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|node| node.port).collect()
    }

    /// The nodes, as `everything --redis-cluster` takes them: `127.0.0.1:P1,127.0.0.1:P2,…`.
    pub(crate) fn nodes(&self) -> String {
        self.ports()
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Fails if a node has exited (every node should serve until dropped).
    pub(crate) fn ensure_running(&mut self) -> Result {
        for node in &mut self.nodes {
            if let Some(status) = node.child.try_wait()? {
                return Err(format!(
                    "the Redis Cluster node on port {} exited ({}); its log is {}",
                    node.port,
                    util::describe(status),
                    self.dir.join(format!("redis-{}.log", node.port)).display()
                ));
            }
        }
        Ok(())
    }
}

/// `redis-cli -p <port> <args>`: its output, trimmed, when it succeeds.
fn query(cli: &Path, port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new(cli)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
