//! A Redis for the tests (`mcp_store_redis::testing`: `MCP_TEST_REDIS_URL` when set, else a
//! private `redis-server` child) and a store on it.

#![allow(dead_code, unreachable_pub, unused_imports)]

pub use mcp_store_redis::testing::{ClusterTls, RedisCluster, RedisServer, TestRedis, free_port, unique_prefix};
use mcp_store_redis::{RedisOptions, RedisStore};

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

/// A store on the cluster whose nodes are `urls`, under a fresh prefix.
pub async fn cluster_store_on(urls: &[String], prefix: &str) -> RedisStore {
    RedisStore::connect_cluster_with(
        urls,
        RedisOptions {
            prefix: prefix.to_owned(),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("connecting to the test Redis Cluster: {e}"))
}

/// A CA, and a certificate for `localhost` and 127.0.0.1 it signed (PEM: ca, cert, key).
pub fn certificates() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().expect("a CA key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA certificate");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("a server key");
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).expect("params");
    params.distinguished_name.push(rcgen::DnType::CommonName, "redis");
    let cert = params.signed_by(&key, &issuer).expect("the server certificate");
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// Waits for `want`, skipping other events, for at most `within`.
pub async fn wait_for(
    rx: &mut tokio::sync::mpsc::Receiver<mcp_runtime::store::BusEvent>,
    want: &mcp_runtime::store::BusEvent,
    within: std::time::Duration,
) {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(e)) if e == *want => return,
            Ok(Some(_)) => {}
            Ok(None) => panic!("the bus subscription closed"),
            Err(_) => panic!("no {want:?} within {within:?}"),
        }
    }
}
