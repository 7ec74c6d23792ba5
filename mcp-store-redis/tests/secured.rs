//! Redis with a password and TLS (`rediss://`), as managed Redis services run it: a real
//! `redis-server` with only a TLS port, a private CA and `requirepass`. The store connects with
//! the CA in `RedisOptions::tls` and the password in the URL, and its seams work over it (a
//! record, the bus); a wrong password, no password and an untrusted certificate are clear
//! connection errors that name the URL without its password.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_runtime::store::{BusEvent, SessionRecord};
use mcp_store_redis::{RedisOptions, RedisStore, RedisStoreError, RedisTls};

mod common;
use common::{certificates, free_port, unique_prefix};

const PASSWORD: &str = "s3cret-Pa55";

/// A `redis-server` listening on TLS only, with a password; killed on drop.
struct SecuredRedis {
    child: Child,
    port: u16,
    ca: Vec<u8>,
}

impl Drop for SecuredRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SecuredRedis {
    fn start(dir: &Path) -> SecuredRedis {
        let (ca, cert, key) = certificates();
        for (name, pem) in [("ca.pem", &ca), ("redis.pem", &cert), ("redis.key", &key)] {
            std::fs::write(dir.join(name), pem).expect("writing a PEM file");
        }
        let port = free_port();
        let file = |name: &str| dir.join(name).display().to_string();
        let child = Command::new("redis-server")
            .args(["--port", "0", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--tls-port", &port.to_string()])
            .args([
                "--tls-cert-file",
                &file("redis.pem"),
                "--tls-key-file",
                &file("redis.key"),
            ])
            .args(["--tls-ca-cert-file", &file("ca.pem"), "--tls-auth-clients", "no"])
            .args(["--requirepass", PASSWORD])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (the Debian package redis-server) runs");
        SecuredRedis {
            child,
            port,
            ca: ca.into_bytes(),
        }
    }

    fn url(&self, password: Option<&str>) -> String {
        match password {
            Some(p) => format!("rediss://:{p}@localhost:{}/", self.port),
            None => format!("rediss://localhost:{}/", self.port),
        }
    }

    fn options(&self, ca: Option<Vec<u8>>) -> RedisOptions {
        RedisOptions {
            prefix: unique_prefix("secured"),
            tls: Some(RedisTls {
                root_ca: ca,
                client: None,
            }),
            ..RedisOptions::default()
        }
    }

    /// Connects, retrying while the server starts (10 s at most).
    async fn connect(&self, password: Option<&str>, ca: Option<Vec<u8>>) -> Result<RedisStore, RedisStoreError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = RedisStore::connect_with(&self.url(password), self.options(ca.clone())).await;
            match &r {
                Err(RedisStoreError::Connect { reason, .. })
                    if reason.contains("refused") && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => return r,
            }
        }
    }
}

#[tokio::test]
async fn a_store_over_tls_with_a_password_serves_and_refuses_clearly() {
    let dir = std::env::temp_dir().join(unique_prefix("redis-tls"));
    std::fs::create_dir_all(&dir).expect("a directory for the certificates");
    let redis = SecuredRedis::start(&dir);

    let store = redis
        .connect(Some(PASSWORD), Some(redis.ca.clone()))
        .await
        .expect("TLS with the CA and the password connects")
        .into_store();
    let record = SessionRecord::new(
        "s-1",
        "alice",
        "2025-11-25",
        serde_json::Map::new(),
        serde_json::json!({"name": "c", "version": "1"}),
    );
    store
        .sessions
        .create(&record, Duration::from_secs(60))
        .await
        .expect("create over TLS");
    let loaded = store
        .sessions
        .load("s-1", Duration::from_secs(60))
        .await
        .expect("load over TLS");
    assert_eq!(loaded.map(|r| r.principal), Some("alice".to_owned()));
    let mut bus = store.bus.subscribe();
    store.bus.publish(b"hello".to_vec()).expect("publish");
    let heard = tokio::time::timeout(Duration::from_secs(5), bus.recv())
        .await
        .expect("the bus over TLS");
    assert!(matches!(heard, Some(BusEvent::Message(m)) if &m[..] == b"hello"));

    for (password, ca, what) in [
        (Some("wrong"), Some(redis.ca.clone()), "a wrong password"),
        (None, Some(redis.ca.clone()), "no password"),
        (Some(PASSWORD), None, "a certificate no root vouches for"),
    ] {
        match redis.connect(password, ca).await {
            Err(RedisStoreError::Connect { url, reason }) => {
                assert!(
                    !url.contains(PASSWORD) && !url.contains("wrong"),
                    "{what}: the URL is redacted: {url}"
                );
                assert!(url.starts_with("rediss://"), "{what}: {url}");
                assert!(!reason.is_empty(), "{what}: a reason");
            }
            Ok(_) => panic!("{what}: connected"),
            Err(e) => panic!("{what}: {e}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
