//! `per-request-loglevel` (`src/scenarios/server/per-request-loglevel.ts` at
//! 4d824f7ce2d5e1f87c9e342380a7c551a3d68afa): logs are sent at or above the level a request's
//! `_meta` asks for, on that request's own stream only, and an unknown level is -32602.

use serde_json::{Value, json};

use crate::support::{Fixture, bounded};

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// `test_logging_tool` at `level`: the messages of its answer.
async fn logged(fixture: &Fixture, id: u64, level: &str) -> Vec<Value> {
    let params =
        json!({"name": "test_logging_tool", "arguments": {}, "_meta": {"io.modelcontextprotocol/logLevel": level}});
    let answer = fixture.modern(id, "tools/call", params).await;
    assert_eq!(answer.status, 200);
    answer.messages().await
}

fn logs(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["level"].as_str().expect("a level"))
        .collect()
}

#[tokio::test]
async fn logs_follow_the_requested_level_on_their_own_stream() {
    bounded(60, async {
        let fixture = Fixture::start().await;
        // per-request-loglevel-positive-emission: at least one message at "debug".
        let debug = logged(&fixture, 1, "debug").await;
        assert!(!logs(&debug).is_empty(), "{debug:?}");
        assert!(debug.iter().any(|m| m["id"] == 1 && m["result"].is_object()), "{debug:?}");
        // per-request-loglevel-severity-filtering: nothing below "error".
        let error = logged(&fixture, 2, "error").await;
        let index = |l: &str| LEVELS.iter().position(|x| *x == l).expect("a known level");
        assert!(logs(&error).iter().all(|l| index(l) >= index("error")), "{error:?}");
        // per-request-loglevel-invalid-rejection: -32602.
        let banana = json!({"name": "test_logging_tool", "arguments": {}, "_meta": {"io.modelcontextprotocol/logLevel": "banana"}});
        let refused = fixture.modern(3, "tools/call", banana).await.answer(3).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        // per-request-loglevel-request-scoped: the concurrent call without a level hears none.
        let with = json!({"name": "test_logging_tool", "arguments": {}, "_meta": {"io.modelcontextprotocol/logLevel": "debug"}});
        let without = json!({"name": "test_tool_fast", "arguments": {}});
        let (a, b) = tokio::join!(fixture.modern(4, "tools/call", with), fixture.modern(5, "tools/call", without));
        let (a, b) = tokio::join!(a.messages(), b.messages());
        assert!(!logs(&a).is_empty(), "{a:?}");
        assert!(logs(&b).is_empty(), "{b:?}");
    })
    .await;
}
