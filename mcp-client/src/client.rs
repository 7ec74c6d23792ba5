//! The [`Client`]: requests followed to their final answer (the MRTR loop in the modern era,
//! server requests answered while a legacy call runs), bounded by a timeout and cancelled when
//! dropped, and the typed calls of every method.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_protocol::client::{self, Envelope, ServerNotification};
use mcp_protocol::jsonrpc::{encode_notification, encode_request};
use mcp_protocol::meta::SERVER_INFO;
use mcp_protocol::model::{
    CallToolResult, CompleteReference, Completion, GetPromptResult, Listed, LoggingLevel, PromptInfo,
    ReadResourceResult, ResourceInfo, TemplateInfo, ToolInfo,
};
use mcp_protocol::{Era, Method, RequestId, Revision, RpcError};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::conn::{Conn, OnInput, Watch};
use crate::error::ClientError;
use crate::link::{Kind, Outbound};

/// What the client was built with, beside its handlers.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) capabilities: Value,
    pub(crate) timeout: Duration,
    pub(crate) max_rounds: usize,
    pub(crate) log_level: Mutex<Option<LoggingLevel>>,
}

/// A connected MCP client: cheap to clone, every clone speaks on the same connection. The
/// connection closes when the last clone is dropped, or at [`Client::close`].
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) conn: Arc<Conn>,
    pub(crate) options: Arc<Options>,
}

/// Per-request settings of [`Client::request_with`].
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The request's timeout (the client's when `None`).
    pub timeout: Option<Duration>,
    /// Called with the params of each `notifications/progress` of the request (a progress
    /// token is sent when set).
    pub on_progress: Option<Arc<dyn Fn(Value) + Send + Sync>>,
    /// Answers what the server asks while this request runs (method, params), instead of the
    /// client's handlers: its legacy server requests, and its modern `input_required` rounds.
    pub on_input: Option<OnInput>,
    /// The capabilities this modern request declares, instead of the client's (a relay
    /// declares the capabilities of the caller it relays for).
    pub capabilities: Option<Value>,
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("on_input", &self.on_input.is_some())
            .field("capabilities", &self.capabilities)
            .finish()
    }
}

impl RequestOptions {
    /// With a timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// With a progress callback.
    pub fn on_progress(mut self, f: impl Fn(Value) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Declaring these capabilities (see [`RequestOptions::capabilities`]).
    pub fn capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// With its own answerer of what the server asks (see [`RequestOptions::on_input`]).
    pub fn on_input<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.on_input = Some(Arc::new(move |method, params| Box::pin(f(method, params))));
        self
    }
}

/// One page of a `*/list` result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The entries.
    pub items: Vec<T>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

impl Client {
    /// The revision the handshake settled.
    pub fn revision(&self) -> Revision {
        self.conn.negotiated().map_or(Revision::LATEST_MODERN, |n| n.revision)
    }

    /// The era of that revision.
    pub fn era(&self) -> Era {
        self.revision().era()
    }

    /// The `initialize` (legacy) or `server/discover` (modern) result.
    pub fn handshake_result(&self) -> Value {
        self.conn.negotiated().map_or(Value::Null, |n| n.result)
    }

    /// The capabilities the server declared.
    pub fn server_capabilities(&self) -> Value {
        self.handshake_result()
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({}))
    }

    /// The server's `Implementation` (`serverInfo`, or the result's `_meta` in the modern era).
    pub fn server_info(&self) -> Option<Value> {
        let r = self.handshake_result();
        r.get("serverInfo")
            .or_else(|| r.get("_meta").and_then(|m| m.get(SERVER_INFO)))
            .cloned()
    }

    /// The server's instructions, if it gave any.
    pub fn instructions(&self) -> Option<String> {
        self.handshake_result()
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The server's notifications from now on (progress and log messages of calls included).
    /// A receiver that falls more than 256 behind loses the oldest.
    pub fn notifications(&self) -> broadcast::Receiver<ServerNotification> {
        self.conn.subscribe()
    }

    /// Sends a request and follows it to its final answer (see [`Client::request_with`]).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request_with(method, params, RequestOptions::default()).await
    }

    /// Sends a request and follows it to its final answer: a legacy server's requests are
    /// answered by the client's handlers while it runs; a modern `input_required` result is
    /// answered by the same handlers and the request sent again (new id, the `requestState`
    /// echoed) until a final one. Bounded by the timeout; dropping the future cancels the
    /// request (`notifications/cancelled`, or closing its HTTP stream in the modern era).
    pub async fn request_with(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let params = object(params)?;
        let work = async {
            self.conn.ready().await?;
            self.follow(method, params, &options).await
        };
        self.bounded(&options, work).await
    }

    /// Runs `work` within the request's timeout.
    async fn bounded(
        &self,
        options: &RequestOptions,
        work: impl std::future::Future<Output = Result<Value, ClientError>>,
    ) -> Result<Value, ClientError> {
        let timeout = options.timeout.unwrap_or(self.options.timeout);
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or(Err(ClientError::Timeout(timeout)))
    }

    /// Sends a request once and returns its answer as it comes: a modern `input_required`
    /// result is returned, not followed (a caller that relays the rounds elsewhere, as a
    /// mount does, sends the retry itself). Legacy server requests are still answered while
    /// it runs, by [`RequestOptions::on_input`] or the client's handlers.
    pub async fn request_once(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let params = object(params)?;
        let work = async {
            self.conn.ready().await?;
            self.round(self.revision(), method, params, &options).await
        };
        self.bounded(&options, work).await
    }

    async fn follow(
        &self,
        method: &str,
        original: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let revision = self.revision();
        let mut params = original.clone();
        for _ in 0..self.options.max_rounds {
            let result = self.round(revision, method, params, options).await?;
            if revision.era() == Era::Legacy || !client::is_input_required(&result) {
                return Ok(result);
            }
            let mut responses = Map::new();
            for asked in client::input_requests(&result) {
                let answer = match &options.on_input {
                    Some(f) => f(asked.method.to_owned(), asked.params).await?,
                    None => self.conn.handlers.answer(asked.method, asked.params).await?,
                };
                responses.insert(asked.key.to_owned(), answer);
            }
            params = client::retry_params(&original, responses, &result);
        }
        Err(ClientError::TooManyRounds(self.options.max_rounds))
    }

    /// Sends one request at `revision` and waits for its answer (one round, no readiness wait:
    /// the handshake's own requests go through here).
    pub(crate) async fn round(
        &self,
        revision: Revision,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        self.round_as(self.conn.next_id(), revision, method, params, options)
            .await
    }

    /// [`Client::round`] under a chosen id.
    pub(crate) async fn round_as(
        &self,
        id: RequestId,
        revision: Revision,
        method: &str,
        mut params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let progress = options
            .on_progress
            .clone()
            .map(|f| (json!(format!("progress-{id}")), f));
        let mut envelope = self.envelope(revision);
        if let Some(caps) = &options.capabilities {
            envelope.capabilities = caps;
        }
        client::stamp(&mut params, &envelope, progress.as_ref().map(|(t, _)| t.clone()));
        let name = Method::parse(method)
            .name_field()
            .and_then(|field| params.get(field))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let bytes = encode_request(&id, method, Some(&Value::Object(params)));
        let out = Outbound {
            bytes,
            kind: Kind::Request {
                id: id.clone(),
                method: method.to_owned(),
                name,
                revision: Some(revision),
            },
        };
        let mut cancel = CancelOnDrop {
            client: self,
            id,
            revision,
            armed: true,
        };
        let watch = Watch {
            progress: progress.map(|(t, f)| (crate::conn::token_key(&t), f)),
            input: options.on_input.clone(),
        };
        let answer = self.conn.send_request(out, watch).await;
        cancel.armed = false;
        answer
    }

    fn envelope(&self, revision: Revision) -> Envelope<'_> {
        Envelope {
            revision,
            capabilities: &self.options.capabilities,
            client_info: &self.conn.client_info,
            log_level: *self.options.log_level.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Sends a notification (stamped with the protocol version in the modern era).
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        self.notify_at(self.revision(), method, params).await
    }

    pub(crate) async fn notify_at(&self, revision: Revision, method: &str, params: Value) -> Result<(), ClientError> {
        let mut params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        client::stamp_notification(&mut params, revision);
        let params = (!params.is_empty()).then_some(Value::Object(params));
        let out = Outbound {
            bytes: encode_notification(method, params.as_ref()),
            kind: Kind::Notification,
        };
        self.conn.send(out).await
    }

    /// Asks the server to stop a request (`notifications/cancelled`).
    async fn cancel(&self, id: RequestId, revision: Revision) {
        if self.conn.link.end_stream(&id) {
            return;
        }
        let params = json!({"requestId": id, "reason": "the client no longer waits for the answer"});
        if let Err(e) = self.notify_at(revision, "notifications/cancelled", params).await {
            tracing::debug!(error = %e, "the cancellation was not sent");
        }
    }

    /// Closes the connection: a legacy HTTP session is deleted, a child process stopped (its
    /// stdin closed, then killed after a grace). Requests still waiting fail.
    pub async fn close(&self) {
        self.conn.link.close().await;
        self.conn.close_for_good("the client closed the connection");
    }

    // ---- typed calls ----

    /// Checks that the server answers: `ping` in the legacy era, `server/discover` in the
    /// modern one (which has no `ping`).
    pub async fn ping(&self) -> Result<(), ClientError> {
        let method = match self.era() {
            Era::Legacy => "ping",
            Era::Modern => "server/discover",
        };
        self.request(method, json!({})).await.map(drop)
    }

    /// Every tool, all pages followed.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        self.list_all("tools/list").await
    }

    /// Every resource, all pages followed.
    pub async fn list_resources(&self) -> Result<Vec<ResourceInfo>, ClientError> {
        self.list_all("resources/list").await
    }

    /// Every resource template, all pages followed.
    pub async fn list_resource_templates(&self) -> Result<Vec<TemplateInfo>, ClientError> {
        self.list_all("resources/templates/list").await
    }

    /// Every prompt, all pages followed.
    pub async fn list_prompts(&self) -> Result<Vec<PromptInfo>, ClientError> {
        self.list_all("prompts/list").await
    }

    /// One page of a `*/list` method (`tools/list`, `resources/list`, …) from `cursor`.
    pub async fn list_page<T: Listed>(&self, method: &str, cursor: Option<&str>) -> Result<Page<T>, ClientError> {
        let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let result = self.request(method, params).await?;
        let entries = result
            .get(T::KEY)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut items = Vec::with_capacity(entries.len());
        for raw in entries {
            let mut item: T = decode(raw.clone())?;
            item.set_raw(raw);
            items.push(item);
        }
        let next_cursor = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        Ok(Page { items, next_cursor })
    }

    async fn list_all<T: Listed>(&self, method: &str) -> Result<Vec<T>, ClientError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self.list_page::<T>(method, cursor.as_deref()).await?;
            all.extend(page.items);
            match page.next_cursor {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                _ => return Ok(all),
            }
        }
    }

    /// `tools/call`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, RequestOptions::default()).await
    }

    /// `tools/call` with per-request settings (a timeout, a progress callback).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let result = self
            .request_with("tools/call", json!({"name": name, "arguments": arguments}), options)
            .await?;
        decode(result)
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        decode(self.request("resources/read", json!({"uri": uri})).await?)
    }

    /// `prompts/get`.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult, ClientError> {
        decode(
            self.request("prompts/get", json!({"name": name, "arguments": arguments}))
                .await?,
        )
    }

    /// `completion/complete` for one argument of a prompt or a resource template.
    pub async fn complete(
        &self,
        reference: CompleteReference,
        argument: &str,
        value: &str,
    ) -> Result<Completion, ClientError> {
        let params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
        let result = self.request("completion/complete", params).await?;
        decode(result.get("completion").cloned().unwrap_or(Value::Null))
    }

    /// Sets the level of the server's log messages: `logging/setLevel` in the legacy era, the
    /// `_meta` log level of every later request in the modern one.
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        if self.era() == Era::Legacy {
            self.request("logging/setLevel", json!({"level": level})).await?;
        }
        *self.options.log_level.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
        Ok(())
    }

    /// `resources/subscribe` (legacy: updates come as notifications; modern servers use
    /// [`Client::listen`]).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        self.request("resources/subscribe", json!({"uri": uri})).await.map(drop)
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        self.request("resources/unsubscribe", json!({"uri": uri}))
            .await
            .map(drop)
    }

    /// Tells a legacy server the client's roots changed (`notifications/roots/list_changed`;
    /// the modern era has no such notification: a server asks for the roots each time).
    pub async fn roots_changed(&self) -> Result<(), ClientError> {
        match self.era() {
            Era::Legacy => self.notify("notifications/roots/list_changed", json!({})).await,
            Era::Modern => Ok(()),
        }
    }
}

/// A request's params: an object (`null` is none).
fn object(params: Value) -> Result<Map<String, Value>, ClientError> {
    match params {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m),
        other => Err(ClientError::Unexpected(format!(
            "params must be an object, not {other}"
        ))),
    }
}

/// Decodes a result into its type.
fn decode<T: DeserializeOwned>(v: Value) -> Result<T, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Unexpected(e.to_string()))
}

/// Cancels a request whose caller stopped waiting (dropped, or timed out) before its answer.
struct CancelOnDrop<'a> {
    client: &'a Client,
    id: RequestId,
    revision: Revision,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let (id, revision) = (self.id.clone(), self.revision);
        runtime.spawn(async move { client.cancel(id, revision).await });
    }
}
