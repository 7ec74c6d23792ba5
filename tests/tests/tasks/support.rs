//! The tasks suite's fixture: a registry of probe tools, clients of both
//! eras driving an `Engine` directly, and polling helpers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_protocol::task_mode::TaskSupport;
use mcp_protocol::{Request, RequestId, RpcError};
use mcp_runtime::mrtr::InputRequired;
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::{
    Ctx, Engine, HandlerError, Peer, Registry, Reply, ServerConfig, SessionHandle, Sessions, Sink, TaskStore,
    ToolResult,
};
use mcp_tests::drive;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub(crate) const EXT: &str = "io.modelcontextprotocol/tasks";

/// What the probe tools report to the test.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    /// The cancellation token of every `slow` call, in call order.
    pub(crate) tokens: Mutex<Vec<CancellationToken>>,
    /// Releases the `gated` tool.
    pub(crate) gate: Notify,
}

impl Probe {
    pub(crate) fn token(&self, i: usize) -> CancellationToken {
        self.tokens.lock().unwrap()[i].clone()
    }
}

fn tool<F, Fut>(name: &str, support: TaskSupport, f: F) -> ToolEntry
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolResult> + Send + 'static,
{
    let def = ToolDef::new(name).with_task_support(support);
    ToolEntry::new(def, Arc::new(f), true, true).expect("valid tool")
}

const PAST_THE_WINDOW: Duration = Duration::from_millis(300);

fn elicit(field: &str) -> Value {
    json!({"message": format!("{field}?"), "requestedSchema": {"type": "object",
        "properties": {field: {"type": "string"}}, "required": [field]}})
}

/// The probe tools.
pub(crate) fn registry(probe: &Arc<Probe>) -> Registry {
    use TaskSupport::*;
    let r = Registry::new();
    r.add_tool(tool("plain", Forbidden, |_, _| async {
        Ok(CallToolResult::text("plain"))
    }));
    r.add_tool(tool("quick", Optional, |_, _| async {
        Ok(CallToolResult::text("quick"))
    }));
    let p = probe.clone();
    r.add_tool(tool("slow", Optional, move |args, ctx: Ctx| {
        p.tokens.lock().unwrap().push(ctx.cancellation().clone());
        async move {
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(3_600_000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(CallToolResult::text("slow done"))
        }
    }));
    r.add_tool(tool("tool_error", Optional, |_, _| async {
        tokio::time::sleep(PAST_THE_WINDOW).await;
        Ok(CallToolResult::error("it went wrong"))
    }));
    r.add_tool(tool("rpc_error", Optional, |_, _| async {
        tokio::time::sleep(PAST_THE_WINDOW).await;
        Err(HandlerError::Rpc(RpcError::invalid_params("bad thing")))
    }));
    r.add_tool(tool("panics", Optional, |_, _| async {
        tokio::time::sleep(PAST_THE_WINDOW).await;
        if true {
            panic!("secret detail");
        }
        Ok(CallToolResult::text("unreachable"))
    }));
    r.add_tool(tool("asks", Optional, |_, ctx: Ctx| async move {
        if ctx.input_responses().is_none() {
            tokio::time::sleep(PAST_THE_WINDOW).await;
        }
        let both = InputRequired::new()
            .request("a", "elicitation/create", elicit("a"))
            .request("b", "elicitation/create", elicit("b"));
        let got = ctx.input(both).await?;
        Ok(CallToolResult::text(format!(
            "a={} b={}",
            got["a"]["content"]["a"], got["b"]["content"]["b"]
        )))
    }));
    r.add_tool(tool("mrtr_first", Required, |_, ctx: Ctx| async move {
        let got = ctx
            .input(InputRequired::new().request("name", "elicitation/create", elicit("name")))
            .await?;
        tokio::time::sleep(PAST_THE_WINDOW).await;
        Ok(CallToolResult::text(format!(
            "Hello {}",
            got["name"]["content"]["name"]
        )))
    }));
    let p = probe.clone();
    r.add_tool(tool("gated", Optional, move |_, _| {
        let p = p.clone();
        async move {
            p.gate.notified().await;
            Ok(CallToolResult::text("gated done"))
        }
    }));
    r.add_tool(tool("required", Required, |_, _| async {
        Ok(CallToolResult::text("required"))
    }));
    r
}

/// An engine over the probe tools.
pub(crate) fn runtime(config: ServerConfig, store: Option<Arc<dyn TaskStore>>) -> (Engine, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let registry = Arc::new(registry(&probe));
    let rt = match store {
        Some(s) => mcp_tests::engine::start(config, registry, mcp_runtime::Storage::Tasks(s)),
        None => mcp_tests::engine::memory(config, registry),
    };
    (rt, probe)
}

/// A client: modern (with or without the extension) or a legacy
/// 2025-11-25 session.
pub(crate) struct Client {
    pub(crate) rt: Engine,
    pub(crate) auth: Arc<AuthInfo>,
    pub(crate) session: Option<SessionHandle>,
    ext: bool,
    next: std::sync::atomic::AtomicI64,
}

impl Client {
    pub(crate) fn modern(rt: &Engine, principal: &str, ext: bool) -> Self {
        Client {
            rt: rt.clone(),
            auth: Arc::new(AuthInfo::new(principal)),
            session: None,
            ext,
            next: 1.into(),
        }
    }

    pub(crate) async fn legacy(rt: &Engine, principal: &str) -> Self {
        Self::legacy_at(rt, principal, "2025-11-25").await
    }

    /// A legacy session negotiated at `revision`.
    pub(crate) async fn legacy_at(rt: &Engine, principal: &str, revision: &str) -> Self {
        let auth = Arc::new(AuthInfo::new(principal));
        let init = request(
            0,
            "initialize",
            json!({"protocolVersion": revision, "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "t", "version": "1"}}),
        );
        // The session is minted by the engine, in its sessions, as over HTTP.
        let peer = Peer::new(auth.clone(), Sessions::Store(None));
        let (sink, _rx) = Sink::channel(4);
        let session = drive::request(rt, &peer, init, sink).await.session;
        assert!(session.is_some(), "initialize");
        Client {
            rt: rt.clone(),
            auth,
            session,
            ext: false,
            next: 1.into(),
        }
    }

    /// The request, with the modern `_meta` envelope when modern.
    pub(crate) fn request(&self, method: &str, params: Value) -> Request {
        let mut params = params;
        if self.session.is_none() {
            let mut caps = json!({"elicitation": {}});
            if self.ext {
                caps["extensions"] = json!({ EXT: {} });
            }
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
            });
        }
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        request(id, method, params)
    }

    /// Runs a request through the engine with a given sink (a legacy one in the client's
    /// session); a refusal is an error reply.
    pub(crate) async fn send_with(&self, req: Request, sink: Sink) -> Reply {
        let sessions = match &self.session {
            Some(s) => Sessions::Store(Some(s.id())),
            None => Sessions::None,
        };
        let peer = Peer::new(self.auth.clone(), sessions);
        drive::request(&self.rt, &peer, req, sink).await.reply
    }

    /// Opens a `subscriptions/listen` stream for `notifications` through the engine, as a
    /// transport would; a refusal is its JSON-RPC error.
    pub(crate) async fn listen(&self, id: i64, notifications: Value) -> Result<mcp_runtime::Listener, Value> {
        let mut req = self.request("subscriptions/listen", json!({"notifications": notifications}));
        req.id = RequestId::Number(id);
        let peer = Peer::new(self.auth.clone(), Sessions::None);
        match self.rt.request(&peer, req).await {
            mcp_runtime::Step::Listen(l) => Ok(l.listener),
            mcp_runtime::Step::Answer(a) => {
                Err(serde_json::from_slice::<Value>(&a.frame).expect("JSON")["error"].clone())
            }
            mcp_runtime::Step::Call(_) => panic!("a listen request is not a call"),
        }
    }

    pub(crate) async fn call(&self, method: &str, params: Value) -> Reply {
        let (sink, _rx) = Sink::channel(64);
        self.send_with(self.request(method, params), sink).await
    }

    pub(crate) async fn ok(&self, method: &str, params: Value) -> Value {
        match self.call(method, params).await {
            Reply::Result(v) => v,
            Reply::Encoded(e) => e.to_value(),
            other => panic!("{method}: expected a result, got {other:?}"),
        }
    }

    pub(crate) async fn err(&self, method: &str, params: Value) -> RpcError {
        match self.call(method, params).await {
            Reply::Error(e) => e,
            other => panic!("{method}: expected an error, got {other:?}"),
        }
    }

    /// `tools/call` of a tool with arguments.
    pub(crate) async fn tool(&self, name: &str, args: Value) -> Value {
        self.ok("tools/call", json!({"name": name, "arguments": args})).await
    }

    pub(crate) async fn get(&self, task_id: &str) -> Value {
        self.ok("tasks/get", json!({"taskId": task_id})).await
    }

    /// Polls `tasks/get` until `done` holds (5 s at most).
    pub(crate) async fn wait_until(&self, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..500 {
            let t = self.get(task_id).await;
            if done(&t) {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("task {task_id} never reached the expected state");
    }

    pub(crate) async fn wait_status(&self, task_id: &str, status: &str) -> Value {
        self.wait_until(task_id, |t| t["status"] == status).await
    }
}

pub(crate) fn request(id: i64, method: &str, params: Value) -> Request {
    Request {
        id: RequestId::Number(id),
        method: method.into(),
        params: mcp_protocol::Params::from_value(params),
    }
}

pub(crate) fn task_id(created: &Value) -> String {
    let t = created.get("task").unwrap_or(created);
    t["taskId"].as_str().expect("a task id").to_owned()
}

/// Waits (5 s at most) until a condition holds.
pub(crate) async fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never: {what}");
}
