//! The store seams' contracts, checked the same way against the in-memory implementations
//! (`Store::memory()`) and the Redis one: one generic check per seam, run on each.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::{RedisCluster, TestRedis, cluster_store_on, store_on, unique_prefix};
use mcp_auth::{MemoryReplayCache, ReplayCache};
use mcp_protocol::RpcError;
use mcp_protocol::model::{LoggingLevel, TaskStatus};
use mcp_runtime::store::{Admission, BusEvent, MailboxRecord, Quota, Replay, SessionField, SessionRecord, StreamKey};
use mcp_runtime::{Store, TaskOutcome, TaskOwner, TaskRecord};
use serde_json::{Map, json};
use tokio::time::{sleep, timeout};

/// Runs one check against the in-memory store and against Redis. The check takes the store and
/// a second handle on the same state, as another instance would hold it (for memory, a clone;
/// for Redis, a second connection), and whether `recover` is expected to return records.
macro_rules! contract {
    ($check:ident, $memory:ident, $redis:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $memory() {
            let store = Store::memory();
            $check(&store, &store.clone(), Backend::Memory).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $redis() {
            let redis = TestRedis::new();
            let prefix = unique_prefix(stringify!($check));
            let a = store_on(redis.url(), &prefix).await.into_store();
            let b = store_on(redis.url(), &prefix).await.into_store();
            $check(&a, &b, Backend::Redis).await;
        }
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Memory,
    Redis,
}

contract!(sessions, sessions_memory, sessions_redis);
contract!(session_expiry, session_expiry_memory, session_expiry_redis);
contract!(events, events_memory, events_redis);
contract!(concurrent_appends, concurrent_appends_memory, concurrent_appends_redis);
contract!(bus, bus_memory, bus_redis);
contract!(addressed_bus, addressed_bus_memory, addressed_bus_redis);
contract!(tasks, tasks_memory, tasks_redis);
contract!(membership, membership_memory, membership_redis);
contract!(buckets, buckets_memory, buckets_redis);
contract!(mailboxes, mailboxes_memory, mailboxes_redis);
contract!(queue, queue_memory, queue_redis);

// The DPoP replay cache is `mcp-auth`'s seam, not the runtime's: the same check against
// `MemoryReplayCache` and `RedisReplayCache`, two handles on one state each.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_memory() {
    let cache = Arc::new(MemoryReplayCache::new(1_000));
    replay(cache.clone(), cache).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_redis() {
    let redis = TestRedis::new();
    let prefix = unique_prefix("replay");
    let a = store_on(redis.url(), &prefix).await.replay_cache();
    let b = store_on(redis.url(), &prefix).await.replay_cache();
    replay(Arc::new(a), Arc::new(b)).await;
}

/// Every check on a real Redis Cluster (three primaries, three replicas), through two cluster
/// connections: every script and pipeline keeps its keys in one slot, the bus reaches across
/// nodes. One cluster for all (six processes each would be slow), a fresh prefix per check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_contract_on_a_redis_cluster() {
    let cluster = RedisCluster::start();
    let urls = cluster.urls();
    macro_rules! on_cluster {
        ($($check:ident),*) => {$(
            let prefix = unique_prefix(concat!("cluster-", stringify!($check)));
            let a = cluster_store_on(&urls, &prefix).await.into_store();
            // The second handle enters the cluster through another node.
            let b = cluster_store_on(&urls[3..], &prefix).await.into_store();
            $check(&a, &b, Backend::Redis).await;
        )*};
    }
    on_cluster!(
        sessions,
        session_expiry,
        events,
        concurrent_appends,
        bus,
        addressed_bus,
        tasks,
        membership,
        buckets,
        queue
    );
    // Task records spread over the cluster: every primary holds some (issue #43, item 6), and
    // one owner's list reads them all back from their slots.
    let prefix = unique_prefix("cluster-spread");
    let a = cluster_store_on(&urls, &prefix).await.into_store();
    let owner = TaskOwner::Principal("spread".into());
    for n in 0..48u128 {
        let id = format!("{:032x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834));
        a.tasks.put(rec(&id, owner.clone(), 1, None)).await.unwrap();
    }
    let primaries: Vec<u16> = cluster
        .ports()
        .into_iter()
        .filter(|p| cluster.cli(*p, &["ROLE"]).is_ok_and(|r| r.starts_with("master")))
        .collect();
    assert_eq!(primaries.len(), 3, "three primaries");
    for port in primaries {
        let pattern = format!("{prefix}:{{tasks:*}}:task:*");
        let keys = cluster.cli(port, &["--scan", "--pattern", &pattern]).expect("SCAN");
        assert!(!keys.is_empty(), "the primary on port {port} holds task records");
    }
    assert_eq!(a.tasks.list(&owner).await.unwrap().len(), 48);
    assert_eq!(a.tasks.count().await.unwrap(), 48);
    let prefix = unique_prefix("cluster-replay");
    let a = cluster_store_on(&urls, &prefix).await.replay_cache();
    let b = cluster_store_on(&urls[3..], &prefix).await.replay_cache();
    replay(Arc::new(a), Arc::new(b)).await;
}

const LONG: Duration = Duration::from_secs(60);

fn record(id: &str) -> SessionRecord {
    let mut caps = Map::new();
    caps.insert("sampling".into(), json!({}));
    caps.insert("elicitation".into(), json!({"form": {}}));
    SessionRecord::new(
        id,
        "alice",
        "2025-06-18",
        caps,
        json!({"name": "client", "version": "1.0"}),
    )
}

async fn sessions(a: &Store, b: &Store, _: Backend) {
    let rec = record("mcp_s1");
    a.sessions.create(&rec, LONG).await.unwrap();
    assert_eq!(
        b.sessions.load("mcp_s1", LONG).await.unwrap(),
        Some(rec.clone()),
        "visible everywhere"
    );
    assert_eq!(a.sessions.load("mcp_none", LONG).await.unwrap(), None);

    // Changes, from either instance.
    a.sessions
        .update("mcp_s1", &SessionField::LogLevel(LoggingLevel::Debug))
        .await
        .unwrap();
    b.sessions.update("mcp_s1", &SessionField::Initialized).await.unwrap();
    a.sessions
        .update("mcp_s1", &SessionField::Subscribe("file:///a".into()))
        .await
        .unwrap();
    b.sessions
        .update("mcp_s1", &SessionField::Subscribe("file:///b".into()))
        .await
        .unwrap();
    a.sessions
        .update("mcp_s1", &SessionField::Subscribe("file:///a".into()))
        .await
        .unwrap();
    b.sessions
        .update("mcp_s1", &SessionField::Unsubscribe("file:///a".into()))
        .await
        .unwrap();
    b.sessions
        .update("mcp_s1", &SessionField::Unsubscribe("file:///zz".into()))
        .await
        .unwrap();
    let mut expected = rec.clone();
    expected.log_level = LoggingLevel::Debug;
    expected.initialized = true;
    expected.subscriptions = BTreeSet::from(["file:///b".to_owned()]);
    assert_eq!(a.sessions.load("mcp_s1", LONG).await.unwrap(), Some(expected.clone()));

    // A record created with changes already in it keeps them; a second create replaces.
    let mut other = record("mcp_s2");
    other.log_level = LoggingLevel::Error;
    other.initialized = true;
    other.subscriptions = BTreeSet::from(["file:///x".to_owned(), "urn:y".to_owned()]);
    a.sessions.create(&other, LONG).await.unwrap();
    assert_eq!(b.sessions.load("mcp_s2", LONG).await.unwrap(), Some(other.clone()));
    let fresh = record("mcp_s2");
    b.sessions.create(&fresh, LONG).await.unwrap();
    assert_eq!(a.sessions.load("mcp_s2", LONG).await.unwrap(), Some(fresh));

    // Updating an absent record does nothing (and does not create it).
    a.sessions
        .update("mcp_absent", &SessionField::Initialized)
        .await
        .unwrap();
    a.sessions
        .update("mcp_absent", &SessionField::Subscribe("file:///a".into()))
        .await
        .unwrap();
    assert_eq!(a.sessions.load("mcp_absent", LONG).await.unwrap(), None);
    assert!(
        !a.sessions.touch("mcp_absent", LONG).await.unwrap(),
        "touch says a record is absent"
    );
    assert_eq!(a.sessions.load("mcp_absent", LONG).await.unwrap(), None);

    // Holding: the instance is named among the holders, in the record answered and stored.
    let mut held = expected.clone();
    held.holders = BTreeSet::from(["i1".to_owned()]);
    assert_eq!(
        b.sessions.hold("mcp_s1", "i1", LONG, &[]).await.unwrap(),
        Some(held.clone())
    );
    assert_eq!(
        a.sessions.hold("mcp_s1", "i1", LONG, &[]).await.unwrap(),
        Some(held.clone()),
        "once"
    );
    held.holders.insert("i2".to_owned());
    assert_eq!(
        a.sessions.hold("mcp_s1", "i2", LONG, &[]).await.unwrap(),
        Some(held.clone())
    );
    assert_eq!(b.sessions.load("mcp_s1", LONG).await.unwrap(), Some(held.clone()));
    assert_eq!(a.sessions.hold("mcp_absent", "i1", LONG, &[]).await.unwrap(), None);
    assert_eq!(a.sessions.load("mcp_absent", LONG).await.unwrap(), None, "not created");

    // Holding with changes: applied with the hold, in the record answered and stored; nothing
    // is created for an absent record.
    let fresh = record("mcp_s3");
    b.sessions.create(&fresh, LONG).await.unwrap();
    let changes = [SessionField::Initialized, SessionField::LogLevel(LoggingLevel::Warning)];
    let mut changed = fresh.clone();
    changed.initialized = true;
    changed.log_level = LoggingLevel::Warning;
    changed.holders = BTreeSet::from(["i3".to_owned()]);
    assert_eq!(
        a.sessions.hold("mcp_s3", "i3", LONG, &changes).await.unwrap(),
        Some(changed.clone())
    );
    assert_eq!(b.sessions.load("mcp_s3", LONG).await.unwrap(), Some(changed));
    assert_eq!(a.sessions.hold("mcp_absent", "i3", LONG, &changes).await.unwrap(), None);
    assert_eq!(a.sessions.load("mcp_absent", LONG).await.unwrap(), None, "not created");

    // Deletion answers the record as it was, and takes the session's stream events with it.
    let events = StreamKey::own("mcp_s1");
    a.events.append(&events, b"x", 10).await.unwrap();
    assert_eq!(b.sessions.delete("mcp_s1").await.unwrap(), Some(held));
    assert_eq!(a.sessions.load("mcp_s1", LONG).await.unwrap(), None);
    assert_eq!(a.events.after(&events, 0).await.unwrap(), Replay::From(vec![]));
    assert_eq!(a.events.append(&events, b"y", 10).await.unwrap(), 1, "ids start over");
    assert_eq!(a.sessions.delete("mcp_s1").await.unwrap(), None);
    assert_eq!(
        a.events.after(&events, 0).await.unwrap(),
        Replay::From(vec![]),
        "an absent record's events go too"
    );
    assert_eq!(a.sessions.delete("mcp_never").await.unwrap(), None);
    assert_eq!(
        a.sessions.load("mcp_s2", LONG).await.unwrap().map(|r| r.id),
        Some("mcp_s2".into())
    );
}

async fn session_expiry(a: &Store, b: &Store, _: Backend) {
    let ttl = Duration::from_millis(1000);
    a.sessions.create(&record("mcp_e1"), ttl).await.unwrap();
    a.sessions.create(&record("mcp_e2"), ttl).await.unwrap();
    a.sessions.create(&record("mcp_e3"), ttl).await.unwrap();
    sleep(Duration::from_millis(600)).await;
    // Touched and loaded records slide; the third does not.
    assert!(
        b.sessions.touch("mcp_e1", ttl).await.unwrap(),
        "touch says a record is live"
    );
    assert!(b.sessions.load("mcp_e2", ttl).await.unwrap().is_some());
    sleep(Duration::from_millis(600)).await;
    assert!(
        a.sessions.load("mcp_e1", ttl).await.unwrap().is_some(),
        "touch pushed the expiry back"
    );
    assert!(
        a.sessions.load("mcp_e2", ttl).await.unwrap().is_some(),
        "load pushed the expiry back"
    );
    assert_eq!(a.sessions.load("mcp_e3", ttl).await.unwrap(), None, "expired");
    // An expired record takes no change and was not there to delete.
    a.sessions.update("mcp_e3", &SessionField::Initialized).await.unwrap();
    assert_eq!(a.sessions.load("mcp_e3", ttl).await.unwrap(), None);
    assert_eq!(a.sessions.delete("mcp_e3").await.unwrap(), None);
    // Updates do not slide the expiry.
    sleep(Duration::from_millis(500)).await;
    a.sessions.update("mcp_e1", &SessionField::Initialized).await.unwrap();
    sleep(Duration::from_millis(700)).await;
    assert_eq!(b.sessions.load("mcp_e1", ttl).await.unwrap(), None);
    assert_eq!(b.sessions.delete("mcp_e2").await.unwrap(), None);
}

fn ev(id: u64, frame: &str) -> (u64, Vec<u8>) {
    (id, frame.as_bytes().to_vec())
}

async fn events(a: &Store, b: &Store, _: Backend) {
    let key = StreamKey::own("mcp_ev1");
    // An unknown stream: cursor 0 replays nothing, any other cursor is ahead.
    assert_eq!(a.events.after(&key, 0).await.unwrap(), Replay::From(vec![]));
    assert_eq!(a.events.after(&key, 5).await.unwrap(), Replay::Ahead);
    assert_eq!(a.events.after(&key, u64::MAX).await.unwrap(), Replay::Ahead);

    assert_eq!(a.events.append(&key, b"a", 3).await.unwrap(), 1);
    assert_eq!(
        b.events.allocate(&key).await.unwrap(),
        2,
        "allocate takes an id, no event"
    );
    assert_eq!(b.events.append(&key, b"b", 3).await.unwrap(), 3);
    assert_eq!(a.events.append(&key, b"c", 3).await.unwrap(), 4);
    assert_eq!(
        b.events.after(&key, 0).await.unwrap(),
        Replay::From(vec![ev(1, "a"), ev(3, "b"), ev(4, "c")])
    );
    assert_eq!(
        a.events.after(&key, 1).await.unwrap(),
        Replay::From(vec![ev(3, "b"), ev(4, "c")])
    );
    assert_eq!(
        a.events.after(&key, 2).await.unwrap(),
        Replay::From(vec![ev(3, "b"), ev(4, "c")])
    );
    assert_eq!(a.events.after(&key, 4).await.unwrap(), Replay::From(vec![]));
    assert_eq!(
        a.events.after(&key, 5).await.unwrap(),
        Replay::Ahead,
        "newer than the newest id"
    );

    // The bound: the oldest are evicted, a cursor before an evicted one is truncated.
    assert_eq!(a.events.append(&key, b"d", 3).await.unwrap(), 5); // keeps 3 4 5, evicted 1
    assert_eq!(a.events.after(&key, 0).await.unwrap(), Replay::Truncated);
    assert_eq!(
        a.events.after(&key, 1).await.unwrap(),
        Replay::From(vec![ev(3, "b"), ev(4, "c"), ev(5, "d")])
    );
    assert_eq!(
        b.events.after(&key, 2).await.unwrap(),
        Replay::From(vec![ev(3, "b"), ev(4, "c"), ev(5, "d")]),
        "2 was an allocated id, not an evicted event"
    );
    assert_eq!(b.events.append(&key, b"e", 3).await.unwrap(), 6); // keeps 4 5 6, evicted 3
    assert_eq!(a.events.after(&key, 2).await.unwrap(), Replay::Truncated);
    assert_eq!(
        a.events.after(&key, 3).await.unwrap(),
        Replay::From(vec![ev(4, "c"), ev(5, "d"), ev(6, "e")])
    );
    // A smaller capacity evicts several at once; 0 keeps one.
    assert_eq!(a.events.append(&key, b"f", 1).await.unwrap(), 7); // keeps 7, evicted 6
    assert_eq!(a.events.after(&key, 5).await.unwrap(), Replay::Truncated);
    assert_eq!(a.events.after(&key, 6).await.unwrap(), Replay::From(vec![ev(7, "f")]));
    assert_eq!(a.events.append(&key, b"g", 0).await.unwrap(), 8);
    assert_eq!(a.events.after(&key, 7).await.unwrap(), Replay::From(vec![ev(8, "g")]));
    assert_eq!(a.events.after(&key, 6).await.unwrap(), Replay::Truncated);
    // Allocated ids after the newest event.
    assert_eq!(a.events.allocate(&key).await.unwrap(), 9);
    assert_eq!(a.events.after(&key, 9).await.unwrap(), Replay::From(vec![]));
    assert_eq!(a.events.after(&key, 8).await.unwrap(), Replay::From(vec![]));
    assert_eq!(a.events.after(&key, 10).await.unwrap(), Replay::Ahead);

    // Frames are bytes; streams of a session, and sessions, are separate.
    let post = StreamKey {
        session: "mcp_ev1".into(),
        stream: 3,
    };
    let binary = vec![0u8, 255, 10, 13, 0xc3, 0x28];
    assert_eq!(a.events.allocate(&post).await.unwrap(), 1, "ids are per stream");
    assert_eq!(a.events.append(&post, &binary, 10).await.unwrap(), 2);
    assert_eq!(
        b.events.after(&post, 1).await.unwrap(),
        Replay::From(vec![(2, binary.clone())])
    );
    let other = StreamKey::own("mcp_ev2");
    assert_eq!(a.events.append(&other, b"x", 10).await.unwrap(), 1);

    // Deletion drops every stream of the session, and only those.
    b.events.delete_session("mcp_ev1").await.unwrap();
    assert_eq!(a.events.after(&key, 0).await.unwrap(), Replay::From(vec![]));
    assert_eq!(a.events.after(&key, 8).await.unwrap(), Replay::Ahead);
    assert_eq!(a.events.after(&post, 1).await.unwrap(), Replay::Ahead);
    assert_eq!(a.events.after(&other, 0).await.unwrap(), Replay::From(vec![ev(1, "x")]));
    assert_eq!(a.events.append(&key, b"again", 3).await.unwrap(), 1, "ids start over");
    b.events.delete_session("mcp_never").await.unwrap();
}

async fn concurrent_appends(a: &Store, b: &Store, _: Backend) {
    const EACH: usize = 50;
    let key = StreamKey::own("mcp_race");
    let run = |store: Store, who: &'static str| {
        let key = key.clone();
        tokio::spawn(async move {
            let mut ids = Vec::with_capacity(EACH);
            for i in 0..EACH {
                let frame = format!("{who}{i}");
                ids.push((store.events.append(&key, frame.as_bytes(), 1000).await.unwrap(), frame));
            }
            ids
        })
    };
    let (x, y) = tokio::join!(run(a.clone(), "a"), run(b.clone(), "b"));
    let (x, y) = (x.unwrap(), y.unwrap());
    for ids in [&x, &y] {
        assert!(ids.windows(2).all(|w| w[0].0 < w[1].0), "one appender's ids increase");
    }
    let mut all: Vec<(u64, Vec<u8>)> = x.into_iter().chain(y).map(|(id, f)| (id, f.into_bytes())).collect();
    all.sort();
    let ids: Vec<u64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        (1..=2 * EACH as u64).collect::<Vec<_>>(),
        "distinct ids, none skipped"
    );
    assert_eq!(
        a.events.after(&key, 0).await.unwrap(),
        Replay::From(all),
        "stored in id order"
    );
}

async fn next(rx: &mut tokio::sync::mpsc::Receiver<BusEvent>) -> BusEvent {
    timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a bus event within 5 s")
        .expect("the subscription is open")
}

fn msg(s: &str) -> BusEvent {
    BusEvent::Message(Arc::from(s.as_bytes()))
}

async fn bus(a: &Store, b: &Store, _: Backend) {
    let mut own = a.bus.subscribe();
    let mut second = a.bus.subscribe();
    let mut remote = b.bus.subscribe();
    let dropped = a.bus.subscribe();
    drop(dropped);
    for m in ["one", "two", "three"] {
        a.bus.publish(m.as_bytes().to_vec()).unwrap();
    }
    b.bus.publish(b"from b".to_vec()).unwrap();
    for rx in [&mut own, &mut second, &mut remote] {
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(next(rx).await);
        }
        // Order holds per publisher; two publishers' messages may interleave.
        let from_a: Vec<_> = got.iter().filter(|e| **e != msg("from b")).cloned().collect();
        assert_eq!(from_a, vec![msg("one"), msg("two"), msg("three")], "in publish order");
        assert!(got.contains(&msg("from b")), "every instance's messages");
    }
    // A binary message, and nothing more.
    a.bus.publish(vec![0, 1, 2, 255]).unwrap();
    assert_eq!(
        next(&mut remote).await,
        BusEvent::Message(Arc::from(&[0u8, 1, 2, 255][..]))
    );
    assert!(
        timeout(Duration::from_millis(200), remote.recv()).await.is_err(),
        "no duplicate"
    );
}

/// A message to one process's address reaches that process's subscriptions alone, in order with
/// the publisher's messages to everyone; without addresses (memory), it reaches everyone.
async fn addressed_bus(a: &Store, b: &Store, backend: Backend) {
    let mut at_a = a.bus.subscribe();
    let mut at_b = b.bus.subscribe();
    let address = match (backend, a.bus.address()) {
        (Backend::Memory, None) => "anyone".to_owned(),
        (Backend::Redis, Some(address)) => {
            assert!(!address.is_empty() && !address.contains('.'), "{address:?}");
            assert_ne!(
                b.bus.address(),
                Some(address),
                "each connection has an address of its own"
            );
            address.to_owned()
        }
        (backend, address) => panic!("{backend:?} has the address {address:?}"),
    };
    b.bus.publish(b"x".to_vec()).unwrap();
    b.bus.publish_to(&address, b"y".to_vec()).unwrap();
    b.bus.publish(b"z".to_vec()).unwrap();
    for m in ["x", "y", "z"] {
        assert_eq!(next(&mut at_a).await, msg(m), "in publish order across the two kinds");
    }
    let heard_by_b: &[&str] = match backend {
        Backend::Memory => &["x", "y", "z"],
        Backend::Redis => &["x", "z"],
    };
    for m in heard_by_b {
        assert_eq!(next(&mut at_b).await, msg(m));
    }
    assert!(
        timeout(Duration::from_millis(200), at_b.recv()).await.is_err(),
        "a message to another address is not delivered here"
    );
}

fn rec(id: &str, owner: TaskOwner, at: u64, ttl: Option<u64>) -> TaskRecord {
    TaskRecord::new(id, owner, at, ttl, None)
}

async fn tasks(s: &Store, other: &Store, _: Backend) {
    // The in-memory store's own test, on both.
    let alice = TaskOwner::Principal("alice".into());
    let alice_session = TaskOwner::Session {
        principal: "alice".into(),
        session: "s1".into(),
    };
    let bob = TaskOwner::Principal("bob".into());
    s.tasks.put(rec("a", alice.clone(), 10, Some(100))).await.unwrap();
    s.tasks.put(rec("b", alice_session.clone(), 20, None)).await.unwrap();
    s.tasks.put(rec("c", bob.clone(), 30, Some(5))).await.unwrap();
    assert_eq!(other.tasks.get("a").await.unwrap().unwrap().owner, alice);
    assert!(s.tasks.get("zz").await.unwrap().is_none());
    assert_eq!(s.tasks.list(&alice).await.unwrap().len(), 1);
    assert_eq!(s.tasks.list(&alice_session).await.unwrap()[0].task_id, "b");
    assert_eq!(s.tasks.count().await.unwrap(), 3);
    assert_eq!(s.tasks.count_for_client("p5:alice").await.unwrap(), 2);
    // An anonymous caller's record counts against its address, not the anonymous principal.
    let mut anonymous = rec("e", TaskOwner::Principal("anonymous".into()), 40, None);
    anonymous.client = Some("a:127.0.0.2".into());
    s.tasks.put(anonymous).await.unwrap();
    assert_eq!(other.tasks.count_for_client("a:127.0.0.2").await.unwrap(), 1);
    assert_eq!(s.tasks.count_for_client("p9:anonymous").await.unwrap(), 0);
    assert_eq!(
        other.tasks.list_for_client("a:127.0.0.2").await.unwrap()[0].task_id,
        "e"
    );
    let mut alices = s.tasks.list_for_client("p5:alice").await.unwrap();
    alices.sort_by(|x, y| x.task_id.cmp(&y.task_id));
    assert_eq!(
        alices.iter().map(|r| r.task_id.as_str()).collect::<Vec<_>>(),
        ["a", "b"],
        "both of alice's owners"
    );
    s.tasks.delete("e").await.unwrap();
    assert_eq!(s.tasks.count_for_client("a:127.0.0.2").await.unwrap(), 0);
    assert_eq!(s.tasks.expired(35).await.unwrap(), vec!["c".to_owned()]);
    assert_eq!(s.tasks.expired(200).await.unwrap().len(), 2);
    s.tasks.delete("c").await.unwrap();
    assert_eq!(s.tasks.count().await.unwrap(), 2);

    // Whole records round-trip.
    let mut full = rec("d", bob.clone(), 40, Some(1_000));
    full.status = TaskStatus::Failed;
    full.status_message = Some("it broke".into());
    full.updated_at_ms = 45;
    full.poll_interval_ms = Some(250);
    full.outcome = Some(TaskOutcome::Error(RpcError::internal()));
    full.input_requests
        .insert("r1".into(), json!({"method": "elicitation/create"}));
    full.instance = Some("instance-1".into());
    s.tasks.put(full.clone()).await.unwrap();
    assert_eq!(other.tasks.get("d").await.unwrap(), Some(full.clone()));
    let mut done = full.clone();
    done.status = TaskStatus::Completed;
    done.outcome = Some(TaskOutcome::Result(json!({"content": []})));
    s.tasks.put(done.clone()).await.unwrap();
    assert_eq!(s.tasks.get("d").await.unwrap(), Some(done));

    // Owners: exact owner matching; a replaced record moves between owners.
    let bob_session = TaskOwner::Session {
        principal: "bob".into(),
        session: "s1".into(),
    };
    assert!(s.tasks.list(&bob_session).await.unwrap().is_empty());
    assert!(
        s.tasks
            .list(&TaskOwner::Principal("carol".into()))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(s.tasks.count_for_client("p3:bob").await.unwrap(), 1);
    assert_eq!(s.tasks.count_for_client("p5:carol").await.unwrap(), 0);
    let moved = rec("b", bob_session.clone(), 20, None);
    s.tasks.put(moved).await.unwrap();
    assert!(s.tasks.list(&alice_session).await.unwrap().is_empty());
    assert_eq!(s.tasks.list(&bob_session).await.unwrap()[0].task_id, "b");
    assert_eq!(s.tasks.count_for_client("p5:alice").await.unwrap(), 1);
    assert_eq!(s.tasks.count_for_client("p3:bob").await.unwrap(), 2);
    assert_eq!(s.tasks.count().await.unwrap(), 3);

    // Expiry follows the record: a ttl removed, a ttl added.
    let mut ids = s.tasks.expired(10_000).await.unwrap();
    ids.sort();
    assert_eq!(ids, vec!["a".to_owned(), "d".to_owned()]);
    s.tasks.put(rec("a", alice.clone(), 10, None)).await.unwrap();
    s.tasks.put(rec("b", bob_session.clone(), 20, Some(1))).await.unwrap();
    let mut ids = s.tasks.expired(10_000).await.unwrap();
    ids.sort();
    assert_eq!(ids, vec!["b".to_owned(), "d".to_owned()]);
    assert_eq!(s.tasks.expired(20).await.unwrap(), Vec::<String>::new());
    assert_eq!(s.tasks.expired(21).await.unwrap(), vec!["b".to_owned()]);

    // Deletion removes a record from every index; deleting an absent one is fine.
    s.tasks.delete("b").await.unwrap();
    s.tasks.delete("b").await.unwrap();
    s.tasks.delete("never").await.unwrap();
    assert!(s.tasks.get("b").await.unwrap().is_none());
    assert!(s.tasks.list(&bob_session).await.unwrap().is_empty());
    assert_eq!(s.tasks.count_for_client("p3:bob").await.unwrap(), 1);
    assert_eq!(s.tasks.count().await.unwrap(), 2);
    assert_eq!(s.tasks.expired(10_000).await.unwrap(), vec!["d".to_owned()]);

    // Recovery: a shared store returns every unfinished record (the runtime keeps those of
    // instances that are gone); the in-memory store starts empty and recovers nothing.
    let mut working = rec("w", alice.clone(), 50, None);
    working.instance = Some("i1".into());
    let mut waiting = rec("i", alice_session.clone(), 51, Some(60_000));
    waiting.status = TaskStatus::InputRequired;
    waiting.instance = Some("i2".into());
    s.tasks.put(working.clone()).await.unwrap();
    s.tasks.put(waiting.clone()).await.unwrap();
    let recovered = |v: Vec<TaskRecord>| {
        let mut ids: Vec<String> = v.into_iter().map(|r| r.task_id).collect();
        ids.sort();
        ids
    };
    // Both stores return every unfinished record; the runtime decides whose worker is gone.
    let all = other.tasks.recover().await.unwrap();
    assert!(all.contains(&working) && all.contains(&waiting));
    assert_eq!(recovered(all), vec!["a", "i", "w"], "a is working too; d is finished");
    let mut finished = working.clone();
    finished.status = TaskStatus::Completed;
    s.tasks.put(finished).await.unwrap();
    s.tasks.delete("a").await.unwrap();
    assert_eq!(recovered(other.tasks.recover().await.unwrap()), vec!["i"]);
    s.tasks.delete("i").await.unwrap();
    assert!(other.tasks.recover().await.unwrap().is_empty());
}

async fn membership(a: &Store, b: &Store, _: Backend) {
    assert!(!a.members.alive("i1").await.unwrap(), "never seen");
    a.members.heartbeat("i1", Duration::from_millis(500)).await.unwrap();
    a.members.heartbeat("i2", LONG).await.unwrap();
    assert!(b.members.alive("i1").await.unwrap());
    assert!(b.members.alive("i2").await.unwrap());
    sleep(Duration::from_millis(900)).await;
    assert!(!b.members.alive("i1").await.unwrap(), "its heartbeat lapsed");
    assert!(b.members.alive("i2").await.unwrap());
    a.members.heartbeat("i1", LONG).await.unwrap();
    assert!(b.members.alive("i1").await.unwrap(), "back");
    b.members.leave("i1").await.unwrap();
    assert!(!a.members.alive("i1").await.unwrap(), "left");
    b.members.leave("never").await.unwrap();
    a.members.heartbeat("i2", Duration::ZERO).await.unwrap();
    assert!(!b.members.alive("i2").await.unwrap(), "a zero ttl is gone at once");
}

/// Mailbox records: written by one instance, read by the other; a refresh pushes the
/// expiry back, a record not refreshed expires, a closed one is gone.
async fn mailboxes(a: &Store, b: &Store, _: Backend) {
    let short = Duration::from_millis(400);
    assert_eq!(b.mailboxes.load("m1").await.unwrap(), None, "never opened");
    let m1 = MailboxRecord::new("m1", "alice", "i1");
    a.mailboxes.open(&m1, short).await.unwrap();
    a.mailboxes
        .open(&MailboxRecord::new("m2", "bob", "i1"), LONG)
        .await
        .unwrap();
    assert_eq!(b.mailboxes.load("m1").await.unwrap(), Some(m1.clone()));
    sleep(Duration::from_millis(250)).await;
    assert!(a.mailboxes.refresh("m1", short).await.unwrap());
    sleep(Duration::from_millis(250)).await;
    assert_eq!(b.mailboxes.load("m1").await.unwrap(), Some(m1), "refreshed");
    sleep(Duration::from_millis(400)).await;
    assert_eq!(b.mailboxes.load("m1").await.unwrap(), None, "expired");
    assert!(!a.mailboxes.refresh("m1", short).await.unwrap(), "nothing to refresh");
    b.mailboxes.close("m2").await.unwrap();
    assert_eq!(a.mailboxes.load("m2").await.unwrap(), None, "closed");
    b.mailboxes.close("m2").await.unwrap();
}

/// Rate-limit buckets: a bucket allows its burst, then refuses with the wait until the next
/// request; both handles (instances) draw from one bucket; concurrent acquisitions never allow
/// more than the bucket holds; a bucket refills after its interval.
async fn buckets(a: &Store, b: &Store, _: Backend) {
    // 3 at once, then one a minute: nothing refills during the test.
    let slow = Quota::new(1.0 / 60.0, 3).unwrap();
    for i in 0..3 {
        let handle = if i % 2 == 0 { a } else { b };
        assert_eq!(
            handle.buckets.acquire("k", slow).await,
            Ok(Admission::Allowed),
            "request {i}"
        );
    }
    for handle in [a, b] {
        let Ok(Admission::Limited { retry_after }) = handle.buckets.acquire("k", slow).await else {
            panic!("over the burst, on either instance");
        };
        assert!(
            retry_after > Duration::from_secs(30) && retry_after <= Duration::from_secs(60),
            "{retry_after:?}"
        );
    }
    assert!(
        b.buckets.acquire("other", slow).await.unwrap().is_allowed(),
        "another key"
    );

    // 40 concurrent acquisitions, half on each handle, on a bucket of 10: exactly 10 allowed.
    let ten = Quota::new(1.0 / 60.0, 10).unwrap();
    let tries = (0..40).map(|i| {
        let handle = if i % 2 == 0 { a } else { b };
        handle.buckets.acquire("burst", ten)
    });
    let allowed = futures::future::join_all(tries)
        .await
        .into_iter()
        .filter(|r| r.as_ref().is_ok_and(Admission::is_allowed))
        .count();
    assert_eq!(allowed, 10);

    // One every 100 ms: refused at once, allowed again once the interval has passed.
    let fast = Quota::with_interval(Duration::from_millis(100)).unwrap();
    assert!(a.buckets.acquire("fast", fast).await.unwrap().is_allowed());
    assert!(!b.buckets.acquire("fast", fast).await.unwrap().is_allowed());
    sleep(Duration::from_millis(250)).await;
    assert!(b.buckets.acquire("fast", fast).await.unwrap().is_allowed(), "refilled");
}

/// The DPoP replay cache: a key is new once, whichever instance sees it first; of concurrent
/// insertions of one key exactly one is new; a key is new again once its ttl has passed.
async fn replay(a: Arc<dyn ReplayCache>, b: Arc<dyn ReplayCache>) {
    assert_eq!(a.check_and_insert("proof-1", LONG).await, Ok(true), "first use");
    assert_eq!(a.check_and_insert("proof-1", LONG).await, Ok(false), "replayed");
    assert_eq!(
        b.check_and_insert("proof-1", LONG).await,
        Ok(false),
        "replayed on another instance"
    );
    assert_eq!(b.check_and_insert("proof-2", LONG).await, Ok(true), "another key");

    // 20 concurrent insertions of one key, half on each handle: exactly one is new.
    let tries = (0..20).map(|i| {
        let handle = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move { handle.check_and_insert("race", LONG).await }
    });
    let new = futures::future::join_all(tries)
        .await
        .into_iter()
        .filter(|r| *r == Ok(true))
        .count();
    assert_eq!(new, 1);

    // A short-lived key is forgotten once its ttl has passed.
    let short = Duration::from_millis(200);
    assert_eq!(a.check_and_insert("brief", short).await, Ok(true));
    assert_eq!(b.check_and_insert("brief", short).await, Ok(false));
    sleep(Duration::from_millis(400)).await;
    assert_eq!(b.check_and_insert("brief", short).await, Ok(true), "expired, new again");
}

/// The task queue: clients in turn, each line in order; claims under leases that a newer
/// attempt fences; a lapsed lease claimed again (by the other instance) first in its line;
/// delays; idempotent queuing; a task held where it was accepted. Leases and delays are real time here (Redis's clock cannot be
/// paused), short, with margins of several times the slack a loaded machine needs.
async fn queue(s: &Store, other: &Store, _backend: Backend) {
    let (q, q2) = (&s.queue, &other.queue);
    let lease = Duration::from_millis(600);
    let claim = |q: &Arc<dyn mcp_runtime::store::TaskQueue>| {
        let q = q.clone();
        async move { q.claim(lease).await.unwrap().map(|c| (c.task_id, c.client, c.attempt)) }
    };
    for n in 0..3 {
        q.enqueue(&format!("a{n}"), "p1:a", Duration::ZERO).await.unwrap();
    }
    q2.enqueue("b0", "p1:b", Duration::ZERO).await.unwrap();
    q.enqueue("a0", "p1:a", Duration::ZERO).await.unwrap();
    assert_eq!(q.depth().await.unwrap(), mcp_runtime::store::QueueDepth::new(4, 0));
    assert_eq!(claim(q).await, Some(("a0".into(), "p1:a".into(), 1)));
    assert_eq!(
        claim(q2).await,
        Some(("b0".into(), "p1:b".into(), 1)),
        "b's one task is not behind a's line"
    );
    assert_eq!(claim(q).await.unwrap().0, "a1");
    // b0 finishes; a0 is renewed past its first lease; a1 is left to lapse.
    assert!(q2.finish("b0", 1).await.unwrap());
    assert!(!q.finish("b0", 1).await.unwrap(), "finished once");
    sleep(Duration::from_millis(300)).await;
    assert!(q.renew("a0", 1, Duration::from_secs(5)).await.unwrap());
    assert!(
        !q.renew("a0", 2, lease).await.unwrap(),
        "an attempt that was never claimed"
    );
    sleep(Duration::from_millis(700)).await;
    // a1's lease lapsed: the other instance claims it, first in its line (before a2), as
    // attempt 2, and attempt 1 is fenced.
    assert_eq!(claim(q2).await, Some(("a1".into(), "p1:a".into(), 2)));
    assert!(!q.renew("a1", 1, lease).await.unwrap());
    assert!(!q.finish("a1", 1).await.unwrap());
    assert!(!q.release("a1", 1, Duration::ZERO).await.unwrap());
    assert_eq!(claim(q).await.unwrap().0, "a2");
    assert!(q.renew("a2", 1, Duration::from_secs(5)).await.unwrap());
    assert_eq!(claim(q).await, None, "a0 is still held");
    // Given back with a backoff: not claimed before it ends, then as the next attempt.
    assert!(q2.release("a1", 2, Duration::from_millis(400)).await.unwrap());
    assert_eq!(claim(q).await, None);
    sleep(Duration::from_millis(600)).await;
    assert_eq!(claim(q).await, Some(("a1".into(), "p1:a".into(), 3)));
    for (id, attempt) in [("a0", 1), ("a1", 3), ("a2", 1)] {
        assert!(q.finish(id, attempt).await.unwrap(), "{id}");
    }
    // A delayed task, and queuing is idempotent while a task is known.
    q.enqueue("later", "a:127.0.0.2", Duration::from_millis(400))
        .await
        .unwrap();
    q.enqueue("later", "a:127.0.0.2", Duration::ZERO).await.unwrap();
    assert_eq!(claim(q2).await, None);
    assert_eq!(q.depth().await.unwrap(), mcp_runtime::store::QueueDepth::new(1, 0));
    sleep(Duration::from_millis(600)).await;
    assert_eq!(claim(q2).await, Some(("later".into(), "a:127.0.0.2".into(), 1)));
    assert_eq!(q.depth().await.unwrap(), mcp_runtime::store::QueueDepth::new(0, 1));
    assert!(q.finish("later", 1).await.unwrap());
    assert_eq!(q.depth().await.unwrap(), mcp_runtime::store::QueueDepth::new(0, 0));
    // A task held where it was accepted: attempt 1 at once, nobody claims it during its lease,
    // another instance claims it as attempt 2 once the lease lapsed.
    assert_eq!(q.hold("here", "p1:a", lease).await.unwrap(), Some(1));
    assert_eq!(q2.hold("here", "p1:a", lease).await.unwrap(), None, "held once");
    assert_eq!(claim(q2).await, None);
    sleep(Duration::from_millis(900)).await;
    assert_eq!(claim(q2).await, Some(("here".into(), "p1:a".into(), 2)));
    assert!(!q.renew("here", 1, lease).await.unwrap(), "the first attempt is fenced");
    assert!(q2.finish("here", 2).await.unwrap());
}
