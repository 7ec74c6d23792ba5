//! A real `redis-server` for tests (this crate's, and an application's own): a child process on
//! a free loopback port, killed on drop, a six-node Redis Cluster of such children
//! ([`RedisCluster`]), and the key prefixes that keep tests sharing one Redis apart. Needs the `redis-server` binary (the Debian package `redis-server`; `cargo xtask ci`
//! installs it and passes its own server as `MCP_TEST_REDIS_URL`).

mod cluster;

pub use cluster::{ClusterTls, NODE_TIMEOUT_MS, RedisCluster};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MISSING: &str = "redis-server not found: install the Debian package redis-server \
    (`apt-get install -y redis-server`), run `cargo xtask ci` (which installs it), or set \
    MCP_TEST_REDIS_URL to a Redis the tests may use";

/// A `redis-server` child process on `127.0.0.1`, killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    /// Where a persistent server keeps its snapshot (`None`: nothing is saved).
    dir: Option<PathBuf>,
    /// Whether it keeps an append-only file there (every write synced), which survives a crash.
    aof: bool,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server without persistence on a free port. Panics when `redis-server` is missing.
    pub fn start() -> RedisServer {
        Self::start_with(None)
    }

    /// Starts a server that keeps its data across [`RedisServer::stop`] and
    /// [`RedisServer::restart`] (a snapshot written at shutdown, read at start).
    pub fn persistent() -> RedisServer {
        let dir = std::env::temp_dir().join(format!("mcp-redis-{}", unique_prefix("snapshot")));
        std::fs::create_dir_all(&dir).expect("a directory for the Redis snapshot");
        Self::start_with(Some(dir))
    }

    /// Starts a server that logs every write to an append-only file, synced at once
    /// (`appendfsync always`): its data survives [`RedisServer::kill`] (a crash) and
    /// [`RedisServer::restart`].
    pub fn with_aof() -> RedisServer {
        let dir = std::env::temp_dir().join(format!("mcp-redis-{}", unique_prefix("aof")));
        std::fs::create_dir_all(&dir).expect("a directory for the Redis append-only file");
        let mut server = Self::start_with(Some(dir.clone()));
        // Started as a persistent server; switched to the append-only file before any write.
        server.aof = true;
        server.kill();
        server.restart();
        server
    }

    /// Starts a server without persistence on this port (waiting up to 10 s for it to be free).
    pub fn start_on(port: u16) -> RedisServer {
        let mut server = RedisServer {
            port,
            dir: None,
            aof: false,
            child: None,
        };
        server.restart();
        server
    }

    fn start_with(dir: Option<PathBuf>) -> RedisServer {
        let mut last = String::new();
        for _ in 0..5 {
            let mut server = RedisServer {
                port: free_port(),
                dir: dir.clone(),
                aof: false,
                child: None,
            };
            match server.spawn() {
                Ok(()) => return server,
                Err(e) => {
                    // Keep the directory for the next try.
                    server.dir = None;
                    last = e;
                }
            }
        }
        panic!("cannot start redis-server: {last}");
    }

    fn spawn(&mut self) -> Result<(), String> {
        let port = self.port.to_string();
        let mut args = vec![
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ];
        let dir = self.dir.as_ref().map(|d| d.display().to_string());
        if let Some(dir) = &dir {
            args.extend(["--dir", dir.as_str(), "--dbfilename", "dump.rdb"]);
        }
        if self.aof {
            args.extend(["--appendonly", "yes", "--appendfsync", "always"]);
        }
        let child = Command::new("redis-server")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{MISSING}"),
            Err(e) => panic!("cannot run redis-server: {e}"),
        };
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                self.child = None;
                return Err(format!("redis-server exited: {status}"));
            }
            if command(self.port, b"PING\r\n", b"+PONG\r\n") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        Err("redis-server does not answer PING".into())
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server: a persistent one saves its data first (`SHUTDOWN SAVE`), any other is
    /// killed. Returns once the process is gone.
    pub fn stop(&mut self) {
        if self.dir.is_some() && self.child.is_some() {
            let _ = command(self.port, b"SHUTDOWN SAVE\r\n", b"");
        }
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port (with its data, when persistent).
    pub fn restart(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.spawn() {
                Ok(()) => return,
                Err(e) if Instant::now() > deadline => panic!("cannot restart redis-server on {}: {e}", self.port),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// Kills the server (SIGKILL) and waits for it to be gone.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The Redis tests share: `MCP_TEST_REDIS_URL` when set, else a server of their own.
#[derive(Debug)]
pub struct TestRedis {
    url: String,
    _server: Option<RedisServer>,
}

impl TestRedis {
    /// `MCP_TEST_REDIS_URL`, or a fresh [`RedisServer`] kept as long as this value.
    pub fn new() -> TestRedis {
        match std::env::var("MCP_TEST_REDIS_URL") {
            Ok(url) if !url.is_empty() => TestRedis { url, _server: None },
            _ => {
                let server = RedisServer::start();
                TestRedis {
                    url: server.url(),
                    _server: Some(server),
                }
            }
        }
    }

    /// Its URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Default for TestRedis {
    fn default() -> Self {
        Self::new()
    }
}

/// Sends an inline command; whether the reply starts with `expect`.
fn command(port: u16, cmd: &[u8], expect: &[u8]) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(cmd).is_err() {
        return false;
    }
    let mut buf = vec![0u8; expect.len()];
    expect.is_empty() || (s.read_exact(&mut buf).is_ok() && buf == expect)
}

/// A port of `127.0.0.1` free right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A key prefix no other test uses (tests may share one Redis); `tag` names the test.
pub fn unique_prefix(tag: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "test:{tag}:{}:{nanos}:{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
