//! `events-push` (`src/scenarios/server/events/push.ts` at
//! f9eb9a48566726d6e62a84d97135ed79935412cf; the stream client of `stream.ts` at
//! 375f6da28cf5ee6b3bfcbbec46bb99a7427260b4): the fixture started with `--events-fixture`, over
//! the 2026-07-28 stateless wire. The fixture's heartbeat is 10 s, so a 12 s watch sees one
//! (the scenario watches 35 s against the design's 30 s).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Answer, Fixture, bounded};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// An `events/stream` of `name` from the start (with the fixture's key, if it has one).
pub(crate) async fn open(fixture: &Fixture, id: u64, name: &str) -> Answer {
    fixture
        .modern(
            id,
            "events/stream",
            json!({"name": name, "arguments": {}, "cursor": null}),
        )
        .await
}

/// The next message of `stream` that is `method`, within `wait`; every message read is kept in
/// `seen`.
pub(crate) async fn wait_for(
    stream: &mut Answer,
    method: &str,
    wait: Duration,
    seen: &mut Vec<Value>,
) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let m = stream.next_message(left).await?;
        seen.push(m.clone());
        if m["method"] == method {
            return Some(m);
        }
    }
}

/// Whether `stream` confirms with `notifications/events/active` within 3 s.
pub(crate) async fn confirms(stream: &mut Answer) -> bool {
    let mut seen = Vec::new();
    wait_for(stream, "notifications/events/active", Duration::from_secs(3), &mut seen)
        .await
        .is_some()
}

/// The type the quota control names and its stream limit.
pub(crate) async fn quota(fixture: &Fixture, id: u64) -> (String, u64) {
    let quota = fixture
        .modern(
            id,
            "tools/call",
            json!({"name": "events_conformance_quota", "arguments": {}}),
        )
        .await
        .answer(id)
        .await;
    let quota: Value = serde_json::from_str(quota["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    (
        quota["name"].as_str().unwrap().to_owned(),
        quota["max"].as_u64().unwrap(),
    )
}

async fn control(fixture: &Fixture, id: u64, tool: &str, name: &str) {
    let answer = fixture
        .modern(id, "tools/call", json!({"name": tool, "arguments": {"name": name}}))
        .await
        .answer(id)
        .await;
    assert!(
        answer["result"]["isError"] != true && answer.get("error").is_none(),
        "{answer}"
    );
}

#[tokio::test]
async fn a_stream_confirms_delivers_beats_and_carries_only_its_notifications() {
    bounded(90, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        // stream-implemented: an SSE answer.
        let mut stream = open(&fixture, 7, "build.finished").await;
        assert_eq!(stream.status, 200);
        assert!(stream.is_sse(), "{}", stream.content_type());
        let opened = Instant::now();
        let mut seen = Vec::new();
        // stream-active-confirmation within 3 s, with a valid cursor and a boolean truncated.
        let active = wait_for(
            &mut stream,
            "notifications/events/active",
            Duration::from_secs(3),
            &mut seen,
        )
        .await
        .expect("active within 3 s");
        assert!(active["params"]["cursor"].is_string() || active["params"]["cursor"].is_null());
        assert!(active["params"]["truncated"].is_boolean());
        // The two controls that keep the subscription, fired from another connection.
        control(&fixture, 100, "events_conformance_yield_error", "build.finished").await;
        control(&fixture, 101, "events_conformance_yield_gap", "build.finished").await;
        // Watch 12 s.
        while let Some(m) = stream
            .next_message(Duration::from_secs(12).saturating_sub(opened.elapsed()))
            .await
        {
            seen.push(m);
        }
        // stream-subscription-id-meta: every notification names the request (7), not
        // params.requestId.
        for m in &seen {
            assert_eq!(m["params"]["_meta"][SUBSCRIPTION_ID], 7, "{m}");
            // stream-carries-only-event-notifications.
            assert!(
                m["method"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("notifications/events/")),
                "{m}"
            );
        }
        let of = |method: &str| seen.iter().filter(|m| m["method"] == method).collect::<Vec<_>>();
        // stream-event-notification: occurrences, as EventOccurrences.
        let events = of("notifications/events/event");
        assert!(!events.is_empty(), "occurrences within 12 s");
        for e in &events {
            let p = &e["params"];
            assert!(p["eventId"].as_str().is_some_and(|s| !s.is_empty()));
            assert_eq!(p["name"], "build.finished");
            assert!(p["data"].is_object() && p["timestamp"].is_string());
            assert!(p["cursor"].is_string());
        }
        // stream-error-is-recoverable: the error came and the stream went on.
        assert_eq!(of("notifications/events/error").len(), 1, "{seen:?}");
        // stream-gap-resends-active: a second active, truncated.
        let actives = of("notifications/events/active");
        assert!(actives.iter().any(|a| a["params"]["truncated"] == true), "{actives:?}");
        // stream-heartbeat-required, -carries-cursor, -interval, -not-sse-comment.
        let beats = of("notifications/events/heartbeat");
        assert!(!beats.is_empty(), "a heartbeat within 12 s");
        assert!(beats.iter().all(|b| b["params"]["cursor"].is_string()));
        assert_eq!(stream.comments, 0, "no SSE comment on an events stream");
        assert!(of("notifications/events/terminated").is_empty());
    })
    .await;
}

#[tokio::test]
async fn terminate_ends_the_stream_with_the_empty_result() {
    bounded(60, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        // The spare push type (the first, build.finished, stays for the rest of a run).
        let mut stream = open(&fixture, 3, "chat.message").await;
        let mut seen = Vec::new();
        wait_for(
            &mut stream,
            "notifications/events/active",
            Duration::from_secs(3),
            &mut seen,
        )
        .await
        .expect("active");
        control(&fixture, 50, "events_conformance_terminate", "chat.message").await;
        // stream-terminated-ends-subscription: within 5 s, and the stream closes.
        let terminated = wait_for(
            &mut stream,
            "notifications/events/terminated",
            Duration::from_secs(5),
            &mut seen,
        )
        .await
        .expect("terminated within 5 s");
        assert_eq!(terminated["params"]["error"]["code"], -32012);
        assert_eq!(terminated["params"]["_meta"][SUBSCRIPTION_ID], 3);
        // stream-final-result-shape, -timing: a final frame whose result has no key but _meta
        // (and resultType).
        let last = stream
            .next_message(Duration::from_secs(2))
            .await
            .expect("the final result");
        assert_eq!(last["id"], 3);
        let keys: Vec<&String> = last["result"].as_object().expect("a result").keys().collect();
        assert!(keys.iter().all(|k| *k == "_meta" || *k == "resultType"), "{last}");
        assert!(
            stream.next_message(Duration::from_secs(2)).await.is_none(),
            "the stream closed"
        );
    })
    .await;
}

#[tokio::test]
async fn streams_are_exempt_from_the_request_cap_and_limited_per_type() {
    bounded(60, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        // stream-exempt-from-concurrency-cap: three at once all confirm.
        let mut streams = Vec::new();
        for id in 1..=3 {
            streams.push(open(&fixture, id, "build.finished").await);
        }
        for s in &mut streams {
            assert!(confirms(s).await, "each stream confirms");
        }
        // error-resource-exhausted: the quota control names a type and its limit; one stream
        // past it is refused with -32013 and a string data.limit, before any stream opens.
        let (name, max) = quota(&fixture, 9).await;
        let mut held = Vec::new();
        for id in 0..max {
            let mut s = open(&fixture, 20 + id, &name).await;
            assert!(confirms(&mut s).await, "within the limit");
            held.push(s);
        }
        let refused = open(&fixture, 30, &name).await;
        assert!(!refused.is_sse());
        let e = refused.answer(30).await;
        assert_eq!(e["error"]["code"], -32013, "{e}");
        assert!(e["error"]["data"]["limit"].is_string());
        // stream-cancel-stops-delivery (and releases): closing one makes room for another.
        drop(held.pop());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut again = open(&fixture, 31, &name).await;
        assert!(confirms(&mut again).await, "a closed stream gave its place back");
        // While every stream is held, calls are served.
        let fast = fixture
            .modern(40, "tools/call", json!({"name": "test_tool_fast", "arguments": {}}))
            .await
            .answer(40)
            .await;
        assert_eq!(fast["result"]["content"][0]["text"], "Fast response");
    })
    .await;
}

#[tokio::test]
async fn an_invalid_subscription_is_an_error_and_no_stream() {
    bounded(30, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        // stream-error-before-open: an unknown type, at once, as JSON.
        let answer = open(&fixture, 1, "conformance.nonexistent.3").await;
        assert!(!answer.is_sse(), "no stream for an invalid subscription");
        let e = answer.answer(1).await;
        assert_eq!(e["error"]["code"], -32011);
        // A type without push (none in the fixture is push-less but build.finished's
        // arguments can be wrong): -32602, no stream.
        let answer = fixture
            .modern(
                2,
                "events/stream",
                json!({"name": "build.finished", "arguments": {"branch": false}, "cursor": null}),
            )
            .await;
        assert!(!answer.is_sse());
        assert_eq!(answer.answer(2).await["error"]["code"], -32602);
    })
    .await;
}
