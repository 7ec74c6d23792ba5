//! Both eras against one server at the same time. A legacy client (an `initialize`d session,
//! tool calls, a progress stream, a server-to-client elicitation on the call's stream, the GET
//! stream) and a modern one (`server/discover`, the `_meta` envelope with the `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name` headers, an MRTR round trip through `requestState`, a progress
//! stream, `subscriptions/listen`) each run many requests concurrently with the other's. Every
//! answer must be of its own era: legacy results carry no `resultType`, modern ones do, no modern
//! answer carries `Mcp-Session-Id`, and the list changes that either client triggers reach both the
//! GET stream and the listen stream, which carry nothing else. Every wait is bounded.

#[path = "http/support.rs"]
#[allow(dead_code)] // the HTTP suite's helpers; this suite uses some of them
mod support;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::join_all;
use http::{Method, StatusCode};
use mcp_protocol::model::CallToolResult;
use mcp_runtime::mrtr::InputRequired;
use mcp_runtime::{Ctx, Engine, HandlerError, Registry, ServerConfig, ToolResult};
use mcp_transport_http::{HttpConfig, HttpError, serve};
use serde_json::{Map, Value, json};
use support::{Req, Resp, Server, Sse, bounded, tool};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Requests each client makes concurrently with its own others and with the other client's.
const ROUNDS: usize = 20;
/// Kinds of request each client cycles through; the last of each cycle triggers a list change.
const KINDS: usize = 5;
/// List changes in the whole run: each client triggers one per cycle.
const CHANGES: usize = 2 * ROUNDS / KINDS;
/// The listen request's id: the subscription id of every notification on its stream.
const LISTEN_ID: i64 = 1;
/// A bound on one request (with its stream) inside the test's overall bound.
const OP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stream must stay silent to count as carrying nothing more.
const QUIET: Duration = Duration::from_millis(300);

async fn echo(args: Map<String, Value>, _ctx: Ctx) -> ToolResult {
    Ok(CallToolResult::text(format!(
        "echo {}",
        args.get("n").unwrap_or(&Value::Null)
    )))
}

async fn progress(_args: Map<String, Value>, ctx: Ctx) -> ToolResult {
    for i in 1..=3 {
        ctx.progress(f64::from(i), Some(3.0), None).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(CallToolResult::text("progress done"))
}

/// Asks for a name through `ctx.input`: an MRTR round for a modern client (with its own state
/// sealed into `requestState`), a real `elicitation/create` on the call's stream for a legacy one.
async fn ask(args: Map<String, Value>, ctx: Ctx) -> ToolResult {
    let who = args.get("who").and_then(Value::as_str).unwrap_or_default().to_owned();
    let question = json!({
        "message": format!("Name for {who}?"),
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    });
    let request = InputRequired::new()
        .request("name", "elicitation/create", question)
        .with_state(json!({"who": who}));
    let answers = ctx.input(request).await?;
    let name = answers["name"]["content"]["name"].as_str().unwrap_or("?");
    let state = ctx.request_state().and_then(|s| s["who"].as_str()).unwrap_or("-");
    Ok(CallToolResult::text(format!("hello {name} (state {state})")))
}

/// A tool that adds a new tool `dynamic_N` on each call: one list change per call.
fn trigger(
    registry: Weak<Registry>,
) -> impl Fn(Map<String, Value>, Ctx) -> std::future::Ready<ToolResult> + Send + Sync + 'static {
    let added = Arc::new(AtomicUsize::new(0));
    move |_, _| {
        let Some(registry) = registry.upgrade() else {
            return std::future::ready(Err(HandlerError::internal("the server is gone")));
        };
        let name = format!("dynamic_{}", added.fetch_add(1, Ordering::SeqCst));
        registry.add_tool(tool(&name, json!({"type": "object"}), echo));
        std::future::ready(Ok(CallToolResult::text(format!("added {name}"))))
    }
}

fn runtime() -> (Engine, Arc<Registry>) {
    let registry = Arc::new(Registry::new());
    let object = json!({"type": "object"});
    registry.add_tool(tool("echo", object.clone(), echo));
    registry.add_tool(tool("progress", object.clone(), progress));
    registry.add_tool(tool(
        "ask",
        json!({"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}),
        ask,
    ));
    registry.add_tool(tool("trigger", object, trigger(Arc::downgrade(&registry))));
    (
        mcp_tests::engine::memory(ServerConfig::default(), registry.clone()),
        registry,
    )
}

/// The server: `serve` on `127.0.0.1:0`, with the suite's raw client pointed at it.
struct Fixture {
    server: Server,
    shutdown: CancellationToken,
    serving: JoinHandle<Result<(), HttpError>>,
}

impl Fixture {
    async fn start() -> Fixture {
        let (runtime, registry) = runtime();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shutdown = CancellationToken::new();
        let serving = tokio::spawn(serve(
            runtime.clone(),
            HttpConfig::default(),
            listener,
            shutdown.clone(),
        ));
        Fixture {
            server: Server::external(addr, "/mcp", runtime, registry),
            shutdown,
            serving,
        }
    }
}

/// Bounds one step of a client, naming it when it hangs.
async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(OP_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {OP_TIMEOUT:?}"))
}

/// The next message of a stream, bounded; SEP-1699 priming events (an id, no data) are skipped.
async fn next_event(sse: &mut Sse, what: &str) -> Value {
    within(what, async {
        loop {
            match sse.next().await {
                Some(e) if e.data.is_empty() => continue,
                Some(e) => return e.json(),
                None => panic!("{what}: the stream ended"),
            }
        }
    })
    .await
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The result of a legacy answer to request `id`: no error, and no `resultType`.
fn legacy_result(body: &Value, id: i64) -> Value {
    assert_eq!(body["id"], id, "{body}");
    let result = body.get("result").unwrap_or_else(|| panic!("no result: {body}"));
    assert!(
        result.get("resultType").is_none(),
        "a legacy result with resultType: {body}"
    );
    result.clone()
}

/// The result of a modern answer to request `id`: no error, and `resultType` is `kind`.
fn modern_result(body: &Value, id: i64, kind: &str) -> Value {
    assert_eq!(body["id"], id, "{body}");
    let result = body.get("result").unwrap_or_else(|| panic!("no result: {body}"));
    assert_eq!(result["resultType"], kind, "{body}");
    result.clone()
}

fn tools_call(id: i64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

/// A client of the handshake era: one session, its GET stream open beside the calls.
struct Legacy<'a> {
    s: &'a Server,
    sid: String,
}

impl<'a> Legacy<'a> {
    /// `initialize` (declaring elicitation) and `notifications/initialized`.
    async fn connect(s: &'a Server) -> Legacy<'a> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "eras-legacy", "version": "1"}
        }});
        let resp = within("legacy initialize", s.post(init).send()).await;
        assert_eq!(resp.status, StatusCode::OK);
        let sid = resp.header("mcp-session-id").expect("a session id").to_owned();
        let result = legacy_result(&resp.json().await, 0);
        assert_eq!(result["protocolVersion"], LEGACY);
        let legacy = Legacy { s, sid };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = within("legacy initialized", legacy.post(initialized).send()).await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        legacy
    }

    fn post(&self, body: Value) -> Req {
        self.s
            .post(body)
            .header("mcp-session-id", &self.sid)
            .header("mcp-protocol-version", LEGACY)
    }

    /// The GET stream, past its priming event.
    async fn get_stream(&self) -> Sse {
        let req = self
            .s
            .req(Method::GET)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.sid)
            .header("mcp-protocol-version", LEGACY);
        let resp = within("legacy GET", req.send()).await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut sse = resp.sse();
        let priming = within("legacy GET priming", sse.next()).await.expect("priming event");
        assert!(priming.data.is_empty(), "priming event with data: {}", priming.data);
        sse
    }

    /// A call answered as plain JSON.
    async fn call(&self, id: i64, name: &str, args: Value) -> Value {
        let resp = self.post(tools_call(id, name, args)).send().await;
        assert_eq!(resp.status, StatusCode::OK, "legacy {name}");
        assert_eq!(resp.header("content-type"), Some("application/json"), "legacy {name}");
        legacy_result(&resp.json().await, id)
    }

    /// Request `i` of the run.
    async fn op(&self, i: usize) {
        let id = 100 + i as i64;
        match i % KINDS {
            0 => {
                let result = self.call(id, "echo", json!({"n": i})).await;
                assert_eq!(text(&result), format!("echo {i}"));
            }
            1 => {
                let token = format!("L{i}");
                let mut body = tools_call(id, "progress", json!({}));
                body["params"]["_meta"] = json!({"progressToken": token});
                let resp = self.post(body).send().await;
                assert_eq!(resp.status, StatusCode::OK);
                let mut sse = resp.sse();
                for step in 1..=3 {
                    let e = next_event(&mut sse, "legacy progress").await;
                    assert_eq!(e["method"], "notifications/progress", "{e}");
                    assert_eq!(e["params"]["progressToken"], token, "another call's progress: {e}");
                    assert_eq!(e["params"]["progress"], f64::from(step), "{e}");
                }
                let last = next_event(&mut sse, "legacy progress response").await;
                assert_eq!(text(&legacy_result(&last, id)), "progress done");
                assert!(
                    sse.next_within(QUIET).await.is_none(),
                    "the call stream ends with its response"
                );
            }
            2 => {
                let who = format!("L{i}");
                let resp = self.post(tools_call(id, "ask", json!({"who": who}))).send().await;
                assert_eq!(resp.status, StatusCode::OK);
                let mut sse = resp.sse();
                let req = next_event(&mut sse, "legacy elicitation").await;
                assert_eq!(req["method"], "elicitation/create", "{req}");
                assert_eq!(
                    req["params"]["message"],
                    format!("Name for {who}?"),
                    "another call's question: {req}"
                );
                let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {
                    "action": "accept", "content": {"name": format!("name-{who}")}
                }});
                let posted = self.post(answer).send().await;
                assert_eq!(posted.status, StatusCode::ACCEPTED);
                let last = next_event(&mut sse, "legacy elicitation response").await;
                assert_eq!(text(&legacy_result(&last, id)), format!("hello name-{who} (state -)"));
            }
            3 => {
                let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
                let resp = self.post(list).send().await;
                assert_eq!(resp.status, StatusCode::OK);
                let result = legacy_result(&resp.json().await, id);
                assert!(
                    result.get("ttlMs").is_none() && result.get("cacheScope").is_none(),
                    "{result}"
                );
                assert!(result["tools"].as_array().is_some_and(|t| t.len() >= 4), "{result}");
            }
            _ => {
                let result = self.call(id, "trigger", json!({})).await;
                assert!(text(&result).starts_with("added dynamic_"), "{result}");
            }
        }
    }
}

/// A client of the 2026-07-28 era: no session, everything in `_meta` and the `Mcp-*` headers.
struct Modern<'a> {
    s: &'a Server,
}

impl Modern<'_> {
    /// A modern request: `_meta` carries the envelope (beside any `_meta` already in `params`),
    /// the headers mirror the version, the method and, when given, the name.
    fn post(&self, id: i64, method: &str, name: Option<&str>, params: Value) -> Req {
        let mut params = params;
        let meta = params
            .as_object_mut()
            .expect("params object")
            .entry("_meta")
            .or_insert_with(|| json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
        meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "eras-modern", "version": "1"});
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut req = self
            .s
            .post(body)
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method);
        if let Some(name) = name {
            req = req.header("mcp-name", name);
        }
        req
    }

    /// Sends a modern request; its answer never names a session.
    async fn send(&self, req: Req, what: &str) -> Resp {
        let resp = req.send().await;
        assert!(
            resp.header("mcp-session-id").is_none(),
            "{what}: a modern answer with Mcp-Session-Id"
        );
        resp
    }

    /// A request answered as plain JSON with `resultType` `kind`.
    async fn json(&self, id: i64, method: &str, name: Option<&str>, params: Value, kind: &str) -> Value {
        let resp = self.send(self.post(id, method, name, params), method).await;
        assert_eq!(resp.status, StatusCode::OK, "modern {method}");
        assert_eq!(resp.header("content-type"), Some("application/json"), "modern {method}");
        modern_result(&resp.json().await, id, kind)
    }

    /// `subscriptions/listen` for tool list changes, past its acknowledgement.
    async fn listen(&self) -> Sse {
        let params = json!({"notifications": {"toolsListChanged": true}});
        let req = self.post(LISTEN_ID, "subscriptions/listen", None, params);
        let resp = within("modern listen", self.send(req, "subscriptions/listen")).await;
        assert_eq!(resp.status, StatusCode::OK);
        assert_eq!(resp.header("x-accel-buffering"), Some("no"));
        let mut sse = resp.sse();
        let ack = next_event(&mut sse, "listen acknowledgement").await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], LISTEN_ID, "{ack}");
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true}),
            "{ack}"
        );
        sse
    }

    /// Request `i` of the run.
    async fn op(&self, i: usize) {
        let id = 100 + i as i64;
        match i % KINDS {
            0 => {
                let params = json!({"name": "echo", "arguments": {"n": i}});
                let result = self.json(id, "tools/call", Some("echo"), params, "complete").await;
                assert_eq!(text(&result), format!("echo {i}"));
            }
            1 => {
                let token = format!("M{i}");
                let params = json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": token}});
                let resp = self
                    .send(self.post(id, "tools/call", Some("progress"), params), "progress")
                    .await;
                assert_eq!(resp.status, StatusCode::OK);
                let mut sse = resp.sse();
                for step in 1..=3 {
                    let e = next_event(&mut sse, "modern progress").await;
                    assert_eq!(e["method"], "notifications/progress", "{e}");
                    assert_eq!(e["params"]["progressToken"], token, "another call's progress: {e}");
                    assert_eq!(e["params"]["progress"], f64::from(step), "{e}");
                }
                let last = next_event(&mut sse, "modern progress response").await;
                assert_eq!(text(&modern_result(&last, id, "complete")), "progress done");
                assert!(
                    sse.next_within(QUIET).await.is_none(),
                    "the call stream ends with its response"
                );
            }
            2 => {
                let who = format!("M{i}");
                let params = json!({"name": "ask", "arguments": {"who": who}});
                let first = self
                    .json(id, "tools/call", Some("ask"), params.clone(), "input_required")
                    .await;
                assert!(first.get("content").is_none(), "{first}");
                assert!(first.get("ttlMs").is_none(), "no cache hint on input_required: {first}");
                let asked = &first["inputRequests"]["name"];
                assert_eq!(asked["method"], "elicitation/create", "{first}");
                assert_eq!(asked["params"]["message"], format!("Name for {who}?"), "{first}");
                let state = first["requestState"].as_str().expect("requestState").to_owned();
                let mut retry = params;
                retry["inputResponses"] =
                    json!({"name": {"action": "accept", "content": {"name": format!("name-{who}")}}});
                retry["requestState"] = json!(state);
                let done = self.json(id + 1000, "tools/call", Some("ask"), retry, "complete").await;
                assert_eq!(text(&done), format!("hello name-{who} (state {who})"));
            }
            3 => {
                let result = self.json(id, "server/discover", None, json!({}), "complete").await;
                assert!(
                    result["supportedVersions"]
                        .as_array()
                        .is_some_and(|v| v.contains(&json!(MODERN))),
                    "{result}"
                );
            }
            _ => {
                let params = json!({"name": "trigger", "arguments": {}});
                let result = self.json(id, "tools/call", Some("trigger"), params, "complete").await;
                assert!(text(&result).starts_with("added dynamic_"), "{result}");
            }
        }
    }
}

/// Reads the `CHANGES` list changes of a stream, then checks that it stays silent. `subscription`
/// is the id every notification must carry (`None` on the GET stream, which carries none).
async fn expect_changes(sse: &mut Sse, what: &str, subscription: Option<i64>) {
    for n in 0..CHANGES {
        let e = next_event(sse, &format!("{what}: list change {n}")).await;
        assert_eq!(e["method"], "notifications/tools/list_changed", "{what} carries {e}");
        assert!(e.get("id").is_none(), "{what} carries a request or response: {e}");
        let stamped = e["params"]["_meta"].get(SUBSCRIPTION_ID);
        match subscription {
            Some(id) => assert_eq!(stamped, Some(&json!(id)), "{what}: {e}"),
            None => assert!(stamped.is_none(), "{what}: {e}"),
        }
    }
    if let Some(extra) = sse.next_within(QUIET).await {
        panic!("{what} carries more than the {CHANGES} list changes: {}", extra.data);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_and_modern_clients_share_one_server() {
    bounded(async {
        let f = Fixture::start().await;
        let s = &f.server;
        let legacy = Legacy::connect(s).await;
        let mut get = legacy.get_stream().await;
        let modern = Modern { s };
        let mut listen = modern.listen().await;

        tokio::join!(
            join_all((0..ROUNDS).map(|i| within("a legacy request", legacy.op(i)))),
            join_all((0..ROUNDS).map(|i| within("a modern request", modern.op(i)))),
        );

        expect_changes(&mut get, "the legacy GET stream", None).await;
        expect_changes(&mut listen, "the modern listen stream", Some(LISTEN_ID)).await;

        // Both eras see every tool the triggers added.
        let dynamic = |tools: &Value| {
            tools.as_array().map_or(0, |t| {
                t.iter()
                    .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("dynamic_")))
                    .count()
            })
        };
        let modern_list = modern.json(2, "tools/list", None, json!({}), "complete").await;
        assert_eq!(dynamic(&modern_list["tools"]), CHANGES, "{modern_list}");
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        let legacy_list = legacy_result(
            &within("legacy tools/list", legacy.post(list).send()).await.json().await,
            1,
        );
        assert_eq!(dynamic(&legacy_list["tools"]), CHANGES, "{legacy_list}");
        assert_eq!(s.engine.session_count(), 1, "only the legacy client has a session");

        // A graceful shutdown completes the subscription and ends the GET stream.
        f.shutdown.cancel();
        let completion = next_event(&mut listen, "listen completion").await;
        assert_eq!(completion["id"], LISTEN_ID, "{completion}");
        assert_eq!(completion["result"]["resultType"], "complete", "{completion}");
        assert!(
            within("listen end", listen.next()).await.is_none(),
            "the listen stream ends"
        );
        assert!(within("GET end", get.next()).await.is_none(), "the GET stream ends");
        within("serve", f.serving)
            .await
            .expect("serve task")
            .expect("clean shutdown");
    })
    .await;
}
