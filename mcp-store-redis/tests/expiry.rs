//! Redis-only behaviour: the event keys of a session follow its record's expiry.

mod common;

use std::time::Duration;

use common::{TestRedis, store_on, unique_prefix};
use mcp_runtime::store::{Replay, SessionRecord, StreamKey};
use serde_json::{Map, json};
use tokio::time::sleep;

fn record(id: &str) -> SessionRecord {
    SessionRecord::new(id, "alice", "2025-06-18", Map::new(), json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_go_with_an_expired_session() {
    let redis = TestRedis::new();
    let store = store_on(redis.url(), &unique_prefix("expiry")).await.into_store();
    let ttl = Duration::from_millis(800);
    store.sessions.create(&record("mcp_x"), ttl).await.unwrap();
    let key = StreamKey::own("mcp_x");
    assert_eq!(store.events.append(&key, b"a", 10).await.unwrap(), 1);
    assert_eq!(store.events.allocate(&key).await.unwrap(), 2);
    sleep(Duration::from_millis(1300)).await;
    assert_eq!(store.sessions.load("mcp_x", ttl).await.unwrap(), None);
    // Everything of the session is gone, as after `delete_session`.
    assert_eq!(store.events.after(&key, 0).await.unwrap(), Replay::From(vec![]));
    assert_eq!(store.events.after(&key, 1).await.unwrap(), Replay::Ahead);

    // Without a record, events do not expire.
    let free = StreamKey::own("mcp_no_record");
    assert_eq!(store.events.append(&free, b"a", 10).await.unwrap(), 1);
    sleep(Duration::from_millis(100)).await;
    assert_eq!(
        store.events.after(&free, 0).await.unwrap(),
        Replay::From(vec![(1, b"a".to_vec())])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_stream_of_a_live_session_expires_as_truncated() {
    let redis = TestRedis::new();
    let store = store_on(redis.url(), &unique_prefix("idle")).await.into_store();
    let ttl = Duration::from_millis(800);
    store.sessions.create(&record("mcp_y"), ttl).await.unwrap();
    let post = StreamKey {
        session: "mcp_y".into(),
        stream: 3,
    };
    assert_eq!(store.events.append(&post, b"a", 10).await.unwrap(), 1);
    assert_eq!(store.events.append(&post, b"b", 10).await.unwrap(), 2);
    // The session stays alive; the stream gets no append for longer than the ttl.
    for _ in 0..6 {
        sleep(Duration::from_millis(250)).await;
        store.sessions.touch("mcp_y", ttl).await.unwrap();
    }
    assert!(store.sessions.load("mcp_y", ttl).await.unwrap().is_some());
    // Its events are gone, and it says so: never a silent loss.
    assert_eq!(store.events.after(&post, 0).await.unwrap(), Replay::Truncated);
    assert_eq!(store.events.after(&post, 1).await.unwrap(), Replay::Truncated);
    assert_eq!(store.events.after(&post, 2).await.unwrap(), Replay::From(vec![]));
    // Ids go on; what was lost stays lost.
    assert_eq!(store.events.append(&post, b"c", 10).await.unwrap(), 3);
    assert_eq!(
        store.events.after(&post, 2).await.unwrap(),
        Replay::From(vec![(3, b"c".to_vec())])
    );
    assert_eq!(store.events.after(&post, 1).await.unwrap(), Replay::Truncated);
}
