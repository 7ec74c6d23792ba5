//! A session record the store holds but cannot read (damaged, or written by something else) is
//! answered as gone, not as an outage: a 503 would have the client retry for the session's
//! whole life, where a 404 has it start a new session.

mod common;

use std::time::Duration;

use common::{TestRedis, store_on, unique_prefix};
use mcp_runtime::store::SessionRecord;
use serde_json::{Map, json};

const LONG: Duration = Duration::from_secs(60);

/// Sets one field of the session hash `id` under `prefix` to `value`, as a damaged record would.
async fn damage(url: &str, prefix: &str, id: &str, field: &str, value: &[u8]) {
    let client = redis::Client::open(url).expect("a Redis URL");
    let mut conn = client.get_multiplexed_async_connection().await.expect("a connection");
    let key = format!("{prefix}:{{{id}}}:session");
    let set: i64 = redis::cmd("HSET")
        .arg(&key)
        .arg(field)
        .arg(value)
        .query_async(&mut conn)
        .await
        .expect("HSET");
    assert_eq!(set, 0, "the field existed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_that_does_not_decode_is_gone() {
    let redis = TestRedis::new();
    let prefix = unique_prefix("corrupt");
    let store = store_on(redis.url(), &prefix).await.into_store();
    for (id, field, value) in [
        ("mcp_bad_record", "record", &b"{not json"[..]),
        ("mcp_bad_level", "logLevel", &b"loudest"[..]),
    ] {
        let rec = SessionRecord::new(id, "alice", "2025-11-25", Map::new(), json!({}));
        store.sessions.create(&rec, LONG).await.expect("created");
        assert!(store.sessions.load(id, LONG).await.expect("loaded").is_some());
        damage(redis.url(), &prefix, id, field, value).await;
        let loaded = store.sessions.load(id, LONG).await;
        assert!(matches!(loaded, Ok(None)), "{id}: {loaded:?}");
    }
}
