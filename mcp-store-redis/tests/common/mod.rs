//! A Redis for the tests (`mcp_store_redis::testing`: `MCP_TEST_REDIS_URL` when set, else a
//! private `redis-server` child) and a store on it.

#![allow(dead_code, unreachable_pub, unused_imports)]

pub use mcp_store_redis::testing::{RedisCluster, RedisServer, TestRedis, free_port, unique_prefix};
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
