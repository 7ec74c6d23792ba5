//! Streams never starve calls: long-lived streams (`subscriptions/listen`, the GET stream, the
//! 2024-11-05 pair's stream) are held by the stream budget, apart from the in-flight cap and
//! within a share of the connections, so that with the stream budget full a new `tools/call`
//! is served, in both eras, over HTTP/1.1 and h2c. Each client is its own loopback address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::support::{Req, Resp, Server, bounded, call, init_body, modern};

/// The address of one client on loopback.
fn client(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

/// How a client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    /// A fresh HTTP/1.1 connection per request: every held stream holds a connection.
    Http1,
    /// One HTTP/2 connection with prior knowledge per client, every request a stream of it.
    H2c,
}

/// A client at its own loopback address.
struct Client {
    local: IpAddr,
    h2: Option<SendRequest<Full<Bytes>>>,
}

impl Client {
    async fn new(wire: Wire, server: SocketAddr, local: IpAddr) -> Client {
        let h2 = match wire {
            Wire::Http1 => None,
            Wire::H2c => {
                let socket = tokio::net::TcpSocket::new_v4().expect("socket");
                socket.bind(SocketAddr::new(local, 0)).expect("bind the client address");
                let tcp = socket.connect(server).await.expect("connect");
                let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                    .await
                    .expect("h2 handshake");
                tokio::spawn(conn);
                Some(sender)
            }
        };
        Client { local, h2 }
    }

    async fn send(&mut self, req: Req) -> Resp {
        match &mut self.h2 {
            None => req.send_from(self.local).await,
            Some(sender) => {
                let resp = sender.send_request(req.into_request(true)).await.expect("response");
                assert_eq!(resp.version(), http::Version::HTTP_2);
                Resp::new(resp)
            }
        }
    }
}

/// A modern POST with the headers its body asks for.
fn modern_post(s: &Server, id: i64, method: &str, params: Value) -> Req {
    s.post(modern(id, method, params))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
}

fn listen(s: &Server, id: i64) -> Req {
    modern_post(
        s,
        id,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
}

/// Opens a listen and reads its acknowledgement: the stream is held.
async fn held_listen(c: &mut Client, s: &Server, id: i64) -> crate::support::Sse {
    let resp = c.send(listen(s, id)).await;
    assert_eq!(resp.status, StatusCode::OK, "listen {id}");
    let mut stream = resp.sse();
    let ack = stream.message().await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    stream
}

/// Initializes a 2025-11-25 session and returns its id.
async fn session(c: &mut Client, s: &Server) -> String {
    let resp = c.send(s.post(init_body("2025-11-25"))).await;
    assert_eq!(resp.status, StatusCode::OK);
    let sid = resp.header("mcp-session-id").expect("session").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ack = c.send(s.post(initialized).header("mcp-session-id", &sid)).await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    sid
}

fn get_stream(s: &Server, sid: &str) -> Req {
    s.req(Method::GET)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
}

/// Checks a stream refusal: its status, `Retry-After`, and the JSON-RPC error.
async fn refused(resp: Resp, status: StatusCode, message: &str, id: Value) {
    assert_eq!(resp.status, status);
    assert_eq!(resp.header("retry-after"), Some("5"));
    let body = resp.json().await;
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(body["error"]["message"], message, "{body}");
    assert_eq!(body["id"], id, "{body}");
}

/// A modern and a legacy `tools/call` from `c`, both answered.
async fn calls_are_served(c: &mut Client, s: &Server, sid: &str) {
    let modern_call =
        modern_post(s, 20, "tools/call", json!({"name": "echo", "arguments": {"x": 1}})).header("mcp-name", "echo");
    let resp = c.send(modern_call).await;
    assert_eq!(resp.status, StatusCode::OK, "a modern call while the streams are full");
    let body = resp.json().await;
    assert_eq!(body["result"]["content"][0]["text"], "echo: {\"x\":1}", "{body}");

    let resp = c
        .send(s.post(call(21, "echo", None)).header("mcp-session-id", sid))
        .await;
    assert_eq!(resp.status, StatusCode::OK, "a legacy call while the streams are full");
    let reply = match resp.header("content-type") {
        Some("text/event-stream") => resp.sse().message().await.expect("the reply"),
        _ => resp.json().await,
    };
    assert_eq!(reply["result"]["content"][0]["text"], "echo: {}", "{reply}");
}

/// Fills the stream budget (4 in all, 2 per address) with two listens from one client and two
/// GET streams from another, the in-flight cap (2) being smaller than the streams held; a third
/// client is refused every kind of stream, and served both eras' calls.
async fn full_streams_leave_calls_served(wire: Wire) {
    let config = HttpConfig::default()
        .max_in_flight(2)
        .max_streams(4, 2)
        .max_connections(16)
        .sse_pair("/sse", "/messages");
    let s = Server::start(config).await;
    let (mut a, mut b, mut c) = (
        Client::new(wire, s.addr, client(1)).await,
        Client::new(wire, s.addr, client(2)).await,
        Client::new(wire, s.addr, client(3)).await,
    );

    // The first client holds its share in listens, and is refused a third (429).
    let first = held_listen(&mut a, &s, 1).await;
    let _second = held_listen(&mut a, &s, 2).await;
    let over = a.send(listen(&s, 3)).await;
    refused(
        over,
        StatusCode::TOO_MANY_REQUESTS,
        "Too many open streams from this address",
        json!(3),
    )
    .await;

    // The second holds two sessions' GET streams: the budget is full.
    let mut gets = Vec::new();
    for _ in 0..2 {
        let sid = session(&mut b, &s).await;
        let resp = b.send(get_stream(&s, &sid)).await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut stream = resp.sse();
        let priming = stream.next().await.expect("the priming event");
        assert!(priming.id.is_some());
        gets.push(stream);
    }

    // The third client: every kind of stream is refused (503), every call is served.
    let sid = session(&mut c, &s).await;
    refused(
        c.send(listen(&s, 9)).await,
        StatusCode::SERVICE_UNAVAILABLE,
        "Too many open streams",
        json!(9),
    )
    .await;
    let get = c.send(get_stream(&s, &sid)).await;
    refused(
        get,
        StatusCode::SERVICE_UNAVAILABLE,
        "Too many open streams",
        Value::Null,
    )
    .await;
    let pair = c
        .send(s.req(Method::GET).at("/sse").header("accept", "text/event-stream"))
        .await;
    refused(
        pair,
        StatusCode::SERVICE_UNAVAILABLE,
        "Too many open streams",
        Value::Null,
    )
    .await;
    calls_are_served(&mut c, &s, &sid).await;

    // A stream closed gives its place back.
    drop(first);
    let mut again = None;
    for _ in 0..100 {
        let resp = c.send(listen(&s, 10)).await;
        if resp.status == StatusCode::OK {
            again = Some(resp);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut stream = again.expect("a closed stream gives its place back").sse();
    assert_eq!(
        stream.message().await.expect("ack")["method"],
        "notifications/subscriptions/acknowledged"
    );
}

#[tokio::test]
async fn full_streams_leave_calls_served_over_http1() {
    bounded(full_streams_leave_calls_served(Wire::Http1)).await;
}

#[tokio::test]
async fn full_streams_leave_calls_served_over_h2c() {
    bounded(full_streams_leave_calls_served(Wire::H2c)).await;
}

/// Whatever the configuration, streams hold at most three quarters of the connections: here a
/// budget of 100 streams on 4 connections holds 3 streams, and the fourth connection serves a
/// call in each era.
#[tokio::test]
async fn streams_never_take_every_connection() {
    bounded(async {
        let config = HttpConfig::default().max_streams(100, 100).max_connections(4);
        let s = Server::start(config).await;
        let mut a = Client::new(Wire::Http1, s.addr, client(1)).await;
        let mut held = Vec::new();
        for id in 1..=3 {
            held.push(held_listen(&mut a, &s, id).await);
        }
        refused(
            a.send(listen(&s, 4)).await,
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many open streams",
            json!(4),
        )
        .await;
        let mut b = Client::new(Wire::Http1, s.addr, client(2)).await;
        let sid = session(&mut b, &s).await;
        calls_are_served(&mut b, &s, &sid).await;
        drop(held);
    })
    .await;
}
