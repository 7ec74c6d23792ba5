//! `HttpConfig::open_stream_after`: a modern call still silent after the wait answers with a
//! stream at once (an empty event first, keep-alive comments while it runs, its reply last);
//! closing that stream cancels the call; a quick call and a legacy call answer as before.
//!
//! The conformance suite's `http-stream-cancellation` scenario
//! (`src/scenarios/server/http-stream-cancellation.ts` at 4d824f7ce2d5e1f87c9e342380a7c551a3d68afa,
//! modelcontextprotocol/conformance) needs a `data:` line within 3 s of a slow call that sends no
//! notification; the fixture opens its calls' streams after 1 s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::StatusCode;
use mcp_protocol::model::CallToolResult;
use mcp_runtime::Ctx;
use mcp_transport_http::HttpConfig;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use crate::support::{Server, bounded, call, engine, modern_call, raw, tool};

/// A tool that answers when the test opens its gate, and notes whether it was cancelled.
struct Gate {
    open: Arc<Notify>,
    cancelled: Arc<AtomicBool>,
}

/// Serves the test tools and `gate` with `open_stream_after(after)` and keep-alives every 50 ms.
async fn serve(after: Duration) -> (Server, Gate) {
    let (engine, registry) = engine();
    let gate = Gate {
        open: Arc::new(Notify::new()),
        cancelled: Arc::new(AtomicBool::new(false)),
    };
    let (open, cancelled) = (gate.open.clone(), gate.cancelled.clone());
    registry.add_tool(tool(
        "gate",
        json!({"type": "object"}),
        move |_: Map<String, Value>, ctx: Ctx| {
            let (open, cancelled) = (open.clone(), cancelled.clone());
            async move {
                tokio::select! {
                    () = open.notified() => Ok(CallToolResult::text("gate open")),
                    () = ctx.cancellation().cancelled() => {
                        cancelled.store(true, Ordering::SeqCst);
                        Ok(CallToolResult::text("cancelled"))
                    }
                }
            }
        },
    ));
    let mut config = HttpConfig::default().open_stream_after(after);
    config.sse_keep_alive = Duration::from_millis(50);
    (Server::serve_engine(engine, config).await, gate)
}

#[tokio::test]
async fn a_silent_modern_call_answers_with_a_stream_after_the_wait() {
    bounded(async {
        let (s, gate) = serve(Duration::from_millis(100)).await;
        let resp = modern_call(&s, 1, "gate", false).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut sse = resp.sse();
        // The call is still waiting at its gate: the stream opened without it.
        let opening = sse
            .next_within(Duration::from_secs(5))
            .await
            .expect("the opening event");
        assert_eq!((opening.data.as_str(), opening.id, opening.event), ("", None, None));
        assert!(
            sse.keep_alive_within(Duration::from_secs(5)).await,
            "keep-alives while it runs"
        );
        gate.open.notify_one();
        let reply = sse.message().await.expect("the reply");
        assert_eq!(reply["id"], 1, "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "gate open", "{reply}");
        assert!(sse.next().await.is_none(), "the reply ends the stream");
        assert!(!gate.cancelled.load(Ordering::SeqCst));
    })
    .await;
}

#[tokio::test]
async fn closing_an_opened_stream_cancels_the_call() {
    bounded(async {
        let (s, gate) = serve(Duration::from_millis(50)).await;
        let mut tcp = raw(s.addr).await;
        tcp.write_all(&modern_call(&s, 1, "gate", false).raw_bytes())
            .await
            .unwrap();
        // Read until the stream's opening event has come, then hang up.
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !seen.windows(8).any(|w| w == b"data: \n\n") {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before the opening: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&seen).contains("text/event-stream"));
        drop(tcp);
        while !gate.cancelled.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_quick_call_and_a_legacy_call_still_answer_json() {
    bounded(async {
        let (s, gate) = serve(Duration::from_millis(10)).await;
        let quick = modern_call(&s, 1, "echo", false).send().await;
        assert_eq!(quick.header("content-type"), Some("application/json"));
        // A legacy call keeps its own rules: no stream opens while it waits at its gate.
        let sid = s.initialize().await;
        let legacy = s.post(call(2, "gate", None)).header("mcp-session-id", &sid).send();
        let mut legacy = Box::pin(legacy);
        let early = tokio::time::timeout(Duration::from_millis(300), &mut legacy).await;
        assert!(early.is_err(), "a legacy call answered before its reply existed");
        gate.open.notify_one();
        let resp = legacy.await;
        assert_eq!(resp.header("content-type"), Some("application/json"));
        assert_eq!(resp.json().await["result"]["content"][0]["text"], "gate open");
    })
    .await;
}
