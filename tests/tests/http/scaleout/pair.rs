//! The 2024-11-05 HTTP+SSE pair behind the round-robin proxy: its stream on one instance, its
//! POSTs on both (those reaching the other instance are forwarded to the holder), and a holder
//! that dies (its pair is `404` on the survivor once it is known dead).

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Cluster, next_message, request, tool_call};
use crate::support::{Req, Server, Sse};

/// Opens the pair's stream on instance `at`; returns it past the endpoint event, and the
/// message URL.
async fn open(c: &Cluster, at: usize) -> (Sse, String) {
    let get = c
        .client
        .req(Method::GET)
        .at("/sse")
        .header("accept", "text/event-stream");
    let resp = c.send_to(at, get).await;
    assert_eq!(resp.status, StatusCode::OK, "GET /sse");
    let mut sse = resp.sse();
    let endpoint = super::within("the endpoint event", sse.next()).await.expect("an event");
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(endpoint.data.starts_with("/messages?sessionId="), "{}", endpoint.data);
    (sse, endpoint.data)
}

fn message(s: &Server, url: &str, body: Value) -> Req {
    s.post(body).at(url).header("accept", "application/json")
}

/// Scenario: a pair opened on A, its messages through the proxy (so on A and B in turn): the
/// session is initialized, calls are answered, and a server-to-client request's answer POSTed
/// to B reaches the call waiting on A; B refuses an unknown pair with the 404 A gives.
async fn pair_across_instances(c: Cluster) {
    let (mut sse, url) = open(&c, 0).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "scaleout", "version": "1"}
    }});
    let (resp, at) = c.send(message(&c.client, &url, init)).await;
    assert_eq!((resp.status, at), (StatusCode::ACCEPTED, 1), "initialize through B");
    let (_, result) = next_message(&mut sse, "the initialize result").await;
    assert_eq!(result["result"]["protocolVersion"], "2024-11-05", "{result}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (resp, at) = c.send(message(&c.client, &url, initialized)).await;
    assert_eq!((resp.status, at), (StatusCode::ACCEPTED, 0), "initialized on A");

    for k in 1..=4i64 {
        let (resp, _) = c
            .send(message(&c.client, &url, tool_call(k, "echo", json!({"k": k}))))
            .await;
        assert_eq!(resp.status, StatusCode::ACCEPTED, "call {k}");
        let (_, got) = next_message(&mut sse, "a call's answer").await;
        assert_eq!(got["id"], k, "{got}");
        assert_eq!(
            got["result"]["content"][0]["text"],
            format!("echo: {}", json!({"k": k}))
        );
    }

    let resp = c
        .send_to(1, message(&c.client, &url, tool_call(10, "sample", json!({}))))
        .await;
    assert_eq!(resp.status, StatusCode::ACCEPTED, "the call through B");
    let (_, ask) = next_message(&mut sse, "sampling/createMessage on A's stream").await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "via B"}, "model": "m"
    }});
    let resp = c.send_to(1, message(&c.client, &url, reply)).await;
    assert_eq!(resp.status, StatusCode::ACCEPTED, "the answer through B");
    let (_, done) = next_message(&mut sse, "the call's result").await;
    assert_eq!(done["id"], 10, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "LLM said: via B");

    let unknown = "/messages?sessionId=mcp_00000000000000000000000000000000";
    let mut bodies = Vec::new();
    for at in [0, 1] {
        let resp = c
            .send_to(at, message(&c.client, unknown, request(20, "ping", json!({}))))
            .await;
        assert_eq!(resp.status, StatusCode::NOT_FOUND, "an unknown pair on instance {at}");
        bodies.push(resp.json().await);
    }
    assert_eq!(bodies[0], bodies[1], "the same 404 on both");
    c.assert_both_used();
}
both_stores!(pair_across_instances, 30);

/// Scenario: the instance holding a pair dies. Its record outlives it (the pair ttl), but once
/// its heartbeat lapsed a POST reaching B finds it dead, removes the record and answers 404;
/// the next POST is 404 at once.
async fn the_holder_of_a_pair_dies(mut c: Cluster) {
    let (_sse, url) = open(&c, 0).await;
    let (resp, at) = c.send(message(&c.client, &url, request(1, "ping", json!({})))).await;
    assert_eq!((resp.status, at), (StatusCode::ACCEPTED, 1), "through B while A lives");
    c.proxy.set_down(0, true);
    c.a.kill().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        let (resp, at) = c.send(message(&c.client, &url, request(2, "ping", json!({})))).await;
        assert_eq!(at, 1, "only B is up");
        seen.push(resp.status);
        if resp.status == StatusCode::NOT_FOUND {
            break;
        }
        assert_eq!(
            resp.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "while the holder may be alive, the message is not accepted"
        );
        assert!(Instant::now() < deadline, "still not 404: {seen:?}");
    }
    let id = url.split("sessionId=").nth(1).expect("an id");
    assert_eq!(
        c.store.mailboxes.load(id).await.unwrap(),
        None,
        "the dead holder's record is gone"
    );
    let start = Instant::now();
    let (resp, _) = c.send(message(&c.client, &url, request(3, "ping", json!({})))).await;
    assert_eq!(resp.status, StatusCode::NOT_FOUND);
    assert!(start.elapsed() < Duration::from_secs(1), "at once");
}
both_stores!(the_holder_of_a_pair_dies, 40);
