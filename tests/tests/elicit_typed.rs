//! Typed elicitation, sampling and roots (`Ctx::elicit`, `Ctx::elicit_with`, `Ctx::sample`,
//! `Ctx::roots`) and the typed round state (`Ctx::once`, `Ctx::round_state`,
//! `Ctx::keep_round_state`), in both eras, through the stdio transport on in-memory pipes.
//!
//! Modern calls go through MRTR: the test answers each `input_required` round as a client
//! would (the new answers only, the `requestState` echoed) and retries the whole call, so the
//! handlers re-run from the top; the tools count their runs and their side effects to show it.
//! Legacy calls get real `elicitation/create` / `sampling/createMessage` requests on stdout,
//! which the test answers.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_runtime::input::{Elicit, Elicitation, Sampling};
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::{Ctx, Engine, HandlerError, Registry, ServerConfig, ToolResult};
use mcp_transport_stdio::{StdioConfig, StdioError, serve_io};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

/// Bound on any single wait.
const WAIT: Duration = Duration::from_secs(5);
/// Bound on a whole test.
const TEST: Duration = Duration::from_secs(20);
/// The most MRTR rounds a test call may take.
const MAX_ROUNDS: usize = 6;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(TEST, f).await.expect("test timed out")
}

// ------------------------------------------------------------------ forms and tools

/// The sign-up form.
#[derive(Debug, Deserialize, JsonSchema)]
struct Signup {
    /// Your name
    name: String,
    #[schemars(email)]
    email: String,
    age: Option<u8>,
}

#[derive(Debug, Deserialize, JsonSchema)]
enum Colour {
    Red,
    Green,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Pick {
    colour: Colour,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Not a flat form: a nested object.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // never filled: refused before asking
struct Nested {
    pick: Pick,
}

/// What the `rounds` tool keeps from one round to the next: the rounds it saw.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Progress {
    rounds: Vec<usize>,
}

/// Counters the tools bump: how often a handler ran, and how often a side effect happened.
#[derive(Default)]
struct Counters {
    runs: AtomicUsize,
    effects: AtomicUsize,
}

impl Counters {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    fn effects(&self) -> usize {
        self.effects.load(Ordering::SeqCst)
    }
}

fn text(s: impl Into<String>) -> ToolResult {
    Ok(CallToolResult::text(s.into()))
}

/// One run, and a ticket made by a side effect that must happen once per call.
async fn ticket(ctx: &Ctx, counters: &Counters) -> Result<usize, HandlerError> {
    counters.runs.fetch_add(1, Ordering::SeqCst);
    ctx.once(|| async { Ok(100 + counters.effects.fetch_add(1, Ordering::SeqCst)) })
        .await
}

async fn signup(ctx: Ctx, counters: Arc<Counters>) -> ToolResult {
    let ticket = ticket(&ctx, &counters).await?;
    match ctx.elicit::<Signup>("Sign up?").await? {
        Elicitation::Accept(s) => text(format!(
            "welcome {} <{}> age {:?}, ticket {ticket}",
            s.name, s.email, s.age
        )),
        Elicitation::Decline => text(format!("declined, ticket {ticket}")),
        Elicitation::Cancel => text(format!("cancelled, ticket {ticket}")),
    }
}

/// Three asks in a row: counted, keyed, counted.
async fn three_asks(ctx: Ctx, counters: Arc<Counters>) -> ToolResult {
    let ticket = ticket(&ctx, &counters).await?;
    let Some(pick) = ctx.elicit::<Pick>("Pick a colour").await?.accepted() else {
        return text("no colour");
    };
    let sure = Elicit::new(format!("Sure about {:?}?", pick.colour)).key("confirm");
    let sure = ctx.elicit_with::<Confirm>(sure).await?.accepted().is_some_and(|c| c.ok);
    let really = ctx
        .elicit::<Confirm>("Really sure?")
        .await?
        .accepted()
        .is_some_and(|c| c.ok);
    text(format!(
        "{:?} sure={sure} really={really}, ticket {ticket}",
        pick.colour
    ))
}

/// Keeps its own state every round with `round_state` / `keep_round_state`: the list of
/// rounds it ran in, one more each run.
async fn rounds(ctx: Ctx) -> ToolResult {
    let mut progress: Progress = ctx.round_state()?.unwrap_or_default();
    progress.rounds.push(progress.rounds.len() + 1);
    ctx.keep_round_state(&progress)?;
    let first = ctx.elicit::<Confirm>("First?").await?.accepted().is_some_and(|c| c.ok);
    let second = ctx.elicit::<Confirm>("Second?").await?.accepted().is_some_and(|c| c.ok);
    text(format!("rounds {:?}, answers {first} {second}", progress.rounds))
}

async fn nested(ctx: Ctx) -> ToolResult {
    ctx.elicit::<Nested>("Nested?").await?;
    text("unreachable")
}

async fn haiku(ctx: Ctx) -> ToolResult {
    let ask = Sampling::new()
        .system("You write haiku.")
        .user("The sea")
        .max_tokens(50);
    let reply = ctx.sample(ask).await?;
    text(format!(
        "{} by {} ({:?}, {:?})",
        reply.text(),
        reply.model,
        reply.role,
        reply.stop_reason
    ))
}

async fn roots(ctx: Ctx) -> ToolResult {
    let roots = ctx.roots().await?;
    let shown: Vec<String> = roots
        .iter()
        .map(|r| format!("{}={}", r.name.as_deref().unwrap_or("-"), r.uri))
        .collect();
    text(shown.join(","))
}

struct Fixture {
    runtime: Engine,
    counters: Arc<Counters>,
}

impl Fixture {
    fn new() -> Self {
        let registry = Arc::new(Registry::new());
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        registry.add_tool(entry("signup", move |_, ctx| signup(ctx, c.clone())));
        let c = counters.clone();
        registry.add_tool(entry("three_asks", move |_, ctx| three_asks(ctx, c.clone())));
        registry.add_tool(entry("rounds", |_, ctx| rounds(ctx)));
        registry.add_tool(entry("nested", |_, ctx| nested(ctx)));
        registry.add_tool(entry("haiku", |_, ctx| haiku(ctx)));
        registry.add_tool(entry("roots", |_, ctx| roots(ctx)));
        let runtime = mcp_tests::engine::memory(ServerConfig::default(), registry);
        Fixture { runtime, counters }
    }

    fn client(&self) -> Client {
        Client::start(self.runtime.clone())
    }
}

fn entry<F, Fut>(name: &str, h: F) -> ToolEntry
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    ToolEntry::new(ToolDef::new(name), Arc::new(h), true, true).expect("valid tool")
}

// ------------------------------------------------------------------------ client

/// The test's side of the pipes.
struct Client {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<Result<(), StdioError>>,
    next_id: i64,
}

impl Client {
    fn start(runtime: Engine) -> Self {
        let (input, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, output) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(serve_io(runtime, StdioConfig::default(), server_in, server_out));
        Client {
            input: Some(input),
            output: BufReader::new(output).lines(),
            server,
            next_id: 1,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("json");
        line.push(b'\n');
        let input = self.input.as_mut().expect("input open");
        input.write_all(&line).await.expect("write");
        input.flush().await.expect("flush");
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.output.next_line())
            .await
            .expect("no message from the server in time")
            .expect("read")
            .expect("the server closed its output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a request; answers the server's own requests with `answer` (recording them) until
    /// the response comes.
    async fn call_answering(
        &mut self,
        method: &str,
        params: Value,
        answer: &mut dyn FnMut(&Value) -> Value,
        asked: &mut Vec<Value>,
    ) -> Value {
        let id = self.id();
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let m = self.recv().await;
            if m.get("method").is_some() && m.get("id").is_some() {
                let result = answer(&m);
                asked.push(m.clone());
                self.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": result}))
                    .await;
            } else if m.get("method").is_some() {
                continue; // a notification
            } else {
                assert_eq!(m["id"], json!(id), "expected the response to {id}, got {m}");
                return m;
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let mut never = |m: &Value| panic!("unexpected server request {m}");
        self.call_answering(method, params, &mut never, &mut Vec::new()).await
    }

    async fn initialize(&mut self, capabilities: Value) {
        self.initialize_as(LEGACY, capabilities).await;
    }

    async fn initialize_as(&mut self, version: &str, capabilities: Value) {
        let init = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": {"name": "elicit-typed", "version": "1.0.0"}
        });
        let r = self.call("initialize", init).await;
        assert_eq!(r["result"]["protocolVersion"], version, "{r}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    /// A legacy `tools/call`, answering the server's requests with `answer`: the response and
    /// the requests it got.
    async fn legacy_tool(&mut self, name: &str, mut answer: impl FnMut(&Value) -> Value) -> (Value, Vec<Value>) {
        let mut asked = Vec::new();
        let params = json!({"name": name, "arguments": {}});
        let m = self.call_answering("tools/call", params, &mut answer, &mut asked).await;
        (m, asked)
    }

    /// A modern `tools/call` through its MRTR rounds: each round's `inputRequests` are
    /// answered with `answer(key, request)` and sent back (the new answers only) with the
    /// echoed `requestState`. Gives the final response and the input requests of every round.
    async fn modern_tool(
        &mut self,
        name: &str,
        capabilities: Value,
        mut answer: impl FnMut(&str, &Value) -> Value,
    ) -> (Value, Vec<Map<String, Value>>) {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let mut params = json!({"name": name, "arguments": {}, "_meta": meta});
        let mut rounds = Vec::new();
        loop {
            let m = self.call("tools/call", params.clone()).await;
            if m["result"]["resultType"] != "input_required" {
                return (m, rounds);
            }
            assert!(rounds.len() < MAX_ROUNDS, "too many rounds: {rounds:?}");
            let requests = m["result"]["inputRequests"].as_object().cloned().unwrap_or_default();
            let responses: Map<String, Value> = requests.iter().map(|(k, r)| (k.clone(), answer(k, r))).collect();
            rounds.push(requests);
            params["inputResponses"] = Value::Object(responses);
            match m["result"].get("requestState") {
                Some(s) => params["requestState"] = s.clone(),
                None => {
                    params.as_object_mut().expect("params").remove("requestState");
                }
            }
        }
    }

    async fn finish(mut self) {
        self.input = None;
        let result = tokio::time::timeout(WAIT, self.server)
            .await
            .expect("serve_io did not return in time")
            .expect("serve_io panicked");
        assert!(result.is_ok(), "serve_io failed: {result:?}");
    }
}

fn text_of(m: &Value) -> &str {
    m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {m}"))
}

fn keys(round: &Map<String, Value>) -> Vec<&str> {
    round.keys().map(String::as_str).collect()
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn elicit_caps() -> Value {
    json!({"elicitation": {}})
}

fn sampled() -> Value {
    json!({
        "role": "assistant",
        "content": {"type": "text", "text": "waves fold on waves"},
        "model": "poet-1",
        "stopReason": "endTurn"
    })
}

// ------------------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_accept_reruns_the_handler_and_keeps_the_once_value() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let (m, rounds) = c
            .modern_tool("signup", elicit_caps(), |_, _| {
                accept(json!({"name": "Ada", "email": "ada@example.com", "age": 36}))
            })
            .await;
        assert_eq!(m["result"]["resultType"], "complete", "{m}");
        assert_eq!(text_of(&m), "welcome Ada <ada@example.com> age Some(36), ticket 100");

        // One round: one form, keyed `elicit-1`, with the schema derived from `Signup`.
        assert_eq!(rounds.len(), 1, "{rounds:?}");
        assert_eq!(keys(&rounds[0]), ["elicit-1"]);
        let ask = &rounds[0]["elicit-1"];
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(ask["params"]["message"], "Sign up?");
        assert_eq!(
            ask["params"]["requestedSchema"],
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Your name"},
                    "email": {"type": "string", "format": "email"},
                    "age": {"type": "integer", "minimum": 0, "maximum": 255}
                },
                "required": ["name", "email"]
            })
        );
        // The handler ran twice (the re-run from the top); its side effect happened once.
        assert_eq!((f.counters.runs(), f.counters.effects()), (2, 1));
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_decline_and_cancel() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let (m, rounds) = c
            .modern_tool("signup", elicit_caps(), |_, _| json!({"action": "decline"}))
            .await;
        assert_eq!((rounds.len(), text_of(&m)), (1, "declined, ticket 100"), "{m}");
        let (m, rounds) = c
            .modern_tool("signup", elicit_caps(), |_, _| json!({"action": "cancel"}))
            .await;
        assert_eq!((rounds.len(), text_of(&m)), (1, "cancelled, ticket 101"), "{m}");
        assert_eq!((f.counters.runs(), f.counters.effects()), (4, 2));
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_asks_in_a_row_take_a_round_each_with_deterministic_keys() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let (m, rounds) = c
            .modern_tool("three_asks", elicit_caps(), |key, req| match key {
                "elicit-1" => accept(json!({"colour": "Green"})),
                "confirm" => {
                    assert_eq!(req["params"]["message"], "Sure about Green?");
                    accept(json!({"ok": true}))
                }
                "elicit-2" => {
                    assert_eq!(req["params"]["message"], "Really sure?");
                    accept(json!({"ok": false}))
                }
                other => panic!("unexpected key {other}"),
            })
            .await;
        assert_eq!(text_of(&m), "Green sure=true really=false, ticket 100", "{m}");
        let asked: Vec<Vec<&str>> = rounds.iter().map(keys).collect();
        assert_eq!(asked, [["elicit-1"], ["confirm"], ["elicit-2"]]);
        assert_eq!(
            rounds[0]["elicit-1"]["params"]["requestedSchema"]["properties"]["colour"],
            json!({"type": "string", "enum": ["Red", "Green"]})
        );
        // Four runs (one per round and the last), one side effect: `once` re-kept it each round.
        assert_eq!((f.counters.runs(), f.counters.effects()), (4, 1));
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_round_state_is_kept_across_rounds() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let (m, rounds) = c
            .modern_tool("rounds", elicit_caps(), |key, _| {
                accept(json!({"ok": key == "elicit-1"}))
            })
            .await;
        assert_eq!(rounds.len(), 2, "{rounds:?}");
        // Round 1 kept [1], round 2 read it and kept [1, 2], the last run read that.
        assert_eq!(text_of(&m), "rounds [1, 2, 3], answers true false", "{m}");
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_elicitation_is_a_real_request_and_the_handler_runs_once() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        c.initialize(elicit_caps()).await;
        let (m, asked) = c
            .legacy_tool("signup", |_| accept(json!({"name": "Bo", "email": "bo@example.com"})))
            .await;
        assert!(m["result"].get("resultType").is_none(), "{m}");
        assert_eq!(text_of(&m), "welcome Bo <bo@example.com> age None, ticket 100");
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0]["method"], "elicitation/create");
        assert_eq!(asked[0]["params"]["message"], "Sign up?");
        assert_eq!(
            asked[0]["params"]["requestedSchema"]["required"],
            json!(["name", "email"])
        );
        assert_eq!((f.counters.runs(), f.counters.effects()), (1, 1));

        let (m, asked) = c
            .legacy_tool("three_asks", |_| accept(json!({"colour": "Red", "ok": true})))
            .await;
        assert_eq!(text_of(&m), "Red sure=true really=true, ticket 101", "{m}");
        let messages: Vec<&str> = asked.iter().filter_map(|a| a["params"]["message"].as_str()).collect();
        assert_eq!(messages, ["Pick a colour", "Sure about Red?", "Really sure?"]);

        let (m, _) = c.legacy_tool("signup", |_| json!({"action": "decline"})).await;
        assert_eq!(text_of(&m), "declined, ticket 102");
        assert_eq!(f.counters.runs(), 3, "legacy handlers are not re-run");
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_capability_is_32021_in_both_eras() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let (m, rounds) = c
            .modern_tool("signup", json!({"sampling": {}}), |_, _| panic!("nothing to answer"))
            .await;
        assert!(rounds.is_empty());
        assert_eq!(m["error"]["code"], -32021, "{m}");
        assert_eq!(m["error"]["data"]["requiredCapabilities"], json!({"elicitation": {}}));
        let (m, _) = c
            .modern_tool("haiku", elicit_caps(), |_, _| panic!("nothing to answer"))
            .await;
        assert_eq!(
            m["error"]["data"]["requiredCapabilities"],
            json!({"sampling": {}}),
            "{m}"
        );

        c.initialize(json!({"roots": {}})).await;
        let (m, asked) = c.legacy_tool("signup", |_| panic!("nothing to answer")).await;
        assert!(asked.is_empty());
        assert_eq!(m["error"]["code"], -32021, "{m}");
        assert_eq!(m["error"]["data"]["requiredCapabilities"], json!({"elicitation": {}}));
        c.finish().await;

        // A revision without elicitation (2025-03-26) never elicits, whatever the client says.
        let mut c = f.client();
        c.initialize_as("2025-03-26", elicit_caps()).await;
        let (m, asked) = c.legacy_tool("signup", |_| panic!("nothing to answer")).await;
        assert!(asked.is_empty(), "{asked:?}");
        assert_eq!(m["error"]["code"], -32021, "{m}");
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_that_does_not_fit_the_form_is_a_tool_error() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let (m, _) = c
            .modern_tool("signup", elicit_caps(), |_, _| accept(json!({"name": 7})))
            .await;
        assert_eq!(m["result"]["isError"], true, "{m}");
        let said = text_of(&m);
        assert!(said.contains("does not fit") && said.contains("elicit-1"), "{said}");

        c.initialize(elicit_caps()).await;
        let (m, _) = c.legacy_tool("signup", |_| accept(json!({"name": "x"}))).await;
        assert_eq!(m["result"]["isError"], true, "{m}");
        assert!(text_of(&m).contains("missing field `email`"), "{m}");
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_type_that_is_not_flat_fails_before_asking() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let (m, rounds) = c
            .modern_tool("nested", elicit_caps(), |_, _| panic!("nothing to answer"))
            .await;
        assert!(rounds.is_empty(), "{rounds:?}");
        assert_eq!(m["result"]["isError"], true, "{m}");
        assert!(!text_of(&m).contains("Nested"), "internal detail is masked: {m}");
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_in_both_eras() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let want = json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "The sea"}}],
            "systemPrompt": "You write haiku.",
            "maxTokens": 50
        });
        let (m, rounds) = c.modern_tool("haiku", json!({"sampling": {}}), |_, _| sampled()).await;
        assert_eq!(
            text_of(&m),
            "waves fold on waves by poet-1 (Assistant, Some(\"endTurn\"))",
            "{m}"
        );
        assert_eq!(keys(&rounds[0]), ["sample-1"]);
        assert_eq!(rounds[0]["sample-1"]["method"], "sampling/createMessage");
        assert_eq!(rounds[0]["sample-1"]["params"], want);

        // A reply that is not a CreateMessageResult: -32602.
        let (m, _) = c
            .modern_tool("haiku", json!({"sampling": {}}), |_, _| json!({"role": "nobody"}))
            .await;
        assert_eq!(m["error"]["code"], -32602, "{m}");

        c.initialize(json!({"sampling": {}, "roots": {}})).await;
        let (m, asked) = c.legacy_tool("haiku", |_| sampled()).await;
        assert_eq!(
            text_of(&m),
            "waves fold on waves by poet-1 (Assistant, Some(\"endTurn\"))",
            "{m}"
        );
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0]["method"], "sampling/createMessage");
        assert_eq!(asked[0]["params"], want);
        c.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_in_both_eras() {
    bounded(async {
        let f = Fixture::new();
        let mut c = f.client();
        let roots = json!({"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]});
        let (m, rounds) = c.modern_tool("roots", json!({"roots": {}}), |_, _| roots.clone()).await;
        assert_eq!(text_of(&m), "a=file:///a,-=file:///b", "{m}");
        assert_eq!(keys(&rounds[0]), ["roots-1"]);
        assert_eq!(rounds[0]["roots-1"]["method"], "roots/list");

        c.initialize(json!({"roots": {}})).await;
        let (m, asked) = c.legacy_tool("roots", |_| roots.clone()).await;
        assert_eq!(text_of(&m), "a=file:///a,-=file:///b", "{m}");
        assert_eq!(asked[0]["method"], "roots/list");
        c.finish().await;
    })
    .await;
}
