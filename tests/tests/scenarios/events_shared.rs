//! Events shared by every instance (issue #42, item 1): two `everything --events-fixture`
//! processes on one Redis under one prefix. A cursor one instance handed out resumes on the
//! other, and a long poll there answers with what either emitted; a webhook subscription made
//! on the first is delivered by one instance at a time (never twice per message while both
//! live), and when the instance delivering it is killed, the other takes over from the saved
//! watermark within the lease (15 s) and the sweep (every 5 s), losing no occurrence. A type's
//! stream limit holds across the two. A Redis outage pauses deliveries and loses nothing the log
//! took.

use std::time::{Duration, Instant};

use mcp_protocol::events::cursor::Cursor;
use mcp_protocol::events::webhook::Secret;
use mcp_store_redis::testing::{TestRedis, unique_prefix};
use serde_json::{Value, json};

use crate::events_push::{confirms, open, quota};
use crate::events_webhook::{KEY, Receiver, call, control, secret};
use crate::support::{Fixture, bounded};

/// An instance; every request of its fixture carries the API key.
async fn instance(redis: &TestRedis, prefix: &str) -> Fixture {
    let mut fixture = Fixture::start_with(&[
        "--events-fixture",
        "--api-key",
        KEY,
        "--redis",
        redis.url(),
        "--redis-prefix",
        prefix,
    ])
    .await;
    fixture.key = Some(KEY.to_owned());
    fixture
}

/// The occurrence positions delivered to `path` (their cursors'), in delivery order, and their
/// message ids.
fn delivered(receiver: &Receiver, path: &str) -> Vec<(u64, String)> {
    receiver
        .hits(path)
        .iter()
        .filter(|h| h.json().get("type").is_none())
        .map(|h| {
            let body = h.json();
            let cursor = body["cursor"].as_str().and_then(Cursor::decode).expect("a cursor");
            (cursor.position.lo, h.header("webhook-id").to_owned())
        })
        .collect()
}

/// Waits (at most `within`) until `path` got more than `n` occurrences.
async fn more_than(receiver: &Receiver, path: &str, n: usize, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if delivered(receiver, path).len() > n {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

#[tokio::test]
async fn a_cursor_resumes_on_another_instance() {
    bounded(60, async {
        let redis = TestRedis::new();
        let prefix = unique_prefix("events-shared-poll");
        let a = instance(&redis, &prefix).await;
        let b = instance(&redis, &prefix).await;
        let poll =
            |cursor: Value| json!({"name": "build.finished", "arguments": {}, "cursor": cursor, "timeoutMs": 5000});
        let first = call(&a, 1, "events/poll", poll(Value::Null), true)
            .await
            .expect("poll a");
        let cursor = first["cursor"].clone();
        assert!(cursor.is_string(), "{first}");
        // A long poll on the other instance, from the first one's cursor: answered with what
        // either emitted since, nothing lost.
        let next = call(&b, 2, "events/poll", poll(cursor), true).await.expect("poll b");
        assert_ne!(next["truncated"], true, "{next}");
        let events = next["events"].as_array().expect("events");
        assert!(!events.is_empty(), "{next}");
        // And back: the second instance's cursor resumes on the first.
        let again = call(&a, 3, "events/poll", poll(next["cursor"].clone()), true)
            .await
            .expect("poll a again");
        assert_ne!(again["truncated"], true, "{again}");
    })
    .await;
}

#[tokio::test]
async fn the_other_instance_takes_a_killed_ones_deliveries_over() {
    bounded(120, async {
        let redis = TestRedis::new();
        let prefix = unique_prefix("events-shared-hook");
        let (receiver, addr) = Receiver::start().await;
        let base = format!("http://{addr}");
        // The first instance alone: it takes the subscription's lease when it is made.
        let a = instance(&redis, &prefix).await;
        control(
            &a,
            1,
            "events_conformance_allow_callback_origin",
            json!({"origin": base}),
        )
        .await;
        let good = secret(9, 32);
        let params = json!({"name": "build.finished", "arguments": {},
                            "delivery": {"mode": "webhook", "url": format!("{base}/hook"), "secret": good},
                            "cursor": null, "ttlMs": 3600000});
        let sub = call(&a, 2, "events/subscribe", params, true).await.expect("subscribe");
        assert!(more_than(&receiver, "/hook", 0, Duration::from_secs(10)).await);
        // The second joins: it sees the subscription (its sweeper) but does not deliver it.
        let b = instance(&redis, &prefix).await;
        control(
            &b,
            1,
            "events_conformance_allow_callback_origin",
            json!({"origin": base}),
        )
        .await;
        let state = control(&b, 2, "events_conformance_subscription_state", json!({"id": sub["id"]})).await;
        assert_eq!(state, "active");
        tokio::time::sleep(Duration::from_secs(7)).await;
        let both = delivered(&receiver, "/hook");
        let mut ids: Vec<&String> = both.iter().map(|(_, id)| id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(
            ids.len(),
            both.len(),
            "one delivery per message while both live: {both:?}"
        );

        // The delivering instance dies (no chance to hand anything over).
        let before = both.len();
        let killed_at = Instant::now();
        drop(a);
        assert!(
            more_than(&receiver, "/hook", before, Duration::from_secs(40)).await,
            "the other instance took over"
        );
        let took = killed_at.elapsed();
        assert!(took < Duration::from_secs(35), "taken over after {took:?}");
        tokio::time::sleep(Duration::from_secs(3)).await;

        // From the watermark: every position of the log from the first delivered on, in order;
        // a delivery cut short by the kill may be made again (at least once), under its id.
        let all = delivered(&receiver, "/hook");
        let mut positions: Vec<u64> = all.iter().map(|(p, _)| *p).collect();
        assert!(positions.windows(2).all(|w| w[0] <= w[1]), "in order: {positions:?}");
        positions.dedup();
        let (first, last) = (positions[0], positions[positions.len() - 1]);
        assert_eq!(positions, (first..=last).collect::<Vec<_>>(), "no occurrence lost");
        let repeated = all.len() - positions.len();
        assert!(repeated <= 1, "at most the delivery in flight again: {all:?}");
        // Still signed with the subscription's secret, whoever delivers.
        let key = Secret::parse(Some(&good)).unwrap();
        for hit in receiver.hits("/hook") {
            let ts: u64 = hit.header("webhook-timestamp").parse().expect("a timestamp");
            assert!(key.verifies(hit.header("webhook-signature"), hit.header("webhook-id"), ts, &hit.body));
        }
        drop(b);
    })
    .await;
}

#[tokio::test]
async fn a_types_stream_limit_holds_across_the_instances() {
    bounded(60, async {
        // error-resource-exhausted behind a balancer: the quota control's limit holds for the
        // logical server, wherever each stream landed.
        let redis = TestRedis::new();
        let prefix = unique_prefix("events-shared-quota");
        let a = instance(&redis, &prefix).await;
        let b = instance(&redis, &prefix).await;
        let (name, max) = quota(&a, 1).await;
        assert_eq!(max, 2);
        let mut held = Vec::new();
        for (id, fixture) in [(10, &a), (11, &b)] {
            let mut s = open(fixture, id, &name).await;
            assert!(confirms(&mut s).await, "within the limit (status {})", s.status);
            held.push(s);
        }
        for (id, fixture) in [(12, &a), (13, &b)] {
            let refused = open(fixture, id, &name).await;
            assert!(!refused.is_sse());
            let e = refused.answer(id).await;
            assert_eq!(e["error"]["code"], -32013, "one per instance, two in all: {e}");
        }
        // A stream closed on one instance makes room on the other.
        drop(held.remove(0));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut again = open(&b, 14, &name).await;
        assert!(confirms(&mut again).await, "a closed stream gave its place back");
    })
    .await;
}

/// The positions of the occurrences `receiver` got on `path`, each `webhook-id` once (a delivery
/// cut short by an outage may be made again under its id).
fn positions_once(receiver: &Receiver, path: &str) -> Vec<u64> {
    let mut seen = std::collections::HashSet::new();
    delivered(receiver, path)
        .into_iter()
        .filter(|(_, id)| seen.insert(id.clone()))
        .map(|(position, _)| position)
        .collect()
}

#[tokio::test]
async fn a_store_outage_pauses_deliveries_and_loses_nothing_acknowledged() {
    bounded(120, async {
        // Redis goes away mid-run and comes back with its data: the instance's deliveries pause
        // (nothing can be read or leased), every occurrence the log took before or after is
        // delivered once in order, and the subscription is still there.
        let mut redis = mcp_store_redis::testing::RedisServer::persistent();
        let (receiver, addr) = Receiver::start().await;
        let origin = format!("http://{addr}");
        let prefix = unique_prefix("events-outage");
        let fixture = Fixture::start_with(&[
            "--events-fixture",
            "--api-key",
            KEY,
            "--redis",
            &redis.url(),
            "--redis-prefix",
            &prefix,
            "--events-permit-origin",
            &origin,
        ])
        .await;
        let params = json!({"name": "build.finished", "arguments": {},
                            "delivery": {"mode": "webhook", "url": format!("{origin}/hook"), "secret": secret(9, 32)},
                            "cursor": null, "ttlMs": 3600000});
        let sub = call(&fixture, 1, "events/subscribe", params, true)
            .await
            .expect("subscribe");
        assert!(more_than(&receiver, "/hook", 1, Duration::from_secs(10)).await);

        redis.stop();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let during = positions_once(&receiver, "/hook").len();
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(
            positions_once(&receiver, "/hook").len(),
            during,
            "nothing is delivered while the log cannot be read"
        );
        redis.restart();
        assert!(
            more_than(&receiver, "/hook", during + 1, Duration::from_secs(40)).await,
            "deliveries resume once the store is back"
        );
        let state = control(
            &fixture,
            2,
            "events_conformance_subscription_state",
            json!({"id": sub["id"]}),
        )
        .await;
        assert_eq!(state, "active");
        let got = positions_once(&receiver, "/hook");
        assert!(
            got.windows(2).all(|w| w[1] == w[0] + 1),
            "every occurrence the log took, once, in order: {got:?}"
        );
    })
    .await;
}
