//! The dispatcher: routes a request to its era, runs the method, and
//! finalizes the result for the era.
//!
//! A transport calls, in order: [`Runtime::route`] (era, revision, the
//! checks that come before any handler, each failure a [`Rejection`] that
//! knows its era so HTTP can map the status), then [`Runtime::initialize`]
//! for a legacy `initialize` (the transport owns the session it returns), or
//! [`Runtime::dispatch`] for everything else.

mod catalog;
mod lifecycle;
mod shared;
pub(crate) mod tools;

pub use shared::StartError;
pub(crate) use shared::store_unavailable;

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::classify::request_era;
use mcp_protocol::jsonrpc::{encode_error, encode_raw_result, encode_result};
use mcp_protocol::meta::{ModernMeta, parse_modern_meta, progress_token};
use mcp_protocol::model::render::{cache_hint_for, finalize_encoded};
use mcp_protocol::model::{CacheHint, CacheScope, ServerFeatures, server_capabilities};
use mcp_protocol::request_state::{StateKey, StateKeyRing};
use mcp_protocol::task_mode::TaskSupport;
use mcp_protocol::{Era, Method, Notification, NotificationMethod, Request, RequestId, Revision, RpcError};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::api::HandlerError;
use crate::api::ctx::{Ctx, CtxInner, Origin};
use crate::catalog::{Catalog, PageKey};
use crate::catalog::{CatalogKind, Registry};
use crate::cluster::Cluster;
use crate::config::ServerConfig;
use crate::elicitation::{ElicitationError, Elicitations};
use crate::listen::Subscriptions;
use crate::mrtr::Round;
use crate::session::InFlight;
use crate::session::{Session, SessionStore};
use crate::sink::Sink;
use crate::tasks::{InMemoryTaskStore, TaskStore, Tasks};

/// A catalog list method.
type ListFn = fn(&Runtime, &Catalog, &Ctx, &Map<String, Value>) -> Result<Value, RpcError>;

/// A request routed to its era.
#[derive(Debug, Clone)]
pub struct Route {
    /// The era.
    pub era: Era,
    /// The revision: the modern `_meta` one, or the session's.
    pub revision: Option<Revision>,
    /// The validated modern `_meta`.
    pub modern: Option<Arc<ModernMeta>>,
}

/// A request refused before any handler ran.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct Rejection {
    /// The era the request was classified in (for the HTTP status).
    pub era: Era,
    /// The error to answer with.
    pub error: RpcError,
}

impl Rejection {
    /// The HTTP status of the rejection in its era.
    pub fn http_status(&self) -> u16 {
        self.error.http_status(self.era)
    }
}

/// A finalized result already serialized (a cached catalog page, or a modern
/// result decorated as it was serialized): written as it is, never
/// re-serialized.
#[derive(Debug, Clone)]
pub struct EncodedResult(Encoded);

/// Where the bytes of an [`EncodedResult`] live.
#[derive(Debug, Clone)]
enum Encoded {
    /// Shared with a cache (a catalog page).
    Shared(Arc<RawValue>),
    /// This reply's own.
    Owned(Box<RawValue>),
}

impl EncodedResult {
    /// The serialized result.
    pub fn as_raw(&self) -> &RawValue {
        match &self.0 {
            Encoded::Shared(raw) => raw,
            Encoded::Owned(raw) => raw,
        }
    }

    /// The result as a JSON value (a parse: for the rare paths that need one).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.as_raw().get()).unwrap_or(Value::Null)
    }

    /// The bytes, to share (with a cache).
    fn into_shared(self) -> Arc<RawValue> {
        match self.0 {
            Encoded::Shared(raw) => raw,
            Encoded::Owned(raw) => Arc::from(raw),
        }
    }
}

impl PartialEq for EncodedResult {
    fn eq(&self, other: &Self) -> bool {
        self.as_raw().get() == other.as_raw().get()
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A result, finalized for the era.
    Result(Value),
    /// A result, finalized and serialized.
    Encoded(EncodedResult),
    /// An error response.
    Error(RpcError),
    /// Cancelled: nothing is answered.
    Cancelled,
}

impl Reply {
    /// The reply as a response outcome (`None` when cancelled).
    pub fn into_outcome(self) -> Option<Result<Value, RpcError>> {
        match self {
            Reply::Result(v) => Some(Ok(v)),
            Reply::Encoded(e) => Some(Ok(e.to_value())),
            Reply::Error(e) => Some(Err(e)),
            Reply::Cancelled => None,
        }
    }

    /// The encoded response to request `id` (`None` when cancelled).
    pub fn encode(&self, id: &RequestId) -> Option<Vec<u8>> {
        match self {
            Reply::Result(v) => Some(encode_result(id, v)),
            Reply::Encoded(e) => Some(encode_raw_result(id, e.as_raw())),
            Reply::Error(e) => Some(encode_error(Some(id), e)),
            Reply::Cancelled => None,
        }
    }
}

/// What the transport knows of a request besides its body.
#[derive(Debug)]
pub struct RequestEnv {
    /// The authenticated caller.
    pub auth: Arc<AuthInfo>,
    /// The legacy session the request belongs to, if any.
    pub session: Option<Arc<Session>>,
    /// Where progress, logs and server-to-client requests go.
    pub sink: Sink,
    /// Cancelled when the request is cancelled.
    pub cancel: CancellationToken,
    /// Transport or middleware extensions for the handler.
    pub extensions: http::Extensions,
}

impl RequestEnv {
    /// An environment with a caller and a sink, nothing else.
    pub fn new(auth: Arc<AuthInfo>, sink: Sink) -> Self {
        RequestEnv {
            auth,
            session: None,
            sink,
            cancel: CancellationToken::new(),
            extensions: http::Extensions::new(),
        }
    }
}

/// The protocol engine of one server: registry, configuration, sessions.
#[derive(Debug)]
pub struct Runtime {
    config: ServerConfig,
    registry: Arc<Registry>,
    sessions: Arc<SessionStore>,
    /// This instance's part of a shared store (none: everything in this process).
    cluster: Option<Arc<Cluster>>,
    /// The server's `Implementation` serialized, as modern results carry it.
    server_info_raw: Box<RawValue>,
    /// The revisions errors name (`config.advertise`, listed once).
    advertised: Vec<Revision>,
    state_keys: StateKeyRing,
    subscriptions: Arc<Subscriptions>,
    tasks: Arc<Tasks>,
    elicitations: Arc<Elicitations>,
}

impl Runtime {
    /// A runtime over a registry, with tasks kept in memory.
    pub fn new(config: ServerConfig, registry: Arc<Registry>) -> Self {
        Self::with_task_store(config, registry, Arc::new(InMemoryTaskStore::new()))
    }

    /// A runtime over a registry, with tasks kept in `store` (a durable or
    /// shared [`TaskStore`]; see its contract).
    pub fn with_task_store(config: ServerConfig, registry: Arc<Registry>, store: Arc<dyn TaskStore>) -> Self {
        Self::build(config, registry, store, None)
    }

    fn build(
        config: ServerConfig,
        registry: Arc<Registry>,
        store: Arc<dyn TaskStore>,
        cluster: Option<Arc<Cluster>>,
    ) -> Self {
        let advertised = config.advertise.revisions();
        // A `Value` always serializes (its keys are strings).
        let server_info_raw = serde_json::value::to_raw_value(&config.server_info.render(None))
            .unwrap_or_else(|_| RawValue::NULL.to_owned());
        let state_keys = config.request_state_old_keys.iter().fold(
            StateKeyRing::new(config.request_state_key.clone().unwrap_or_else(random_state_key)),
            |ring, old| ring.with_old(old.clone()),
        );
        let subscriptions: Arc<Subscriptions> = Arc::default();
        let tasks = Tasks::new(&config, store, subscriptions.clone());
        let elicitations = Arc::new(Elicitations::new(
            config.elicitation_ttl,
            config.max_elicitations_per_principal,
        ));
        Runtime {
            config,
            registry,
            sessions: Arc::new(SessionStore::new()),
            cluster,
            server_info_raw,
            advertised,
            state_keys,
            subscriptions,
            tasks,
            elicitations,
        }
    }

    /// The URL-mode elicitation records.
    pub(crate) fn elicitations(&self) -> &Elicitations {
        &self.elicitations
    }

    /// The tasks of this runtime.
    pub(crate) fn tasks(&self) -> &Arc<Tasks> {
        &self.tasks
    }

    /// The store tasks are kept in.
    pub fn task_store(&self) -> &Arc<dyn TaskStore> {
        self.tasks.store()
    }

    /// Removes the expired tasks now (this also happens every
    /// `task_sweep_interval` once a task exists); returns how many.
    pub async fn sweep_tasks(&self) -> usize {
        self.tasks.sweep().await
    }

    /// The open `subscriptions/listen` subscriptions.
    pub fn subscriptions(&self) -> &Arc<Subscriptions> {
        &self.subscriptions
    }

    /// The keys opening MRTR request states (the newest seals).
    pub(crate) fn state_keys(&self) -> &StateKeyRing {
        &self.state_keys
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The legacy sessions of network transports.
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// What the server offers, from the registry and the configuration.
    pub fn features(&self) -> ServerFeatures {
        let c = self.registry.snapshot();
        let mut f = ServerFeatures::default();
        f.tools = true;
        f.resources = true;
        f.prompts = true;
        f.completions = c.has_completions();
        f.logging = self.config.logging;
        f.resource_subscriptions = true;
        f.list_changed = true;
        f.tasks = c.tools().iter().any(|t| t.def.task_support != TaskSupport::Forbidden);
        f
    }

    /// The server capabilities for a revision.
    pub fn capabilities(&self, revision: Option<Revision>) -> Value {
        server_capabilities(&self.features(), revision)
    }

    /// Classifies a request and runs the checks of behaviour invariant 3
    /// that come after the envelope, the header agreement and the legacy
    /// session (the engine's): the method is served in the era (-32601
    /// beats every later error), then the modern `_meta`.
    pub fn route(
        &self,
        req: &Request,
        transport_revision: Option<Revision>,
        session: Option<&Session>,
    ) -> Result<Route, Rejection> {
        let era = request_era(req, transport_revision);
        match era {
            Era::Modern => {
                req.method.check(era, None).map_err(|error| Rejection { era, error })?;
                let meta = parse_modern_meta(req.params.as_ref(), &self.advertised)
                    .map_err(|error| Rejection { era, error })?;
                Ok(Route {
                    era,
                    revision: Some(meta.revision),
                    modern: Some(Arc::new(meta)),
                })
            }
            Era::Legacy => {
                let revision = session.map(Session::revision);
                req.method
                    .check(era, revision)
                    .map_err(|error| Rejection { era, error })?;
                Ok(Route {
                    era,
                    revision,
                    modern: None,
                })
            }
        }
    }

    fn ctx(
        &self,
        req: &Request,
        params: &Arc<Map<String, Value>>,
        route: &Route,
        env: RequestEnv,
        round: Round,
    ) -> Ctx {
        let origin = match (&route.modern, env.session) {
            (Some(m), _) => Origin::Modern(m.clone()),
            (None, Some(s)) => Origin::Session(s),
            (None, None) => Origin::Sessionless,
        };
        Ctx::new(CtxInner {
            auth: env.auth,
            origin,
            request_id: req.id.clone(),
            method: req.method.clone(),
            params: params.clone(),
            progress_token: progress_token(Some(params)),
            cancel: env.cancel,
            sink: env.sink,
            extensions: env.extensions,
            client_request_timeout: self.config.client_request_timeout,
            input_responses: round.responses,
            request_state: round.state,
            task: None,
            elicitations: self.elicitations.clone(),
            state: self.config.state.clone(),
        })
    }

    /// Runs a routed request (anything but a legacy `initialize`).
    pub async fn dispatch(&self, mut req: Request, route: &Route, env: RequestEnv) -> Reply {
        let cancel = env.cancel.clone();
        let round = if route.era == Era::Modern && req.method.allows_input_required() {
            match self.open_round(req.method.as_str(), req.params.as_ref(), &env.auth.principal) {
                Ok(r) => r,
                Err(e) => return Reply::Error(e),
            }
        } else {
            Round::default()
        };
        let shared = Arc::new(req.params.take().unwrap_or_default());
        let ctx = self.ctx(&req, &shared, route, env, round);
        let params: &Map<String, Value> = &shared;
        let outcome = match &req.method {
            Method::Ping => Ok(Value::Object(Map::new())),
            Method::Discover => Ok(self.discover()),
            Method::SetLogLevel => lifecycle::set_level(&ctx, params),
            Method::ResourcesSubscribe => lifecycle::subscribe(&ctx, params, true),
            Method::ResourcesUnsubscribe => lifecycle::subscribe(&ctx, params, false),
            m if m.lists_catalog() => return self.list(m, params, route, &ctx),
            Method::ToolsCall => {
                let reply = tools::call(self, ctx, params).await;
                if cancel.is_cancelled() {
                    return Reply::Cancelled;
                }
                return self.finish(&req.method, params, route, reply);
            }
            Method::ResourcesRead => catalog::read_resource(self, ctx, params).await,
            Method::PromptsGet => catalog::get_prompt(self, ctx, params).await,
            Method::Complete => catalog::complete(self, ctx, params).await,
            m @ (Method::TasksGet
            | Method::TasksResult
            | Method::TasksList
            | Method::TasksCancel
            | Method::TasksUpdate) => self.tasks_method(&ctx, m, params).await,
            // `initialize` runs through `Runtime::initialize`, `subscriptions/listen` through
            // `Runtime::listen`; anything else is unknown.
            other => Err(RpcError::method_not_found(other.as_str())),
        };
        if cancel.is_cancelled() {
            return Reply::Cancelled;
        }
        let reply = match outcome {
            Ok(v) => Reply::Result(v),
            Err(e) => Reply::Error(e),
        };
        self.finish(&req.method, params, route, reply)
    }

    /// A catalog list. Without a visibility hook every caller of a revision
    /// and era gets the same page, so finalized pages are kept serialized in
    /// the catalog snapshot and written as they are.
    fn list(&self, method: &Method, params: &Map<String, Value>, route: &Route, ctx: &Ctx) -> Reply {
        let catalog = self.registry.snapshot();
        let list: ListFn = match method {
            Method::ToolsList => catalog::list_tools,
            Method::ResourcesList => catalog::list_resources,
            Method::ResourceTemplatesList => catalog::list_templates,
            _ => catalog::list_prompts,
        };
        let key = self.config.visibility.is_none().then(|| PageKey {
            method: method.clone(),
            revision: ctx.revision(),
            era: route.era,
            cursor: params.get("cursor").and_then(Value::as_str).map(str::to_owned),
        });
        if let Some(page) = key.as_ref().and_then(|k| catalog.page(k)) {
            return Reply::Encoded(EncodedResult(Encoded::Shared(page)));
        }
        let reply = match list(self, &catalog, ctx, params) {
            Ok(v) => Reply::Result(v),
            Err(e) => Reply::Error(e),
        };
        let reply = self.finish(method, params, route, reply);
        let encoded = match (key, reply) {
            (Some(key), Reply::Encoded(e)) => (key, e),
            (Some(key), Reply::Result(v)) => match serde_json::value::to_raw_value(&v) {
                Ok(raw) => (key, EncodedResult(Encoded::Owned(raw))),
                Err(_) => return Reply::Result(v),
            },
            (_, reply) => return reply,
        };
        let (key, encoded) = encoded;
        let page = encoded.into_shared();
        catalog.store_page(key, page.clone());
        Reply::Encoded(EncodedResult(Encoded::Shared(page)))
    }

    /// The cache hint of a cacheable result: `server/discover`'s own; for
    /// `resources/read`, the resource's (or its template's) when it has one;
    /// else the server's. A server with a visibility hook answers each
    /// caller with its own catalog: never for a shared cache.
    fn cache_hint(&self, method: &Method, params: &Map<String, Value>) -> CacheHint {
        if *method == Method::Discover {
            return self.config.discover_cache;
        }
        let mut hint = self.config.cache;
        if *method == Method::ResourcesRead
            && let Some(uri) = params.get("uri").and_then(Value::as_str)
        {
            let catalog = self.registry.snapshot();
            let own = match catalog.resource(uri) {
                Some(r) => r.cache,
                None => catalog.match_template(uri).and_then(|(t, _)| t.cache),
            };
            hint = own.unwrap_or(hint);
        }
        if self.config.visibility.is_some() {
            hint.scope = CacheScope::Private;
        }
        hint
    }

    /// The last step of a result: its era's decoration. A modern result is decorated while it
    /// is serialized (the server's `Implementation` written from its encoded form, not copied
    /// into the result), so it leaves as [`Reply::Encoded`]; a legacy one is left as it is.
    fn finish(&self, method: &Method, params: &Map<String, Value>, route: &Route, reply: Reply) -> Reply {
        match reply {
            Reply::Result(v) if route.era == Era::Modern => {
                let hint = cache_hint_for(method, Some(params), self.cache_hint(method, params));
                let info = self.config.send_server_info.then_some(&*self.server_info_raw);
                match finalize_encoded(route.era, &v, info, hint) {
                    Ok(raw) => Reply::Encoded(EncodedResult(Encoded::Owned(raw))),
                    Err(e) => {
                        tracing::error!(error = %e, "a result could not be serialized");
                        Reply::Error(RpcError::internal())
                    }
                }
            }
            other => other,
        }
    }

    /// Handles a client notification. `in_flight` is where the transport
    /// registered the requests a `notifications/cancelled` may name.
    pub fn notification(&self, note: &Notification, session: Option<&Arc<Session>>, in_flight: &InFlight) {
        match &note.method {
            m if m.is_initialized() => {
                if let Some(s) = session {
                    s.mark_initialized();
                }
            }
            NotificationMethod::Cancelled => {
                let id = note
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                if let Some(id) = id
                    && !in_flight.cancel(&id)
                    // A shared session's request may be in flight on another instance.
                    && !session.is_some_and(|s| s.is_shared() && s.cancel(&id))
                {
                    tracing::debug!(%id, "cancellation for a request not in flight");
                }
            }
            other => tracing::debug!(method = %other, "notification ignored"),
        }
    }
}

/// A fresh per-process key for sealing request states (from the OS CSPRNG).
fn random_state_key() -> StateKey {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        panic!("the operating system's random number generator failed");
    }
    tracing::info!("no request_state_key configured: request states are sealed with a per-process key");
    match StateKey::new(&bytes) {
        Ok(k) => k,
        Err(_) => unreachable!("32 bytes is a valid key length"),
    }
}

/// Turns a handler error into the wire error of a non-tool method: a
/// [`HandlerError::Tool`] is -32603 with its message, internal failures are
/// logged and answered with a generic -32603.
pub(crate) fn handler_error(method: &str, e: HandlerError) -> RpcError {
    match e {
        HandlerError::Rpc(e) => e,
        HandlerError::InputRequired(_) => {
            tracing::warn!(method, "handler asked for client input; not available for this request");
            RpcError::internal()
        }
        HandlerError::Tool(message) => RpcError::internal_with(message),
        e => {
            tracing::error!(method, error = %e.log_text(), "handler failed");
            RpcError::internal()
        }
    }
}

/// Deserializes params, answering -32602 when they do not fit.
pub(crate) fn parse_params<T: serde::de::DeserializeOwned>(params: &Map<String, Value>) -> Result<T, RpcError> {
    // Borrowed: nothing of the params is copied but what `T` keeps.
    T::deserialize(params).map_err(|e| RpcError::invalid_params(format!("Invalid params: {e}")))
}
impl Runtime {
    /// Ends a 2025-11-25 URL-mode elicitation: sends
    /// `notifications/elicitation/complete {elicitationId}` to the session
    /// that elicited, and only to it. `principal` is the identity the server
    /// acts for; an unknown, expired, already completed or another
    /// principal's id is [`ElicitationError::NotFound`].
    pub fn complete_elicitation(&self, elicitation_id: &str, principal: &str) -> Result<(), ElicitationError> {
        self.elicitations().complete(elicitation_id, principal)
    }

    /// How many URL-mode elicitations `principal` has pending (live ids).
    pub fn pending_elicitations(&self, principal: &str) -> usize {
        self.elicitations().live_for(principal)
    }
}

impl Runtime {
    /// Whether `auth` sees the catalog item `name` of `kind` (always, without
    /// a [`Visibility`] hook).
    pub fn visible(&self, auth: &AuthInfo, kind: CatalogKind, name: &str) -> bool {
        self.config()
            .visibility
            .as_ref()
            .is_none_or(|v| v.allows(auth, kind, name))
    }

    /// The tool `name` as `auth` sees it: `None` when it is unknown or
    /// hidden from `auth` (a transport checking a tool's headers uses this,
    /// so that a hidden tool answers as an unknown one there too).
    pub fn tool_for(&self, auth: &AuthInfo, name: &str) -> Option<Arc<crate::catalog::ToolEntry>> {
        let catalog = self.registry().snapshot();
        let tool = catalog.tool(name)?;
        self.visible(auth, CatalogKind::Tool, name).then(|| tool.clone())
    }
}
