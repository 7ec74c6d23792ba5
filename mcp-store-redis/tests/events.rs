//! The Events extension's seams on Redis (feature `events`), each instance a connection of its
//! own: one occurrence log per type that every instance appends to, reads and is woken by; the
//! retention's losses and a forgotten log told as gaps; webhook subscriptions every instance
//! sees, and a delivery lease one instance holds at a time.

#![cfg(feature = "events")]

mod common;

use std::time::Duration;

use common::{RedisCluster, TestRedis, cluster_store_on, store_on, unique_prefix};
use mcp_events::log::{Occurrence, OccurrenceLog, Record, Retention, Signal, Start};
use mcp_events::webhook::store::{Subscription, SubscriptionStore};
use mcp_protocol::events::cursor::{Cursor, Position};
use mcp_store_redis::{RedisStore, WAKE_POLL};
use serde_json::{Map, json};

fn occurrence(id: &str) -> Record {
    Record::Occurrence(Occurrence {
        event_id: id.to_owned(),
        at_ms: 1,
        data: json!({"id": id}).as_object().cloned().unwrap_or_default(),
    })
}

/// Two instances on one Redis under one prefix.
async fn instances(redis: &TestRedis, name: &str) -> (RedisStore, RedisStore) {
    let prefix = unique_prefix(name);
    (
        store_on(redis.url(), &prefix).await,
        store_on(redis.url(), &prefix).await,
    )
}

fn cursor_of(epoch: u64, lo: u64) -> Start {
    Start::Cursor(Cursor {
        epoch,
        position: Position::new(0, lo),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_log_for_every_instance() {
    let redis = TestRedis::new();
    let (a, b) = instances(&redis, "ev-log").await;
    let (a, b) = (a.occurrence_log(), b.occurrence_log());
    let now = b.read("build.finished", Start::Now, 10).await.unwrap();
    assert_eq!(now.head, Position::new(0, 0));
    assert!(!now.gap && now.entries.is_empty());
    assert_eq!(
        a.append("build.finished", occurrence("e1")).await.unwrap(),
        Position::new(0, 1)
    );
    assert_eq!(
        a.append("build.finished", occurrence("e2")).await.unwrap(),
        Position::new(0, 2)
    );
    a.append("build.finished", Record::Signal(Signal::Gap)).await.unwrap();
    // The other instance resumes the first one's cursor under the same epoch.
    let read = b.read("build.finished", cursor_of(now.epoch, 0), 2).await.unwrap();
    assert_eq!(read.epoch, now.epoch);
    assert!(!read.gap);
    assert_eq!(read.head, Position::new(0, 3));
    let ids: Vec<_> = read.entries.iter().map(|e| (e.position.lo, e.record.clone())).collect();
    assert_eq!(ids, vec![(1, occurrence("e1")), (2, occurrence("e2"))]);
    let rest = b.read("build.finished", cursor_of(now.epoch, 2), 10).await.unwrap();
    assert_eq!(rest.entries.len(), 1);
    assert_eq!(rest.entries[0].record, Record::Signal(Signal::Gap));
    // Another type has a log of its own.
    assert_eq!(
        a.append("chat.message", occurrence("c1")).await.unwrap(),
        Position::new(0, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_foreign_and_trimmed_cursors_are_gaps() {
    let redis = TestRedis::new();
    let (a, b) = instances(&redis, "ev-gap").await;
    let retention = Retention {
        max_entries: 3,
        max_age: Duration::from_secs(600),
    };
    let (a, b) = (
        a.occurrence_log().with_retention(retention),
        b.occurrence_log().with_retention(retention),
    );
    for i in 1..=5 {
        a.append("t", occurrence(&format!("e{i}"))).await.unwrap();
    }
    let epoch = b.read("t", Start::Now, 1).await.unwrap().epoch;
    // Entries 1 and 2 were dropped: a read after 1 starts at 3, and says so.
    let read = b.read("t", cursor_of(epoch, 1), 10).await.unwrap();
    assert!(read.gap);
    let positions: Vec<u64> = read.entries.iter().map(|e| e.position.lo).collect();
    assert_eq!(positions, vec![3, 4, 5]);
    assert!(!b.read("t", cursor_of(epoch, 2), 10).await.unwrap().gap);
    // Another epoch's cursor, one from the future, a stale one: from now, as a gap.
    for from in [cursor_of(epoch.wrapping_add(1), 1), cursor_of(epoch, 99), Start::Stale] {
        let read = b.read("t", from, 10).await.unwrap();
        assert!(read.gap && read.entries.is_empty(), "{from:?}");
        assert_eq!(read.head, Position::new(0, 5));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_past_their_age_are_dropped_as_a_gap() {
    let redis = TestRedis::new();
    let (a, _) = instances(&redis, "ev-age").await;
    let retention = Retention {
        max_entries: 100,
        max_age: Duration::from_millis(300),
    };
    let log = a.occurrence_log().with_retention(retention);
    log.append("t", occurrence("old")).await.unwrap();
    let epoch = log.read("t", Start::Now, 1).await.unwrap().epoch;
    tokio::time::sleep(Duration::from_millis(500)).await;
    log.append("t", occurrence("new")).await.unwrap();
    let read = log.read("t", cursor_of(epoch, 0), 10).await.unwrap();
    assert!(read.gap);
    assert_eq!(read.entries.len(), 1);
    assert_eq!(read.entries[0].record, occurrence("new"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_log_starts_a_new_epoch() {
    let redis = TestRedis::new();
    let prefix = unique_prefix("ev-forget");
    let a = store_on(redis.url(), &prefix).await.occurrence_log();
    a.append("t", occurrence("e1")).await.unwrap();
    let before = a.read("t", Start::Now, 1).await.unwrap().epoch;
    // Redis forgets every key of the prefix (a flush, a failover without persistence).
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: i64 = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await.unwrap();
    let after = a.read("t", cursor_of(before, 1), 10).await.unwrap();
    assert_ne!(after.epoch, before);
    assert!(after.gap && after.entries.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_on_one_instance_wakes_the_watchers_of_another() {
    let redis = TestRedis::new();
    let (a, b) = instances(&redis, "ev-wake").await;
    let (a, b) = (a.occurrence_log(), b.occurrence_log());
    let mut watch = b.watch("t");
    watch.borrow_and_update();
    a.append("t", occurrence("e1")).await.unwrap();
    tokio::time::timeout(WAKE_POLL * 10, watch.changed())
        .await
        .expect("woken within the poll")
        .unwrap();
    // The appending instance's own watchers wake at once.
    let mut own = a.watch("t");
    own.borrow_and_update();
    a.append("t", occurrence("e2")).await.unwrap();
    assert!(own.has_changed().unwrap());
}

fn subscription(id: &str, name: &str, principal: &str) -> Subscription {
    Subscription {
        id: id.to_owned(),
        principal: principal.to_owned(),
        url: "https://hooks.example/x".into(),
        name: name.to_owned(),
        arguments: Map::new(),
        secrets: vec!["whsec_x".into()],
        rotation_ends_ms: 0,
        expires_ms: 4_000_000_000_000,
        next: Cursor {
            epoch: 1,
            position: Position::new(0, 0),
        },
        signals_after: Position::new(0, 0),
        active: true,
        last_delivery_ms: None,
        last_error: None,
        failed_since_ms: None,
        window: (0, 0, 0),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_instance_sees_every_subscription() {
    let redis = TestRedis::new();
    let (a, b) = instances(&redis, "ev-subs").await;
    let (a, b) = (a.webhook_subscriptions(), b.webhook_subscriptions());
    let one = subscription("sub_1", "build.finished", "alice");
    a.put(one.clone()).await.unwrap();
    a.put(subscription("sub_2", "build.finished", "bob")).await.unwrap();
    a.put(subscription("sub_3", "chat.message", "alice")).await.unwrap();
    assert_eq!(b.get("sub_1").await.unwrap(), Some(one));
    let mut of_type = b.of_type("build.finished").await.unwrap();
    of_type.sort();
    assert_eq!(of_type, vec!["sub_1", "sub_2"]);
    assert_eq!(b.count_of("alice").await.unwrap(), 2);
    let mut all = b.all().await.unwrap();
    all.sort();
    assert_eq!(all, vec!["sub_1", "sub_2", "sub_3"]);
    assert!(b.remove("sub_1").await.unwrap());
    assert!(!a.remove("sub_1").await.unwrap());
    assert_eq!(a.get("sub_1").await.unwrap(), None);
    assert_eq!(a.count_of("alice").await.unwrap(), 1);
    assert_eq!(a.of_type("build.finished").await.unwrap(), vec!["sub_2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_subscription_leaves_every_listing() {
    let redis = TestRedis::new();
    let (a, _) = instances(&redis, "ev-expiry").await;
    let store = a.webhook_subscriptions();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut short = subscription("sub_s", "t", "carol");
    // The record outlives its grant by a minute: a grant that ended 59.5 s ago.
    short.expires_ms = now - 59_500;
    store.put(short).await.unwrap();
    assert_eq!(store.count_of("carol").await.unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(store.get("sub_s").await.unwrap(), None);
    assert_eq!(store.count_of("carol").await.unwrap(), 0);
    assert!(store.all().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_holds_a_subscriptions_lease_at_a_time() {
    let redis = TestRedis::new();
    let (a, b) = instances(&redis, "ev-lease").await;
    let (a, b) = (a.webhook_subscriptions(), b.webhook_subscriptions());
    let ttl = Duration::from_millis(400);
    assert!(a.lease("sub_1", "instance-a", ttl).await.unwrap());
    assert!(!b.lease("sub_1", "instance-b", ttl).await.unwrap());
    assert!(a.lease("sub_1", "instance-a", ttl).await.unwrap(), "renewed");
    assert!(b.lease("sub_2", "instance-b", ttl).await.unwrap());
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        b.lease("sub_1", "instance-b", ttl).await.unwrap(),
        "taken over once lapsed"
    );
    assert!(!a.lease("sub_1", "instance-a", ttl).await.unwrap());
    // Given up by its holder only: then taken at once.
    a.release("sub_1", "instance-a").await.unwrap();
    assert!(
        !a.lease("sub_1", "instance-a", ttl).await.unwrap(),
        "not a's to give up"
    );
    b.release("sub_1", "instance-b").await.unwrap();
    assert!(
        a.lease("sub_1", "instance-a", ttl).await.unwrap(),
        "given up: taken at once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_without_expiry_is_kept_until_removed() {
    let redis = TestRedis::new();
    let prefix = unique_prefix("ev-never");
    let store = store_on(redis.url(), &prefix).await.webhook_subscriptions();
    let mut never = subscription("sub_n", "t", "dave");
    never.expires_ms = Subscription::NEVER;
    store.put(never.clone()).await.unwrap();
    assert_eq!(store.get("sub_n").await.unwrap(), Some(never));
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*webhook:sub_n"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let ttl: i64 = redis::cmd("PTTL").arg(&keys[0]).query_async(&mut conn).await.unwrap();
    assert_eq!(ttl, -1, "no expiry on the record");
    assert!(store.remove("sub_n").await.unwrap());
    assert!(store.all().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_each_type_lives_on_one_slot() {
    let cluster = RedisCluster::start();
    let prefix = unique_prefix("ev-cluster");
    let a = cluster_store_on(&cluster.urls(), &prefix).await;
    let b = cluster_store_on(&cluster.urls(), &prefix).await;
    let (log_a, log_b) = (a.occurrence_log(), b.occurrence_log());
    // Types whose keys hash to different slots: each script touches one slot only.
    for name in ["build.finished", "chat.message", "alert.fired", "deploy.done"] {
        assert_eq!(log_a.append(name, occurrence("e1")).await.unwrap(), Position::new(0, 1));
        let epoch = log_b.read(name, Start::Now, 1).await.unwrap().epoch;
        let read = log_b.read(name, cursor_of(epoch, 0), 10).await.unwrap();
        assert_eq!(read.entries.len(), 1, "{name}");
    }
    let (subs_a, subs_b) = (a.webhook_subscriptions(), b.webhook_subscriptions());
    for i in 0..6 {
        subs_a
            .put(subscription(&format!("sub_{i}"), "t", "alice"))
            .await
            .unwrap();
    }
    assert_eq!(subs_b.count_of("alice").await.unwrap(), 6);
    assert!(subs_a.lease("sub_0", "a", Duration::from_secs(5)).await.unwrap());
    assert!(!subs_b.lease("sub_0", "b", Duration::from_secs(5)).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_types_stream_limit_holds_across_instances() {
    use mcp_events::slots::StreamSlots;
    let redis = TestRedis::new();
    let (a, b) = instances(&redis, "ev-slots").await;
    let (a, b) = (a.stream_slots(), b.stream_slots());
    let ttl = Duration::from_millis(500);
    assert!(a.take("quota.probe", "s1", 2, ttl).await.unwrap());
    assert!(b.take("quota.probe", "s2", 2, ttl).await.unwrap());
    assert!(
        !a.take("quota.probe", "s3", 2, ttl).await.unwrap(),
        "two held, on two instances"
    );
    assert!(!b.take("quota.probe", "s3", 2, ttl).await.unwrap());
    assert!(
        b.take("other.type", "s3", 2, ttl).await.unwrap(),
        "another type counts apart"
    );
    // Given back on one instance, taken on the other.
    a.release("quota.probe", "s1").await.unwrap();
    assert!(b.take("quota.probe", "s3", 2, ttl).await.unwrap());
    // Renewed slots stay; one left unrenewed (its instance died) frees itself.
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.renew("quota.probe", "s3", ttl).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(a.take("quota.probe", "s4", 2, ttl).await.unwrap(), "s2 lapsed");
    assert!(
        !a.take("quota.probe", "s5", 2, ttl).await.unwrap(),
        "s3 (renewed) and s4 hold the two"
    );
}
