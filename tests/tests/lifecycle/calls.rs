//! Cancellation and deadlines: a cancelled handler sees its token and gets its grace to clean
//! up; the answer to a cancelled legacy POST; a tool's own deadline, inline and as a task.

use std::time::Duration;

use http::StatusCode;
use mcp_server::http::HttpConfig;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::fixture::{bounded, call, cancel, server};
use crate::stdio::Pipe;
use crate::support::Server;

/// Serves the suite's server on `127.0.0.1:0`; the client, and the token that stops it.
async fn serve() -> (Server, crate::fixture::Probe, CancellationToken) {
    let (server, probe) = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let token = CancellationToken::new();
    tokio::spawn(
        server
            .clone()
            .serve_http_on(listener, HttpConfig::default(), token.clone()),
    );
    let client = Server::external(addr, "/mcp", server.engine().clone(), server.registry().clone());
    (client, probe, token)
}

#[tokio::test]
async fn a_cancelled_call_cleans_up_and_its_post_gets_an_empty_sse_stream() {
    bounded(async {
        let (c, mut probe, token) = serve().await;
        let sid = c.initialize().await;
        let running = tokio::spawn(c.post(call(9, "hold", false)).header("mcp-session-id", &sid).send());
        assert!(probe.saw("hold started").await);
        let cancelled = c.post(cancel(9)).header("mcp-session-id", &sid).send().await;
        assert_eq!(cancelled.status, StatusCode::ACCEPTED);
        // The handler saw its token and ran its cleanup (it was not dropped at once).
        assert!(
            probe.saw("hold cleaned up").await,
            "the cleanup after the cancellation ran"
        );
        let resp = running.await.expect("task");
        // What both SDK clients take without an error: SSE that ends before any event (an empty
        // 200 without a content type was "Unexpected content type" to both).
        assert_eq!(resp.status, StatusCode::OK);
        assert_eq!(resp.header("content-type"), Some("text/event-stream"));
        let mut sse = resp.sse();
        assert!(sse.next().await.is_none(), "no event, no JSON-RPC answer");
        token.cancel();
    })
    .await;
}

#[tokio::test]
async fn a_cancelled_streaming_call_just_ends_its_stream() {
    bounded(async {
        let (c, mut probe, token) = serve().await;
        let sid = c.initialize().await;
        let resp = c
            .post(call(10, "hold", true))
            .header("mcp-session-id", &sid)
            .send()
            .await;
        let mut sse = resp.sse();
        let progress = sse.message().await.expect("progress first");
        assert_eq!(progress["method"], "notifications/progress");
        let cancelled = c.post(cancel(10)).header("mcp-session-id", &sid).send().await;
        assert_eq!(cancelled.status, StatusCode::ACCEPTED);
        assert!(probe.saw("hold cleaned up").await);
        let rest = tokio::time::timeout(Duration::from_secs(10), async {
            let mut rest = Vec::new();
            while let Some(e) = sse.next().await {
                rest.push(e.data);
            }
            rest
        })
        .await
        .expect("the stream ended");
        assert!(
            rest.iter().all(|d| d.is_empty()),
            "no reply after the cancellation: {rest:?}"
        );
        token.cancel();
    })
    .await;
}

#[tokio::test]
async fn a_tools_own_timeout_overrides_the_handler_timeout() {
    bounded(async {
        let (server, _probe) = server();
        assert_eq!(server.engine().config().handler_timeout, Duration::from_secs(60));
        let mut pipe = Pipe::start(server.engine().clone(), Default::default(), std::future::pending());
        pipe.initialize("2025-11-25").await;

        // Inline: the 300 ms deadline of the tool, not the server's 60 s.
        pipe.send(&call(1, "sleepy", false)).await;
        let answer = pipe.answer(json!(1)).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "Tool execution timed out");

        // As a 2025-11-25 task: the tool's deadline, not the task's ttl (1 h).
        let task_call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "sleepy_task", "arguments": {}, "task": {}
        }});
        pipe.send(&task_call).await;
        let created = pipe.answer(json!(2)).await;
        let task_id = created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned();
        let result = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task_id}});
        pipe.send(&result).await;
        let outcome = pipe.answer(json!(3)).await;
        assert_eq!(outcome["result"]["isError"], true, "{outcome}");
        assert_eq!(outcome["result"]["content"][0]["text"], "Tool execution timed out");
    })
    .await;
}
