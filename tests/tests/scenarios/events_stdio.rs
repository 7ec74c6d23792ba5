//! `events/stream` over stdio (the design's *Push-Based Delivery*: notifications on stdout,
//! demultiplexed by `_meta["io.modelcontextprotocol/subscriptionId"]`, cancelled with
//! `notifications/cancelled`): the fixture as a child process, `--stdio --events-fixture`.
//! Streams are exempt from the request pool: more of them than the pool has workers stay open
//! while calls are answered.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};

use crate::support::bounded;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

async fn send(stdin: &mut ChildStdin, message: Value) {
    stdin.write_all(format!("{message}\n").as_bytes()).await.expect("write");
}

/// The next message on stdout matching `pick`, within 5 s.
async fn next(lines: &mut tokio::io::Lines<BufReader<ChildStdout>>, pick: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let line = lines.next_line().await.expect("read").expect("stdout open");
            let m: Value = serde_json::from_str(&line).expect("a JSON line");
            if pick(&m) {
                return m;
            }
        }
    })
    .await
    .expect("a message in time")
}

#[tokio::test]
async fn streams_multiplex_on_stdout_beside_calls_and_end_when_cancelled() {
    bounded(60, async {
        let mut child = Command::new(mcp_tests::fixture::everything())
            .args(["--stdio", "--events-fixture"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the fixture");
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Twenty streams: more than the request pool's workers.
        for id in 1..=20 {
            let params = json!({"name": "build.finished", "arguments": {}, "cursor": null, "_meta": meta()});
            send(
                &mut stdin,
                json!({"jsonrpc": "2.0", "id": id, "method": "events/stream", "params": params}),
            )
            .await;
        }
        let mut confirmed = std::collections::HashSet::new();
        while confirmed.len() < 20 {
            let active = next(&mut lines, |m| m["method"] == "notifications/events/active").await;
            confirmed.insert(active["params"]["_meta"][SUBSCRIPTION_ID].as_i64().unwrap());
        }
        // A call is answered while they are open.
        let params = json!({"name": "test_tool_fast", "arguments": {}, "_meta": meta()});
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": params}),
        )
        .await;
        let answer = next(&mut lines, |m| m["id"] == 100).await;
        assert_eq!(answer["result"]["content"][0]["text"], "Fast response");
        // An occurrence reaches every stream, each naming its own request.
        let event = next(&mut lines, |m| m["method"] == "notifications/events/event").await;
        assert!((1..=20).contains(&event["params"]["_meta"][SUBSCRIPTION_ID].as_i64().unwrap()));
        // Cancelling stream 1 ends it: no later notification names it.
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let params = json!({"name": "test_tool_fast", "arguments": {}, "_meta": meta()});
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 101, "method": "tools/call", "params": params}),
        )
        .await;
        next(&mut lines, |m| m["id"] == 101).await;
        // The next occurrence (2 s apart) reaches 19 streams, not stream 1.
        let mut named = std::collections::HashSet::new();
        while named.len() < 19 {
            let m = next(&mut lines, |m| m["method"] == "notifications/events/event").await;
            let id = m["params"]["_meta"][SUBSCRIPTION_ID].as_i64().unwrap();
            assert_ne!(id, 1, "a cancelled stream delivers nothing");
            named.insert(id);
        }
        drop(stdin);
        let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("exits")
            .unwrap();
        assert!(status.success(), "{status}");
    })
    .await;
}
