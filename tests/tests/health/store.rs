//! Readiness follows the shared store: a server on a Redis this test owns (a `redis-server`
//! child on a free port) is ready, answers 503 `store unreachable` within a few seconds of
//! that Redis being killed (liveness stays 200), and is ready again once Redis is back on the
//! same port.

use std::sync::Arc;
use std::time::Duration;

use mcp_server::prelude::*;
use mcp_store_redis::RedisStore;
use mcp_store_redis::testing::RedisServer;
use tokio::sync::Notify;

use crate::support::{Running, assert_probe, bounded, builder, get, until_status};

/// How long readiness may take to follow the store (the check is cached for a second and a
/// `PING` gives up after 800 ms; the connection's reconnection adds its own attempts).
const FOLLOWS_WITHIN: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_falls_while_redis_is_down_and_comes_back_with_it() {
    bounded(60, async {
        let mut redis = RedisServer::start();
        let store = RedisStore::connect(&redis.url()).await.expect("connect to Redis");
        let server = builder(Arc::new(Notify::new())).store(store).build().expect("server");
        let s = Running::start(server, HttpConfig::default()).await;
        let addr = s.addr;
        assert_probe(&get(addr, "/readyz").await, 200, "ok");

        // The owned Redis dies (SIGKILL): the next checks fail.
        tokio::task::block_in_place(|| redis.kill());
        let down = until_status(addr, "/readyz", 503, FOLLOWS_WITHIN).await;
        assert_probe(&down, 503, "store unreachable");
        assert_probe(&get(addr, "/livez").await, 200, "ok");
        // Still down a little later (not a one-off answer).
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_probe(&get(addr, "/readyz").await, 503, "store unreachable");

        // Back on the same port: ready again.
        tokio::task::block_in_place(|| redis.restart());
        let up = until_status(addr, "/readyz", 200, FOLLOWS_WITHIN).await;
        assert_probe(&up, 200, "ok");

        s.stop();
        s.stopped().await;
    })
    .await;
}
