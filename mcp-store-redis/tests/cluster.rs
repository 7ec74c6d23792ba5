//! A Redis Cluster losing a primary mid-run: two stores (two instances) on a real cluster of
//! six `redis-server` processes; the primary serving some sessions' slots is killed. Its
//! replica is held back from taking over for a few seconds (`cluster-replica-no-failover`,
//! then released: the cluster's own automatic failover promotes it), so that the outage is
//! long enough to see: meanwhile every operation on the dead primary's sessions fails quickly
//! with `StoreError::Unavailable`, and any other ends quickly served or `Unavailable` (never
//! another error, never a hang); once the cluster is ok again,
//! the sessions whose slots moved keep their records and event numbering on both instances,
//! and the bus subscriber that was on the dead node, the only node its store was given, has
//! moved to another one the cluster reported (a gap, then messages again). Then: clusters with a password, and on TLS only.

mod common;

use std::time::{Duration, Instant};

use common::{ClusterTls, RedisCluster, certificates, cluster_store_on, unique_prefix, wait_for};
use mcp_runtime::store::{BusEvent, Replay, SessionField, SessionRecord, StreamKey};
use mcp_runtime::{Store, StoreError};
use mcp_store_redis::{RedisOptions, RedisStore, RedisStoreError, RedisTls};
use serde_json::{Map, json};
use tokio::sync::mpsc;
use tokio::time::timeout;

const LONG: Duration = Duration::from_secs(120);
/// How long one operation may take while the primary is gone (the reply timeout is 3 s).
const QUICK: Duration = Duration::from_secs(5);

fn record(id: &str) -> SessionRecord {
    SessionRecord::new(id, "alice", "2025-11-25", Map::new(), json!({}))
}

/// Publishes until a message of `from` reaches `rx` (publishes may be dropped while the
/// cluster fails over).
async fn heard(from: &Store, rx: &mut mpsc::Receiver<BusEvent>, within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let _ = from.bus.publish(b"ping".to_vec());
        if let Ok(Some(BusEvent::Message(m))) = timeout(Duration::from_millis(300), rx.recv()).await
            && &m[..] == b"ping"
        {
            return;
        }
    }
    panic!("the bus carries nothing within {within:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_dies_and_its_replica_takes_over() {
    let mut cluster = RedisCluster::start();
    let urls = cluster.urls();
    let prefix = unique_prefix("failover");
    // A is given the first node only (its bus subscriber is there, and must learn of the
    // others from the cluster to move), B the last three.
    let a = cluster_store_on(&urls[..1], &prefix).await.into_store();
    let b = cluster_store_on(&urls[3..], &prefix).await.into_store();
    let victim = cluster.ports()[0];
    let session_key = |sid: &str| format!("{prefix}:{{{sid}}}:session");
    assert_eq!(
        cluster.primary_of(&session_key("probe")).map(|_| ()),
        Ok(()),
        "the cluster serves every slot"
    );
    let role = cluster.cli(victim, &["ROLE"]).expect("ROLE");
    assert!(role.starts_with("master"), "the first node is a primary: {role}");

    // Sessions on every primary, at least two on the one that will die.
    let mut on_victim = Vec::new();
    let mut elsewhere = Vec::new();
    for i in 0.. {
        let sid = format!("mcp_s{i}");
        let primary = cluster.primary_of(&session_key(&sid)).expect("the slot's primary");
        if primary == victim && on_victim.len() < 3 {
            on_victim.push(sid);
        } else if primary != victim && elsewhere.len() < 3 {
            elsewhere.push(sid);
        }
        if on_victim.len() == 3 && elsewhere.len() == 3 {
            break;
        }
    }
    for sid in on_victim.iter().chain(&elsewhere) {
        a.sessions.create(&record(sid), LONG).await.unwrap();
        let key = StreamKey::own(sid);
        assert_eq!(a.events.append(&key, b"one", 10).await.unwrap(), 1);
        assert_eq!(b.events.append(&key, b"two", 10).await.unwrap(), 2);
    }
    let mut sub_a = a.bus.subscribe();
    let mut sub_b = b.bus.subscribe();
    heard(&b, &mut sub_a, QUICK).await;
    heard(&a, &mut sub_b, QUICK).await;
    cluster
        .wait_replicated(victim, Duration::from_secs(10))
        .expect("the replica has every write");

    let replica = cluster.replica_of(victim).expect("the victim's replica");
    let hold = |cluster: &RedisCluster, on: &str| {
        cluster
            .cli(replica, &["CONFIG", "SET", "cluster-replica-no-failover", on])
            .expect("CONFIG SET")
    };
    hold(&cluster, "yes");
    cluster.kill(victim);
    let killed = Instant::now();

    // While no replica has taken over: the dead primary's sessions are unavailable, quickly;
    // the others are served or unavailable (a cluster missing slots refuses every command).
    while killed.elapsed() < Duration::from_secs(4) {
        for (store, sid, lost) in [
            (&a, &on_victim[0], true),
            (&b, &on_victim[1], true),
            (&a, &elsewhere[0], false),
        ] {
            let started = Instant::now();
            let r = timeout(QUICK, store.sessions.load(sid, LONG))
                .await
                .unwrap_or_else(|_| panic!("load of {sid} hung while the primary is gone"));
            assert!(started.elapsed() < QUICK, "load of {sid} took {:?}", started.elapsed());
            match r {
                Err(StoreError::Unavailable(_)) => {}
                Ok(Some(_)) if !lost => {}
                other => panic!("load of {sid} while the primary is gone: {other:?}"),
            }
        }
        let started = Instant::now();
        let r = timeout(QUICK, b.events.append(&StreamKey::own(&on_victim[2]), b"x", 10))
            .await
            .expect("an append hung while the primary is gone");
        assert!(
            matches!(r, Err(StoreError::Unavailable(_))),
            "append while the primary is gone: {r:?}"
        );
        assert!(started.elapsed() < QUICK, "append took {:?}", started.elapsed());
    }
    // The replica may take over now, by the cluster's own failover.
    hold(&cluster, "no");

    cluster
        .wait_ok(Duration::from_secs(30))
        .expect("the cluster is ok again");
    assert_ne!(cluster.primary_of(&session_key(&on_victim[0])), Ok(victim));
    // Serving resumes (the clients may need a moment to learn the new slot map).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match a.sessions.load(&on_victim[0], LONG).await {
            Ok(r) => {
                assert!(r.is_some(), "the promoted replica has the record");
                break;
            }
            Err(StoreError::Unavailable(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("load after the failover: {e:?}"),
        }
    }
    for sid in on_victim.iter().chain(&elsewhere) {
        for (store, name) in [(&a, "A"), (&b, "B")] {
            let got = timeout(QUICK, store.sessions.load(sid, LONG)).await.expect("no hang");
            assert_eq!(got.map(|r| r.map(|r| r.id)), Ok(Some(sid.clone())), "{sid} on {name}");
        }
        b.sessions.update(sid, &SessionField::Initialized).await.unwrap();
        assert!(a.sessions.load(sid, LONG).await.unwrap().unwrap().initialized);
        let key = StreamKey::own(sid);
        assert_eq!(a.events.append(&key, b"three", 10).await.unwrap(), 3, "{sid} numbering");
        assert_eq!(
            b.events.after(&key, 1).await.unwrap(),
            Replay::From(vec![(2, b"two".to_vec()), (3, b"three".to_vec())]),
            "{sid} events"
        );
    }
    let fresh = record("mcp_after");
    b.sessions.create(&fresh, LONG).await.unwrap();
    assert_eq!(a.sessions.load("mcp_after", LONG).await.unwrap(), Some(fresh));

    // A's subscriber was on the dead node: it moved, and says messages may have been lost.
    wait_for(&mut sub_a, &BusEvent::Gap, Duration::from_secs(15)).await;
    heard(&b, &mut sub_a, Duration::from_secs(10)).await;
    heard(&a, &mut sub_b, Duration::from_secs(10)).await;
}

/// A cluster whose nodes require a password: the password in the node URLs connects (a record
/// and the bus work across two stores); none, or a wrong one, is a clear connection error that
/// does not show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_a_password() {
    const PASSWORD: &str = "cl0ster-Pa55";
    let cluster = RedisCluster::with_password(PASSWORD);
    let urls = cluster.urls();
    assert!(urls.iter().all(|u| u.contains(PASSWORD)));
    let prefix = unique_prefix("cluster-auth");
    let a = cluster_store_on(&urls, &prefix).await.into_store();
    let b = cluster_store_on(&urls[3..], &prefix).await.into_store();
    let rec = record("mcp_auth");
    a.sessions.create(&rec, LONG).await.unwrap();
    assert_eq!(b.sessions.load("mcp_auth", LONG).await.unwrap(), Some(rec));
    let mut sub = b.bus.subscribe();
    heard(&a, &mut sub, QUICK).await;

    let wrong: Vec<String> = urls.iter().map(|u| u.replace(PASSWORD, "wrong")).collect();
    let none: Vec<String> = urls.iter().map(|u| u.replace(&format!(":{PASSWORD}@"), "")).collect();
    for (nodes, what) in [(wrong, "a wrong password"), (none, "no password")] {
        match RedisStore::connect_cluster(&nodes).await {
            Err(RedisStoreError::Connect { url, reason }) => {
                assert!(!url.contains(PASSWORD) && !url.contains("wrong"), "{what}: {url}");
                assert!(!reason.is_empty(), "{what}: a reason");
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: connected"),
        }
    }
}

/// A cluster on TLS only (clients, cluster bus, replication), with a password: `rediss://` node
/// URLs and the private CA in `RedisOptions::tls` connect to every node (a record and the bus
/// work); without the CA, connecting is a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_on_tls_with_a_password() {
    const PASSWORD: &str = "tls-cl0ster";
    let dir = std::env::temp_dir().join(unique_prefix("cluster-tls").replace(':', "-"));
    std::fs::create_dir_all(&dir).expect("a directory for the certificates");
    let (ca, cert, key) = certificates();
    for (name, pem) in [("ca.pem", &ca), ("redis.pem", &cert), ("redis.key", &key)] {
        std::fs::write(dir.join(name), pem).expect("writing a PEM file");
    }
    let cluster = RedisCluster::with_tls(
        ClusterTls {
            cert: dir.join("redis.pem"),
            key: dir.join("redis.key"),
            ca: dir.join("ca.pem"),
        },
        Some(PASSWORD),
    );
    let urls = cluster.urls();
    assert!(urls.iter().all(|u| u.starts_with("rediss://")));
    let prefix = unique_prefix("cluster-tls");
    let options = |ca: Option<Vec<u8>>| RedisOptions {
        prefix: prefix.clone(),
        tls: Some(RedisTls {
            root_ca: ca,
            client: None,
        }),
        ..RedisOptions::default()
    };
    let connect = |nodes: &[String], ca: Option<Vec<u8>>| {
        let nodes = nodes.to_vec();
        let options = options(ca);
        async move { RedisStore::connect_cluster_with(&nodes, options).await }
    };
    let a = connect(&urls, Some(ca.clone().into_bytes()))
        .await
        .expect("TLS with the CA")
        .into_store();
    let b = connect(&urls[3..], Some(ca.clone().into_bytes()))
        .await
        .expect("TLS with the CA")
        .into_store();
    let rec = record("mcp_tls");
    a.sessions.create(&rec, LONG).await.unwrap();
    assert_eq!(b.sessions.load("mcp_tls", LONG).await.unwrap(), Some(rec));
    let mut sub = b.bus.subscribe();
    heard(&a, &mut sub, QUICK).await;

    match connect(&urls, None).await {
        Err(RedisStoreError::Connect { url, reason }) => {
            assert!(!url.contains(PASSWORD), "{url}");
            assert!(!reason.is_empty());
        }
        Err(e) => panic!("without the CA: {e}"),
        Ok(_) => panic!("without the CA: connected"),
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
