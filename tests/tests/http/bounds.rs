//! The bounds that keep one client from exhausting the server, each hit the way an attacker or a
//! careless client would hit it: the clear answer it gets, and the server still serving a normal
//! call afterwards. Batches (length, and their work against the in-flight cap), legacy sessions
//! (in total, per principal, and the size of what a session stores), and `subscriptions/listen`
//! streams (in total, per peer, per principal), and the subscriptions one request can make the
//! server hold (per session, per filter, per URI), and the task records one client keeps stored
//! (per address for anonymous callers).

use http::StatusCode;
use mcp_runtime::{Engine, ServerConfig};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::support::{Req, Server, bounded, call, engine, init_body, list, modern, raw_exchange_from, raw_post};

/// A modern POST with the headers the body asks for.
fn modern_post(s: &Server, id: i64, method: &str, params: Value) -> Req {
    s.post(modern(id, method, params))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
}

/// The test tools on a runtime with `config`.
fn with_config(config: ServerConfig) -> Engine {
    let (_, registry) = engine();
    mcp_tests::engine::memory(config, registry)
}

/// Initializes a 2025-03-26 session (batches allowed) and returns its id.
async fn batch_session(s: &Server) -> String {
    let resp = s.post(init_body("2025-03-26")).send().await;
    assert_eq!(resp.status, StatusCode::OK);
    resp.header("mcp-session-id").expect("session").to_owned()
}

fn pings(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "ping"}))
            .collect(),
    )
}

#[tokio::test]
async fn a_batch_longer_than_the_cap_is_refused_before_it_runs() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = batch_session(&s).await;
        // The finding: 360,000 pings in one body ran as as many requests. Now the decoder stops
        // at the cap.
        let flood = s.post(pings(20_000)).header("mcp-session-id", &sid).send().await;
        assert_eq!(flood.status, StatusCode::BAD_REQUEST);
        let e = flood.json().await;
        assert_eq!(e["error"]["code"], -32600);
        assert_eq!(e["error"]["message"], "Batch exceeds 128 messages");
        let full = s.post(pings(128)).header("mcp-session-id", &sid).send().await;
        assert_eq!(full.status, StatusCode::OK);
        assert_eq!(full.json().await.as_array().map(Vec::len), Some(128));
        let after = s.post(list(1)).header("mcp-session-id", &sid).send().await;
        assert_eq!(after.status, StatusCode::OK, "still serving");
    })
    .await;
}

#[tokio::test]
async fn a_batch_counts_each_request_against_the_in_flight_cap() {
    bounded(async {
        let s = Server::start(HttpConfig::default().max_in_flight(4)).await;
        let sid = batch_session(&s).await;
        let over = s.post(pings(5)).header("mcp-session-id", &sid).send().await;
        assert_eq!(over.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(over.json().await["error"]["message"], "Server is overloaded");
        let fits = s.post(pings(4)).header("mcp-session-id", &sid).send().await;
        assert_eq!(fits.status, StatusCode::OK);
        assert_eq!(fits.json().await.as_array().map(Vec::len), Some(4));
        // The slots came back: a normal call is served.
        let after = s.post(list(1)).header("mcp-session-id", &sid).send().await;
        assert_eq!(after.status, StatusCode::OK);
    })
    .await;
}

#[tokio::test]
async fn sessions_are_capped_in_total_and_per_principal() {
    bounded(async {
        let mut config = ServerConfig::default();
        config.max_sessions = 2;
        let s = Server::serve_engine(with_config(config), HttpConfig::default()).await;
        let first = s.initialize().await;
        s.initialize().await;
        let refused = s.post(init_body("2025-11-25")).send().await;
        assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(refused.header("mcp-session-id").is_none());
        let e = refused.json().await;
        assert_eq!(
            (e["error"]["code"].clone(), e["error"]["message"].clone()),
            (json!(-32603), json!("Too many sessions"))
        );
        // Existing sessions keep working; ending one frees a place.
        let call = s.post(list(2)).header("mcp-session-id", &first).send().await;
        assert_eq!(call.status, StatusCode::OK);
        let deleted = s
            .req(http::Method::DELETE)
            .header("mcp-session-id", &first)
            .send()
            .await;
        assert_eq!(deleted.status, StatusCode::NO_CONTENT);
        s.initialize().await;

        let mut config = ServerConfig::default();
        config.max_sessions_per_principal = 1;
        let s = Server::serve_engine(with_config(config), HttpConfig::default()).await;
        s.initialize().await;
        let refused = s.post(init_body("2025-11-25")).send().await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            refused.json().await["error"]["message"],
            "Too many sessions for this client"
        );
    })
    .await;
}

#[tokio::test]
async fn anonymous_clients_hold_sessions_per_address() {
    bounded(async {
        let mut config = ServerConfig::default();
        config.max_sessions_per_principal = 3;
        let s = Server::serve_engine(with_config(config), HttpConfig::default()).await;
        let host = format!("127.0.0.1:{}", s.addr.port());
        let (a, b): (std::net::IpAddr, std::net::IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        // The finding: one client minting sessions locked every other anonymous one out.
        for _ in 0..3 {
            let (status, text) = raw_exchange_from(a, s.addr, &raw_post("/mcp", &[&host])).await;
            assert_eq!(status, 200, "{text}");
        }
        let (status, text) = raw_exchange_from(a, s.addr, &raw_post("/mcp", &[&host])).await;
        assert_eq!(status, 429, "{text}");
        assert!(text.contains("Too many sessions for this client"), "{text}");
        // A client at another address has its own share.
        for _ in 0..3 {
            let (status, text) = raw_exchange_from(b, s.addr, &raw_post("/mcp", &[&host])).await;
            assert_eq!(status, 200, "the second client: {text}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_client_filling_the_sessions_does_not_lock_the_others_out() {
    bounded(async {
        let mut config = ServerConfig::default();
        config.max_sessions = 4;
        let s = Server::serve_engine(with_config(config), HttpConfig::default()).await;
        let host = format!("127.0.0.1:{}", s.addr.port());
        let (a, b): (std::net::IpAddr, std::net::IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let (host, addr) = (host.as_str(), s.addr);
        let initialize = move |from| async move {
            let (status, text) = raw_exchange_from(from, addr, &raw_post("/mcp", &[host])).await;
            let sid = text
                .lines()
                .find_map(|l| l.strip_prefix("mcp-session-id: "))
                .map(str::to_owned);
            (status, sid, text)
        };
        // One anonymous client fills the store.
        let mut mine = Vec::new();
        for _ in 0..4 {
            let (status, sid, text) = initialize(a).await;
            assert_eq!(status, 200, "{text}");
            mine.push(sid.expect("a session id"));
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let (status, _, text) = initialize(a).await;
        assert_eq!(status, 503, "its own fifth is refused: {text}");
        // Another client gets in: the first client's longest-idle session makes room.
        let (status, theirs, text) = initialize(b).await;
        assert_eq!(status, 200, "the second client is not locked out: {text}");
        let listed = |sid: &str| s.post(list(1)).header("mcp-session-id", sid).send();
        assert_eq!(
            listed(&mine[0]).await.status,
            StatusCode::NOT_FOUND,
            "the longest-idle one was shed"
        );
        for sid in &mine[1..] {
            assert_eq!(listed(sid).await.status, StatusCode::OK, "the others live on");
        }
        assert_eq!(listed(&theirs.expect("session")).await.status, StatusCode::OK);
        // Shares even out: 3 against 1 sheds once more, 2 against 2 is full.
        assert_eq!(initialize(b).await.0, 200);
        let (status, _, text) = initialize(b).await;
        assert_eq!(status, 503, "{text}");
        assert!(text.contains("Too many sessions"), "{text}");
    })
    .await;
}

#[tokio::test]
async fn a_session_keeps_bounded_client_data() {
    bounded(async {
        let s = Server::default_config().await;
        let mut init = init_body("2025-11-25");
        // The finding: 2 MiB of clientInfo per session, kept for the idle window.
        init["params"]["clientInfo"]["padding"] = json!("x".repeat(2 << 20));
        let resp = s.post(init).send().await;
        assert_eq!(resp.status, StatusCode::OK, "an error result, in band");
        assert!(resp.header("mcp-session-id").is_none(), "no session kept");
        let e = resp.json().await;
        assert_eq!(e["error"]["code"], -32602);
        assert_eq!(e["error"]["message"], "clientInfo and capabilities exceed 16384 bytes");
        assert_eq!(s.engine.session_count(), 0);
        s.initialize().await;
    })
    .await;
}

/// A legacy `resources/subscribe` on session `sid`.
async fn subscribe(s: &Server, sid: &str, id: i64, uri: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}});
    let resp = s
        .post(body)
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await;
    resp.json().await
}

#[tokio::test]
async fn legacy_subscriptions_are_bounded_per_session_and_per_uri() {
    bounded(async {
        let mut config = ServerConfig::default();
        config.subscription_bounds.max_entries = 3;
        let s = Server::serve_engine(with_config(config), HttpConfig::default()).await;
        let sid = s.initialize().await;
        // The finding: 1 MiB URIs, accepted and held by the session.
        let huge = format!("test://{}", "x".repeat(1 << 20));
        let e = subscribe(&s, &sid, 1, &huge).await;
        assert_eq!(e["error"]["code"], -32602, "{e}");
        assert_eq!(e["error"]["message"], "uri is longer than 4096 bytes");
        for i in 0..3 {
            let ok = subscribe(&s, &sid, 10 + i, &format!("test://r{i}")).await;
            assert!(ok.get("result").is_some(), "{ok}");
        }
        // Subscribing again to a held URI is not one more.
        let again = subscribe(&s, &sid, 20, "test://r0").await;
        assert!(again.get("result").is_some(), "{again}");
        let e = subscribe(&s, &sid, 21, "test://r3").await;
        assert_eq!(e["error"]["code"], -32602, "{e}");
        assert_eq!(
            e["error"]["message"],
            "too many resource subscriptions for this session (limit 3)"
        );
        let session = s.engine.held_session(&sid, "anonymous").expect("the session");
        assert!(!session.is_subscribed("test://r3") && !session.is_subscribed(&huge));
        // Another session has its own count.
        let other = s.initialize().await;
        assert!(subscribe(&s, &other, 1, "test://r3").await.get("result").is_some());
    })
    .await;
}

#[tokio::test]
async fn listen_filters_are_bounded_and_their_acknowledgement_with_them() {
    bounded(async {
        let s = Server::default_config().await;
        // The finding: an 8 MiB filter, held by the stream and echoed by its acknowledgement.
        let big: Vec<String> = (0..64)
            .map(|i| format!("test://{i}/{}", "x".repeat(128 << 10)))
            .collect();
        let refused = modern_post(
            &s,
            1,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": big}}),
        )
        .send()
        .await;
        let e = refused.json().await;
        assert_eq!(e["error"]["code"], -32602, "{e}");
        assert_eq!(e["error"]["message"], "uri is longer than 4096 bytes");
        let many: Vec<String> = (0..257).map(|i| format!("test://{i}")).collect();
        let e = modern_post(
            &s,
            2,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": many}}),
        )
        .send()
        .await
        .json()
        .await;
        assert_eq!(
            e["error"]["message"],
            "notifications.resourceSubscriptions has more than 256 entries"
        );
        let wide: Vec<String> = (0..20).map(|i| format!("test://{i}/{}", "x".repeat(4000))).collect();
        let e = modern_post(
            &s,
            3,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": wide}}),
        )
        .send()
        .await
        .json()
        .await;
        assert_eq!(
            e["error"]["message"],
            "notifications names more than 65536 bytes of URIs and task ids"
        );
        // Within the bounds: served, and the acknowledgement names what was honoured.
        let fine: Vec<String> = (0..4).map(|i| format!("test://{i}")).collect();
        let mut stream = modern_post(
            &s,
            4,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": fine}}),
        )
        .send()
        .await
        .sse();
        let ack = stream.message().await.expect("the acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    })
    .await;
}

#[tokio::test]
async fn listen_streams_are_capped_per_peer_and_in_total() {
    bounded(async {
        let filter = || json!({"notifications": {"toolsListChanged": true}});
        let mut config = ServerConfig::default();
        config.max_listeners_per_peer = 2;
        let s = Server::serve_engine(with_config(config), HttpConfig::default()).await;
        let a = modern_post(&s, 1, "subscriptions/listen", filter()).send().await;
        let b = modern_post(&s, 2, "subscriptions/listen", filter()).send().await;
        assert_eq!((a.status, b.status), (StatusCode::OK, StatusCode::OK));
        let refused = modern_post(&s, 3, "subscriptions/listen", filter()).send().await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            refused.json().await["error"]["message"],
            "Too many open subscriptions from this peer"
        );
        // Calls are unaffected; closing a stream frees its place.
        let c = modern_post(&s, 4, "tools/call", json!({"name": "echo", "arguments": {}}))
            .header("mcp-name", "echo")
            .send()
            .await;
        assert_eq!(c.status, StatusCode::OK);
        drop(a);
        let mut again = None;
        for _ in 0..100 {
            let r = modern_post(&s, 5, "subscriptions/listen", filter()).send().await;
            if r.status == StatusCode::OK {
                again = Some(r);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(again.is_some(), "a closed stream frees its place");

        let mut config = ServerConfig::default();
        config.max_listeners = 1;
        let s = Server::serve_engine(with_config(config), HttpConfig::default()).await;
        let only = modern_post(&s, 1, "subscriptions/listen", filter()).send().await;
        assert_eq!(only.status, StatusCode::OK);
        let refused = modern_post(&s, 2, "subscriptions/listen", filter()).send().await;
        assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.json().await["error"]["message"], "Too many open subscriptions");
        drop((only, b));
    })
    .await;
}

#[tokio::test]
async fn a_cancelled_call_leaves_no_error_and_cancels_its_client_request() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        // `sample` asks the client for sampling on the call's stream and waits.
        let mut stream = s
            .post(call(9, "sample", None))
            .header("mcp-session-id", &sid)
            .send()
            .await
            .sse();
        let asked = loop {
            let m = stream.message().await.expect("an event");
            if m["method"] == "sampling/createMessage" {
                break m;
            }
        };
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
        let ack = s.post(cancel).header("mcp-session-id", &sid).send().await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        // The server tells the client to stop working on its own request.
        let told = stream.message().await.expect("the cancellation");
        assert_eq!(told["method"], "notifications/cancelled");
        assert_eq!(told["params"]["requestId"], asked["id"]);
        assert!(stream.message().await.is_none(), "the cancelled call is not answered");
    })
    .await;
}

/// A legacy POST in session `sid` from `local`, answered as JSON or as the SSE event that
/// carries the answer to `id`.
async fn legacy_from(s: &Server, local: std::net::IpAddr, sid: &str, id: i64, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let resp = s
        .post(body)
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-11-25")
        .send_from(local)
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    if resp.header("content-type") != Some("text/event-stream") {
        return resp.json().await;
    }
    let mut events = resp.sse();
    loop {
        let event = events
            .next_within(std::time::Duration::from_secs(5))
            .await
            .expect("the answer");
        let message = event.json();
        if message["id"] == id {
            return message;
        }
    }
}

/// A 2025-11-25 session opened from `local`.
async fn session_from(s: &Server, local: std::net::IpAddr) -> String {
    let resp = s.post(init_body("2025-11-25")).send_from(local).await;
    assert_eq!(resp.status, StatusCode::OK);
    let sid = resp.header("mcp-session-id").expect("session id").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ack = s
        .post(initialized)
        .header("mcp-session-id", &sid)
        .send_from(local)
        .await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    sid
}

/// Runs the task-augmented tool `quick` in session `sid` from `local` to its end: its task id,
/// or the error the call was refused with.
async fn quick_task(s: &Server, local: std::net::IpAddr, sid: &str, id: i64) -> Result<String, Value> {
    let created = legacy_from(s, local, sid, id, "tools/call", json!({"name": "quick", "task": {}})).await;
    let Some(task) = created["result"]["task"]["taskId"].as_str() else {
        return Err(created["error"].clone());
    };
    for _ in 0..100 {
        let got = legacy_from(s, local, sid, id + 10_000, "tasks/get", json!({"taskId": task})).await;
        if got["result"]["status"] == "completed" {
            return Ok(task.to_owned());
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("task {task} did not complete");
}

#[tokio::test]
async fn anonymous_clients_keep_stored_tasks_per_address() {
    // Issue #43's first fairness leftover: one address's 1,100 finished tasks refused another
    // address's first task ("Too many stored tasks for this client, none of them finished"),
    // the bound counting every anonymous caller as one client and making room only among the
    // new caller's own tasks.
    bounded(async {
        let mut config = ServerConfig::default();
        config.max_stored_tasks_per_principal = 3;
        let engine = with_config(config);
        let def = mcp_protocol::model::ToolDef::new("quick")
            .with_task_support(mcp_protocol::task_mode::TaskSupport::Optional);
        let quick = |_: serde_json::Map<String, Value>, _: mcp_runtime::Ctx| async {
            Ok(mcp_protocol::model::CallToolResult::text("done"))
        };
        engine
            .registry()
            .add_tool(mcp_runtime::registry::ToolEntry::new(def, std::sync::Arc::new(quick), true, true).unwrap());
        let s = Server::serve_engine(engine, HttpConfig::default()).await;
        let (a, b): (std::net::IpAddr, std::net::IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        // The first address fills its share, over two sessions, then goes on: its own oldest
        // finished tasks make room.
        let (a1, a2) = (session_from(&s, a).await, session_from(&s, a).await);
        let mut mine = Vec::new();
        for i in 0..3 {
            mine.push(quick_task(&s, a, &a1, 1 + i).await.expect("within the bound"));
        }
        let newer = quick_task(&s, a, &a2, 10)
            .await
            .expect("room made from its own session's oldest");
        let first = legacy_from(&s, a, &a1, 11, "tasks/get", json!({"taskId": mine[0]})).await;
        assert_eq!(first["error"]["code"], -32602, "the oldest made room: {first}");
        // A client at another address has its own share, untouched by the first.
        let b1 = session_from(&s, b).await;
        let theirs = quick_task(&s, b, &b1, 20).await.expect("another address's first task");
        for i in 0..3 {
            quick_task(&s, b, &b1, 21 + i).await.expect("its whole share");
        }
        // Each address made room among its own tasks only.
        let gone = legacy_from(&s, b, &b1, 30, "tasks/get", json!({"taskId": theirs})).await;
        assert_eq!(gone["error"]["code"], -32602, "{gone}");
        for (sid, task) in [(&a1, &mine[2]), (&a2, &newer)] {
            let kept = legacy_from(&s, a, sid, 31, "tasks/get", json!({"taskId": task})).await;
            assert_eq!(
                kept["result"]["status"], "completed",
                "the first address kept its newest: {kept}"
            );
        }
    })
    .await;
}
