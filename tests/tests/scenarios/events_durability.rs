//! The TTL durability rows of `events-webhook` (`ttl-long-grant-retained`,
//! `ttl-no-expiry-persisted`, `ttl-no-expiry-gc-terminated`), which the stored scenario
//! (`webhook.ts` at b7fcf3f0d5fff919151f8eb8210eaf1887076370) reports untestable and the suite's
//! `main` grades through the restart, generation and subscription-state controls (`helpers.ts`:
//! "Rebuilds the server and its subscription registry over the same store, as a process restart
//! would. Every session ends, so a scenario firing it must reconnect and must fire it last";
//! the restart control "answers the generation it is moving to"). The fixture grants `ttlMs:
//! null` no expiry and drops such a subscription after two seconds of failing deliveries.

use std::time::{Duration, Instant};

use mcp_protocol::events::cursor::Cursor;
use serde_json::{Value, json};

use super::events_webhook::{KEY, Receiver, call, control, secret, subscribe_params};
use crate::support::{Fixture, bounded};

/// A subscription to `build.finished` at `url` with the suggestion `ttl`.
fn with_ttl(url: &str, ttl: Value) -> Value {
    let mut p = subscribe_params(url, &secret(7, 32));
    p["ttlMs"] = ttl;
    p
}

/// Asks the state control until it answers `want` (at most `within`); the last answer.
async fn state_becomes(fixture: &Fixture, id: &str, want: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    let mut n = 1000;
    loop {
        n += 1;
        let state = control(fixture, n, "events_conformance_subscription_state", json!({"id": id})).await;
        if state == want || Instant::now() >= deadline {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn grants_and_the_log_outlive_a_restart_and_its_sessions_do_not() {
    bounded(60, async {
        let fixture = Fixture::start_with(&["--events-fixture", "--api-key", KEY]).await;
        // ttl-null-only-when-requested: null asked, null granted (no expiry).
        let none = call(
            &fixture,
            1,
            "events/subscribe",
            with_ttl("https://conformance.invalid/mcp-events/ttl-null", Value::Null),
            true,
        )
        .await
        .expect("a grant without expiry");
        assert_eq!(none["refreshBefore"], Value::Null, "{none}");
        let long = call(
            &fixture,
            2,
            "events/subscribe",
            with_ttl("https://conformance.invalid/mcp-events/ttl-long", json!(86_400_000)),
            true,
        )
        .await
        .expect("a long grant");
        assert!(long["refreshBefore"].is_string(), "{long}");
        let (none, long) = (none["id"].as_str().unwrap(), long["id"].as_str().unwrap());
        // A cursor from before, and a legacy session.
        let poll = |cursor: Value| json!({"name": "build.finished", "arguments": {}, "cursor": cursor, "timeoutMs": 0});
        let before = call(&fixture, 3, "events/poll", poll(Value::Null), true)
            .await
            .expect("poll");
        let init = json!({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "durability", "version": "1"}}});
        let answer = fixture
            .post(&init, &[("mcp-protocol-version", "2025-11-25"), ("x-api-key", KEY)])
            .await;
        let sid = answer.header("mcp-session-id").expect("a session").to_owned();
        let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
        let headers = [
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-session-id", sid.as_str()),
            ("x-api-key", KEY),
        ];
        assert_eq!(fixture.post(&ping, &headers).await.status, 200);

        // The restart answers the generation it moves to; the generation control says when it
        // landed (requests meanwhile wait on the socket's backlog).
        assert_eq!(control(&fixture, 6, "events_conformance_restart", json!({})).await, "2");
        let deadline = Instant::now() + Duration::from_secs(15);
        while control(&fixture, 7, "events_conformance_generation", json!({})).await != "2" {
            assert!(Instant::now() < deadline, "the restart never landed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Every session ended with its server.
        assert_eq!(
            fixture.post(&ping, &headers).await.status,
            404,
            "the old session is gone"
        );
        // ttl-no-expiry-persisted, ttl-long-grant-retained; an id never granted is absent.
        for id in [none, long] {
            let state = control(&fixture, 8, "events_conformance_subscription_state", json!({"id": id})).await;
            assert_eq!(state, "active", "{id}");
        }
        let unknown = json!({"id": "sub_never_existed"});
        assert_eq!(
            control(&fixture, 9, "events_conformance_subscription_state", unknown).await,
            "absent"
        );
        // The log outlived it too: the old cursor resumes without a gap.
        let after = call(&fixture, 10, "events/poll", poll(before["cursor"].clone()), true)
            .await
            .expect("poll after");
        assert_ne!(after["truncated"], true, "{after}");
        // A refresh of the key after the restart needs no new handshake and keeps the id.
        let again = call(
            &fixture,
            11,
            "events/subscribe",
            with_ttl("https://conformance.invalid/mcp-events/ttl-long", json!(86_400_000)),
            true,
        )
        .await
        .expect("refreshed");
        assert_eq!(again["id"], long);
    })
    .await;
}

#[tokio::test]
async fn a_subscription_without_expiry_that_keeps_failing_is_dropped() {
    bounded(60, async {
        let fixture = Fixture::start_with(&["--events-fixture", "--api-key", KEY]).await;
        let (receiver, addr) = Receiver::start().await;
        let origin = format!("http://{addr}");
        control(
            &fixture,
            1,
            "events_conformance_allow_callback_origin",
            json!({"origin": origin}),
        )
        .await;
        let subscribe = |n: u64, path: &'static str, ttl: Value| {
            let url = format!("{origin}{path}");
            let fixture = &fixture;
            async move {
                let r = call(fixture, n, "events/subscribe", with_ttl(&url, ttl), true)
                    .await
                    .expect("subscribed");
                r["id"].as_str().expect("an id").to_owned()
            }
        };
        let down = subscribe(2, "/down", Value::Null).await;
        let up = subscribe(3, "/up", Value::Null).await;
        let finite = subscribe(4, "/down-finite", json!(3_600_000)).await;
        // ttl-no-expiry-gc-terminated: every delivery to /down fails (503); two seconds after
        // the first failure, the subscription is gone (build.finished comes every two seconds).
        assert_eq!(
            state_becomes(&fixture, &down, "absent", Duration::from_secs(20)).await,
            "absent"
        );
        let attempts = receiver.hits("/down").len();
        assert!(attempts >= 2, "it was tried: {attempts}");
        // Only the failing grant without expiry goes: the healthy one is delivered to and stays,
        // and a finite grant failing alike waits for its own end.
        assert_eq!(
            control(&fixture, 5, "events_conformance_subscription_state", json!({"id": up})).await,
            "active"
        );
        assert!(!receiver.hits("/up").is_empty(), "the healthy one is delivered to");
        assert_eq!(
            control(
                &fixture,
                6,
                "events_conformance_subscription_state",
                json!({"id": finite})
            )
            .await,
            "active"
        );
        // Nothing more reaches /down once it is dropped.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let later = receiver.hits("/down").len();
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(receiver.hits("/down").len(), later, "no delivery after the drop");
    })
    .await;
}

#[tokio::test]
async fn deliveries_stop_with_the_old_server_and_resume_with_the_new_one() {
    bounded(90, async {
        let fixture = Fixture::start_with(&["--events-fixture", "--api-key", KEY]).await;
        let (receiver, addr) = Receiver::start().await;
        let origin = json!({"origin": format!("http://{addr}")});
        control(&fixture, 1, "events_conformance_allow_callback_origin", origin.clone()).await;
        let url = format!("http://{addr}/up");
        call(&fixture, 2, "events/subscribe", with_ttl(&url, json!(3_600_000)), true)
            .await
            .expect("subscribed");
        let events = |r: &Receiver| r.hits("/up").into_iter().filter(|h| h.json()["type"].is_null()).count();
        let deadline = Instant::now() + Duration::from_secs(15);
        while events(&receiver) == 0 {
            assert!(Instant::now() < deadline, "nothing delivered");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(control(&fixture, 3, "events_conformance_restart", json!({})).await, "2");
        while control(&fixture, 4, "events_conformance_generation", json!({})).await != "2" {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The new server has not been told the receiver's origin (an operator's list is the
        // process's): nothing reaches it, so nothing of the old server delivers any more.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let stopped = events(&receiver);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(
            events(&receiver),
            stopped,
            "the old server's deliveries stopped with it"
        );
        // Told again, the new server adopts the subscription (its lease was given up).
        control(&fixture, 5, "events_conformance_allow_callback_origin", origin).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while events(&receiver) <= stopped {
            assert!(Instant::now() < deadline, "the new server never delivered");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

/// The log positions of the occurrences `receiver` got on `path`, as their cursors give them,
/// each `webhook-id` once (a delivery in flight when its server stopped may be made again under
/// its id, which receivers deduplicate on, as Standard Webhooks asks).
fn positions(receiver: &Receiver, path: &str) -> Vec<u64> {
    let mut seen = std::collections::HashSet::new();
    receiver
        .hits(path)
        .iter()
        .filter(|h| seen.insert(h.header("webhook-id").to_owned()))
        .map(|h| h.json())
        .filter(|b| b["type"].is_null())
        .map(|b| {
            let cursor = b["cursor"].as_str().and_then(Cursor::decode).expect("a cursor");
            cursor.position.lo
        })
        .collect()
}

#[tokio::test]
async fn deliveries_go_on_across_a_restart_with_nothing_lost_or_repeated() {
    bounded(90, async {
        let (receiver, addr) = Receiver::start().await;
        let origin = format!("http://{addr}");
        let fixture =
            Fixture::start_with(&["--events-fixture", "--api-key", KEY, "--events-permit-origin", &origin]).await;
        let url = format!("{origin}/up");
        call(&fixture, 1, "events/subscribe", with_ttl(&url, json!(3_600_000)), true)
            .await
            .expect("subscribed");
        let deadline = Instant::now() + Duration::from_secs(15);
        while positions(&receiver, "/up").len() < 2 {
            assert!(Instant::now() < deadline, "nothing delivered");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(control(&fixture, 2, "events_conformance_restart", json!({})).await, "2");
        let before = positions(&receiver, "/up").len();
        // The next server adopts the subscription at its first look and goes on from the saved
        // watermark: what was emitted meanwhile arrives, once.
        let deadline = Instant::now() + Duration::from_secs(25);
        while positions(&receiver, "/up").len() < before + 3 {
            assert!(Instant::now() < deadline, "the next server never delivered");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            control(&fixture, 3, "events_conformance_generation", json!({})).await,
            "2"
        );
        let got = positions(&receiver, "/up");
        assert!(
            got.windows(2).all(|w| w[1] == w[0] + 1),
            "each occurrence once, in order, none lost: {got:?}"
        );
    })
    .await;
}
