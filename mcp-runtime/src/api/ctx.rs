//! `Ctx`: everything a handler may know about, and do for, its request.

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::jsonrpc::encode_notification;
use mcp_protocol::meta::ModernMeta;
use mcp_protocol::model::{ClientCapabilities, LoggingLevel};
use mcp_protocol::{Era, Feature, Params, RequestId, Revision};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::error::HandlerError;
use super::input_required::InputRequired;
use super::resume::ResumeLink;
use super::run::Run;
use super::state::States;
use super::task_link::TaskLink;
use crate::elicitation::Elicitations;
use crate::quota::ClientKey;
use crate::session::Session;
use crate::sink::Sink;

/// Where the request's client facts come from.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// A legacy request inside a session.
    Session(Arc<Session>),
    /// A legacy request without a session (before `initialize`, simple mode).
    Sessionless,
    /// A modern request with its validated `_meta`.
    Modern(Arc<ModernMeta>),
    /// A 2025-11-25 task's call run again by a worker, with the client facts its session had.
    #[cfg(feature = "shared-store")]
    Recorded(Arc<Recorded>),
}

/// The client facts of a legacy session, as a resumable task recorded them.
#[cfg(feature = "shared-store")]
#[derive(Debug)]
pub(crate) struct Recorded {
    pub(crate) revision: Revision,
    pub(crate) client_capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Value>,
}

#[derive(Clone)]
pub(crate) struct CtxInner {
    pub(crate) auth: Arc<AuthInfo>,
    /// The client's address, where the transport tells clients apart.
    pub(crate) remote: Option<std::net::IpAddr>,
    pub(crate) origin: Origin,
    pub(crate) request_id: RequestId,
    pub(crate) method: mcp_protocol::Method,
    /// The request's params, shared rather than copied (`_meta` is read from them).
    pub(crate) params: Params,
    pub(crate) progress_token: Option<Value>,
    pub(crate) cancel: CancellationToken,
    pub(crate) sink: Sink,
    pub(crate) attachments: crate::attachments::Attachments,
    pub(crate) client_request_timeout: Duration,
    /// Whether the server offers logging (`ServerConfig::logging`).
    pub(crate) logging: bool,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) request_state: Option<Value>,
    /// The 2025-11-25 task the call runs as, if any.
    pub(crate) task: Option<Arc<dyn TaskLink>>,
    /// The resumable task the call runs as, if any (either era).
    pub(crate) resume: Option<Arc<dyn ResumeLink>>,
    /// The runtime's URL-mode elicitation records.
    pub(crate) elicitations: Arc<Elicitations>,
    /// The server's shared state.
    pub(crate) state: States,
}

/// The per-request context handed to every handler. Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    pub(super) inner: Arc<CtxInner>,
    /// This run of the handler's input keys and kept round state (fresh per round).
    run: Arc<Run>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("principal", &self.inner.auth.principal)
            .field("era", &self.era())
            .field("request_id", &self.inner.request_id)
            .finish_non_exhaustive()
    }
}

static EMPTY_CAPS: std::sync::LazyLock<ClientCapabilities> = std::sync::LazyLock::new(ClientCapabilities::default);

impl Ctx {
    pub(crate) fn new(inner: CtxInner) -> Self {
        Ctx {
            inner: Arc::new(inner),
            run: Arc::default(),
        }
    }

    /// This run of the handler's input keys and kept round state.
    pub(crate) fn run(&self) -> &Run {
        &self.run
    }

    /// The server's shared state of type `T`, set with the builder's `state(value)` (or
    /// [`ServerConfig::state`](crate::ServerConfig::state)): `let notes = ctx.state::<Notes>()?;`.
    /// A type that was never set is an internal error naming it.
    pub fn state<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, HandlerError> {
        self.inner.state.get::<T>()
    }

    /// The authenticated identity of the caller.
    pub fn auth(&self) -> &AuthInfo {
        &self.inner.auth
    }

    /// The caller's stable principal.
    pub fn principal(&self) -> &str {
        &self.inner.auth.principal
    }

    /// Who the call's per-client bounds count against: the principal, or the anonymous
    /// caller's address.
    pub(crate) fn client(&self) -> ClientKey {
        ClientKey::of(&self.inner.auth.principal, self.inner.remote)
    }

    /// The era of the request.
    pub fn era(&self) -> Era {
        match &self.inner.origin {
            Origin::Modern(_) => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// The request's revision: the modern `_meta` one, or the session's
    /// negotiated one (`None` for a legacy request before negotiation).
    pub fn revision(&self) -> Option<Revision> {
        match &self.inner.origin {
            Origin::Modern(m) => Some(m.revision),
            Origin::Session(s) => Some(s.revision()),
            #[cfg(feature = "shared-store")]
            Origin::Recorded(r) => Some(r.revision),
            Origin::Sessionless => None,
        }
    }

    /// The capabilities the client declared (per request in the modern era,
    /// at `initialize` in the legacy one).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        match &self.inner.origin {
            Origin::Modern(m) => &m.client_capabilities,
            Origin::Session(s) => s.client_capabilities(),
            #[cfg(feature = "shared-store")]
            Origin::Recorded(r) => &r.client_capabilities,
            Origin::Sessionless => &EMPTY_CAPS,
        }
    }

    /// The client's implementation info, when known.
    pub fn client_info(&self) -> Option<&Value> {
        match &self.inner.origin {
            Origin::Modern(m) => m.client_info(),
            Origin::Session(s) => Some(s.client_info()),
            #[cfg(feature = "shared-store")]
            Origin::Recorded(r) => r.client_info.as_ref(),
            Origin::Sessionless => None,
        }
    }

    /// The legacy session, if any.
    pub fn session(&self) -> Option<&Arc<Session>> {
        match &self.inner.origin {
            Origin::Session(s) => Some(s),
            _ => None,
        }
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// The request method.
    pub fn method(&self) -> &str {
        self.inner.method.as_str()
    }

    /// The request's `_meta`, verbatim.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        mcp_protocol::meta::meta_of(Some(&self.inner.params))
    }

    /// The progress token the client sent, if any.
    pub fn progress_token(&self) -> Option<&Value> {
        self.inner.progress_token.as_ref()
    }

    /// The secure parameters of a `tools/call` (SEP-3221: `secureArguments`, supplied by the
    /// host application, never by the model), as a `T` (a map, or the type the tool's
    /// `secure_input` schema was derived from); `{}` when none were sent. They were checked
    /// against the tool's `secureInputSchema` before the handler ran. A value that is not a `T`
    /// is -32602, its message naming no value.
    pub fn secure_arguments<T: serde::de::DeserializeOwned>(&self) -> Result<T, HandlerError> {
        use mcp_protocol::secure_params::{ARGUMENTS_FIELD, invalid};
        let text = match self.inner.params.raw(ARGUMENTS_FIELD) {
            Some(text) if text != "null" => text,
            _ => "{}",
        };
        serde_json::from_str(text).map_err(|e| {
            // serde's message may quote the value; only where it failed is kept.
            HandlerError::Rpc(invalid(format_args!(
                "not the expected shape (line {}, column {})",
                e.line(),
                e.column()
            )))
        })
    }

    /// The client input gathered so far for this call: the responses of
    /// every earlier round (MRTR retries in the modern era, answered
    /// server-to-client requests in the legacy one).
    pub fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.inner.input_responses.as_ref()
    }

    /// The handler's own state from the previous round (what it put in
    /// [`InputRequired::with_state`], or [`Ctx::keep_round_state`]), verified
    /// and opened by the runtime. [`Ctx::round_state`] reads it typed.
    pub fn request_state(&self) -> Option<&Value> {
        self.inner.request_state.as_ref()
    }

    /// Asks the client for input: elicitation, sampling or roots, keyed.
    ///
    /// Returns the responses of every requested key. In the modern era,
    /// responses already sent with this retry are returned at once; when
    /// some are missing the handler gets `Err(HandlerError::InputRequired)`,
    /// which it returns with `?` and the runtime answers `input_required`
    /// (with the state sealed in `requestState`). In the legacy era the
    /// runtime sends real server-to-client requests on the call's stream and
    /// returns their answers. Either way the client must have declared the
    /// capability each request needs, else the call fails with -32021.
    ///
    /// **Modern re-runs.** After `input_required` the client retries the whole
    /// call and the handler **runs again from the top**: whatever it did before
    /// this call (writes, charges, messages, progress) happens once per round.
    /// Ask first and act after, or carry what must survive in the round state:
    /// [`InputRequired::with_state`] (read back with [`Ctx::request_state`]),
    /// or typed with [`Ctx::keep_round_state`], [`Ctx::round_state`] and
    /// [`Ctx::once`]; a state kept with [`Ctx::keep_round_state`] is attached
    /// here when `request` has none of its own. The keys must be the same on
    /// every run for the answers to be found. The typed forms of this method
    /// are [`Ctx::elicit`], [`Ctx::sample`] and [`Ctx::roots`] (see
    /// [`input`](super::input)). Legacy calls are not re-run: this method waits for
    /// the answers.
    ///
    /// ```no_run
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::{Ctx, HandlerError, InputRequired};
    /// use serde_json::json;
    ///
    /// async fn ask_name(ctx: Ctx) -> Result<String, HandlerError> {
    ///     let form = json!({
    ///         "message": "Your name?",
    ///         "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    ///     });
    ///     let answers = ctx.input(InputRequired::new().request("name", "elicitation/create", form)).await?;
    ///     Ok(answers["name"]["content"]["name"].as_str().unwrap_or("?").to_owned())
    /// }
    /// ```
    pub async fn input(&self, request: InputRequired) -> Result<Map<String, Value>, HandlerError> {
        if self.era() == Era::Modern {
            let have = self.inner.input_responses.as_ref();
            let missing: Map<String, Value> = request
                .requests
                .iter()
                .filter(|(k, _)| !have.is_some_and(|h| h.contains_key(*k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !missing.is_empty() {
                return Err(HandlerError::InputRequired(Box::new(InputRequired {
                    requests: missing,
                    state: request.state.or_else(|| self.run.kept()),
                })));
            }
            let have = have.cloned().unwrap_or_default();
            return Ok(request
                .requests
                .keys()
                .filter_map(|k| have.get(k).map(|v| (k.clone(), v.clone())))
                .collect());
        }
        let mut out = Map::new();
        for (key, req) in request.requests {
            if let Some(done) = self.inner.input_responses.as_ref().and_then(|h| h.get(&key)) {
                out.insert(key, done.clone());
                continue;
            }
            out.insert(key, self.fulfil(&req).await?);
        }
        Ok(out)
    }

    /// The context of the same call running as a task: its own cancellation
    /// token (the task's, no longer the request's), the task's sink, and for
    /// a 2025-11-25 task the link to it.
    pub(crate) fn for_task(&self, cancel: CancellationToken, sink: Sink, task: Option<Arc<dyn TaskLink>>) -> Ctx {
        let mut inner = CtxInner::clone(&self.inner);
        inner.cancel = cancel;
        inner.sink = sink;
        inner.task = task;
        Ctx::new(inner)
    }

    #[cfg(feature = "shared-store")]
    /// The same context, its call running as the resumable task `link` names.
    pub(crate) fn resuming(&self, link: Arc<dyn ResumeLink>) -> Ctx {
        let mut inner = CtxInner::clone(&self.inner);
        inner.resume = Some(link);
        Ctx::new(inner)
    }

    #[cfg(feature = "shared-store")]
    /// The request's params.
    pub(crate) fn params(&self) -> &Params {
        &self.inner.params
    }

    /// Which attempt this run of the call is: 1, but for a resumable tool's task run again
    /// after the worker running it stopped (killed, or its instance drained), where it is the
    /// attempt's number (2 for the first run again). With [`Ctx::task_id`] it is an idempotency
    /// key for the side effects of a run.
    pub fn attempt(&self) -> u32 {
        self.inner.resume.as_ref().map_or(1, |r| r.attempt())
    }

    /// Saves a checkpoint of a resumable tool's task (`Tool::resumable`): stored with the task
    /// (sealed at rest when a task key is configured), it is what the next attempt starts from
    /// ([`Ctx::resumed_from`]) should this one stop. A checkpoint larger than the configured
    /// bound (`TaskRuns::max_checkpoint_bytes`, default 64 KiB) is refused with a tool error
    /// saying so; one that cannot be stored is an internal error. Outside a resumable task (an
    /// inline call, a tool that is not resumable, a build without the `shared-store` feature)
    /// nothing is saved and it returns `Ok`.
    pub async fn checkpoint<T: serde::Serialize + ?Sized>(&self, value: &T) -> Result<(), HandlerError> {
        let Some(link) = &self.inner.resume else {
            return Ok(());
        };
        let value = serde_json::to_value(value).map_err(HandlerError::internal)?;
        link.save(value).await
    }

    /// The last checkpoint saved for this resumable task, by an earlier attempt or by this run
    /// (`None` on a first run that saved none, and outside a resumable task). A checkpoint that
    /// is not a `T` is an internal error.
    pub fn resumed_from<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, HandlerError> {
        match self.inner.resume.as_ref().and_then(|r| r.last()) {
            Some(v) => serde_json::from_value(v).map(Some).map_err(HandlerError::internal),
            None => Ok(None),
        }
    }

    /// The runtime's URL-mode elicitation records.
    pub(crate) fn elicitations(&self) -> &Elicitations {
        &self.inner.elicitations
    }

    /// Where the request's messages go.
    pub(crate) fn sink(&self) -> &Sink {
        &self.inner.sink
    }

    /// The id of the task the call runs as: a 2025-11-25 task from its start, a resumable
    /// tool's task of either era once it is one (a modern call that runs inline first gets it
    /// when it is handed off).
    pub fn task_id(&self) -> Option<String> {
        match (&self.inner.task, &self.inner.resume) {
            (Some(t), _) => Some(t.id().to_owned()),
            (None, Some(r)) => r.task_id(),
            (None, None) => None,
        }
    }

    /// The context of the next round of a call: the responses gathered so
    /// far and the handler's state.
    pub(crate) fn next_round(&self, responses: Map<String, Value>, state: Option<Value>) -> Ctx {
        let mut inner = CtxInner::clone(&self.inner);
        inner.input_responses = Some(responses);
        inner.request_state = state;
        Ctx::new(inner)
    }

    /// Cancelled when the client cancels the request, its stream closes
    /// (modern), its session ends, or a shutdown's drain deadline passes.
    ///
    /// The handler is not dropped when this fires: it keeps running for
    /// `ServerConfig::cancel_grace` (default 1 s), so cleanup after a
    /// `select!` on the token always runs, then it is dropped if still
    /// running (behaviour invariant 13). What it returns once cancelled is
    /// discarded: a cancelled call is never answered. The handler's deadline
    /// (`handler_timeout`, or the tool's own) is not extended by the grace.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// What the transport and middleware layers attached to the request
    /// ([`Inbound::attachments_mut`](crate::middleware::Inbound::attachments_mut)).
    /// Over HTTP, the request's extensions (the `http` crate's `Extensions`:
    /// what axum, the application's own layers or the authentication provider
    /// put there) are one attachment:
    /// `ctx.attachments().get::<Extensions>().and_then(|e| e.get::<T>())`.
    pub fn attachments(&self) -> &crate::attachments::Attachments {
        &self.inner.attachments
    }

    /// Sends `notifications/progress` on the request's stream, when the
    /// client asked for progress (else does nothing).
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(t) = total {
            params.insert("total".into(), json!(t));
        }
        let with_message = self.revision().is_none_or(|r| r.has(Feature::ProgressMessage));
        if let (Some(m), true) = (message, with_message) {
            params.insert("message".into(), Value::String(m.to_owned()));
        }
        self.notify("notifications/progress", Value::Object(params)).await;
    }

    /// This legacy session's value of type `T`, made with `T::default()` the first time any
    /// handler of the session asks for it and dropped with the session: a per-client counter,
    /// a cart, a cursor. `None` where there is no session (2026-07-28 requests, which are
    /// stateless; a sessionless legacy request). Share what changes through interior
    /// mutability (`Mutex`, atomics). With a shared store each instance holding the session
    /// keeps values of its own: keep what every instance must see in the store.
    pub fn session_state<T: Default + Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.session().map(|s| s.values().get_or_default::<T>())
    }

    /// The minimum level of log messages for this request: the session's
    /// (legacy), the request's `_meta` log level (modern; `None` means no log
    /// messages at all, as on a server that does not offer logging:
    /// `ServerConfig::logging`).
    pub fn log_level(&self) -> Option<LoggingLevel> {
        if !self.inner.logging {
            return None;
        }
        match &self.inner.origin {
            Origin::Modern(m) => m.log_level,
            Origin::Session(s) => Some(s.log_level()),
            Origin::Sessionless => Some(LoggingLevel::default()),
            #[cfg(feature = "shared-store")]
            Origin::Recorded(_) => Some(LoggingLevel::default()),
        }
    }

    /// Sends `notifications/message` on the request's stream when `level`
    /// reaches the request's log level.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if self.log_level().is_none_or(|min| level < min) {
            return;
        }
        let mut params = Map::new();
        params.insert("level".into(), Value::String(level.as_str().into()));
        if let Some(l) = logger {
            params.insert("logger".into(), Value::String(l.into()));
        }
        params.insert("data".into(), data);
        self.notify("notifications/message", Value::Object(params)).await;
    }

    /// Sends a notification on the request's stream: for an extension's own notifications
    /// (the Events extension's `notifications/events/*` on an `events/stream`); the core
    /// protocol's have their own methods ([`progress`](Self::progress), [`log`](Self::log)).
    /// Nothing is sent once the request is cancelled; where the request cannot stream (the
    /// simple mode, a batch), it is dropped.
    pub async fn notify(&self, method: &str, params: Value) {
        if self.is_cancelled() {
            return;
        }
        self.inner.sink.send(encode_notification(method, Some(&params))).await;
    }
}
