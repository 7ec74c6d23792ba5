//! A Redis for the tests: `MCP_TEST_REDIS_URL` when set, else a private `redis-server` child.

#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcp_store_redis::{RedisOptions, RedisStore};

const MISSING: &str =
    "redis-server not found: install the Debian package redis-server, or run `cargo xtask ci`, which installs it";

/// A `redis-server` child process, killed on drop.
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free port.
    pub fn start() -> RedisServer {
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            match Self::try_start(port) {
                Ok(s) => return s,
                Err(e) => last = e,
            }
        }
        panic!("cannot start redis-server: {last}");
    }

    /// Starts a server on this port (a restart).
    pub fn start_on(port: u16) -> RedisServer {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Self::try_start(port) {
                Ok(s) => return s,
                Err(e) if Instant::now() > deadline => panic!("cannot restart redis-server on {port}: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    fn try_start(port: u16) -> Result<RedisServer, String> {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{MISSING}"),
            Err(e) => panic!("cannot run redis-server: {e}"),
        };
        let mut server = RedisServer {
            port,
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(c) = server.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                server.child = None;
                return Err(format!("redis-server exited: {status}"));
            }
            if ping(port) {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
    }
}

/// Whether something on the port answers `PING` with `+PONG`.
fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The Redis the contract tests share: `MCP_TEST_REDIS_URL`, or a server of their own.
pub struct TestRedis {
    url: String,
    _server: Option<RedisServer>,
}

impl TestRedis {
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

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// A key prefix no other test uses (tests may share one Redis).
pub fn unique_prefix(test: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "test:{test}:{}:{nanos}:{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store on `url` under a fresh prefix.
pub async fn store_on(url: &str, prefix: &str) -> RedisStore {
    RedisStore::connect_with(
        url,
        RedisOptions {
            prefix: prefix.to_owned(),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("connecting to the test Redis at {url}: {e}"))
}
