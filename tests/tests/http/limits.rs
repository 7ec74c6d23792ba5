//! Every limit, each answered with its stated status (or, for connections, a closed socket)
//! while the server keeps serving: connections, the body-read timeout, JSON depth (the
//! connection timeouts and Host rules are in `hardening.rs`, the bounds per client in
//! `bounds.rs`). The body
//! size (413) and the in-flight cap (503) are in `checks.rs`.

use std::time::Duration;

use http::StatusCode;
use hyper_util::rt::TokioIo;
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Req, Resp, Server, bounded, call, init_body, list};

/// Retries a request until it is served (a released connection slot is seen by the accept loop
/// shortly after the connection closes).
async fn eventually(make: impl Fn() -> Req) -> Resp {
    for _ in 0..100 {
        if let Some(r) = make().try_send().await {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the server never served again");
}

async fn served_again(s: &Server) -> StatusCode {
    eventually(|| s.post(list(1))).await.status
}

#[tokio::test]
async fn at_the_cap_an_idle_connection_makes_room_for_a_newcomer() {
    bounded(async {
        let s = Server::start(HttpConfig::default().max_connections(1)).await;
        // One keep-alive connection holds the only slot, idle after its call.
        let tcp = TcpStream::connect(s.addr).await.expect("connect");
        let (mut held, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .expect("handshake");
        let conn = tokio::spawn(conn);
        let first = held
            .send_request(s.post(list(1)).into_request(false))
            .await
            .expect("served");
        assert_eq!(first.status(), StatusCode::BAD_REQUEST, "served (no session)");

        // A newcomer is served: the idle connection is shed (a newcomer is closed at once only
        // when every connection has a request in flight: see `hardening.rs`).
        assert_eq!(served_again(&s).await, StatusCode::BAD_REQUEST);
        let ended = tokio::time::timeout(Duration::from_secs(5), conn).await;
        assert!(ended.is_ok(), "the idle connection was closed by the server");
    })
    .await;
}

#[tokio::test]
async fn a_slot_is_released_however_the_connection_ends() {
    bounded(async {
        let s = Server::start(HttpConfig::default().max_connections(1)).await;
        // Half a request, then the client vanishes.
        let mut tcp = TcpStream::connect(s.addr).await.expect("connect");
        tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .expect("write");
        drop(tcp);
        assert_eq!(served_again(&s).await, StatusCode::BAD_REQUEST);

        // An SSE reply the client abandons (a call's: the one slot cannot hold a long-lived
        // stream, which never takes the last connection).
        let init = eventually(|| s.post(init_body("2025-11-25"))).await;
        let sid = init.header("mcp-session-id").expect("session").to_owned();
        let slow = || s.post(call(1, "sample", None)).header("mcp-session-id", &sid);
        let mut stream = eventually(slow).await.sse();
        assert!(stream.next().await.is_some(), "priming event");
        drop(stream);
        assert_eq!(served_again(&s).await, StatusCode::BAD_REQUEST);
    })
    .await;
}

#[tokio::test]
async fn a_slow_body_gets_408_with_a_json_rpc_error() {
    bounded(async {
        let s = Server::start(HttpConfig::default().body_timeout(Duration::from_millis(200))).await;
        let mut tcp = TcpStream::connect(s.addr).await.expect("connect");
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
            s.addr.port()
        );
        tcp.write_all(head.as_bytes()).await.expect("write");
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer))
            .await
            .expect("answered and closed")
            .expect("read");
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.to_ascii_lowercase().contains("connection: close"), "{text}");
        let body = text.split("\r\n\r\n").nth(1).expect("body");
        let body: Value = serde_json::from_str(body).expect("JSON-RPC error");
        assert_eq!(body["error"]["code"], -32600);
        assert_eq!(body["id"], Value::Null);
        assert_eq!(
            s.post(list(2)).send().await.status,
            StatusCode::BAD_REQUEST,
            "still serving"
        );
    })
    .await;
}

#[tokio::test]
async fn a_deep_body_gets_400() {
    bounded(async {
        let s = Server::start(HttpConfig::default().max_depth(8)).await;
        let mut deep = json!(1);
        for _ in 0..20 {
            deep = json!([deep]);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": deep}});
        let resp = s.post(body).send().await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST);
        let code = resp.json().await["error"]["code"].as_i64();
        assert!(matches!(code, Some(-32700 | -32600)), "{code:?}");
        assert_eq!(
            s.post(list(2)).send().await.status,
            StatusCode::BAD_REQUEST,
            "still serving"
        );
    })
    .await;
}
