//! The Streamable HTTP transport: legacy sessions and streams, modern requests on the same
//! endpoint, and the checks that come before any handler. Every test runs a real server on
//! `127.0.0.1:0` and bounds itself with a timeout.
//!
//! This file holds the session and call tests; `http/checks.rs` the checks before any handler
//! (both eras); `http/limits.rs` every limit; `http/budgets.rs` the stream budget, which never
//! starves calls; `http/open_stream.rs` a silent modern call's stream opened early;
//! `http/ownership.rs` session ownership of client
//! responses; `http/resume.rs` SEP-1699 resumable POST streams; `http/pair.rs` the 2024-11-05
//! HTTP+SSE pair, `http/pair_shared.rs` the pair across instances on one store; `http/ratelimit.rs` the built-in rate limits; `http/secure_params.rs` SEP-3221's secure parameters; `http/events_catalog.rs` event types added and withdrawn at run time; `http/simple.rs` the simple POST mode; `http/protocols.rs` HTTP/2 and TLS;
//! `http/scaleout.rs` several instances behind a round-robin proxy (both
//! stores); `http/serving.rs` shutdown, embedding, middleware extensions, the RFC 9728 document and auth
//! challenges; `http/support.rs` the server, client and SSE reader.

#[path = "http/bounds.rs"]
mod bounds;
#[path = "http/budgets.rs"]
mod budgets;
#[path = "http/checks.rs"]
mod checks;
#[path = "http/events_catalog.rs"]
mod events_catalog;
#[path = "http/hardening.rs"]
mod hardening;
#[path = "http/limits.rs"]
mod limits;
#[path = "http/open_stream.rs"]
mod open_stream;
#[path = "http/ownership.rs"]
mod ownership;
#[path = "http/pair.rs"]
mod pair;
#[path = "http/pair_shared.rs"]
mod pair_shared;
#[path = "http/protocols.rs"]
mod protocols;
#[path = "http/ratelimit.rs"]
mod ratelimit;
#[path = "http/resume.rs"]
mod resume;
#[path = "http/scaleout.rs"]
mod scaleout;
#[path = "http/secure_params.rs"]
mod secure_params;
#[path = "http/serving.rs"]
mod serving;
#[path = "http/simple.rs"]
mod simple;
#[path = "http/support.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_protocol::model::CallToolResult;
use mcp_runtime::Ctx;
use mcp_transport_http::HttpConfig;
use serde_json::{Map, Value, json};
use support::{NamedUsers, Server, bounded, call, list, modern, modern_call, tool};

#[tokio::test]
async fn initialize_mints_a_session() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        assert!(sid.starts_with("mcp_") && sid.len() == 36, "{sid}");
        let resp = s.post(list(1)).header("mcp-session-id", &sid).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let body = resp.json().await;
        assert_eq!(body["id"], 1);
        assert!(
            body["result"]["tools"].as_array().is_some_and(|t| t.len() == 6),
            "{body}"
        );
    })
    .await;
}

#[tokio::test]
async fn requests_need_a_known_session() {
    bounded(async {
        let s = Server::default_config().await;
        let resp = s.post(list(1)).send().await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST);
        let body = resp.json().await;
        assert_eq!(body["error"]["code"], -32600);
        assert_eq!(body["id"], 1);

        let unknown = s
            .post(list(2))
            .header("mcp-session-id", "mcp_00000000000000000000000000000000")
            .send()
            .await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
        let unknown_body = unknown.json().await;

        let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}
        }});
        let reinit = s.post(init).header("mcp-session-id", "mcp_nope").send().await;
        assert_eq!(reinit.status, StatusCode::NOT_FOUND);
        assert_eq!(reinit.json().await, unknown_body, "every unknown session answers alike");
    })
    .await;
}

#[tokio::test]
async fn another_principals_session_is_not_found() {
    bounded(async {
        let s = Server::start(HttpConfig::default().auth(Arc::new(NamedUsers))).await;
        let anonymous = s.post(list(1)).send().await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
        assert_eq!(anonymous.header("www-authenticate"), Some("Bearer realm=\"mcp\""));
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}
        }});
        let alice = s.post(init).header("authorization", "Bearer alice").send().await;
        let sid = alice.header("mcp-session-id").expect("session").to_owned();
        let as_bob = |r: support::Req| r.header("authorization", "Bearer bob").header("mcp-session-id", &sid);
        let post = as_bob(s.post(list(1))).send().await;
        assert_eq!(post.status, StatusCode::NOT_FOUND);
        let stranger = s
            .post(list(1))
            .header("authorization", "Bearer bob")
            .header("mcp-session-id", "mcp_x");
        assert_eq!(
            post.json().await,
            stranger.send().await.json().await,
            "the same 404 as an unknown id"
        );
        let get = as_bob(s.req(Method::GET))
            .header("accept", "text/event-stream")
            .send()
            .await;
        assert_eq!(get.status, StatusCode::NOT_FOUND);
        assert_eq!(as_bob(s.req(Method::DELETE)).send().await.status, StatusCode::NOT_FOUND);
        let mine = s
            .post(list(2))
            .header("authorization", "Bearer alice")
            .header("mcp-session-id", &sid);
        assert_eq!(mine.send().await.status, StatusCode::OK, "the owner still has it");
    })
    .await;
}

#[tokio::test]
async fn delete_ends_the_session() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let del = s.req(Method::DELETE).header("mcp-session-id", &sid).send().await;
        assert_eq!(del.status, StatusCode::NO_CONTENT);
        let after = s.post(list(1)).header("mcp-session-id", &sid).send().await;
        assert_eq!(after.status, StatusCode::NOT_FOUND);
        let again = s.req(Method::DELETE).header("mcp-session-id", &sid).send().await;
        assert_eq!(again.status, StatusCode::NOT_FOUND);
        let missing = s.req(Method::DELETE).send().await;
        assert_eq!(missing.status, StatusCode::BAD_REQUEST);
        assert_eq!(s.engine.session_count(), 0);
    })
    .await;
}

#[tokio::test]
async fn notifications_and_responses_get_202() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"});
        let resp = s.post(note).header("mcp-session-id", &sid).send().await;
        assert_eq!(resp.status, StatusCode::ACCEPTED);
        assert!(resp.bytes().await.is_empty());
        // A response to nothing pending, and one naming no session: the same 202.
        let stray = json!({"jsonrpc": "2.0", "id": "s2c-99", "result": {}});
        assert_eq!(
            s.post(stray.clone()).header("mcp-session-id", &sid).send().await.status,
            StatusCode::ACCEPTED
        );
        assert_eq!(
            s.post(stray).header("mcp-session-id", "mcp_x").send().await.status,
            StatusCode::ACCEPTED
        );
    })
    .await;
}

#[tokio::test]
async fn progress_streams_sse_ending_with_the_response() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let body = call(7, "progress", Some(json!({"progressToken": "p1"})));
        let resp = s.post(body).header("mcp-session-id", &sid).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut sse = resp.sse();
        let priming = sse.next().await.expect("priming event");
        assert!(
            priming.data.is_empty() && priming.retry.is_some(),
            "SEP-1699 priming first"
        );
        let prime_id = priming.id.expect("priming id");
        assert!(prime_id.ends_with("-0"), "{prime_id}");
        for i in 1..=3 {
            let e = sse.next().await.expect("progress event");
            let stream = prime_id.trim_end_matches("-0");
            assert_eq!(e.id, Some(format!("{stream}-{i}")), "ids name the stream");
            let e = e.json();
            assert_eq!(e["method"], "notifications/progress");
            assert_eq!(e["params"]["progressToken"], "p1");
            assert_eq!(e["params"]["progress"], f64::from(i));
        }
        let last = sse.next().await.expect("response").json();
        assert_eq!(last["id"], 7);
        assert_eq!(last["result"]["content"][0]["text"], "progress done");
        assert!(sse.next().await.is_none(), "the stream ends after the response");
    })
    .await;
}

#[tokio::test]
async fn legacy_sampling_travels_on_the_call_stream() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let resp = s
            .post(call(3, "sample", None))
            .header("mcp-session-id", &sid)
            .send()
            .await;
        let mut sse = resp.sse();
        let req = sse.message().await.expect("sampling request");
        assert_eq!(req["method"], "sampling/createMessage");
        let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"
        }});
        let posted = s.post(answer).header("mcp-session-id", &sid).send().await;
        assert_eq!(posted.status, StatusCode::ACCEPTED);
        let last = sse.next().await.expect("response").json();
        assert_eq!(last["id"], 3);
        assert_eq!(last["result"]["content"][0]["text"], "LLM said: hello");
    })
    .await;
}

#[tokio::test]
async fn cancellation_answers_an_empty_200() {
    bounded(async {
        let s = Arc::new(Server::default_config().await);
        let sid = s.initialize().await;
        let running = {
            let (s, sid) = (s.clone(), sid.clone());
            tokio::spawn(async move {
                s.post(call(9, "slow", None))
                    .header("mcp-session-id", &sid)
                    .send()
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
        assert_eq!(
            s.post(cancel).header("mcp-session-id", &sid).send().await.status,
            StatusCode::ACCEPTED
        );
        let resp = running.await.expect("task");
        assert_eq!(resp.status, StatusCode::OK);
        assert!(resp.bytes().await.is_empty());
    })
    .await;
}

#[tokio::test]
async fn get_stream_carries_list_changed_and_replays() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let missing = s.req(Method::GET).header("accept", "text/event-stream").send().await;
        assert_eq!(missing.status, StatusCode::BAD_REQUEST);
        let unknown = s
            .req(Method::GET)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", "mcp_x")
            .send()
            .await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);

        let open = || {
            s.req(Method::GET)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &sid)
        };
        let mut stream = open().send().await.sse();
        let priming = stream.next().await.expect("priming event");
        assert!(priming.retry.is_some() && priming.data.is_empty());
        let prime_id = priming.id.expect("priming id");

        async fn ok(_: Map<String, Value>, _: Ctx) -> mcp_runtime::ToolResult {
            Ok(CallToolResult::text("new"))
        }
        s.registry.add_tool(tool("added", json!({"type": "object"}), ok));
        let changed = stream.next().await.expect("list changed");
        assert_eq!(changed.json()["method"], "notifications/tools/list_changed");
        let changed_id = changed.id.expect("event id");
        drop(stream);

        // Resume from the priming id: the list change is replayed.
        let mut resumed = open().header("last-event-id", &prime_id).send().await.sse();
        let replayed = resumed.next().await.expect("replayed event");
        assert_eq!(replayed.id.as_deref(), Some(changed_id.as_str()));
        assert_eq!(replayed.json()["method"], "notifications/tools/list_changed");
        drop(resumed);

        // An id outside the window: one truncation notice.
        let mut lost = open().header("last-event-id", "999999").send().await.sse();
        let notice = lost.next().await.expect("truncation notice");
        assert_eq!(notice.json()["method"], "notifications/replay_truncated");
    })
    .await;
}

#[tokio::test]
async fn sessionless_server_refuses_get_and_delete() {
    bounded(async {
        let s = Server::start(HttpConfig::default().sessions_enabled(false)).await;
        let get = s.req(Method::GET).header("accept", "text/event-stream").send().await;
        assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(get.header("allow"), Some("POST, OPTIONS"));
        assert_eq!(
            s.req(Method::DELETE).send().await.status,
            StatusCode::METHOD_NOT_ALLOWED
        );
        let resp = s.post(list(1)).send().await;
        assert_eq!(resp.status, StatusCode::OK, "legacy requests run sessionless");
    })
    .await;
}

#[tokio::test]
async fn batches_follow_the_revision() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let batch = json!([list(1), {"jsonrpc": "2.0", "method": "notifications/initialized"}, list(2)]);
        let old = s
            .post(batch.clone())
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-03-26")
            .send()
            .await;
        assert_eq!(old.status, StatusCode::OK);
        let answers = old.json().await;
        assert_eq!(answers.as_array().map(Vec::len), Some(2), "{answers}");
        let new = s
            .post(batch)
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await;
        assert_eq!(new.status, StatusCode::BAD_REQUEST);
        let bogus = s
            .post(list(3))
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "1999-01-01")
            .send()
            .await;
        assert_eq!(bogus.status, StatusCode::BAD_REQUEST);
    })
    .await;
}

#[tokio::test]
async fn modern_listen_streams_list_changes() {
    bounded(async {
        let s = Server::default_config().await;
        let params = json!({"notifications": {"toolsListChanged": true, "unknownKey": true}});
        let resp = s
            .post(modern(5, "subscriptions/listen", params))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .send()
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut stream = resp.sse();
        let ack = stream.next().await.expect("acknowledgement").json();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}));
        assert!(
            stream.next_within(Duration::from_millis(100)).await.is_none(),
            "nothing before a change"
        );

        async fn ok(_: Map<String, Value>, _: Ctx) -> mcp_runtime::ToolResult {
            Ok(CallToolResult::text("new"))
        }
        s.registry.add_tool(tool("added_later", json!({"type": "object"}), ok));
        let changed = stream.next().await.expect("list changed").json();
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 5);
        assert_eq!(s.engine.session_count(), 0, "modern requests never mint sessions");
    })
    .await;
}

/// A panic payload that panics again when it is dropped, `depth` times over, the last time with
/// `detail` as its message: each guard of the runtime that catches a handler's panic drops what
/// it caught, and so panics outside itself. Past the runtime's two guards (the tool's run, the
/// request's dispatch) the request task itself fails, with `detail` in its `JoinError`.
struct PanicsWhenDropped {
    depth: u32,
    detail: &'static str,
}

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        match self.depth {
            0 => {}
            1 => panic!("{}", self.detail),
            n => std::panic::panic_any(PanicsWhenDropped {
                depth: n - 1,
                detail: self.detail,
            }),
        }
    }
}

#[tokio::test]
async fn a_failed_request_task_is_answered_500_without_its_detail() {
    bounded(async {
        let s = Server::default_config().await;
        async fn fails(_: Map<String, Value>, _: Ctx) -> mcp_runtime::ToolResult {
            // Past the first poll: the call runs in a task of its own.
            tokio::time::sleep(Duration::from_millis(20)).await;
            std::panic::panic_any(PanicsWhenDropped {
                depth: 2,
                detail: "secret-detail",
            })
        }
        s.registry.add_tool(tool("fails", json!({"type": "object"}), fails));
        let sid = s.initialize().await;
        let legacy = s.post(call(7, "fails", None)).header("mcp-session-id", &sid).send();
        let modern = modern_call(&s, 8, "fails", false).send();
        for (id, resp) in [(7, legacy.await), (8, modern.await)] {
            assert_eq!(resp.status, StatusCode::INTERNAL_SERVER_ERROR, "call {id}");
            assert_eq!(resp.header("content-type"), Some("application/json"));
            let body = resp.bytes().await;
            let text = String::from_utf8_lossy(&body);
            assert!(!text.contains("secret") && !text.contains("panic"), "{text}");
            let body: Value = serde_json::from_slice(&body).expect("JSON");
            assert_eq!(
                body,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Internal error"}}),
            );
        }
        // The server still serves.
        let ok = s.post(list(9)).header("mcp-session-id", &sid).send().await;
        assert_eq!(ok.status, StatusCode::OK);
    })
    .await;
}

/// What the `watched` tool saw: it started, then whether its cancellation came (within 10 s).
struct Watch {
    started: tokio::sync::mpsc::UnboundedReceiver<()>,
    ended: tokio::sync::mpsc::UnboundedReceiver<bool>,
}

/// Adds the `watched` tool: it reports progress (when the call asked for it), says it started,
/// then waits for its cancellation.
fn watched(s: &Server) -> Watch {
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel();
    let (ended_tx, ended) = tokio::sync::mpsc::unbounded_channel();
    s.registry.add_tool(tool(
        "watched",
        json!({"type": "object"}),
        move |_: Map<String, Value>, ctx: Ctx| {
            let (started, ended) = (started_tx.clone(), ended_tx.clone());
            async move {
                ctx.progress(1.0, None, None).await;
                let _ = started.send(());
                let cancelled = tokio::select! {
                    () = ctx.cancellation().cancelled() => true,
                    () = tokio::time::sleep(Duration::from_secs(10)) => false,
                };
                let _ = ended.send(cancelled);
                Ok(CallToolResult::text("watched done"))
            }
        },
    ));
    Watch { started, ended }
}

#[tokio::test]
async fn a_modern_client_that_disconnects_cancels_its_handler() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    bounded(async {
        let s = Server::default_config().await;
        let mut watch = watched(&s);

        // Gone before any answer: the response was not even started.
        let mut tcp = support::raw(s.addr).await;
        let request = modern_call(&s, 1, "watched", false).raw_bytes();
        tcp.write_all(&request).await.expect("write");
        watch.started.recv().await.expect("the handler started");
        drop(tcp);
        let cancelled = tokio::time::timeout(Duration::from_secs(5), watch.ended.recv()).await;
        assert_eq!(cancelled.ok().flatten(), Some(true), "the handler saw its cancellation");

        // Gone while its SSE stream is open (the call reported progress first).
        let mut tcp = support::raw(s.addr).await;
        let request = modern_call(&s, 2, "watched", true).raw_bytes();
        tcp.write_all(&request).await.expect("write");
        watch.started.recv().await.expect("the handler started");
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("notifications/progress") {
            let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
                .await
                .expect("the progress event")
                .expect("read");
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
        drop(tcp);
        let cancelled = tokio::time::timeout(Duration::from_secs(5), watch.ended.recv()).await;
        assert_eq!(
            cancelled.ok().flatten(),
            Some(true),
            "the streaming handler saw its cancellation"
        );
    })
    .await;
}

#[tokio::test]
async fn activity_postpones_a_sessions_expiry() {
    bounded(async {
        let mut config = mcp_runtime::ServerConfig::default();
        config.session_ttl = Duration::from_millis(600);
        let (runtime, _) = support::engine_with(config);
        let http = HttpConfig::default().session_sweep_interval(Duration::from_millis(50));
        let s = Server::serve_engine(runtime, http).await;
        let used = s.initialize().await;
        let idle = s.initialize().await;
        // Used every 150 ms for 1.5 s, two and a half times its TTL.
        for i in 0..10 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            let resp = s.post(list(i)).header("mcp-session-id", &used).send().await;
            assert_eq!(
                resp.status,
                StatusCode::OK,
                "the session in use, after {} ms",
                150 * (i + 1)
            );
        }
        let idle_resp = s.post(list(20)).header("mcp-session-id", &idle).send().await;
        assert_eq!(idle_resp.status, StatusCode::NOT_FOUND, "the idle session was swept");
        let used_resp = s.post(list(21)).header("mcp-session-id", &used).send().await;
        assert_eq!(used_resp.status, StatusCode::OK);
    })
    .await;
}

#[tokio::test]
async fn a_newer_get_stream_replaces_the_older() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let open = || async {
            let resp = s
                .req(Method::GET)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &sid)
                .send()
                .await;
            assert_eq!(resp.status, StatusCode::OK);
            let mut sse = resp.sse();
            let priming = sse.next().await.expect("priming event");
            assert!(priming.data.is_empty());
            sse
        };
        let mut older = open().await;
        let mut newer = open().await;
        let ended = tokio::time::timeout(Duration::from_secs(5), older.next()).await;
        assert!(
            matches!(ended, Ok(None)),
            "the older stream ends once a newer one opens: {ended:?}"
        );

        async fn ok(_: Map<String, Value>, _: Ctx) -> mcp_runtime::ToolResult {
            Ok(CallToolResult::text("new"))
        }
        s.registry.add_tool(tool("added", json!({"type": "object"}), ok));
        let changed = newer.next().await.expect("the change, on the newer stream");
        assert_eq!(changed.json()["method"], "notifications/tools/list_changed");
    })
    .await;
}
