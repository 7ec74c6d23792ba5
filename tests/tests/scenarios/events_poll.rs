//! `events-discovery` (`src/scenarios/server/events/discovery.ts` at
//! 51f85d7e1aafaa4ec337a9e92bb49f82017349e9) and `events-poll`
//! (`src/scenarios/server/events/poll.ts` at 5aceffa371fc1d84d5aa3f60a3df362ee11da34e), with the
//! helpers of `helpers.ts` at 375f6da28cf5ee6b3bfcbbec46bb99a7427260b4: the fixture started
//! with `--events-fixture`, over the 2026-07-28 stateless wire the suite runs them on.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fixture, bounded};

const EXT: &str = "io.modelcontextprotocol/events";

/// The result of a request, or its error (the answer must be one of them).
async fn call(fixture: &Fixture, id: u64, method: &str, params: Value) -> Result<Value, Value> {
    let answer = fixture.modern(id, method, params).await.answer(id).await;
    match (answer.get("result"), answer.get("error")) {
        (Some(r), None) => Ok(r.clone()),
        (None, Some(e)) => Err(e.clone()),
        _ => panic!("neither a result nor an error: {answer}"),
    }
}

fn is_cursor(v: &Value) -> bool {
    v.is_null() || v.as_str().is_some_and(|s| !s.is_empty())
}

/// `YYYY-MM-DDT…` (the scenario's `isIso8601`).
fn is_iso8601(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        let b = s.as_bytes();
        b.len() > 11 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && s[..4].bytes().all(|c| c.is_ascii_digit())
    })
}

fn in_server_range(e: &Value) -> bool {
    e["code"].as_i64().is_some_and(|c| (-32099..=-32000).contains(&c))
}

#[tokio::test]
async fn discovery_declares_and_lists_every_type_in_pages() {
    bounded(60, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        // capability-events-object: the extension is declared, as an object.
        let discovered = call(&fixture, 1, "server/discover", json!({})).await.expect("discover");
        assert!(
            discovered["capabilities"]["extensions"][EXT].is_object(),
            "{discovered}"
        );
        // list-implemented, list-pagination: pages follow nextCursor, which is a non-empty
        // string, and never repeats.
        let mut cursor: Option<String> = None;
        let (mut names, mut cursors, mut pages) = (Vec::new(), HashSet::new(), 0);
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = call(&fixture, 10 + pages, "events/list", params)
                .await
                .expect("events/list");
            pages += 1;
            for d in page["events"].as_array().expect("events is an array") {
                // descriptor-shape rows: name, description, delivery, both schemas.
                let name = d["name"].as_str().expect("a name");
                assert!(!name.is_empty());
                assert!(d["description"].as_str().is_some_and(|s| !s.is_empty()), "{d}");
                let delivery: Vec<&str> = d["delivery"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m.as_str().unwrap())
                    .collect();
                assert!(!delivery.is_empty());
                assert_eq!(
                    delivery.iter().collect::<HashSet<_>>().len(),
                    delivery.len(),
                    "no repeats"
                );
                assert!(delivery.iter().all(|m| ["poll", "push", "webhook"].contains(m)));
                assert!(d["inputSchema"].is_object() && d["payloadSchema"].is_object(), "{d}");
                names.push(name.to_owned());
            }
            match page.get("nextCursor") {
                Some(Value::String(c)) => {
                    assert!(!c.is_empty() && cursors.insert(c.clone()), "a fresh, non-empty cursor");
                    cursor = Some(c.clone());
                }
                None => break,
                Some(other) => panic!("nextCursor is {other}"),
            }
        }
        assert!(pages > 1, "the fixture's catalog is paginated");
        assert_eq!(names, ["build.finished", "chat.message", "quota.probe"]);
        // error-not-found, error-server-range.
        let e = call(
            &fixture,
            30,
            "events/poll",
            json!({"name": "conformance.nonexistent.1", "arguments": {}, "cursor": null}),
        )
        .await
        .unwrap_err();
        assert_eq!(e["code"], -32011);
        assert!(in_server_range(&e));
    })
    .await;
}

#[tokio::test]
async fn poll_bootstraps_advances_and_delivers_occurrences() {
    bounded(60, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        let name = "build.finished";
        // poll-implemented, poll-bootstraps-subscription, cursor-null-starts-from-now.
        let first = call(
            &fixture,
            1,
            "events/poll",
            json!({"name": name, "arguments": {}, "cursor": null}),
        )
        .await
        .expect("bootstrap");
        assert_eq!(first["events"], json!([]), "a null cursor replays nothing");
        assert!(is_cursor(&first["cursor"]), "cursor-opaque");
        assert!(first["nextPollMs"].as_f64().is_some_and(f64::is_finite), "nextPollMs");
        assert!(first.get("hasMore").is_none_or(Value::is_boolean));
        // poll-stateless-request, cursor-advances-when-quiet, cursor-consistency.
        let cursor = first["cursor"].as_str().expect("a string cursor").to_owned();
        let second = call(
            &fixture,
            2,
            "events/poll",
            json!({"name": name, "arguments": {}, "cursor": cursor}),
        )
        .await
        .expect("second poll");
        assert!(second["cursor"].is_string(), "the cursor stays a string");
        // cursor-absent-equals-null.
        call(&fixture, 3, "events/poll", json!({"name": name, "arguments": {}}))
            .await
            .expect("no cursor");
        // poll-max-events-cap.
        let capped = call(
            &fixture,
            4,
            "events/poll",
            json!({"name": name, "arguments": {}, "cursor": cursor, "maxEvents": 1}),
        )
        .await
        .expect("maxEvents");
        assert!(capped["events"].as_array().unwrap().len() <= 1);
        // max-age-ms-floor, truncated-poll-never-an-error, max-age-ms-ignored-when-cursor-null.
        let aged = call(
            &fixture,
            5,
            "events/poll",
            json!({"name": name, "arguments": {}, "cursor": cursor, "maxAgeMs": 300000}),
        )
        .await
        .expect("maxAgeMs");
        assert!(aged["truncated"].is_boolean());
        if aged["truncated"] == true {
            assert!(aged["cursor"].is_string(), "truncated-returns-fresh-cursor");
        }
        let fresh = call(
            &fixture,
            6,
            "events/poll",
            json!({"name": name, "arguments": {}, "cursor": null, "maxAgeMs": 300000}),
        )
        .await
        .expect("null cursor with maxAgeMs");
        assert_eq!(fresh["events"], json!([]));
        // The occurrence rows: poll forward from the bootstrap cursor for up to 6 s, waiting
        // nextPollMs clamped to 250..2000 ms.
        let mut cursor = first["cursor"].clone();
        let mut seen = Vec::new();
        let until = Instant::now() + Duration::from_secs(6);
        let mut id = 10;
        while seen.is_empty() && Instant::now() < until {
            id += 1;
            let r = call(
                &fixture,
                id,
                "events/poll",
                json!({"name": name, "arguments": {}, "cursor": cursor}),
            )
            .await
            .expect("poll");
            seen = r["events"].as_array().unwrap().clone();
            cursor = r["cursor"].clone();
            let wait = r["nextPollMs"].as_u64().unwrap_or(1000).clamp(250, 2000);
            if seen.is_empty() {
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
        }
        assert!(!seen.is_empty(), "an occurrence within 6 s");
        let mut ids = HashSet::new();
        for o in &seen {
            assert!(o["eventId"].as_str().is_some_and(|s| !s.is_empty()), "{o}");
            assert!(ids.insert(o["eventId"].clone()), "distinct eventIds in a batch");
            assert_eq!(o["name"], name);
            assert!(is_iso8601(&o["timestamp"]), "{o}");
            assert!(o["data"].is_object());
            assert!(o.get("cursor").is_none_or(is_cursor));
            assert!(o.get("_meta").is_none_or(Value::is_object));
        }
    })
    .await;
}

#[tokio::test]
async fn a_long_poll_answers_when_an_occurrence_comes_and_never_after_its_timeout() {
    bounded(60, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        let first = call(&fixture, 1, "events/poll", json!({"name": "build.finished", "cursor": null})).await.unwrap();
        // The fixture emits build.finished every 2 s: a 10 s long poll answers with it well
        // before its timeout.
        let started = Instant::now();
        let r = call(&fixture, 2, "events/poll", json!({"name": "build.finished", "cursor": first["cursor"], "timeoutMs": 10000}))
            .await
            .unwrap();
        assert!(!r["events"].as_array().unwrap().is_empty(), "{r}");
        assert!(started.elapsed() < Duration::from_secs(5), "answered as soon as one came");
        // quota.probe is never emitted: the poll… is refused (push only). A type with poll and
        // nothing to say answers empty at its timeout: build.finished filtered to another branch.
        let started = Instant::now();
        let r = call(
            &fixture,
            3,
            "events/poll",
            json!({"name": "build.finished", "arguments": {"branch": "nowhere"}, "cursor": r["cursor"], "timeoutMs": 1500}),
        )
        .await
        .unwrap();
        assert_eq!(r["events"], json!([]));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(1400) && waited < Duration::from_secs(5), "{waited:?}");
    })
    .await;
}

#[tokio::test]
async fn poll_errors_are_json_rpc_errors_with_their_codes() {
    bounded(60, async {
        let fixture = Fixture::events(&["--events-fixture"]).await;
        // poll-errors-are-jsonrpc, removal-poll-not-found.
        let e = call(
            &fixture,
            1,
            "events/poll",
            json!({"name": "conformance.nonexistent.2", "arguments": {}, "cursor": null}),
        )
        .await
        .unwrap_err();
        assert_eq!(e["code"], -32011);
        assert_eq!(e["data"]["kind"], "event");
        // poll-one-subscription-per-request: no name.
        let e = call(&fixture, 2, "events/poll", json!({"arguments": {}, "cursor": null}))
            .await
            .unwrap_err();
        assert_eq!(e["code"], -32602);
        // poll-invalid-arguments: the first typed property with the wrong JSON type.
        let e = call(
            &fixture,
            3,
            "events/poll",
            json!({"name": "build.finished", "arguments": {"branch": 42}, "cursor": null}),
        )
        .await
        .unwrap_err();
        assert_eq!(e["code"], -32602);
        // poll-mode-unsupported: a type whose delivery lacks poll.
        let e = call(
            &fixture,
            4,
            "events/poll",
            json!({"name": "chat.message", "arguments": {}, "cursor": null}),
        )
        .await
        .unwrap_err();
        assert_eq!(e["code"], -32014);
        assert_eq!(e["data"], json!({"feature": "deliveryMode", "value": "poll"}));
        assert!(in_server_range(&e));
        // A cursor that is not one is answered from now, truncated: never an error.
        let r = call(
            &fixture,
            5,
            "events/poll",
            json!({"name": "build.finished", "cursor": "garbage"}),
        )
        .await
        .unwrap();
        assert_eq!(r["truncated"], true);
        assert!(r["cursor"].is_string());
        // Nothing else changed: the server still answers.
        call(&fixture, 6, "events/list", json!({}))
            .await
            .expect("still serving");
    })
    .await;
}
