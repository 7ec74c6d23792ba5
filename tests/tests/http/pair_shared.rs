//! The 2024-11-05 HTTP+SSE pair across instances: two runtimes on one `Store::memory()`, each
//! serving the pair. A pair opened on A takes its messages through B (forwarded to A over the
//! bus), answered on A's stream; B answers an unknown pair and another principal's with the same
//! `404` as A; once A's stream ends, B answers `404` too. (`http/scaleout/pair.rs` runs the pair
//! behind the round-robin proxy on both stores, and a holder that dies.)

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_runtime::{ServerConfig, Store};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::pair::{message, open};
use crate::support::{NamedUsers, Server, Sse, bounded, call, engine, init_body, list};

/// Two instances of one server on `store`, serving the pair (with `NamedUsers` when `auth`).
async fn two(store: &Store, auth: bool) -> (Server, Server) {
    let mut servers = Vec::new();
    for _ in 0..2 {
        let (_, registry) = engine();
        let rt = mcp_tests::engine::start(
            ServerConfig::default(),
            registry,
            mcp_runtime::Storage::Shared(store.clone()),
        );
        let mut config = HttpConfig::default().sse_pair("/sse", "/messages");
        if auth {
            config = config.auth(Arc::new(NamedUsers));
        }
        servers.push(Server::serve_engine(rt, config).await);
    }
    let b = servers.pop().expect("two");
    (servers.pop().expect("two"), b)
}

/// The next `event: message` on the stream, as JSON (bounded).
async fn next(sse: &mut Sse) -> Value {
    let e = tokio::time::timeout(Duration::from_secs(5), sse.next())
        .await
        .expect("a message within 5 s")
        .expect("message event");
    assert_eq!(e.event.as_deref(), Some("message"));
    e.json()
}

#[tokio::test]
async fn messages_posted_to_another_instance_are_answered_on_the_holders_stream() {
    bounded(async {
        let store = Store::memory();
        let (a, b) = two(&store, false).await;
        let (mut sse, url) = open(&a, None).await;

        let init = message(&b, &url, init_body("2024-11-05")).send().await;
        assert_eq!(init.status, StatusCode::ACCEPTED, "initialize through B");
        assert!(init.bytes().await.is_empty());
        let result = next(&mut sse).await;
        assert_eq!(result["id"], 0);
        assert_eq!(result["result"]["protocolVersion"], "2024-11-05");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(message(&b, &url, initialized).send().await.status, StatusCode::ACCEPTED);

        // Alternating instances, each POST answered before the next is sent: the holder hands
        // them to its engine in that order. (Both instances run on the test's single-threaded
        // runtime, which runs the spawned calls in the order they were handed over.)
        for id in 1..=6 {
            let at = if id % 2 == 0 { &a } else { &b };
            assert_eq!(message(at, &url, list(id)).send().await.status, StatusCode::ACCEPTED);
        }
        for id in 1..=6 {
            let got = next(&mut sse).await;
            assert_eq!(got["id"], id, "answers in the order the POSTs were accepted: {got}");
            assert!(got["result"]["tools"].is_array(), "{got}");
        }

        let echo = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"x": 1}}});
        assert_eq!(message(&b, &url, echo).send().await.status, StatusCode::ACCEPTED);
        let got = next(&mut sse).await;
        assert_eq!(got["id"], 7);
        assert_eq!(got["result"]["content"][0]["text"], r#"echo: {"x":1}"#);

        // A server-to-client request on A's stream, its answer POSTed through B.
        assert_eq!(
            message(&b, &url, call(8, "sample", None)).send().await.status,
            StatusCode::ACCEPTED
        );
        let req = next(&mut sse).await;
        assert_eq!(req["method"], "sampling/createMessage");
        let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "via B"}, "model": "m"
        }});
        assert_eq!(message(&b, &url, answer).send().await.status, StatusCode::ACCEPTED);
        let done = next(&mut sse).await;
        assert_eq!(done["id"], 8);
        assert_eq!(done["result"]["content"][0]["text"], "LLM said: via B");

        // B checks the body as A would, before forwarding anything.
        let bad = b.req(Method::POST).at(&url).body(b"{".to_vec()).send().await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        assert_eq!(bad.json().await["error"]["code"], -32700);
    })
    .await;
}

#[tokio::test]
async fn another_principals_pair_and_an_unknown_one_are_the_same_404_on_every_instance() {
    bounded(async {
        let store = Store::memory();
        let (a, b) = two(&store, true).await;
        let (mut sse, url) = open(&a, Some("Bearer alice")).await;
        let mut answers = Vec::new();
        for s in [&a, &b] {
            let as_bob = message(s, &url, list(1))
                .header("authorization", "Bearer bob")
                .send()
                .await;
            assert_eq!(as_bob.status, StatusCode::NOT_FOUND);
            answers.push(as_bob.json().await);
            let unknown = message(s, "/messages?sessionId=mcp_00000000000000000000000000000000", list(1))
                .header("authorization", "Bearer alice")
                .send()
                .await;
            assert_eq!(unknown.status, StatusCode::NOT_FOUND);
            answers.push(unknown.json().await);
        }
        assert!(answers.windows(2).all(|w| w[0] == w[1]), "the same 404: {answers:?}");
        let mine = message(&b, &url, list(2))
            .header("authorization", "Bearer alice")
            .send()
            .await;
        assert_eq!(mine.status, StatusCode::ACCEPTED, "alice's own pair, through B");
        assert_eq!(next(&mut sse).await["id"], 2);
    })
    .await;
}

#[tokio::test]
async fn once_the_holders_stream_ends_the_other_instance_answers_404() {
    bounded(async {
        let store = Store::memory();
        let (a, b) = two(&store, false).await;
        let (mut sse, url) = open(&a, None).await;
        assert_eq!(message(&b, &url, list(1)).send().await.status, StatusCode::ACCEPTED);
        assert_eq!(next(&mut sse).await["id"], 1);
        drop(sse);
        let mut status = StatusCode::ACCEPTED;
        for _ in 0..100 {
            status = message(&b, &url, list(2)).send().await.status;
            if status == StatusCode::NOT_FOUND {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status, StatusCode::NOT_FOUND, "the pair went with its stream");
        let id = url.split("sessionId=").nth(1).expect("an id");
        assert_eq!(store.mailboxes.load(id).await.unwrap(), None, "its record is gone");
    })
    .await;
}
