//! The simple POST-only mode: other verbs 405, JSON replies only, no sessions, notifications
//! 202, server-to-client requests failing at once, and the same Origin/CORS/auth checks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use mcp_transport_http::HttpConfig;
use serde_json::json;

use crate::support::{NamedUsers, Server, bounded, call, init_body, list, modern};

#[tokio::test]
async fn only_post_and_options() {
    bounded(async {
        let s = Server::start(HttpConfig::simple()).await;
        for m in [Method::GET, Method::DELETE, Method::PUT] {
            let resp = s.req(m.clone()).header("accept", "text/event-stream").send().await;
            assert_eq!(resp.status, StatusCode::METHOD_NOT_ALLOWED, "{m}");
            assert_eq!(resp.header("allow"), Some("POST, OPTIONS"));
        }
        let pre = s
            .req(Method::OPTIONS)
            .header("origin", "http://localhost:3000")
            .send()
            .await;
        assert_eq!(pre.status, StatusCode::NO_CONTENT);
        assert_eq!(pre.header("access-control-allow-methods"), Some("POST, OPTIONS"));
        assert_eq!(pre.header("access-control-allow-origin"), Some("http://localhost:3000"));
        let foreign = s.post(list(1)).header("origin", "http://evil.example.com").send().await;
        assert_eq!(foreign.status, StatusCode::FORBIDDEN);
        assert!(foreign.header("access-control-allow-origin").is_none());
    })
    .await;
}

#[tokio::test]
async fn json_replies_without_sessions() {
    bounded(async {
        let s = Server::start(HttpConfig::simple()).await;
        let init = s
            .post(init_body("2025-11-25"))
            .header("accept", "application/json")
            .send()
            .await;
        assert_eq!(init.status, StatusCode::OK);
        assert!(init.header("mcp-session-id").is_none(), "no sessions");
        assert_eq!(init.json().await["result"]["protocolVersion"], "2025-11-25");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = s.post(note).header("accept", "application/json").send().await;
        assert_eq!(
            ack.status,
            StatusCode::ACCEPTED,
            "the specification's 202 (the reference says 204)"
        );

        let listed = s.post(list(1)).send().await;
        assert_eq!(listed.status, StatusCode::OK, "no session needed");
        // Progress is not streamed: the reply is JSON.
        let progress = s
            .post(call(2, "progress", Some(json!({"progressToken": "p"}))))
            .send()
            .await;
        assert_eq!(progress.header("content-type"), Some("application/json"));
        assert_eq!(progress.json().await["result"]["content"][0]["text"], "progress done");

        // A server-to-client request has nowhere to go: it fails at once.
        let started = Instant::now();
        let sample = s.post(call(3, "sample", None)).send().await;
        assert_eq!(sample.header("content-type"), Some("application/json"));
        let body = sample.json().await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!body.to_string().contains("LLM said"), "{body}");

        let listen = modern(
            4,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        let refused = s
            .post(listen)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .send()
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "no stream to listen on");
        assert_eq!(s.engine.session_count(), 0);
    })
    .await;
}

#[tokio::test]
async fn accept_and_auth() {
    bounded(async {
        let s = Server::start(HttpConfig::simple().auth(Arc::new(NamedUsers))).await;
        let anonymous = s.post(list(1)).send().await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
        assert_eq!(anonymous.header("www-authenticate"), Some("Bearer realm=\"mcp\""));
        let sse_only = s
            .post(list(1))
            .header("authorization", "Bearer alice")
            .header("accept", "text/event-stream")
            .send()
            .await;
        assert_eq!(sse_only.status, StatusCode::NOT_ACCEPTABLE, "replies are JSON only");
        let json_only = s
            .post(list(1))
            .header("authorization", "Bearer alice")
            .header("accept", "application/json")
            .send()
            .await;
        assert_eq!(json_only.status, StatusCode::OK);
    })
    .await;
}
