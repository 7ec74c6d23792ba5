//! The middleware chain through the facade: the middleware example's server (its `server()`, as
//! its `main` serves it) and servers of this file's own, with the in-process test client in both
//! eras, over stdio (`serve_io` on in-memory pipes) and over Streamable HTTP on a loopback port:
//! what a layer sees, in which order layers run, refusals with an HTTP status and headers,
//! answers given in place, data attached for the handler, `initialize` and notifications,
//! batches, and a layer that panics.

#![cfg(all(feature = "http", feature = "stdio"))]

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp_server::Middleware;
use mcp_server::prelude::*;
use mcp_server::testing::{ClientError, TestClient, text_of};
use support::{Answer, BOTH, Pipe, Running, SERVER_INFO, WAIT, bounded, init_params, modern_meta, rpc};
use tokio::sync::Semaphore;

mod support;

#[allow(dead_code)]
#[path = "../examples/middleware.rs"]
mod middleware;

fn hello() -> Tool {
    Tool::new("hello", "Says hello", |_args, _ctx| async { "hello" })
}

/// A shared log a layer or a handler writes to.
type Log<T> = Arc<Mutex<Vec<T>>>;

fn push<T>(log: &Log<T>, entry: T) {
    log.lock().expect("the log lock").push(entry);
}

fn take<T>(log: &Log<T>) -> Vec<T> {
    std::mem::take(&mut *log.lock().expect("the log lock"))
}

/// How an outcome ended, as a layer sees it.
fn ended(outcome: &Outcome) -> String {
    if outcome.is_accepted() {
        return "accepted".into();
    }
    if let Some(e) = outcome.rpc_error() {
        return format!("error {}", e.code);
    }
    if outcome.is_cancelled() {
        return "cancelled".into();
    }
    if outcome.is_stream() {
        return "stream".into();
    }
    "ok".into()
}

fn call_params(tool: &str, modern: bool) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if modern {
        params["_meta"] = modern_meta(json!({}));
    }
    params
}

// ----------------------------------------------------------------- the example

/// The example's own demo runs to its end (it fails on any unexpected answer).
#[tokio::test]
async fn the_example_demo_runs() {
    let server = middleware::server().expect("builds");
    bounded(middleware::demo(&server)).await.expect("the demo succeeds");
}

/// In both eras `hello` answers and `prompts/get` is refused with -32600 and the example's
/// message.
#[tokio::test]
async fn the_example_refuses_prompts_get_in_both_eras() {
    bounded(async {
        let server = middleware::server().expect("builds");
        for revision in BOTH {
            let client = server
                .test_client()
                .revision(revision)
                .connect()
                .await
                .expect("connects");
            let hello = client.call_tool("hello", json!({})).await.expect("hello");
            assert_eq!(text_of(&hello.content), "hello", "{revision}");
            let e = rpc(client.get_prompt("greeting", json!({})).await);
            assert_eq!(e.code, -32600, "{revision}: {e:?}");
            assert_eq!(e.message, middleware::REFUSAL, "{revision}");
            // The prompt itself is there: the layer refused it, not the catalog.
            let prompts = client.list_prompts().await.expect("prompts/list");
            assert_eq!(prompts.len(), 1, "{revision}");
        }
    })
    .await;
}

/// Over HTTP the example's refusal answers 403 in both eras; `hello` answers 200.
#[tokio::test]
async fn the_example_refusal_is_403_over_http() {
    bounded(async {
        let server = Running::start(middleware::server().expect("builds")).await;

        let session = server.legacy_session("2025-11-25").await;
        let hello = server
            .legacy(&session, 1, "tools/call", call_params("hello", false))
            .await;
        assert_eq!(hello.status, 200, "{hello:?}");
        assert_eq!(hello.message()["result"]["content"][0]["text"], "hello");
        let refused = server
            .legacy(&session, 2, "prompts/get", json!({"name": "greeting"}))
            .await;
        assert_eq!(refused.status, 403, "{refused:?}");
        assert_eq!(refused.message()["error"]["code"], -32600);
        assert_eq!(refused.message()["error"]["message"], middleware::REFUSAL);

        let hello = server
            .modern(3, "tools/call", json!({"name": "hello", "arguments": {}}), json!({}))
            .await;
        assert_eq!(hello.status, 200, "{hello:?}");
        assert_eq!(hello.message()["result"]["content"][0]["text"], "hello");
        let refused = server
            .modern(4, "prompts/get", json!({"name": "greeting"}), json!({}))
            .await;
        assert_eq!(refused.status, 403, "{refused:?}");
        assert_eq!(refused.message()["error"]["code"], -32600);
        assert_eq!(refused.message()["error"]["message"], middleware::REFUSAL);

        server.stop().await;
    })
    .await;
}

// -------------------------------------------------------------- what a layer sees

/// What a recording layer saw of one message.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    method: String,
    era: Era,
    principal: String,
    notification: bool,
    revision: Option<Revision>,
    session: bool,
}

fn seen(
    method: &str,
    era: Era,
    principal: &str,
    notification: bool,
    revision: Option<Revision>,
    session: bool,
) -> Seen {
    Seen {
        method: method.into(),
        era,
        principal: principal.into(),
        notification,
        revision,
        session,
    }
}

/// A server whose only layer records what it sees and how each message ended.
fn recording_server() -> (McpServer, Log<Seen>, Log<(String, String)>) {
    let saw: Log<Seen> = Arc::default();
    let ends: Log<(String, String)> = Arc::default();
    let (s, e) = (saw.clone(), ends.clone());
    let server = McpServer::builder()
        .name("recording")
        .version("1")
        .middleware(move |request: Inbound, next: Next| {
            let (saw, ends) = (s.clone(), e.clone());
            async move {
                let method = request.method().to_owned();
                push(
                    &saw,
                    Seen {
                        method: method.clone(),
                        era: request.era(),
                        principal: request.principal().to_owned(),
                        notification: request.is_notification(),
                        revision: request.revision(),
                        session: request.session_id().is_some(),
                    },
                );
                let outcome = next.run(request).await;
                push(&ends, (method, ended(&outcome)));
                outcome
            }
        })
        .tool(hello())
        .tool(Tool::new("fails", "Fails with -32602", |_args, _ctx| async {
            Err::<String, _>(HandlerError::Rpc(RpcError::invalid_params("nothing to fail on")))
        }))
        .build()
        .expect("builds");
    (server, saw, ends)
}

/// A layer sees every request and notification, with its era, principal, revision and
/// session, in order; and how each ended (a result, an error, an admitted notification).
#[tokio::test]
async fn a_layer_sees_every_request_and_notification_in_order() {
    bounded(async {
        let (server, saw, ends) = recording_server();

        let legacy = server
            .test_client()
            .revision(Revision::V2025_11_25)
            .principal("alice")
            .connect()
            .await
            .expect("connects");
        legacy.call_tool("hello", json!({})).await.expect("hello");
        assert_eq!(rpc(legacy.call_tool("fails", json!({})).await).code, -32602);

        let modern = server
            .test_client()
            .modern()
            .principal("bob")
            .connect()
            .await
            .expect("connects");
        modern.call_tool("hello", json!({})).await.expect("hello");

        let legacy_rev = Some(Revision::V2025_11_25);
        assert_eq!(
            take(&saw),
            vec![
                // `initialize` comes before negotiation, and mints the session.
                seen("initialize", Era::Legacy, "alice", false, None, false),
                seen(
                    "notifications/initialized",
                    Era::Legacy,
                    "alice",
                    true,
                    legacy_rev,
                    true
                ),
                seen("tools/call", Era::Legacy, "alice", false, legacy_rev, true),
                seen("tools/call", Era::Legacy, "alice", false, legacy_rev, true),
                seen(
                    "tools/call",
                    Era::Modern,
                    "bob",
                    false,
                    Some(Revision::V2026_07_28),
                    false
                ),
            ]
        );
        let end = |m: &str, e: &str| (m.to_owned(), e.to_owned());
        assert_eq!(
            take(&ends),
            vec![
                end("initialize", "ok"),
                end("notifications/initialized", "accepted"),
                end("tools/call", "ok"),
                end("tools/call", "error -32602"),
                end("tools/call", "ok"),
            ]
        );
    })
    .await;
}

/// A modern notification's revision is the one its `_meta` names, as `Inbound::revision`
/// documents ("the modern `_meta` one").
#[tokio::test]
async fn a_modern_notification_carries_its_meta_revision() {
    bounded(async {
        let (server, saw, _) = recording_server();
        let modern = server.test_client().modern().connect().await.expect("connects");
        modern
            .notify("notifications/roots/list_changed", json!({}))
            .await
            .expect("admitted");
        assert_eq!(
            take(&saw),
            vec![seen(
                "notifications/roots/list_changed",
                Era::Modern,
                "anonymous",
                true,
                Some(Revision::V2026_07_28),
                false
            )]
        );
    })
    .await;
}

// ------------------------------------------------------------------------- order

/// A layer written as a type implementing the trait.
struct Named {
    name: &'static str,
    log: Log<String>,
}

impl Middleware for Named {
    fn call(&self, request: Inbound, next: Next) -> std::pin::Pin<Box<dyn Future<Output = Outcome> + Send>> {
        let (name, log) = (self.name, self.log.clone());
        Box::pin(async move {
            push(&log, format!("{name} before"));
            let outcome = next.run(request).await;
            push(&log, format!("{name} after"));
            outcome
        })
    }
}

/// Layers run in the order they were added, the first outermost, around the handler; a
/// closure and a type implementing the trait chain alike.
#[tokio::test]
async fn the_first_layer_added_is_outermost() {
    bounded(async {
        let log: Log<String> = Arc::default();
        let outer = log.clone();
        let handler = log.clone();
        let server = McpServer::builder()
            .name("order")
            .version("1")
            .middleware(move |request: Inbound, next: Next| {
                let log = outer.clone();
                async move {
                    push(&log, "outer before".to_owned());
                    let outcome = next.run(request).await;
                    push(&log, "outer after".to_owned());
                    outcome
                }
            })
            .middleware(Named {
                name: "inner",
                log: log.clone(),
            })
            .tool(Tool::new("hello", "Says hello", move |_args, _ctx| {
                push(&handler, "handler".to_owned());
                async { "hello" }
            }))
            .build()
            .expect("builds");
        for revision in BOTH {
            let client = server
                .test_client()
                .revision(revision)
                .connect()
                .await
                .expect("connects");
            take(&log);
            client.call_tool("hello", json!({})).await.expect("hello");
            assert_eq!(
                take(&log),
                ["outer before", "inner before", "handler", "inner after", "outer after"],
                "{revision}"
            );
        }
    })
    .await;
}

// -------------------------------------------------- refusals with status and headers

/// Refuses `tools/call limited` with 429 and `Retry-After: 1`; adds `X-Rate-Remaining` to
/// the answers of the calls it lets through.
async fn rate_limit(request: Inbound, next: Next) -> Outcome {
    if request.tool_name().as_deref() == Some("limited") {
        return Outcome::error(RpcError::new(-32000, "Rate limited: retry in a second"))
            .with_status(429)
            .with_header("Retry-After", "1");
    }
    let call = request.method() == "tools/call";
    let outcome = next.run(request).await;
    if call {
        return outcome.with_header("x-rate-remaining", "9");
    }
    outcome
}

fn rate_limited_server() -> McpServer {
    McpServer::builder()
        .name("limited")
        .version("1")
        .middleware(rate_limit)
        .tool(hello())
        .tool(Tool::new("limited", "Never reached", |_args, _ctx| async { "reached" }))
        .build()
        .expect("builds")
}

fn assert_limited(answer: &Answer, id: u64) {
    assert_eq!(answer.status, 429, "{answer:?}");
    assert_eq!(answer.header("retry-after"), Some("1"), "{answer:?}");
    let error = &answer.message()["error"];
    assert_eq!(answer.message()["id"], id, "{answer:?}");
    assert_eq!(error["code"], -32000, "{answer:?}");
    assert_eq!(error["message"], "Rate limited: retry in a second");
}

/// Over real HTTP a layer's refusal answers with its status and header, in both eras; the
/// calls it lets through answer 200 without `Retry-After`, with the header the layer added
/// to their outcome.
#[tokio::test]
async fn a_refusal_carries_its_status_and_retry_after_over_http() {
    bounded(async {
        let server = Running::start(rate_limited_server()).await;

        let session = server.legacy_session("2025-11-25").await;
        let limited = server
            .legacy(&session, 1, "tools/call", call_params("limited", false))
            .await;
        assert_limited(&limited, 1);
        let hello = server
            .legacy(&session, 2, "tools/call", call_params("hello", false))
            .await;
        assert_eq!(hello.status, 200, "{hello:?}");
        assert_eq!(hello.header("retry-after"), None);
        assert_eq!(hello.header("x-rate-remaining"), Some("9"), "{hello:?}");
        assert_eq!(hello.message()["result"]["content"][0]["text"], "hello");

        let limited = server
            .modern(3, "tools/call", json!({"name": "limited", "arguments": {}}), json!({}))
            .await;
        assert_limited(&limited, 3);
        let hello = server
            .modern(4, "tools/call", json!({"name": "hello", "arguments": {}}), json!({}))
            .await;
        assert_eq!(hello.status, 200, "{hello:?}");
        assert_eq!(hello.header("retry-after"), None);
        assert_eq!(hello.header("x-rate-remaining"), Some("9"), "{hello:?}");

        server.stop().await;
    })
    .await;
}

/// The same layer over stdio answers the JSON-RPC error (there is no status there), in both
/// eras, and the server goes on serving.
#[tokio::test]
async fn the_same_refusal_over_stdio_is_a_json_rpc_error() {
    bounded(async {
        let server = rate_limited_server();
        let mut pipe = Pipe::start(&server);
        let init = pipe.handshake(1).await;
        assert!(init.get("result").is_some(), "{init}");
        let limited = pipe.call(2, "tools/call", call_params("limited", false)).await;
        assert_eq!(limited["error"]["code"], -32000, "{limited}");
        assert_eq!(limited["error"]["message"], "Rate limited: retry in a second");
        let hello = pipe.call(3, "tools/call", call_params("hello", false)).await;
        assert_eq!(hello["result"]["content"][0]["text"], "hello", "{hello}");
        pipe.finish().await;

        let mut pipe = Pipe::start(&server);
        let limited = pipe.call(1, "tools/call", call_params("limited", true)).await;
        assert_eq!(limited["error"]["code"], -32000, "{limited}");
        let hello = pipe.call(2, "tools/call", call_params("hello", true)).await;
        assert_eq!(hello["result"]["content"][0]["text"], "hello", "{hello}");
        assert_eq!(hello["result"]["resultType"], "complete", "{hello}");
        pipe.finish().await;
    })
    .await;
}

/// A notification a layer refuses is dropped: answered 202 like any notification over HTTP,
/// unless the layer gave the refusal a status, which is then answered with the error.
#[tokio::test]
async fn a_refused_notification_is_answered_only_with_a_status() {
    bounded(async {
        let server = McpServer::builder()
            .name("notes")
            .version("1")
            .middleware(|request: Inbound, next: Next| async move {
                match request.method() {
                    "notifications/roots/list_changed" => {
                        Outcome::error(RpcError::invalid_request("too many changes")).with_status(429)
                    }
                    "notifications/progress" => Outcome::error(RpcError::invalid_request("dropped")),
                    _ => next.run(request).await,
                }
            })
            .tool(hello())
            .build()
            .expect("builds");
        let server = Running::start(server).await;
        let session = server.legacy_session("2025-11-25").await;
        let refused = server
            .legacy_post(
                &session,
                &json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
            )
            .await;
        assert_eq!(refused.status, 429, "{refused:?}");
        assert_eq!(refused.message()["error"]["message"], "too many changes");
        let dropped = server
            .legacy_post(
                &session,
                &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}),
            )
            .await;
        assert_eq!(dropped.status, 202, "{dropped:?}");
        server.stop().await;
    })
    .await;
}

// ------------------------------------------------------------ answers and data

/// A layer answering a `tools/call` in place: the handler never runs, the legacy answer is
/// the layer's result as it is, the modern one is decorated like any other.
#[tokio::test]
async fn a_layer_answers_in_place_decorated_for_the_era() {
    bounded(async {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let server = McpServer::builder()
            .name("cache")
            .version("1")
            .middleware(|request: Inbound, next: Next| async move {
                if request.tool_name().as_deref() == Some("expensive") {
                    return Outcome::result(json!({"content": [{"type": "text", "text": "cached"}]}));
                }
                next.run(request).await
            })
            .tool(Tool::new("expensive", "Counts its runs", move |_args, _ctx| {
                counter.fetch_add(1, Ordering::SeqCst);
                async { "fresh" }
            }))
            .build()
            .expect("builds");
        for revision in BOTH {
            let client = server
                .test_client()
                .revision(revision)
                .connect()
                .await
                .expect("connects");
            let result = client
                .request("tools/call", json!({"name": "expensive", "arguments": {}}))
                .await
                .expect("answered");
            match revision.era() {
                Era::Legacy => assert_eq!(
                    result,
                    json!({"content": [{"type": "text", "text": "cached"}]}),
                    "{revision}"
                ),
                Era::Modern => {
                    assert_eq!(result["content"], json!([{"type": "text", "text": "cached"}]));
                    assert_eq!(result["resultType"], "complete", "{result}");
                    assert_eq!(result["_meta"][SERVER_INFO]["name"], "cache", "{result}");
                }
            }
            let typed = client
                .call_tool("expensive", json!({}))
                .await
                .expect("a CallToolResult");
            assert_eq!(text_of(&typed.content), "cached", "{revision}");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler never ran");
    })
    .await;
}

/// Data a layer attaches to the request.
#[derive(Debug, Clone)]
struct Tenant(String);

fn tenant_of(ctx: &Ctx) -> String {
    ctx.attachments()
        .get::<Tenant>()
        .map_or_else(|| "no tenant".to_owned(), |t| t.0.clone())
}

/// A layer attaches a value to the request; the tool's and a custom method's
/// handlers read it from their context, in both eras and over HTTP.
#[tokio::test]
async fn a_layer_attaches_data_for_the_handler() {
    bounded(async {
        let whoami = CustomMethod::new("com.example/whoami", |_params, ctx: Ctx| async move {
            Ok(json!({ "tenant": tenant_of(&ctx) }))
        })
        .expect("valid");
        let server = McpServer::builder()
            .name("tenants")
            .version("1")
            .middleware(|mut request: Inbound, next: Next| async move {
                let tenant = Tenant(format!("tenant of {}", request.principal()));
                request.attachments_mut().insert(tenant);
                next.run(request).await
            })
            .tool(Tool::new("tenant", "Names the tenant", |_args, ctx: Ctx| async move {
                tenant_of(&ctx)
            }))
            .method(whoami)
            .build()
            .expect("builds");
        for revision in BOTH {
            let client = TestClient::builder(&server)
                .revision(revision)
                .principal("alice")
                .connect()
                .await
                .expect("connects");
            let called = client.call_tool("tenant", json!({})).await.expect("tenant");
            assert_eq!(text_of(&called.content), "tenant of alice", "{revision}");
            let who = client.request("com.example/whoami", json!({})).await.expect("whoami");
            assert_eq!(who["tenant"], "tenant of alice", "{revision}");
        }

        let http = Running::start(server).await;
        let called = http
            .modern(1, "tools/call", json!({"name": "tenant", "arguments": {}}), json!({}))
            .await;
        assert_eq!(called.status, 200, "{called:?}");
        assert_eq!(called.message()["result"]["content"][0]["text"], "tenant of anonymous");
        http.stop().await;
    })
    .await;
}

// ----------------------------------------------------- initialize and notifications

/// Refuses `initialize` (every one, or only the first).
fn initialize_gate(only_first: bool) -> impl Middleware {
    let refused = Arc::new(AtomicBool::new(false));
    move |request: Inbound, next: Next| {
        let refused = refused.clone();
        async move {
            if request.method() == "initialize" && !(only_first && refused.swap(true, Ordering::SeqCst)) {
                return Outcome::error(RpcError::invalid_request("initialize is closed")).with_status(403);
            }
            next.run(request).await
        }
    }
}

fn gated_server(only_first: bool) -> McpServer {
    McpServer::builder()
        .name("gated")
        .version("1")
        .middleware(initialize_gate(only_first))
        .tool(hello())
        .build()
        .expect("builds")
}

/// A layer refusing `initialize` mints no session: the legacy test client cannot connect, an
/// HTTP client gets the layer's status and no `Mcp-Session-Id` (its next request is refused
/// for want of a session), and on stdio a later `initialize` the layer lets through starts the
/// one session of the connection (no "already initialized"). Modern clients are not affected.
#[tokio::test]
async fn a_refused_initialize_mints_no_session() {
    bounded(async {
        let server = gated_server(false);
        let e = rpc(server.test_client().legacy().connect().await);
        assert_eq!(e.code, -32600, "{e:?}");
        assert_eq!(e.message, "initialize is closed");
        let modern = server.test_client().modern().connect().await.expect("connects");
        modern.call_tool("hello", json!({})).await.expect("hello");

        let http = Running::start(server).await;
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params("2025-11-25")});
        let refused = http.post(&[], &init).await;
        assert_eq!(refused.status, 403, "{refused:?}");
        assert_eq!(refused.header("mcp-session-id"), None, "{refused:?}");
        assert_eq!(refused.message()["error"]["code"], -32600);
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call_params("hello", false)});
        let orphan = http.post(&[("MCP-Protocol-Version", "2025-11-25")], &call).await;
        assert_eq!(orphan.status, 400, "{orphan:?}");
        assert_eq!(orphan.message()["error"]["code"], -32600);
        assert_eq!(orphan.message()["error"]["message"], "Mcp-Session-Id header required");
        http.stop().await;

        let server = gated_server(true);
        let mut pipe = Pipe::start(&server);
        let first = pipe.call(1, "initialize", init_params("2025-11-25")).await;
        assert_eq!(first["error"]["code"], -32600, "{first}");
        let second = pipe.call(2, "initialize", init_params("2025-11-25")).await;
        assert_eq!(
            second["result"]["protocolVersion"], "2025-11-25",
            "the refused initialize left no session behind: {second}"
        );
        pipe.notify("notifications/initialized", json!({})).await;
        let hello = pipe.call(3, "tools/call", call_params("hello", false)).await;
        assert_eq!(hello["result"]["content"][0]["text"], "hello", "{hello}");
        pipe.finish().await;
    })
    .await;
}

/// A layer that lets `initialize` run and then answers an error instead: the client gets the
/// error and no session, and the session the handler started does not stay behind (with room
/// for one session, the next `initialize` is served).
#[tokio::test]
async fn an_initialize_turned_into_an_error_keeps_no_session() {
    bounded(async {
        let once = Arc::new(AtomicBool::new(false));
        let server = McpServer::builder()
            .name("one-session")
            .version("1")
            .max_sessions(1)
            .middleware(move |request: Inbound, next: Next| {
                let once = once.clone();
                async move {
                    let initialize = request.method() == "initialize";
                    let outcome = next.run(request).await;
                    if initialize && !once.swap(true, Ordering::SeqCst) {
                        return Outcome::error(RpcError::invalid_request("changed my mind")).with_status(403);
                    }
                    outcome
                }
            })
            .tool(hello())
            .build()
            .expect("builds");
        let http = Running::start(server).await;
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params("2025-11-25")});
        let refused = http.post(&[], &init).await;
        assert_eq!(refused.status, 403, "{refused:?}");
        assert_eq!(refused.header("mcp-session-id"), None, "{refused:?}");
        let second = http.post(&[], &init).await;
        assert_eq!(
            second.status, 200,
            "the first initialize left a session behind: {second:?}"
        );
        assert!(second.header("mcp-session-id").is_some(), "{second:?}");
        http.stop().await;
    })
    .await;
}

/// A `notifications/cancelled` a layer refuses is dropped: the call it names runs to its end.
/// The same notification let through cancels (so the refusal is what kept the call alive).
#[tokio::test]
async fn a_refused_cancellation_does_not_cancel() {
    bounded(async {
        let gate = Arc::new(Semaphore::new(0));
        let permits = gate.clone();
        let server = McpServer::builder()
            .name("cancel")
            .version("1")
            .middleware(|request: Inbound, next: Next| async move {
                let reason = request.params().and_then(|p| p.get("reason")).and_then(Value::as_str);
                if request.method() == "notifications/cancelled" && reason == Some("refuse me") {
                    return Outcome::error(RpcError::invalid_request("not cancellable"));
                }
                next.run(request).await
            })
            .tool(Tool::new(
                "wait",
                "Waits for the gate or its cancellation",
                move |_args, ctx: Ctx| {
                    let gate = permits.clone();
                    async move {
                        ctx.progress(0.0, None, Some("waiting")).await;
                        tokio::select! {
                            permit = gate.acquire() => {
                                permit.expect("the gate is open").forget();
                                "finished"
                            }
                            () = ctx.cancellation().cancelled() => "cancelled",
                        }
                    }
                },
            ))
            .build()
            .expect("builds");
        for revision in BOTH {
            let client = server
                .test_client()
                .revision(revision)
                .connect()
                .await
                .expect("connects");

            let call = client.start_call_tool("wait", json!({}));
            client
                .wait_for_notification("notifications/progress", WAIT)
                .await
                .expect("the handler runs");
            call.cancel(Some("refuse me"))
                .await
                .expect("a refused notification is dropped, not answered");
            gate.add_permits(1);
            let done = tokio::time::timeout(WAIT, call.outcome())
                .await
                .expect("the call ends")
                .expect("the call was not cancelled");
            assert_eq!(done.result["content"][0]["text"], "finished", "{revision}");

            let call = client.start_call_tool("wait", json!({}));
            client
                .wait_for_notification("notifications/progress", WAIT)
                .await
                .expect("the handler runs");
            call.cancel(Some("stop")).await.expect("sent");
            let done = tokio::time::timeout(WAIT, call.outcome()).await.expect("the call ends");
            assert_eq!(done, Err(ClientError::Cancelled), "{revision}");
        }
    })
    .await;
}

// ------------------------------------------------------------------------ batches

/// A 2025-03-26 batch over HTTP: each item goes through the chain on its own; the item a layer
/// refuses gets its error, the others their results, and the batch answers 200 whatever the
/// layer's status for its item.
#[tokio::test]
async fn batch_items_go_through_the_chain_one_by_one() {
    bounded(async {
        let saw: Log<(String, Option<String>)> = Arc::default();
        let log = saw.clone();
        let server = McpServer::builder()
            .name("batches")
            .version("1")
            .middleware(move |request: Inbound, next: Next| {
                let log = log.clone();
                async move {
                    let tool = request.tool_name().map(std::borrow::Cow::into_owned);
                    push(&log, (request.method().to_owned(), tool.clone()));
                    if tool.as_deref() == Some("forbidden") {
                        return Outcome::error(RpcError::invalid_request("forbidden tool")).with_status(403);
                    }
                    next.run(request).await
                }
            })
            .tool(hello())
            .tool(Tool::new("forbidden", "Never reached", |_args, _ctx| async {
                "reached"
            }))
            .build()
            .expect("builds");
        let http = Running::start(server).await;
        let session = http.legacy_session("2025-03-26").await;
        take(&saw);

        let batch = json!([
            {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": call_params("hello", false)},
            {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": call_params("forbidden", false)},
            {"jsonrpc": "2.0", "id": 12, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        ]);
        let answer = http.post(&[("Mcp-Session-Id", &session)], &batch).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let items = answer.message().as_array().expect("an array of answers").clone();
        assert_eq!(items.len(), 3, "{items:?}");
        let item = |id: u64| {
            items
                .iter()
                .find(|m| m["id"] == id)
                .unwrap_or_else(|| panic!("no answer to {id}: {items:?}"))
                .clone()
        };
        assert_eq!(item(10)["result"]["content"][0]["text"], "hello");
        assert_eq!(item(11)["error"]["code"], -32600);
        assert_eq!(item(11)["error"]["message"], "forbidden tool");
        assert_eq!(item(12)["result"], json!({}));

        let mut seen = take(&saw);
        seen.sort();
        let entry = |m: &str, t: Option<&str>| (m.to_owned(), t.map(str::to_owned));
        assert_eq!(
            seen,
            vec![
                entry("notifications/roots/list_changed", None),
                entry("ping", None),
                entry("tools/call", Some("forbidden")),
                entry("tools/call", Some("hello")),
            ]
        );
        http.stop().await;
    })
    .await;
}

// ------------------------------------------------------------------------ panics

fn panicking_server() -> McpServer {
    McpServer::builder()
        .name("panics")
        .version("1")
        .middleware(|request: Inbound, next: Next| async move {
            if request.tool_name().as_deref() == Some("boom") {
                panic!("the layer panicked on purpose");
            }
            next.run(request).await
        })
        .tool(hello())
        .tool(Tool::new("boom", "Never reached", |_args, _ctx| async { "reached" }))
        .build()
        .expect("builds")
}

/// A layer that panics is answered -32603, and the server keeps serving: with the test client
/// in both eras, over stdio and over HTTP.
#[tokio::test]
async fn a_panicking_layer_is_32603_and_the_server_keeps_serving() {
    bounded(async {
        let server = panicking_server();
        for revision in BOTH {
            let client = server
                .test_client()
                .revision(revision)
                .connect()
                .await
                .expect("connects");
            for _ in 0..2 {
                let e = rpc(client.call_tool("boom", json!({})).await);
                assert_eq!(e.code, -32603, "{revision}: {e:?}");
                let hello = client.call_tool("hello", json!({})).await.expect("still serving");
                assert_eq!(text_of(&hello.content), "hello", "{revision}");
            }
        }

        let mut pipe = Pipe::start(&server);
        pipe.handshake(1).await;
        for id in [2, 4] {
            let boom = pipe.call(id, "tools/call", call_params("boom", false)).await;
            assert_eq!(boom["error"]["code"], -32603, "{boom}");
            let hello = pipe.call(id + 1, "tools/call", call_params("hello", false)).await;
            assert_eq!(hello["result"]["content"][0]["text"], "hello", "{hello}");
        }
        pipe.finish().await;

        let http = Running::start(server).await;
        let boom = http
            .modern(1, "tools/call", json!({"name": "boom", "arguments": {}}), json!({}))
            .await;
        assert_eq!(boom.message()["error"]["code"], -32603, "{boom:?}");
        let hello = http
            .modern(2, "tools/call", json!({"name": "hello", "arguments": {}}), json!({}))
            .await;
        assert_eq!(hello.status, 200, "{hello:?}");
        assert_eq!(hello.message()["result"]["content"][0]["text"], "hello");
        http.stop().await;
    })
    .await;
}
