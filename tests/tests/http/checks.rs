//! The checks that come before any handler: Accept, Origin, Host, body limits, decoding, the
//! in-flight cap, and the modern header rules.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::support::{Server, bounded, call, list, modern};

#[tokio::test]
async fn accept_must_list_json_and_sse() {
    bounded(async {
        let s = Server::default_config().await;
        let resp = s.post(list(1)).header("accept", "application/json").send().await;
        assert_eq!(resp.status, StatusCode::NOT_ACCEPTABLE);
        let star = s.post(list(1)).header("accept", "*/*").send().await;
        assert_eq!(
            star.status,
            StatusCode::BAD_REQUEST,
            "passes Accept, then needs a session"
        );
    })
    .await;
}

#[tokio::test]
async fn only_json_bodies_are_served() {
    bounded(async {
        let s = Server::default_config().await;
        for content_type in [Some("text/plain"), Some("application/x-www-form-urlencoded"), None] {
            let req = s.post(super::support::init_body("2025-11-25"));
            let req = match content_type {
                Some(t) => req.header("content-type", t),
                None => req.without("content-type"),
            };
            let resp = req.send().await;
            assert_eq!(resp.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{content_type:?}");
            assert_eq!(resp.json().await["error"]["code"], -32600);
        }
        let with_charset = s
            .post(super::support::init_body("2025-11-25"))
            .header("content-type", "application/json; charset=utf-8")
            .send()
            .await;
        assert_eq!(with_charset.status, StatusCode::OK, "parameters are allowed");
    })
    .await;
}

#[tokio::test]
async fn foreign_origin_is_refused_without_cors() {
    bounded(async {
        let s = Server::default_config().await;
        let bad = s.post(list(1)).header("origin", "http://evil.example.com").send().await;
        assert_eq!(bad.status, StatusCode::FORBIDDEN);
        assert!(bad.header("access-control-allow-origin").is_none());
        let null = s.post(list(1)).header("origin", "null").send().await;
        assert_eq!(null.status, StatusCode::FORBIDDEN);

        let good = s.post(list(1)).header("origin", "http://localhost:5173").send().await;
        assert_eq!(good.status, StatusCode::BAD_REQUEST, "origin passes; no session");
        assert_eq!(
            good.header("access-control-allow-origin"),
            Some("http://localhost:5173")
        );
        assert_eq!(good.header("vary"), Some("Origin"));

        let pre = s
            .req(Method::OPTIONS)
            .header("origin", "http://127.0.0.1:3000")
            .send()
            .await;
        assert_eq!(pre.status, StatusCode::NO_CONTENT);
        let allowed = pre
            .header("access-control-allow-headers")
            .unwrap_or_default()
            .to_owned();
        for h in [
            "mcp-session-id",
            "mcp-protocol-version",
            "last-event-id",
            "mcp-method",
            "mcp-param-region",
        ] {
            assert!(allowed.contains(h), "{h} missing from {allowed}");
        }
        assert!(
            pre.header("access-control-expose-headers")
                .is_some_and(|v| v.contains("mcp-session-id"))
        );
    })
    .await;
}

#[tokio::test]
async fn foreign_host_is_refused() {
    bounded(async {
        let s = Server::default_config().await;
        let resp = s.post(list(1)).header("host", "evil.example.com").send().await;
        assert_eq!(resp.status, StatusCode::FORBIDDEN);
        let named = s
            .post(list(1))
            .header("host", &format!("localhost:{}", s.addr.port()))
            .send()
            .await;
        assert_eq!(named.status, StatusCode::BAD_REQUEST, "host passes; no session");
    })
    .await;
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    bounded(async {
        let s = Server::start(HttpConfig::default().max_body_bytes(64)).await;
        let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x".repeat(200)}});
        assert_eq!(s.post(big).send().await.status, StatusCode::PAYLOAD_TOO_LARGE);
    })
    .await;
}

#[tokio::test]
async fn parse_errors_get_400() {
    bounded(async {
        let s = Server::default_config().await;
        let resp = s.req(Method::POST).body(b"{".to_vec()).send().await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST);
        let body = resp.json().await;
        assert_eq!(body["error"]["code"], -32700);
        assert_eq!(body["id"], Value::Null);
        let shape = s
            .post(json!({"jsonrpc": "2.0", "id": null, "method": "x"}))
            .send()
            .await;
        assert_eq!(shape.status, StatusCode::BAD_REQUEST);
        assert_eq!(shape.json().await["error"]["code"], -32600);
    })
    .await;
}

#[tokio::test]
async fn in_flight_cap_answers_503() {
    bounded(async {
        let s = Arc::new(Server::start(HttpConfig::default().max_in_flight(1)).await);
        let sid = s.initialize().await;
        let running = {
            let (s, sid) = (s.clone(), sid.clone());
            tokio::spawn(async move {
                s.post(call(1, "slow", None))
                    .header("mcp-session-id", &sid)
                    .send()
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let over = s.post(list(2)).header("mcp-session-id", &sid).send().await;
        assert_eq!(over.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(over.json().await["error"]["code"], -32603);
        let del = s.req(Method::DELETE).header("mcp-session-id", &sid).send().await;
        assert_eq!(del.status, StatusCode::NO_CONTENT);
        assert_eq!(
            running.await.expect("task").status,
            StatusCode::OK,
            "a deleted session cancels its calls"
        );
    })
    .await;
}

#[tokio::test]
async fn modern_discover_is_stateless() {
    bounded(async {
        let s = Server::default_config().await;
        let resp = s
            .post(modern(1, "server/discover", json!({})))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .send()
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        assert!(resp.header("mcp-session-id").is_none());
        let body = resp.json().await;
        assert_eq!(body["result"]["resultType"], "complete", "{body}");
        assert!(body["result"]["supportedVersions"].is_array());
        assert_eq!(s.engine.session_count(), 0);
    })
    .await;
}

#[tokio::test]
async fn modern_header_rules() {
    bounded(async {
        let s = Server::default_config().await;
        let no_method = s
            .post(modern(1, "tools/list", json!({})))
            .header("mcp-protocol-version", "2026-07-28")
            .send()
            .await;
        assert_eq!(no_method.status, StatusCode::BAD_REQUEST);
        let body = no_method.json().await;
        assert_eq!(body["error"]["code"], -32020);
        assert_eq!(body["id"], 1);

        let ping = s
            .post(modern(2, "ping", json!({})))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "ping")
            .send()
            .await;
        assert_eq!(ping.status, StatusCode::NOT_FOUND);
        assert_eq!(ping.json().await["error"]["code"], -32601);

        let params = json!({"name": "regional", "arguments": {"region": "eu-west"}});
        let send = |region: &'static str| {
            s.post(modern(3, "tools/call", params.clone()))
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "regional")
                .header("mcp-param-region", region)
                .send()
        };
        let mismatch = send("us-east").await;
        assert_eq!(mismatch.status, StatusCode::BAD_REQUEST);
        assert_eq!(mismatch.json().await["error"]["code"], -32020);
        let ok = send("eu-west").await;
        assert_eq!(ok.status, StatusCode::OK);
        assert_eq!(ok.json().await["result"]["resultType"], "complete");
    })
    .await;
}

#[tokio::test]
async fn origin_and_host_are_checked_on_every_verb() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        for m in [Method::GET, Method::DELETE, Method::OPTIONS, Method::PUT] {
            let foreign = s
                .req(m.clone())
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &sid)
                .header("origin", "http://evil.example.com")
                .send()
                .await;
            assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{m} with a foreign origin");
            assert!(foreign.header("access-control-allow-origin").is_none());
            let rebound = s
                .req(m.clone())
                .header("mcp-session-id", &sid)
                .header("host", "evil.example.com:80")
                .send()
                .await;
            assert_eq!(rebound.status, StatusCode::FORBIDDEN, "{m} with a foreign host");
        }
        let ok = s.req(Method::DELETE).header("mcp-session-id", &sid).send().await;
        assert_eq!(ok.status, StatusCode::NO_CONTENT, "the session survived the refusals");
    })
    .await;
}
