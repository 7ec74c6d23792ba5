//! The 2024-11-05 HTTP+SSE pair: the endpoint event, messages answered 202 with the replies on
//! the stream, the session bound to the principal, and the session ending with the stream.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_runtime::Ctx;
use mcp_transport_http::HttpConfig;
use serde_json::{Map, Value, json};

use crate::support::{NamedUsers, Req, Server, Sse, bounded, call, init_body, list, tool};

fn config() -> HttpConfig {
    HttpConfig::default().sse_pair("/sse", "/messages")
}

/// Opens the stream; returns it and the message URL from the endpoint event.
pub(crate) async fn open(s: &Server, auth: Option<&str>) -> (Sse, String) {
    let mut get = s.req(Method::GET).at("/sse").header("accept", "text/event-stream");
    if let Some(a) = auth {
        get = get.header("authorization", a);
    }
    let resp = get.send().await;
    assert_eq!(resp.status, StatusCode::OK);
    let mut sse = resp.sse();
    let endpoint = sse.next().await.expect("endpoint event");
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(
        endpoint.data.starts_with("/messages?sessionId=mcp_"),
        "{}",
        endpoint.data
    );
    (sse, endpoint.data)
}

pub(crate) fn message(s: &Server, url: &str, body: Value) -> Req {
    s.post(body).at(url).header("accept", "application/json")
}

/// The next `event: message` on the stream, as JSON.
async fn next(sse: &mut Sse) -> Value {
    let e = sse.next().await.expect("message event");
    assert_eq!(e.event.as_deref(), Some("message"));
    e.json()
}

#[tokio::test]
async fn messages_are_answered_on_the_stream() {
    bounded(async {
        let s = Server::start(config()).await;
        let (mut sse, url) = open(&s, None).await;
        let init = message(&s, &url, init_body("2024-11-05")).send().await;
        assert_eq!(init.status, StatusCode::ACCEPTED);
        assert!(init.bytes().await.is_empty());
        let result = next(&mut sse).await;
        assert_eq!(result["id"], 0);
        assert_eq!(result["result"]["protocolVersion"], "2024-11-05");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(message(&s, &url, note).send().await.status, StatusCode::ACCEPTED);

        assert_eq!(message(&s, &url, list(1)).send().await.status, StatusCode::ACCEPTED);
        assert!(next(&mut sse).await["result"]["tools"].is_array());
        // 2024-11-05 accepts batches: one array on the stream.
        let batch = json!([list(10), list(11)]);
        assert_eq!(message(&s, &url, batch).send().await.status, StatusCode::ACCEPTED);
        let answers = next(&mut sse).await;
        assert_eq!(answers.as_array().map(Vec::len), Some(2), "{answers}");

        // Progress, then the reply, on the stream.
        let body = call(2, "progress", Some(json!({"progressToken": "p"})));
        assert_eq!(message(&s, &url, body).send().await.status, StatusCode::ACCEPTED);
        for i in 1..=3 {
            assert_eq!(next(&mut sse).await["params"]["progress"], f64::from(i));
        }
        assert_eq!(next(&mut sse).await["result"]["content"][0]["text"], "progress done");

        // A server-to-client request travels on the stream; its answer is POSTed back.
        assert_eq!(
            message(&s, &url, call(3, "sample", None)).send().await.status,
            StatusCode::ACCEPTED
        );
        let req = next(&mut sse).await;
        assert_eq!(req["method"], "sampling/createMessage");
        let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"
        }});
        assert_eq!(message(&s, &url, answer).send().await.status, StatusCode::ACCEPTED);
        assert_eq!(next(&mut sse).await["result"]["content"][0]["text"], "LLM said: hi");

        // A list change reaches the session's stream.
        async fn ok(_: Map<String, Value>, _: Ctx) -> mcp_runtime::ToolResult {
            Ok(mcp_protocol::model::CallToolResult::text("new"))
        }
        s.registry.add_tool(tool("added", json!({"type": "object"}), ok));
        assert_eq!(next(&mut sse).await["method"], "notifications/tools/list_changed");
        assert!(
            s.engine.session_count() == 0,
            "the pair's session is not a Streamable one"
        );
    })
    .await;
}

#[tokio::test]
async fn the_pair_is_legacy_only() {
    bounded(async {
        let s = Server::start(config()).await;
        let (mut sse, url) = open(&s, None).await;
        message(&s, &url, init_body("2025-06-18")).send().await;
        assert_eq!(next(&mut sse).await["result"]["protocolVersion"], "2025-06-18");
        let discover = json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}});
        assert_eq!(message(&s, &url, discover).send().await.status, StatusCode::ACCEPTED);
        // Served by the one method table, as on every transport.
        let discovered = next(&mut sse).await;
        assert_eq!(discovered["id"], 7);
        assert!(discovered["result"]["supportedVersions"].is_array(), "{discovered}");
        let modern = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}});
        message(&s, &url, modern).send().await;
        let refused = next(&mut sse).await;
        assert_eq!(refused["id"], 8);
        assert_eq!(refused["error"]["code"], -32600);
        let bad = s.req(Method::POST).at(&url).body(b"{".to_vec()).send().await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        assert_eq!(bad.json().await["error"]["code"], -32700);
        let put = s.req(Method::PUT).at("/sse").send().await;
        assert_eq!(put.status, StatusCode::METHOD_NOT_ALLOWED);
    })
    .await;
}

#[tokio::test]
async fn the_session_id_is_checked_and_owned() {
    bounded(async {
        let s = Server::start(config().auth(Arc::new(NamedUsers))).await;
        let anonymous = s
            .req(Method::GET)
            .at("/sse")
            .header("accept", "text/event-stream")
            .send()
            .await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
        assert!(anonymous.header("www-authenticate").is_some());
        let (_sse, url) = open(&s, Some("Bearer alice")).await;
        let missing = message(&s, "/messages", list(1)).header("authorization", "Bearer alice");
        assert_eq!(missing.send().await.status, StatusCode::BAD_REQUEST);
        let as_bob = message(&s, &url, list(1))
            .header("authorization", "Bearer bob")
            .send()
            .await;
        assert_eq!(as_bob.status, StatusCode::NOT_FOUND);
        let unknown = message(&s, "/messages?sessionId=mcp_x", list(1)).header("authorization", "Bearer bob");
        assert_eq!(as_bob.json().await, unknown.send().await.json().await, "the same 404");
        let mine = message(&s, &url, list(1))
            .header("authorization", "Bearer alice")
            .send()
            .await;
        assert_eq!(mine.status, StatusCode::ACCEPTED);
        let foreign = message(&s, &url, list(1))
            .header("authorization", "Bearer alice")
            .header("origin", "http://evil.example.com")
            .send()
            .await;
        assert_eq!(foreign.status, StatusCode::FORBIDDEN);
    })
    .await;
}

#[tokio::test]
async fn the_session_ends_with_the_stream() {
    bounded(async {
        let s = Server::start(config()).await;
        let (mut sse, url) = open(&s, None).await;
        message(&s, &url, init_body("2024-11-05")).send().await;
        next(&mut sse).await;
        assert_eq!(
            message(&s, &url, call(1, "slow", None)).send().await.status,
            StatusCode::ACCEPTED
        );
        drop(sse);
        let mut status = StatusCode::ACCEPTED;
        for _ in 0..100 {
            status = message(&s, &url, list(2)).send().await.status;
            if status == StatusCode::NOT_FOUND {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status, StatusCode::NOT_FOUND, "the session went with its stream");
        s.shutdown()
            .await
            .expect("the slow call was cancelled: nothing left to drain");
    })
    .await;
}
