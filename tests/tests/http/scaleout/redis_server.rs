//! The Redis of the scale-out tests: the store crate's test server and test cluster
//! (`mcp_store_redis::testing`), and the key prefixes that keep tests sharing one Redis apart.

pub(crate) use mcp_store_redis::testing::{RedisCluster, RedisServer};

/// A key prefix no other test uses.
pub(crate) fn unique_prefix() -> String {
    mcp_store_redis::testing::unique_prefix("scaleout")
}
