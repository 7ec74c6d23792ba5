//! The stdio transport, driven through in-memory pipes: framing, error
//! answers, bounds, cancellation, shutdown, both eras on one process,
//! batches and list-changed notifications.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::{Ctx, Engine, Registry, ServerConfig, ToolResult};
use mcp_transport_stdio::{StdioConfig, StdioError, serve_io};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

/// Bound on any single wait.
const WAIT: Duration = Duration::from_secs(5);
/// Bound on a whole test.
const TEST: Duration = Duration::from_secs(20);

const MODERN: &str = "2026-07-28";

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(TEST, f).await.expect("test timed out")
}

// ---------------------------------------------------------------- fixture

/// A runtime with the test tools, and the levers of the slow tool.
struct Fixture {
    registry: Arc<Registry>,
    runtime: Engine,
    /// Each permit lets one slow call finish.
    gate: Arc<Semaphore>,
    /// The slow tool reports its `tag` argument when it starts.
    started: mpsc::UnboundedReceiver<String>,
}

impl Fixture {
    fn new() -> Self {
        let registry = Arc::new(Registry::new());
        let gate = Arc::new(Semaphore::new(0));
        let (started_tx, started) = mpsc::unbounded_channel();
        registry.add_tool(entry("echo", "Echoes `text`", echo));
        registry.add_resource(mcp_tests::catalog::text_resource("file:///watched", "watched"));
        let g = gate.clone();
        registry.add_tool(entry(
            "slow",
            "Waits for the test's gate or its cancellation",
            move |args: Map<String, Value>, ctx: Ctx| {
                let gate = g.clone();
                let started = started_tx.clone();
                async move {
                    let tag = arg(&args, "tag");
                    let _ = started.send(tag.clone());
                    tokio::select! {
                        permit = gate.acquire() => {
                            permit.expect("gate open").forget();
                            Ok(CallToolResult::text(format!("released {tag}")))
                        }
                        () = ctx.cancellation().cancelled() => Ok(CallToolResult::text("cancelled")),
                    }
                }
            },
        ));
        registry.add_tool(entry("panic", "Panics", panics));
        registry.add_tool(entry("progress", "Reports progress", progress));
        registry.add_tool(entry("sample", "Asks the client's model", sample));
        let runtime = mcp_tests::engine::memory(ServerConfig::default(), registry.clone());
        Fixture {
            registry,
            runtime,
            gate,
            started,
        }
    }

    fn client(&self, config: StdioConfig) -> Client {
        Client::start(self.runtime.clone(), config)
    }

    async fn started(&mut self) -> String {
        tokio::time::timeout(WAIT, self.started.recv())
            .await
            .expect("the slow tool did not start")
            .expect("started channel open")
    }
}

fn entry<H: mcp_runtime::handler::ToolHandler>(name: &str, description: &str, h: H) -> ToolEntry {
    ToolEntry::new(
        ToolDef::new(name).with_description(description),
        Arc::new(h),
        true,
        true,
    )
    .expect("valid tool")
}

fn arg(args: &Map<String, Value>, key: &str) -> String {
    args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

async fn echo(args: Map<String, Value>, _ctx: Ctx) -> ToolResult {
    Ok(CallToolResult::text(arg(&args, "text")))
}

async fn panics(_args: Map<String, Value>, _ctx: Ctx) -> ToolResult {
    panic!("the panic tool panicked");
}

async fn progress(_args: Map<String, Value>, ctx: Ctx) -> ToolResult {
    ctx.progress(1.0, Some(2.0), Some("half")).await;
    ctx.progress(2.0, Some(2.0), None).await;
    Ok(CallToolResult::text("done"))
}

async fn sample(_args: Map<String, Value>, ctx: Ctx) -> ToolResult {
    let asked = ctx
        .create_message(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
            "maxTokens": 16
        }))
        .await;
    Ok(match asked {
        Ok(answer) => CallToolResult::text(answer["content"]["text"].as_str().unwrap_or("no text").to_owned()),
        Err(e) => CallToolResult::error(e.to_string()),
    })
}

// ----------------------------------------------------------------- client

/// The test's side of the pipes: it writes the server's stdin and reads
/// its stdout.
struct Client {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<Result<(), StdioError>>,
}

impl Client {
    fn start(runtime: Engine, config: StdioConfig) -> Self {
        let (input, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, output) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(serve_io(runtime, config, server_in, server_out));
        Client {
            input: Some(input),
            output: BufReader::new(output).lines(),
            server,
        }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().expect("input open");
        input.write_all(bytes).await.expect("write");
        input.flush().await.expect("flush");
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("json");
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    /// The next line the server wrote, as JSON.
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.output.next_line())
            .await
            .expect("no message from the server in time")
            .expect("read")
            .expect("the server closed its output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next message, which must be the response with `id`.
    async fn response(&mut self, id: Value) -> Value {
        let m = self.recv().await;
        assert_eq!(m["id"], id, "expected the response to {id}, got {m}");
        m
    }

    /// Sends a request and returns its response (the next message).
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(request(id, method, params)).await;
        self.response(json!(id)).await
    }

    /// Closes the server's input.
    fn close_input(&mut self) {
        self.input = None;
    }

    /// Closes the input, waits for `serve_io` to return, and gives back
    /// every message written after the last one read.
    async fn finish(mut self) -> (Result<(), StdioError>, Vec<Value>) {
        self.close_input();
        let result = tokio::time::timeout(WAIT, self.server)
            .await
            .expect("serve_io did not return in time")
            .expect("serve_io panicked");
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(WAIT, self.output.next_line())
            .await
            .expect("output not closed")
            .expect("read")
        {
            rest.push(serde_json::from_str(&line).expect("JSON"));
        }
        (result, rest)
    }
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn call_tool(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn init_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "stdio-test", "version": "1.0.0"}
    })
}

async fn initialize(c: &mut Client, version: &str) -> Value {
    let r = c.call(1000, "initialize", init_params(version)).await;
    c.send(notification("notifications/initialized", json!({}))).await;
    r
}

fn error_code(m: &Value) -> i64 {
    m["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {m}"))
}

fn text_of(m: &Value) -> &str {
    m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {m}"))
}

fn assert_clean_finish(result: Result<(), StdioError>, rest: &[Value]) {
    assert!(result.is_ok(), "serve_io failed: {result:?}");
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
}

// ------------------------------------------------------------------ tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framing_batches_splits_crlf_and_blank_lines() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());

        // Two messages in one write.
        let two = format!("{}\n{}\n", request(1, "ping", json!({})), request(2, "ping", json!({})));
        c.send_raw(two.as_bytes()).await;
        let mut ids = vec![c.recv().await["id"].clone(), c.recv().await["id"].clone()];
        ids.sort_by_key(|v| v.as_i64());
        assert_eq!(ids, [json!(1), json!(2)]);

        // One message split across writes.
        let line = format!(
            "{}\n",
            request(3, "tools/call", call_tool("echo", json!({"text": "split"})))
        );
        let (a, b) = line.as_bytes().split_at(line.len() / 2);
        c.send_raw(a).await;
        tokio::task::yield_now().await;
        c.send_raw(b).await;
        assert_eq!(text_of(&c.response(json!(3)).await), "split");

        // CRLF, and blank lines (with and without CR) in between.
        let crlf = format!("\n\r\n   \n{}\r\n\r\n", request(4, "ping", json!({})));
        c.send_raw(crlf.as_bytes()).await;
        assert_eq!(c.response(json!(4)).await["result"], json!({}));

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_and_invalid_messages_are_answered_and_serving_continues() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default().with_max_depth(8));

        c.send_raw(b"this is not json\n").await;
        let m = c.recv().await;
        assert_eq!(m["id"], Value::Null);
        assert_eq!(error_code(&m), -32700);
        assert_eq!(c.call(1, "ping", json!({})).await["result"], json!({}));

        // Invalid request with a readable id: answered with that id.
        c.send_raw(br#"{"jsonrpc":"2.0","id":7,"method":5}"#).await;
        c.send_raw(b"\n").await;
        let m = c.response(json!(7)).await;
        assert_eq!(error_code(&m), -32600);

        // A malformed notification is dropped: the next answer is the ping's.
        c.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":3}\n")
            .await;
        assert_eq!(c.call(8, "ping", json!({})).await["result"], json!({}));

        // Too deep: a parse error with id null.
        let deep = format!("{}{}\n", "[".repeat(20), "]".repeat(20));
        c.send_raw(deep.as_bytes()).await;
        let m = c.recv().await;
        assert_eq!((m["id"].clone(), error_code(&m)), (Value::Null, -32700));

        // An answer to no pending request is dropped.
        c.send(json!({"jsonrpc": "2.0", "id": "nobody", "result": {}})).await;
        assert_eq!(c.call(9, "ping", json!({})).await["result"], json!({}));

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_frames_are_refused_then_serving_continues() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default().with_max_frame_bytes(64));
        let big = request(1, "tools/call", call_tool("echo", json!({"text": "x".repeat(200)})));
        c.send(big).await;
        let m = c.recv().await;
        assert_eq!(m["id"], Value::Null);
        assert_eq!(error_code(&m), -32600);
        let message = m["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("exceeds 64 bytes"), "{message}");

        // Over the cap across several writes, then a small one in the same write.
        c.send_raw("y".repeat(100).as_bytes()).await;
        c.send_raw("y".repeat(100).as_bytes()).await;
        c.send_raw(format!("\n{}\n", request(2, "ping", json!({}))).as_bytes())
            .await;
        assert_eq!(error_code(&c.recv().await), -32600);
        assert_eq!(c.response(json!(2)).await["result"], json!({}));

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_is_refused_and_admitted_work_completes() {
    bounded(async {
        let mut f = Fixture::new();
        let config = StdioConfig::default().with_max_workers(1).with_max_queue(1);
        let mut c = f.client(config);
        for (id, tag) in [(1, "a"), (2, "b"), (3, "c")] {
            c.send(request(id, "tools/call", call_tool("slow", json!({"tag": tag}))))
                .await;
        }
        let m = c.response(json!(3)).await;
        assert_eq!(error_code(&m), -32603);
        assert_eq!(m["error"]["message"], "Server is overloaded");

        assert_eq!(f.started().await, "a");
        f.gate.add_permits(2);
        assert_eq!(text_of(&c.response(json!(1)).await), "released a");
        assert_eq!(text_of(&c.response(json!(2)).await), "released b");
        assert_eq!(f.started().await, "b");

        // Room again.
        let m = c.call(4, "tools/call", call_tool("echo", json!({"text": "ok"}))).await;
        assert_eq!(text_of(&m), "ok");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_of_a_running_request_suppresses_its_answer() {
    bounded(async {
        let mut f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        c.send(request(1, "tools/call", call_tool("slow", json!({"tag": "a"}))))
            .await;
        assert_eq!(f.started().await, "a");
        c.send(notification(
            "notifications/cancelled",
            json!({"requestId": 1, "reason": "test"}),
        ))
        .await;
        let m = c
            .call(2, "tools/call", call_tool("echo", json!({"text": "next"})))
            .await;
        assert_eq!(text_of(&m), "next");

        // The slow call ended (else shutdown would wait for the 30 s drain),
        // and it was never answered.
        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

/// Frames written in one go are routed one by one, each before the next is read (invariant
/// 28): a second `initialize` finds the session the first made, and a cancellation finds the
/// request just before it, registered (a cancellation read first would be a stray, dropped, and
/// the call would run and be answered).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_frame_is_routed_before_the_next_is_read() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let frames = [
            request(1, "initialize", init_params("2025-11-25")),
            request(2, "initialize", init_params("2025-11-25")),
            request(3, "tools/call", call_tool("slow", json!({"tag": "a"}))),
            notification("notifications/cancelled", json!({"requestId": 3})),
            request(4, "tools/call", call_tool("echo", json!({"text": "next"}))),
        ];
        let mut bytes = Vec::new();
        for frame in &frames {
            serde_json::to_writer(&mut bytes, frame).expect("json");
            bytes.push(b'\n');
        }
        c.send_raw(&bytes).await;

        let first = c.response(json!(1)).await;
        assert_eq!(first["result"]["protocolVersion"], "2025-11-25", "{first}");
        let second = c.response(json!(2)).await;
        assert_eq!(error_code(&second), -32600, "{second}");
        assert_eq!(second["error"]["message"], "Session already initialized");
        assert_eq!(text_of(&c.response(json!(4)).await), "next");
        // Had the cancellation missed it, the released call would now be answered.
        f.gate.add_permits(1);
        let (result, rest) = c.finish().await;
        assert!(
            rest.iter().all(|m| m["id"] != 3),
            "the cancelled call is not answered: {rest:?}"
        );
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_its_target_while_the_pool_is_busy() {
    bounded(async {
        let mut f = Fixture::new();
        let config = StdioConfig::default().with_max_workers(1).with_max_queue(4);
        let mut c = f.client(config);
        for (id, tag) in [(1, "a"), (2, "b"), (3, "c")] {
            c.send(request(id, "tools/call", call_tool("slow", json!({"tag": tag}))))
                .await;
        }
        assert_eq!(f.started().await, "a");
        // The only worker is busy and two requests wait: the cancellations
        // are not queued behind them.
        c.send(notification("notifications/cancelled", json!({"requestId": 2})))
            .await;
        c.send(notification("notifications/cancelled", json!({"requestId": 1})))
            .await;
        // `a` ended, `b` was skipped: `c` is the next to start.
        assert_eq!(f.started().await, "c");
        f.gate.add_permits(1);
        assert_eq!(text_of(&c.response(json!(3)).await), "released c");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_in_flight_ids_are_refused() {
    bounded(async {
        let mut f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        c.send(request(1, "tools/call", call_tool("slow", json!({"tag": "a"}))))
            .await;
        assert_eq!(f.started().await, "a");
        let m = c.call(1, "tools/call", call_tool("echo", json!({"text": "dup"}))).await;
        assert_eq!(error_code(&m), -32600);
        assert_eq!(m["error"]["message"], "Duplicate request id");

        f.gate.add_permits(1);
        assert_eq!(text_of(&c.response(json!(1)).await), "released a");
        // Answered: the id may be used again.
        let m = c
            .call(1, "tools/call", call_tool("echo", json!({"text": "again"})))
            .await;
        assert_eq!(text_of(&m), "again");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_lets_admitted_work_finish() {
    bounded(async {
        let mut f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        c.send(request(1, "tools/call", call_tool("slow", json!({"tag": "a"}))))
            .await;
        assert_eq!(f.started().await, "a");
        c.close_input();
        // serve_io cannot return while the call is held at the gate.
        tokio::task::yield_now().await;
        assert!(!c.server.is_finished());
        f.gate.add_permits(1);
        let (result, rest) = c.finish().await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(rest.len(), 1, "{rest:?}");
        assert_eq!(rest[0]["id"], 1);
        assert_eq!(text_of(&rest[0]), "released a");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_timeout_cancels_what_is_left() {
    bounded(async {
        let mut f = Fixture::new();
        let config = StdioConfig::default().with_drain_timeout(Duration::from_millis(100));
        let mut c = f.client(config);
        c.send(request(1, "tools/call", call_tool("slow", json!({"tag": "a"}))))
            .await;
        assert_eq!(f.started().await, "a");
        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_flow_with_a_server_to_client_request() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let init = initialize(&mut c, "2025-06-18").await;
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
        assert!(init["result"]["serverInfo"]["name"].is_string(), "{init}");
        assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");

        assert_eq!(c.call(2, "ping", json!({})).await["result"], json!({}));
        let m = c
            .call(3, "tools/call", call_tool("echo", json!({"text": "legacy"})))
            .await;
        assert_eq!(text_of(&m), "legacy");

        // The sampling tool asks the client; the test answers as the client.
        c.send(request(4, "tools/call", call_tool("sample", json!({})))).await;
        let ask = c.recv().await;
        assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
        assert!(ask["id"].is_string() || ask["id"].is_number(), "{ask}");
        c.send(json!({
            "jsonrpc": "2.0",
            "id": ask["id"],
            "result": {
                "role": "assistant",
                "content": {"type": "text", "text": "hello from the client"},
                "model": "test-model"
            }
        }))
        .await;
        let m = c.response(json!(4)).await;
        assert_eq!(text_of(&m), "hello from the client");

        // One session per process.
        let m = c.call(5, "initialize", init_params("2025-11-25")).await;
        assert_eq!(error_code(&m), -32600);
        assert_eq!(m["error"]["message"], "Session already initialized");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_are_served_statelessly_on_the_same_process() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());

        let discover = |id| request(id, "server/discover", json!({"_meta": modern_meta()}));
        c.send(discover(1)).await;
        let m = c.response(json!(1)).await;
        assert_eq!(m["result"]["resultType"], "complete", "{m}");
        let versions = m["result"]["supportedVersions"].as_array().cloned();
        assert!(versions.is_some_and(|v| v.contains(&json!(MODERN))), "{m}");

        initialize(&mut c, "2025-11-25").await;

        c.send(discover(2)).await;
        assert_eq!(c.response(json!(2)).await["result"]["resultType"], "complete");

        let mut params = call_tool("echo", json!({"text": "modern"}));
        params["_meta"] = modern_meta();
        let m = c.call(3, "tools/call", params).await;
        assert_eq!(m["result"]["resultType"], "complete", "{m}");
        assert_eq!(text_of(&m), "modern");

        // `ping` does not exist in the modern era.
        let m = c.call(4, "ping", json!({"_meta": modern_meta()})).await;
        assert_eq!(error_code(&m), -32601);

        // The legacy session is still there.
        assert_eq!(c.call(5, "ping", json!({})).await["result"], json!({}));

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_is_an_error_result_and_serving_continues() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let m = c.call(1, "tools/call", call_tool("panic", json!({}))).await;
        assert_eq!(m["result"]["isError"], true, "{m}");
        assert_eq!(text_of(&m), "Internal tool error");
        let m = c
            .call(2, "tools/call", call_tool("echo", json!({"text": "alive"})))
            .await;
        assert_eq!(text_of(&m), "alive");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_travels_before_the_answer() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let params = json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "tok"}});
        c.send(request(1, "tools/call", params)).await;
        let first = c.recv().await;
        assert_eq!(first["method"], "notifications/progress", "{first}");
        assert_eq!(first["params"]["progressToken"], "tok");
        assert_eq!(first["params"]["progress"], 1.0);
        assert_eq!(first["params"]["total"], 2.0);
        let second = c.recv().await;
        assert_eq!(second["params"]["progress"], 2.0, "{second}");
        assert_eq!(text_of(&c.response(json!(1)).await), "done");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_method_before_initialize_is_answered_not_fatal() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let m = c.call(1, "does/not/exist", json!({})).await;
        assert_eq!(error_code(&m), -32601);
        assert_eq!(c.call(2, "ping", json!({})).await["result"], json!({}));
        let init = initialize(&mut c, "2025-03-26").await;
        assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(c.call(3, "ping", json!({})).await["result"], json!({}));

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_served_at_2025_03_26() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        initialize(&mut c, "2025-03-26").await;

        let batch = json!([
            request(10, "ping", json!({})),
            request(11, "tools/call", call_tool("echo", json!({"text": "in batch"}))),
            notification("notifications/roots/list_changed", json!({})),
            5
        ]);
        c.send(batch).await;
        let m = c.recv().await;
        let items = m.as_array().unwrap_or_else(|| panic!("not an array: {m}"));
        assert_eq!(items.len(), 3, "{m}");
        let by_id = |id: Value| items.iter().find(|i| i["id"] == id).cloned();
        assert_eq!(by_id(json!(10)).map(|r| r["result"].clone()), Some(json!({})));
        let echo = by_id(json!(11)).unwrap_or_else(|| panic!("no 11 in {m}"));
        assert_eq!(text_of(&echo), "in batch");
        let invalid = by_id(Value::Null).unwrap_or_else(|| panic!("no error in {m}"));
        assert_eq!(error_code(&invalid), -32600);

        // A batch of notifications only: no answer at all.
        c.send(json!([notification("notifications/roots/list_changed", json!({}))]))
            .await;
        // `initialize` never in a batch.
        c.send(json!([request(12, "initialize", init_params("2025-03-26"))]))
            .await;
        let m = c.recv().await;
        assert_eq!((m["id"].clone(), error_code(&m)), (Value::Null, -32600));

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_refused_from_2025_06_18() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        initialize(&mut c, "2025-06-18").await;
        c.send(json!([request(10, "ping", json!({})), request(11, "ping", json!({}))]))
            .await;
        let m = c.recv().await;
        assert!(m.is_object(), "{m}");
        assert_eq!((m["id"].clone(), error_code(&m)), (Value::Null, -32600));
        assert_eq!(c.call(12, "ping", json!({})).await["result"], json!({}));

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_reach_the_legacy_session() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        initialize(&mut c, "2025-11-25").await;

        f.registry.add_tool(entry("late", "Added at run time", echo));
        let m = c.recv().await;
        assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");

        let m = c
            .call(2, "resources/subscribe", json!({"uri": "file:///watched"}))
            .await;
        assert_eq!(m["result"], json!({}), "{m}");
        f.registry.notify_resource_updated("file:///watched");
        let m = c.recv().await;
        assert_eq!(m["method"], "notifications/resources/updated", "{m}");
        assert_eq!(m["params"]["uri"], "file:///watched");

        let m = c.call(3, "tools/list", json!({})).await;
        let tools = m["result"]["tools"].as_array().cloned().unwrap_or_default();
        assert!(tools.iter().any(|t| t["name"] == "late"), "{m}");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_never_reach_modern_clients() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let discover = request(1, "server/discover", json!({"_meta": modern_meta()}));
        c.send(discover).await;
        c.response(json!(1)).await;
        f.registry.add_tool(entry("late", "Added at run time", echo));
        let mut params = call_tool("late", json!({"text": "seen"}));
        params["_meta"] = modern_meta();
        // The tool is callable at once, and nothing but answers arrives.
        let m = c.call(2, "tools/call", params).await;
        assert_eq!(text_of(&m), "seen");

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_output_ends_serving_with_an_error() {
    bounded(async {
        let f = Fixture::new();
        let (mut input, server_in) = tokio::io::duplex(1024);
        let (server_out, output) = tokio::io::duplex(1024);
        drop(output);
        let server = tokio::spawn(serve_io(
            f.runtime.clone(),
            StdioConfig::default(),
            server_in,
            server_out,
        ));
        let ping = format!("{}\n", request(1, "ping", json!({})));
        input.write_all(ping.as_bytes()).await.expect("write");
        // The input stays open: the failed write alone ends serving.
        let result = tokio::time::timeout(WAIT, server)
            .await
            .expect("serve_io did not return in time")
            .expect("serve_io panicked");
        assert!(matches!(result, Err(StdioError::Write(_))), "{result:?}");
        drop(input);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_fails_pending_client_requests_at_once() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        initialize(&mut c, "2025-11-25").await;
        c.send(request(2, "tools/call", call_tool("sample", json!({})))).await;
        let ask = c.recv().await;
        assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
        // The client leaves without answering: no answer can come any more,
        // so the tool's request fails now rather than after its timeout.
        let (result, rest) = c.finish().await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(rest.len(), 1, "{rest:?}");
        assert_eq!(rest[0]["id"], 2);
        assert_eq!(rest[0]["result"]["isError"], true, "{rest:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_streams_are_acknowledged_tagged_and_end_with_the_server() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let filter = json!({"toolsListChanged": true, "promptsListChanged": true, "unknownKey": true});
        c.send(request(
            11,
            "subscriptions/listen",
            json!({"_meta": modern_meta(), "notifications": filter}),
        ))
        .await;
        let ack = c.recv().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 11);
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true, "promptsListChanged": true})
        );

        // Request-scoped traffic of other calls keeps flowing beside it.
        let mut params = call_tool("echo", json!({"text": "beside"}));
        params["_meta"] = modern_meta();
        assert_eq!(text_of(&c.call(12, "tools/call", params).await), "beside");

        f.registry.add_tool(entry("added", "Added at run time", echo));
        let n = c.recv().await;
        assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
        assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 11);

        // taskIds without the tasks extension is refused.
        let tasks = json!({"_meta": modern_meta(), "notifications": {"taskIds": ["t1"]}});
        assert_eq!(error_code(&c.call(13, "subscriptions/listen", tasks).await), -32021);

        // The server ends the subscription: cancelled naming it, then the result.
        f.runtime.shutdown();
        let cancel = c.recv().await;
        assert_eq!(cancel["method"], "notifications/cancelled", "{cancel}");
        assert_eq!(cancel["params"]["requestId"], 11);
        let done = c.response(json!(11)).await;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(done["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 11);

        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cancels_its_listen_stream() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client(StdioConfig::default());
        let listen = json!({"_meta": modern_meta(), "notifications": {"toolsListChanged": true}});
        c.send(request(21, "subscriptions/listen", listen)).await;
        assert_eq!(c.recv().await["method"], "notifications/subscriptions/acknowledged");
        c.send(notification(
            "notifications/cancelled",
            json!({"requestId": 21, "_meta": modern_meta()}),
        ))
        .await;
        // Once the cancellation is through, changes no longer reach it.
        let mut params = call_tool("echo", json!({"text": "sync"}));
        params["_meta"] = modern_meta();
        assert_eq!(text_of(&c.call(22, "tools/call", params).await), "sync");
        f.registry.add_tool(entry("late", "Added after the cancel", echo));
        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
        assert!(
            rest.iter().all(|m| m["method"] != "notifications/tools/list_changed"),
            "{rest:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_call_is_the_json_rpc_error_with_the_wait_in_data() {
    bounded(async {
        let f = Fixture::new();
        let mut config = ServerConfig::default();
        // Two calls at once, then one a minute: the bucket stays empty for the whole test.
        let quota = mcp_runtime::store::Quota::new(1.0 / 60.0, 2).expect("a quota");
        config.middleware.push(mcp_runtime::middleware::RateLimit::new(quota));
        let runtime = mcp_tests::engine::memory(config, f.registry.clone());
        let mut c = Client::start(runtime, StdioConfig::default());
        initialize(&mut c, "2025-11-25").await;
        for id in 1..=2 {
            let ok = c.call(id, "tools/call", call_tool("echo", json!({"text": "hi"}))).await;
            assert_eq!(text_of(&ok), "hi");
        }
        let refused = c.call(3, "tools/call", call_tool("echo", json!({"text": "hi"}))).await;
        assert_eq!(
            error_code(&refused),
            i64::from(mcp_protocol::codes::RATE_LIMITED),
            "{refused}"
        );
        assert_eq!(refused["error"]["message"], "Rate limit exceeded");
        let wait = refused["error"]["data"]["retryAfterMs"].as_u64().expect("retryAfterMs");
        assert!(wait > 0 && wait <= 60_000, "{refused}");
        // Only the error: no HTTP artefact reaches the wire, and other methods still pass.
        let keys: Vec<&String> = refused.as_object().expect("an object").keys().collect();
        assert_eq!(keys.len(), 3, "jsonrpc, id, error: {refused}");
        assert!(c.call(4, "tools/list", json!({})).await["result"]["tools"].is_array());
        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_short_of_a_scope_is_the_json_rpc_error_naming_every_scope() {
    bounded(async {
        let f = Fixture::new();
        let mut config = ServerConfig::default();
        config.method_scopes = mcp_runtime::scopes::MethodScopes::default()
            .require("tools/call", ["notes:call"])
            .expect("a scope token");
        let runtime = mcp_tests::engine::memory(config, f.registry.clone());
        // Over stdio the caller is anonymous: it holds no scope.
        let mut c = Client::start(runtime, StdioConfig::default());
        initialize(&mut c, "2025-11-25").await;
        let refused = c.call(1, "tools/call", call_tool("echo", json!({"text": "hi"}))).await;
        assert_eq!(
            error_code(&refused),
            i64::from(mcp_protocol::codes::INSUFFICIENT_SCOPE),
            "{refused}"
        );
        assert_eq!(refused["error"]["data"]["requiredScopes"], json!(["notes:call"]));
        // A method that needs no scope is served.
        assert!(c.call(2, "tools/list", json!({})).await["result"]["tools"].is_array());
        let (result, rest) = c.finish().await;
        assert_clean_finish(result, &rest);
    })
    .await;
}
