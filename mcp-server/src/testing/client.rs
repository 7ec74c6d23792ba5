//! The test client: requests in, through the runtime's engine, answers and notifications out.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::client::{self, Envelope};
use mcp_protocol::jsonrpc::{DecodeLimits, Inbound, decode as decode_frame};
use mcp_protocol::model::{
    CallToolResult, CompleteReference, Completion, GetPromptResult, LoggingLevel, ReadResourceResult,
};
use mcp_protocol::{Era, Message, RequestId, Revision, RpcError};
use mcp_runtime::{Engine, Frame, Peer, SessionHandle, SessionSlot, Sessions, Sink, Step};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::exchange::{ClientError, Exchange, ServerRequest, decode};
use super::listen::Subscription;
use super::script::Script;
use mcp_protocol::client::ServerNotification;
use mcp_protocol::model::{Listed, PromptInfo, ResourceInfo, TemplateInfo, ToolInfo};

/// What the builder settled.
pub(crate) struct Options {
    pub(crate) revision: Revision,
    pub(crate) capabilities: Value,
    pub(crate) client_info: Value,
    pub(crate) auth: Arc<AuthInfo>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) progress: bool,
    pub(crate) max_rounds: usize,
    pub(crate) script: Script,
}

/// An in-process MCP client of one [`McpServer`](crate::McpServer), for tests.
///
/// It is one client connection: it has its own legacy session (when it speaks a legacy
/// revision) and its own request ids, like a stdio process or a 2024-11-05 SSE connection, and
/// its messages go through the same engine every transport uses (decoding, era
/// classification, `_meta` and session checks, dispatch, finalization). Several clients of one
/// server run side by side. Cheap to clone (the clones are the same connection).
///
/// Build one with [`McpServer::test_client`](crate::McpServer::test_client),
/// [`TestClient::legacy`], [`TestClient::modern`] or [`TestClient::builder`].
///
/// ```
/// use mcp_server::prelude::*;
/// use mcp_server::testing::TestClient;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::builder()
///     .name("adder")
///     .version("1.0.0")
///     .tool(Tool::typed("add", "Adds", |i: Add, _ctx| async move { (i.a + i.b).to_string() }))
///     .build()?;
///
/// for client in [TestClient::legacy(&server).await?, TestClient::modern(&server).await?] {
///     let tools = client.list_tools().await?;
///     assert_eq!(tools[0].name, "add");
///     let result = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
///     assert_eq!(result.content, vec![Content::text("5")]);
///     assert!(!result.is_error);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TestClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("revision", &self.inner.options.revision)
            .field("principal", &self.inner.options.auth.principal)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    engine: Engine,
    slot: SessionSlot,
    options: Options,
    limits: DecodeLimits,
    next_id: AtomicI64,
    /// Every notification received, from any call, the session or the registry's changes.
    log: Mutex<Vec<ServerNotification>>,
    /// Every server request answered, from any call or task.
    requests: Mutex<Vec<ServerRequest>>,
    arrived: Notify,
    initialize: Mutex<Option<Value>>,
    discover: Mutex<Option<Value>>,
    forwarder: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(f) = self.forwarder.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
            f.abort();
        }
        if let Some(session) = self.slot.session() {
            session.close();
        }
        self.slot.root().cancel();
    }
}

/// What one round of a request gathered besides its answer.
#[derive(Default)]
struct Trace {
    notifications: Vec<ServerNotification>,
    server_requests: Vec<ServerRequest>,
}

impl TestClient {
    /// A connected legacy client (2025-11-25, `initialize` done) with the default options.
    pub async fn legacy(server: &crate::McpServer) -> Result<TestClient, ClientError> {
        Self::builder(server).legacy().connect().await
    }

    /// A modern client (2026-07-28) with the default options.
    pub async fn modern(server: &crate::McpServer) -> Result<TestClient, ClientError> {
        Self::builder(server).modern().connect().await
    }

    pub(crate) async fn open(engine: Engine, options: Options, discover: bool) -> Result<Self, ClientError> {
        // Subscribe before anything runs, so that no change is missed.
        let mut changes = engine.changes();
        let inner = Arc::new(Inner {
            engine,
            slot: SessionSlot::new(CancellationToken::new()),
            options,
            limits: DecodeLimits::default(),
            next_id: AtomicI64::new(1),
            log: Mutex::default(),
            requests: Mutex::default(),
            arrived: Notify::new(),
            initialize: Mutex::default(),
            discover: Mutex::default(),
            forwarder: Mutex::default(),
        });
        let weak = Arc::downgrade(&inner);
        let forwarder = tokio::spawn(async move {
            // Registry changes become list-changed / resource-updated notifications of the
            // legacy session, as a stdio server sends them.
            while let Some(batch) = changes.next().await {
                let Some(inner) = weak.upgrade() else { return };
                for change in batch {
                    if inner.slot.session().is_some_and(|s| s.wants(&change)) {
                        inner.record(&change.frame(None));
                    }
                }
            }
        });
        *inner.forwarder.lock().unwrap_or_else(PoisonError::into_inner) = Some(forwarder);
        let client = TestClient { inner };
        match client.era() {
            Era::Legacy => client.handshake().await?,
            Era::Modern if discover => {
                let result = client.request("server/discover", json!({})).await?;
                *client.inner.discover.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
            }
            Era::Modern => {}
        }
        Ok(client)
    }

    async fn handshake(&self) -> Result<(), ClientError> {
        let o = &self.inner.options;
        let params = json!({
            "protocolVersion": o.revision.as_str(),
            "capabilities": o.capabilities,
            "clientInfo": o.client_info,
        });
        let result = self.request("initialize", params).await?;
        // A server that does not declare logging sends no log messages, and has no level to set.
        let logging = result.pointer("/capabilities/logging").is_some();
        *self.inner.initialize.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        self.notify("notifications/initialized", Value::Null).await?;
        if let Some(level) = o.log_level.filter(|_| logging) {
            self.set_log_level(level).await?;
        }
        Ok(())
    }

    /// The revision the client speaks.
    pub fn revision(&self) -> Revision {
        self.inner.options.revision
    }

    /// The era of its revision.
    pub fn era(&self) -> Era {
        self.inner.options.revision.era()
    }

    /// The identity it acts as.
    pub fn auth(&self) -> &AuthInfo {
        &self.inner.options.auth
    }

    /// The result of `initialize` (legacy era).
    pub fn initialize_result(&self) -> Option<Value> {
        self.inner
            .initialize
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The result of the `server/discover` sent on connect (modern era, when
    /// [`TestClientBuilder::discover`](super::TestClientBuilder::discover) asked for it).
    pub fn discover_result(&self) -> Option<Value> {
        self.inner
            .discover
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The legacy session, once `initialize` succeeded.
    pub fn session(&self) -> Option<SessionHandle> {
        self.inner.slot.session()
    }

    fn peer(&self) -> Peer<'_> {
        Peer::new(self.inner.options.auth.clone(), Sessions::Slot(&self.inner.slot))
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Encodes and decodes a message the way a transport receives it.
    fn wire(&self, body: &Value) -> Result<Message, ClientError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ClientError::Unexpected(e.to_string()))?;
        match decode_frame(&bytes, &self.inner.limits) {
            Ok(Inbound::Single(m)) => Ok(m),
            Ok(Inbound::Batch(_)) => Err(ClientError::Unexpected("a batch".into())),
            Err(e) => Err(ClientError::Rpc(e.to_rpc_error())),
        }
    }

    /// The params of a request as sent: `_meta` gets the modern envelope (protocol version,
    /// capabilities, client info, log level) and a progress token, unless the caller set those
    /// keys itself.
    fn envelope(&self, method: &str, mut params: Map<String, Value>, id: &RequestId) -> Map<String, Value> {
        let o = &self.inner.options;
        let envelope = Envelope {
            revision: o.revision,
            capabilities: &o.capabilities,
            client_info: &o.client_info,
            log_level: o.log_level,
        };
        let token = (o.progress && method != "initialize").then(|| json!(format!("progress-{id}")));
        client::stamp(&mut params, &envelope, token);
        params
    }

    /// Records a notification the server sent outside any call (session, changes).
    pub(crate) fn record_frame(inner: &Weak<Inner>, frame: &Frame) -> bool {
        let Some(inner) = inner.upgrade() else {
            return false;
        };
        inner.record(frame);
        true
    }

    /// Sends one request (one round: no MRTR retry) and gathers what its stream carried.
    async fn round(
        &self,
        id: RequestId,
        method: &str,
        params: Map<String, Value>,
        trace: &mut Trace,
    ) -> Result<Result<Value, RpcError>, ClientError> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let req = match self.wire(&body) {
            Ok(Message::Request(r)) => r,
            Ok(_) => return Err(ClientError::Unexpected("not a request".into())),
            Err(ClientError::Rpc(e)) => return Ok(Err(e)),
            Err(e) => return Err(e),
        };
        let step = self.inner.engine.request(&self.peer(), req).await;
        match step {
            Step::Answer(answer) => {
                if let Some(session) = &answer.session {
                    let weak = Arc::downgrade(&self.inner);
                    session.set_outlet(move |frame| TestClient::record_frame(&weak, &frame));
                }
                response_of(&answer.frame)
            }
            Step::Listen(_) => Err(ClientError::Unexpected(
                "subscriptions/listen opens a stream: use TestClient::listen".into(),
            )),
            Step::Call(call) => {
                let (sink, mut frames) = Sink::channel(256);
                let mut run = tokio::spawn(call.run(sink));
                loop {
                    tokio::select! {
                        biased;
                        Some(frame) = frames.recv() => self.on_frame(&frame, trace).await,
                        done = &mut run => {
                            let done = done.map_err(|e| ClientError::Unexpected(format!("the call task failed: {e}")))?;
                            while let Ok(frame) = frames.try_recv() {
                                self.on_frame(&frame, trace).await;
                            }
                            return match done.frame() {
                                Some(frame) => response_of(&frame),
                                None => Err(ClientError::Cancelled),
                            };
                        }
                    }
                }
            }
        }
    }

    /// A message on a call's stream: a notification (recorded) or a server-to-client request
    /// (answered from the script).
    async fn on_frame(&self, frame: &Frame, trace: &mut Trace) {
        let Ok(v) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        let Some(method) = v.get("method").and_then(Value::as_str) else {
            return;
        };
        let params = v.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = v.get("id").cloned() else {
            let note = ServerNotification {
                method: method.to_owned(),
                params,
            };
            trace.notifications.push(note.clone());
            self.inner.push(note);
            return;
        };
        let reply = self
            .inner
            .options
            .script
            .reply(method, &params)
            .unwrap_or_else(|| Err(RpcError::method_not_found(method)));
        let asked = ServerRequest {
            method: method.to_owned(),
            params,
            key: None,
            reply: reply.clone(),
        };
        trace.server_requests.push(asked.clone());
        self.record_server_request(asked);
        let body = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        if let Ok(Message::Response(r)) = self.wire(&body) {
            self.inner.engine.deliver(&self.peer(), r).await;
        }
    }

    pub(crate) async fn exchange_tracked(
        &self,
        method: &str,
        params: Value,
        current: &Mutex<RequestId>,
        first: RequestId,
    ) -> Result<Exchange<Value>, ClientError> {
        let params = match params {
            Value::Null => Map::new(),
            Value::Object(m) => m,
            other => {
                return Err(ClientError::Unexpected(format!(
                    "params must be an object, not {other}"
                )));
            }
        };
        let mut trace = Trace::default();
        let mut rounds = 0;
        let mut retry = params.clone();
        let mut id = first;
        loop {
            rounds += 1;
            *current.lock().unwrap_or_else(PoisonError::into_inner) = id.clone();
            let sent = self.envelope(method, retry, &id);
            let result = self.round(id, method, sent, &mut trace).await??;
            if !client::is_input_required(&result) {
                return Ok(Exchange {
                    result,
                    notifications: trace.notifications,
                    server_requests: trace.server_requests,
                    rounds,
                });
            }
            if rounds >= self.inner.options.max_rounds {
                return Err(ClientError::TooManyRounds(rounds));
            }
            retry = client::retry_params(&params, self.answer_inputs(&result, &mut trace)?, &result);
            id = self.next_id();
        }
    }

    /// Answers the `inputRequests` of an `input_required` result from the script.
    fn answer_inputs(&self, result: &Value, trace: &mut Trace) -> Result<Map<String, Value>, ClientError> {
        let mut responses = Map::new();
        for asked in client::input_requests(result) {
            let reply = self
                .inner
                .options
                .script
                .reply(asked.method, &asked.params)
                .ok_or_else(|| ClientError::Unscripted(asked.method.to_owned()))?;
            if let Ok(v) = &reply {
                responses.insert(asked.key.to_owned(), v.clone());
            }
            let asked = ServerRequest {
                method: asked.method.to_owned(),
                params: asked.params,
                key: Some(asked.key.to_owned()),
                reply,
            };
            trace.server_requests.push(asked.clone());
            self.record_server_request(asked);
        }
        Ok(responses)
    }

    /// Sends a request and follows it to its final answer: legacy server-to-client requests
    /// are answered from the script while the call runs; a modern `input_required` result is
    /// answered from the script and the request retried with `inputResponses` and the
    /// `requestState`, until a final result. Returns the result with what the request's
    /// stream carried and the number of rounds.
    ///
    /// `params` is an object (or `Null` for none); the client adds the `_meta` it owes (see
    /// [`TestClientBuilder`](super::TestClientBuilder)), keeping keys the caller set.
    pub async fn exchange(&self, method: &str, params: Value) -> Result<Exchange<Value>, ClientError> {
        let id = self.next_id();
        let current = Mutex::new(id.clone());
        self.exchange_tracked(method, params, &current, id).await
    }

    /// [`exchange`](Self::exchange), the result only: the raw JSON-RPC result, or the error.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        Ok(self.exchange(method, params).await?.result)
    }

    /// Sends a request once, without the MRTR loop: an `input_required` result is returned as
    /// it is (legacy server-to-client requests are still answered from the script).
    pub async fn request_once(&self, method: &str, params: Value) -> Result<Exchange<Value>, ClientError> {
        let params = match params {
            Value::Null => Map::new(),
            Value::Object(m) => m,
            other => {
                return Err(ClientError::Unexpected(format!(
                    "params must be an object, not {other}"
                )));
            }
        };
        let id = self.next_id();
        let mut trace = Trace::default();
        let sent = self.envelope(method, params, &id);
        let result = self.round(id, method, sent, &mut trace).await??;
        Ok(Exchange {
            result,
            notifications: trace.notifications,
            server_requests: trace.server_requests,
            rounds: 1,
        })
    }

    /// Sends `notifications/cancelled` for request `id`.
    pub async fn cancel(&self, id: &RequestId, reason: Option<&str>) -> Result<(), ClientError> {
        let mut params = json!({ "requestId": id });
        if let Some(r) = reason {
            params["reason"] = json!(r);
        }
        self.notify("notifications/cancelled", params).await
    }

    /// Sends a notification (modern: with the `_meta` envelope).
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        let mut params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        client::stamp_notification(&mut params, self.inner.options.revision);
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_empty() {
            body["params"] = Value::Object(params);
        }
        let Message::Notification(note) = self.wire(&body)? else {
            return Err(ClientError::Unexpected("not a notification".into()));
        };
        match self.inner.engine.notification(&self.peer(), &note).await {
            Some(refused) => response_of(&refused.frame)?.map(drop).map_err(ClientError::Rpc),
            None => Ok(()),
        }
    }

    /// Every notification received so far that nobody took yet (from calls, the legacy
    /// session, registry changes), oldest first; the log is emptied.
    pub fn take_notifications(&self) -> Vec<ServerNotification> {
        std::mem::take(&mut *self.inner.log.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every server request the client answered so far (in calls, and for tasks) that
    /// nobody took yet, oldest first; the log is emptied.
    pub fn take_server_requests(&self) -> Vec<ServerRequest> {
        std::mem::take(&mut *self.inner.requests.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn record_server_request(&self, asked: ServerRequest) {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(asked);
    }

    pub(crate) fn script(&self) -> &Script {
        &self.inner.options.script
    }

    /// Waits until a notification of `method` arrives (or is already in the log) and takes
    /// it from the log; `None` after `timeout`. A legacy session's list-changed,
    /// resource-updated and elicitation-complete notifications arrive on their own, shortly
    /// after the change (a modern client hears of changes on a [`listen`](Self::listen)
    /// stream instead).
    pub async fn wait_for_notification(&self, method: &str, timeout: Duration) -> Option<ServerNotification> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.inner.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            {
                let mut log = self.inner.log.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(i) = log.iter().position(|n| n.method == method) {
                    return Some(log.remove(i));
                }
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return None;
            }
        }
    }

    /// Opens a `subscriptions/listen` stream (modern era) asking for `notifications` (e.g.
    /// `json!({"toolsListChanged": true})`); see [`Subscription`].
    pub async fn listen(&self, notifications: Value) -> Result<Subscription, ClientError> {
        let id = self.next_id();
        let params = json!({ "notifications": notifications });
        let Value::Object(params) = params else { unreachable!() };
        let sent = self.envelope("subscriptions/listen", params, &id);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": sent});
        let Message::Request(req) = self.wire(&body)? else {
            return Err(ClientError::Unexpected("not a request".into()));
        };
        match self.inner.engine.request(&self.peer(), req).await {
            Step::Listen(listening) => Ok(Subscription::new(id, listening)),
            Step::Answer(answer) => match response_of(&answer.frame)? {
                Err(e) => Err(ClientError::Rpc(e)),
                Ok(v) => Err(ClientError::Unexpected(format!("listen answered at once: {v}"))),
            },
            Step::Call(call) => {
                let done = call.run(Sink::detached()).await;
                match done.frame().map(|f| response_of(&f)) {
                    Some(Ok(Err(e))) => Err(ClientError::Rpc(e)),
                    _ => Err(ClientError::Unexpected("listen ran as a call".into())),
                }
            }
        }
    }

    // Typed helpers.

    /// `tools/list`, every page.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        self.list("tools/list").await
    }

    /// `resources/list`, every page.
    pub async fn list_resources(&self) -> Result<Vec<ResourceInfo>, ClientError> {
        self.list("resources/list").await
    }

    /// `resources/templates/list`, every page.
    pub async fn list_resource_templates(&self) -> Result<Vec<TemplateInfo>, ClientError> {
        self.list("resources/templates/list").await
    }

    /// `prompts/list`, every page.
    pub async fn list_prompts(&self) -> Result<Vec<PromptInfo>, ClientError> {
        self.list("prompts/list").await
    }

    async fn list<T: Listed>(&self, method: &str) -> Result<Vec<T>, ClientError> {
        let mut out = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..10_000 {
            let params = match cursor.take() {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let result = self.request(method, params).await?;
            let items = result
                .get(T::KEY)
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Unexpected(format!("{method}: no {} array", T::KEY)))?;
            for raw in items {
                let mut item: T = decode(method, raw.clone())?;
                item.set_raw(raw.clone());
                out.push(item);
            }
            match result.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => return Ok(out),
            }
        }
        Err(ClientError::Unexpected(format!("{method}: the cursor never ends")))
    }

    /// `tools/call`: the tool's result (a tool error is a result with `is_error`; a protocol
    /// error is [`ClientError::Rpc`]).
    pub async fn call_tool(&self, name: &str, arguments: impl serde::Serialize) -> Result<CallToolResult, ClientError> {
        Ok(self.call_tool_exchange(name, arguments).await?.result)
    }

    /// `tools/call` with its notifications, the input the server asked for, and the rounds.
    pub async fn call_tool_exchange(
        &self,
        name: &str,
        arguments: impl serde::Serialize,
    ) -> Result<Exchange<CallToolResult>, ClientError> {
        let arguments = serde_json::to_value(arguments).map_err(|e| ClientError::Unexpected(e.to_string()))?;
        self.exchange("tools/call", json!({"name": name, "arguments": arguments}))
            .await?
            .try_map(|v| {
                if v.get("resultType").and_then(Value::as_str) == Some("task") {
                    let id = v.get("taskId").cloned().unwrap_or_default();
                    return Err(ClientError::Unexpected(format!(
                        "the call became task {id}: use call_tool_as_task and task_result"
                    )));
                }
                decode("tools/call", v)
            })
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        Ok(self.read_resource_exchange(uri).await?.result)
    }

    /// `resources/read` with its exchange.
    pub async fn read_resource_exchange(&self, uri: &str) -> Result<Exchange<ReadResourceResult>, ClientError> {
        self.exchange("resources/read", json!({ "uri": uri }))
            .await?
            .try_map(|v| decode("resources/read", v))
    }

    /// `prompts/get` with `arguments` (an object of strings, or `Null`).
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult, ClientError> {
        Ok(self.get_prompt_exchange(name, arguments).await?.result)
    }

    /// `prompts/get` with its exchange.
    pub async fn get_prompt_exchange(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Exchange<GetPromptResult>, ClientError> {
        let mut params = json!({ "name": name });
        if !arguments.is_null() {
            params["arguments"] = arguments;
        }
        self.exchange("prompts/get", params)
            .await?
            .try_map(|v| decode("prompts/get", v))
    }

    /// `completion/complete` of `argument` (typed so far: `value`) of a prompt or template.
    pub async fn complete(
        &self,
        reference: CompleteReference,
        argument: &str,
        value: &str,
    ) -> Result<Completion, ClientError> {
        self.complete_with_context(reference, argument, value, Value::Null)
            .await
    }

    /// [`complete`](Self::complete) with the arguments already resolved (`context.arguments`,
    /// 2025-06-18 and later).
    pub async fn complete_with_context(
        &self,
        reference: CompleteReference,
        argument: &str,
        value: &str,
        arguments: Value,
    ) -> Result<Completion, ClientError> {
        let mut params = json!({ "ref": reference, "argument": {"name": argument, "value": value} });
        if !arguments.is_null() {
            params["context"] = json!({ "arguments": arguments });
        }
        let mut result = self.request("completion/complete", params).await?;
        decode("completion/complete", result["completion"].take())
    }

    /// `ping` (legacy era).
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request("ping", json!({})).await.map(drop)
    }

    /// `logging/setLevel` (legacy era).
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        self.request("logging/setLevel", json!({ "level": level }))
            .await
            .map(drop)
    }

    /// `resources/subscribe` (legacy era): `notifications/resources/updated` for `uri` then
    /// reaches [`take_notifications`](Self::take_notifications).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        self.request("resources/subscribe", json!({ "uri": uri }))
            .await
            .map(drop)
    }

    /// `resources/unsubscribe` (legacy era).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        self.request("resources/unsubscribe", json!({ "uri": uri }))
            .await
            .map(drop)
    }

    /// Ends the connection (as the end of a stdio client's input does): the legacy session
    /// closes, its pending server-to-client requests fail, requests in flight are cancelled,
    /// and later requests end [`ClientError::Cancelled`]. Dropping the last clone does the
    /// same.
    pub fn close(&self) {
        if let Some(session) = self.inner.slot.session() {
            session.close();
        }
        self.inner.slot.root().cancel();
    }
}

impl Inner {
    fn record(&self, frame: &Frame) {
        let Ok(v) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if let Some(method) = v.get("method").and_then(Value::as_str) {
            self.push(ServerNotification {
                method: method.to_owned(),
                params: v.get("params").cloned().unwrap_or(Value::Null),
            });
        }
    }

    fn push(&self, note: ServerNotification) {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).push(note);
        self.arrived.notify_waiters();
    }
}

/// The outcome of an encoded response.
pub(crate) fn response_of(frame: &[u8]) -> Result<Result<Value, RpcError>, ClientError> {
    let v: Value = serde_json::from_slice(frame).map_err(|e| ClientError::Unexpected(e.to_string()))?;
    if let Some(error) = v.get("error") {
        return Ok(Err(decode("error", error.clone())?));
    }
    match v.get("result") {
        Some(result) => Ok(Ok(result.clone())),
        None => Err(ClientError::Unexpected(format!("not a response: {v}"))),
    }
}
