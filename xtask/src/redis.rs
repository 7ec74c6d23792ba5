//! A throwaway Redis for the tests and the scale-out legs: [`ensure_redis_server`] finds
//! `redis-server` or installs it from the distribution (`apt-get install redis-server`), and
//! [`RedisServer::start`] runs one as a child of xtask on a free loopback port, without
//! persistence, killed when dropped. No system service is used or needed (the package may start
//! one; it is left alone).

use std::fs::{self, File};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::redis_cluster::RedisCluster;
use crate::util::{self, ChildGuard, Result};

/// How long a fresh `redis-server` may take to answer `PING`.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The `redis-server` binary: found, or installed from the distribution's `redis-server` package
/// ([`util::ensure_system_binary`]).
pub(crate) fn ensure_redis_server() -> Result<PathBuf> {
    util::ensure_system_binary("redis-server", "redis-server")
}

/// A `redis-server` child on a loopback port: no persistence, its log in
/// `target/redis/redis-<port>.log`; killed when dropped.
pub(crate) struct RedisServer {
    child: ChildGuard,
    port: u16,
    log: PathBuf,
}

impl RedisServer {
    /// Finds or installs `redis-server` ([`ensure_redis_server`]), runs `redis-server --port P
    /// --bind 127.0.0.1 --save '' --appendonly no --daemonize no` on a free port P and waits
    /// until it answers `PING` with `+PONG`. Retries on another port if it exits first (another
    /// process may have taken the port in between).
    pub(crate) fn start() -> Result<Self> {
        let binary = ensure_redis_server()?;
        let dir = util::target_dir().join("redis");
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(&binary, &dir)? {
                Ok(server) => return Ok(server),
                Err(exited) => {
                    eprintln!("xtask: {exited}; retrying on another port");
                    last = exited;
                }
            }
        }
        Err(last)
    }

    /// `Ok(Err(why))` when the server exited before answering (worth another port).
    fn try_start(binary: &Path, dir: &Path) -> Result<std::result::Result<Self, String>> {
        let port = util::free_port()?;
        let log = dir.join(format!("redis-{port}.log"));
        let out = File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        let mut cmd = Command::new(binary);
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        println!("$ {} >{} 2>&1 &", util::display(&cmd), log.display());
        let mut server = RedisServer {
            child: ChildGuard::spawn(&mut cmd)?,
            port,
            log,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = server.child.try_wait()? {
                return Ok(Err(format!(
                    "redis-server on port {port} exited ({}) before answering; its log is {}",
                    util::describe(status),
                    server.log.display()
                )));
            }
            if ping(port) {
                println!("redis: {} is up", server.url());
                return Ok(Ok(server));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "redis-server on port {port} did not answer PING within {} s; its log is {}",
                    START_TIMEOUT.as_secs(),
                    server.log.display()
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis://127.0.0.1:P/`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Fails if the server has exited (it should serve until dropped).
    pub(crate) fn ensure_running(&mut self) -> Result {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!(
                "redis-server on port {} exited ({}); its log is {}",
                self.port,
                util::describe(status),
                self.log.display()
            )),
        }
    }
}

/// Connects to `127.0.0.1:port`, sends `PING` and reads `+PONG`.
fn ping(port: u16) -> bool {
    let timeout = Duration::from_millis(500);
    let Ok(mut stream) = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut answer = [0u8; 7];
    let mut read = 0;
    while read < answer.len() {
        match stream.read(&mut answer[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    answer[..read].starts_with(b"+PONG")
}

/// One `redis-server` or a Redis Cluster, running until dropped (a pass of `scaleout` or
/// `chaos`).
pub(crate) enum SharedRedis {
    Server(RedisServer),
    Cluster(RedisCluster),
}

impl SharedRedis {
    /// Starts one `redis-server`, or a cluster when `cluster`.
    pub(crate) fn start(cluster: bool) -> Result<Self> {
        Ok(if cluster {
            SharedRedis::Cluster(RedisCluster::start()?)
        } else {
            SharedRedis::Server(RedisServer::start()?)
        })
    }

    /// The `everything` flag and its value: `--redis URL` or `--redis-cluster NODES`.
    pub(crate) fn flag(&self) -> (&'static str, String) {
        match self {
            SharedRedis::Server(server) => ("--redis", server.url()),
            SharedRedis::Cluster(cluster) => ("--redis-cluster", cluster.nodes()),
        }
    }

    /// Fails if Redis (a node of the cluster) exited.
    pub(crate) fn ensure_running(&mut self) -> Result {
        match self {
            SharedRedis::Server(server) => server.ensure_running(),
            SharedRedis::Cluster(cluster) => cluster.ensure_running(),
        }
    }
}
