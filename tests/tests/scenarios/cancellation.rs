//! `http-stream-cancellation` (`src/scenarios/server/http-stream-cancellation.ts` at
//! 4d824f7ce2d5e1f87c9e342380a7c551a3d68afa): closing a call's stream cancels it, and the server
//! keeps serving. The fixture's `test_tool_slow` sends no notification; its stream opens after
//! 1 s (`HttpConfig::open_stream_after`), well within the scenario's 3 s.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Fixture, bounded};

/// `test_tool_fast` answers 200 with a result, as JSON or as the first `data:` line of a stream
/// (the scenario parses only that one).
async fn healthy(fixture: &Fixture, id: u64) {
    let mut answer = fixture
        .modern(id, "tools/call", json!({"name": "test_tool_fast", "arguments": {}}))
        .await;
    assert_eq!(answer.status, 200);
    let first: Value = if answer.is_sse() {
        let line = answer.data_line(Duration::from_secs(5)).await.expect("a data line");
        serde_json::from_str(&line).expect("the first data line is the result")
    } else {
        answer.answer(id).await
    };
    assert_eq!(first["result"]["content"][0]["text"], "Fast response", "{first}");
}

#[tokio::test]
async fn closing_the_stream_cancels_and_the_server_stays_up() {
    bounded(60, async {
        let fixture = Fixture::start().await;
        // http-stream-cancel-closes-request: an SSE answer with a `data:` line within 3 s.
        let slow = json!({"name": "test_tool_slow", "arguments": {"durationMs": 10000}});
        let mut answer = fixture.modern(1, "tools/call", slow.clone()).await;
        assert!(answer.is_sse(), "text/event-stream, got {}", answer.content_type());
        assert!(
            answer.data_line(Duration::from_secs(3)).await.is_some(),
            "a data: line within 3 s"
        );
        drop(answer);
        tokio::time::sleep(Duration::from_millis(500)).await;
        healthy(&fixture, 2).await;
        // http-stream-cancel-server-health.
        healthy(&fixture, 3).await;
        // http-stream-cancel-rapid-burst: five slow calls, each dropped once its head arrives.
        for id in 4..9 {
            let answer =
                tokio::time::timeout(Duration::from_secs(3), fixture.modern(id, "tools/call", slow.clone())).await;
            drop(answer);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        healthy(&fixture, 9).await;
    })
    .await;
}
