//! Redis going away is an error, not a hang, and everything works again once it is back: the
//! command connection reconnects, and bus subscribers are told of the gap.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{RedisServer, free_port, store_on, unique_prefix, wait_for};
use mcp_auth::{ReplayCache, ReplayError};
use mcp_runtime::StoreError;
use mcp_runtime::store::{BusEvent, SessionRecord, StreamKey};
use mcp_store_redis::{RedisStore, RedisStoreError};
use serde_json::{Map, json};
use tokio::time::{sleep, timeout};

const LONG: Duration = Duration::from_secs(60);
/// How long an operation may take to fail while Redis is away.
const QUICK: Duration = Duration::from_secs(5);

fn msg(s: &str) -> BusEvent {
    BusEvent::Message(Arc::from(s.as_bytes()))
}

fn unavailable<T: std::fmt::Debug>(what: &str, r: Result<Result<T, StoreError>, tokio::time::error::Elapsed>) {
    match r {
        Ok(Err(StoreError::Unavailable(_))) => {}
        Ok(other) => panic!("{what} while Redis is away: {other:?}, expected Unavailable"),
        Err(_) => panic!("{what} hung while Redis is away"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_going_away_is_an_error_and_coming_back_heals() {
    let mut server = RedisServer::start();
    let port = server.port();
    let redis = store_on(&server.url(), &unique_prefix("outage")).await;
    let dpop = redis.replay_cache();
    let store = redis.into_store();
    let rec = SessionRecord::new("mcp_o", "alice", "2025-06-18", Map::new(), json!({}));
    let key = StreamKey::own("mcp_o");
    store
        .check()
        .await
        .expect("the reachability check passes while Redis is up");
    store.sessions.create(&rec, LONG).await.unwrap();
    assert_eq!(store.events.append(&key, b"a", 10).await.unwrap(), 1);
    let mut sub = store.bus.subscribe();
    store.bus.publish(b"before".to_vec()).unwrap();
    wait_for(&mut sub, &msg("before"), QUICK).await;

    server.kill();
    // The first calls meet the dropped connection, the next ones a failing reconnection.
    for _ in 0..3 {
        unavailable("load", timeout(QUICK, store.sessions.load("mcp_o", LONG)).await);
        unavailable("append", timeout(QUICK, store.events.append(&key, b"b", 10)).await);
    }
    unavailable("task get", timeout(QUICK, store.tasks.get("t")).await);
    unavailable("alive", timeout(QUICK, store.members.alive("i")).await);
    // The readiness question: a PING given up within 800 ms.
    let asked = Instant::now();
    unavailable("check", timeout(QUICK, store.check()).await);
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "the check is bounded: {:?}",
        asked.elapsed()
    );
    unavailable("replay", timeout(QUICK, store.events.after(&key, 0)).await);
    match timeout(QUICK, dpop.check_and_insert("proof", LONG)).await {
        Ok(Err(ReplayError::Unavailable(_))) => {}
        Ok(other) => panic!("DPoP replay check while Redis is away: {other:?}, expected Unavailable"),
        Err(_) => panic!("DPoP replay check hung while Redis is away"),
    }
    // Publishing only queues.
    store.bus.publish(b"during".to_vec()).unwrap();

    let _server = RedisServer::start_on(port);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match timeout(QUICK, store.sessions.load("mcp_o", LONG)).await {
            Ok(Ok(r)) => {
                assert_eq!(r, None, "Redis restarted without persistence: the session is gone");
                break;
            }
            Ok(Err(StoreError::Unavailable(_))) if Instant::now() < deadline => {
                sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(e)) => panic!("load after Redis came back: {e:?}"),
            Err(_) => panic!("load hung after Redis came back"),
        }
    }
    store.check().await.expect("the check passes again once Redis is back");
    store.sessions.create(&rec, LONG).await.unwrap();
    assert_eq!(store.sessions.load("mcp_o", LONG).await.unwrap(), Some(rec));
    assert_eq!(dpop.check_and_insert("proof", LONG).await, Ok(true));
    assert_eq!(
        store.events.append(&key, b"c", 10).await.unwrap(),
        1,
        "the counters went with the data"
    );

    // The subscriber is told messages may have been lost, then gets new ones.
    wait_for(&mut sub, &BusEvent::Gap, Duration::from_secs(15)).await;
    store.bus.publish(b"after".to_vec()).unwrap();
    wait_for(&mut sub, &msg("after"), QUICK).await;
}

#[tokio::test]
async fn connect_fails_fast_when_redis_is_unreachable() {
    let port = free_port();
    let started = Instant::now();
    let r = timeout(
        Duration::from_secs(15),
        RedisStore::connect(&format!("redis://127.0.0.1:{port}/")),
    )
    .await
    .expect("connect does not hang");
    match r {
        Err(RedisStoreError::Connect { url, reason }) => {
            assert_eq!(url, format!("redis://127.0.0.1:{port}/"));
            assert!(!reason.is_empty());
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("connected to nothing"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
}

/// The task queue on a Redis that logs every write (`appendonly yes`): killed (SIGKILL) and
/// started again, it still holds the queued tasks, their order and the leases, and the attempt
/// numbers go on from where they were (a lease held before the crash fences its attempt after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_queue_survives_a_redis_crash_with_an_append_only_file() {
    let mut server = RedisServer::with_aof();
    let store = store_on(&server.url(), &unique_prefix("queue-aof")).await.into_store();
    let q = &store.queue;
    let lease = Duration::from_millis(800);
    for id in ["a", "b"] {
        q.enqueue(id, "p1:c", Duration::ZERO).await.unwrap();
    }
    assert_eq!(q.hold("held", "p1:c", lease).await.unwrap(), Some(1));
    server.kill();
    server.restart();
    // The connection comes back on its own; the first calls may meet the dropped one.
    let deadline = Instant::now() + QUICK;
    let first = loop {
        match q.claim(lease).await {
            Ok(claimed) => break claimed,
            Err(_) if Instant::now() < deadline => sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("the queue did not come back: {e}"),
        }
    };
    assert_eq!(first.map(|c| (c.task_id, c.attempt)), Some(("a".into(), 1)));
    let second = q.claim(lease).await.unwrap().expect("b is still queued");
    assert_eq!((second.task_id.as_str(), second.attempt), ("b", 1));
    sleep(Duration::from_millis(1000)).await;
    // The lease held before the crash lapsed: the task is claimed again as attempt 2.
    let mut claimed = Vec::new();
    while let Some(c) = q.claim(lease).await.unwrap() {
        claimed.push((c.task_id, c.attempt));
    }
    assert!(claimed.contains(&("held".into(), 2)), "{claimed:?}");
    assert!(!q.renew("held", 1, lease).await.unwrap(), "its first attempt is fenced");
}
