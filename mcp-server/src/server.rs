//! `McpServer` and its builder.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::apps::{AppsError, check_tool_meta};
use mcp_protocol::auth::AuthInfo;
use mcp_protocol::extension::ExtensionError;
use mcp_protocol::model::{CacheHint, CompleteParams, Completion, Implementation};
use mcp_protocol::request_state::StateKey;
use mcp_protocol::revision::AdvertiseVersions;
use mcp_runtime::extension::{CustomMethod, Eras, Extension};
use mcp_runtime::handler::HandlerError;
use mcp_runtime::middleware::{Middleware, RateLimit};
use mcp_runtime::registry::{Catalog, CompletionKey, RegistryError};
use mcp_runtime::{
    CatalogKind, Ctx, Driver, ElicitationError, Engine, Registry, ServerConfig, Storage, Store, TaskStore, Visibility,
};

use crate::prompt::Prompt;
use crate::resource::{Resource, ResourceTemplate};
use crate::tool::Tool;

/// Why a server could not be built or served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A registration was invalid (schema, `x-mcp-header`, template).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// An extension or custom method was invalid (its identifier, name or settings), or
    /// registered twice.
    #[error(transparent)]
    Extension(#[from] ExtensionError),
    /// The stdio transport failed.
    #[cfg(feature = "stdio")]
    #[error(transparent)]
    Stdio(#[from] mcp_transport_stdio::StdioError),
    /// The HTTP transport failed (or refused its configuration).
    #[cfg(feature = "http")]
    #[error(transparent)]
    Http(#[from] mcp_transport_http::HttpError),
    /// A scope a method needs is not a scope token.
    #[error(transparent)]
    Scope(#[from] mcp_runtime::scopes::ScopeError),
    /// Binding the listening socket failed.
    #[error("cannot listen: {0}")]
    Bind(#[from] std::io::Error),
}

/// An MCP server: a registry and a runtime, ready to serve on a transport.
///
/// ```no_run
/// use mcp_server::prelude::*;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
///
/// # async fn run() -> Result<(), ServerError> {
/// let server = McpServer::builder()
///     .name("echo-server")
///     .version("1.0.0")
///     .tool(Tool::typed("echo", "Echoes the text back", |input: Echo, _ctx| async move { input.text }))
///     .build()?;
/// server.serve_stdio().await
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct McpServer {
    pub(crate) engine: Engine,
    /// The engine's driver, until a serve function, the router, a test client or a transport
    /// of the application's own takes it (once, whichever clone asks first).
    driver: Arc<std::sync::Mutex<Option<Driver>>>,
}

impl McpServer {
    /// Starts a builder.
    pub fn builder() -> McpServerBuilder {
        McpServerBuilder::default()
    }

    /// The server's engine, the one door into its runtime: what a transport of your own hands
    /// its messages to (see [`transport`](crate::transport)). Spawn [`McpServer::driver`]
    /// once beside it.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine's [`Driver`], to spawn once (`tokio::spawn(driver.into_future())`) when serving on a
    /// transport of your own; `None` once taken (the serve functions, [`McpServer::router`] and
    /// the test client take and spawn it themselves).
    pub fn driver(&self) -> Option<Driver> {
        self.driver
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Spawns the engine's driver, unless it was taken already (needs a Tokio runtime; without
    /// one, nothing is taken).
    #[cfg(any(feature = "http", feature = "stdio", feature = "testing"))]
    pub(crate) fn drive(&self) {
        if tokio::runtime::Handle::try_current().is_ok()
            && let Some(driver) = self.driver()
        {
            // Already a `Background` (boxed once): spawned as it is.
            tokio::spawn(std::future::IntoFuture::into_future(driver));
        }
    }

    /// The shared state of type `T` set with the builder's [`state`](McpServerBuilder::state)
    /// or [`state_arc`](McpServerBuilder::state_arc), if any: the value handlers read with
    /// `ctx.state::<T>()`, for a test to seed or inspect.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.engine.config().state.find::<T>()
    }

    /// The registry: add or remove tools, resources and prompts at run time
    /// (clients are told through list-changed notifications).
    pub fn registry(&self) -> &Arc<Registry> {
        self.engine.registry()
    }

    /// Adds a tool at run time.
    pub fn add_tool(&self, tool: Tool) -> Result<(), ServerError> {
        self.registry().add_tool(tool.into_entry()?);
        Ok(())
    }

    /// Removes a tool at run time.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.registry().remove_tool(name)
    }

    /// Adds a prompt at run time.
    pub fn add_prompt(&self, prompt: Prompt) -> Result<(), ServerError> {
        self.registry().add_prompt(prompt.into_entry()?);
        Ok(())
    }

    /// Removes a prompt at run time.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.registry().remove_prompt(name)
    }

    /// Adds a resource at run time (an [`AppResource`](crate::apps::AppResource) too); a
    /// `ui://` resource without the MCP Apps MIME type is refused.
    pub fn add_resource(&self, resource: impl Into<Resource>) -> Result<(), ServerError> {
        self.registry().add_resource(resource.into().into_entry()?);
        Ok(())
    }

    /// Removes a resource at run time.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.registry().remove_resource(uri)
    }

    /// Sends an application message to every other instance sharing the server's store (see
    /// [`McpServerBuilder::store`]; nothing without one). Their handlers registered with
    /// [`McpServer::on_broadcast`] run, in publish order: the way to keep a catalog changed at
    /// run time equal on every instance.
    pub fn broadcast(&self, topic: &str, payload: serde_json::Value) -> Result<(), mcp_runtime::StoreError> {
        self.engine.broadcast(topic, payload)
    }

    /// [`broadcast`](McpServer::broadcast), then waits (at most `wait`) until every instance has
    /// been handed the message, so that a change replicated this way is found by the client's
    /// next request wherever it lands (see [`Engine::broadcast_everywhere`]).
    pub async fn broadcast_everywhere(
        &self,
        topic: &str,
        payload: serde_json::Value,
        wait: std::time::Duration,
    ) -> Result<(), mcp_runtime::StoreError> {
        self.engine.broadcast_everywhere(topic, payload, wait).await
    }

    /// Runs `handler` for every message another instance broadcasts on `topic`.
    pub fn on_broadcast(&self, topic: impl Into<String>, handler: impl Fn(&serde_json::Value) + Send + Sync + 'static) {
        self.engine.on_broadcast(topic, handler);
    }

    /// Ends open `subscriptions/listen` streams gracefully (before a
    /// shutdown).
    pub fn shutdown(&self) {
        self.engine.shutdown();
    }

    /// Announces that a resource's contents changed (to subscribers).
    pub fn notify_resource_updated(&self, uri: &str) {
        self.registry().notify_resource_updated(uri);
    }

    /// Ends a 2025-11-25 URL-mode elicitation (see [`Ctx::elicit_url`]):
    /// `notifications/elicitation/complete` goes to the session that
    /// elicited, and only to it. `principal` is the identity the server acts
    /// for; an unknown, expired, already completed or another principal's id
    /// is [`ElicitationError::NotFound`].
    pub async fn complete_elicitation(&self, elicitation_id: &str, principal: &str) -> Result<(), ElicitationError> {
        self.engine.complete_elicitation(elicitation_id, principal).await
    }
}

/// Every tool linked to an MCP App names a registered resource (or one a template serves), as
/// the specification requires ("Resource MUST exist on the server").
fn check_app_links(catalog: &Catalog) -> Result<(), RegistryError> {
    for tool in catalog.tools() {
        let ui = check_tool_meta(&tool.def.name, tool.def.meta.as_ref())?;
        let Some(uri) = ui.and_then(|ui| ui.resource_uri) else {
            continue;
        };
        if catalog.resource(&uri).is_none() && catalog.match_template(&uri).is_none() {
            return Err(AppsError::MissingResource {
                tool: tool.def.name.clone(),
                uri,
            }
            .into());
        }
    }
    Ok(())
}

/// Builds an [`McpServer`].
#[derive(Default)]
pub struct McpServerBuilder {
    config: ServerConfig,
    registry: Registry,
    task_store: Option<Arc<dyn TaskStore>>,
    #[cfg(feature = "shared-store")]
    store: Option<Store>,
    #[cfg(feature = "skills")]
    skills: Vec<crate::skills::Skills>,
    rate_limit: Option<RateLimit>,
    error: Option<ServerError>,
}

impl std::fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl McpServerBuilder {
    /// The server's name (`serverInfo.name`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.config.server_info.name = name.into();
        self
    }

    /// The server's version (`serverInfo.version`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.config.server_info.version = version.into();
        self
    }

    /// The whole `serverInfo`.
    pub fn server_info(mut self, info: Implementation) -> Self {
        self.config.server_info = info;
        self
    }

    /// Instructions for the model.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.config.instructions = Some(text.into());
        self
    }

    /// Which revisions `server/discover` advertises (default: modern).
    pub fn advertise(mut self, v: AdvertiseVersions) -> Self {
        self.config.advertise = v;
        self
    }

    /// Cache hint of lists and reads in the modern era (default 60 s, private).
    pub fn cache_hint(mut self, hint: CacheHint) -> Self {
        self.config.cache = hint;
        self
    }

    /// Filters the catalog per caller: `hook(auth, kind, key)` says whether
    /// `auth` sees a tool or prompt (by name), a resource (by URI) or a
    /// template (by URI template). Hidden items are left out of the lists
    /// and answer as unknown (a hidden tool's call is -32602 "Unknown tool: X").
    /// Modern cache hints stay `private` while a hook is set.
    pub fn visibility(mut self, hook: impl Fn(&AuthInfo, CatalogKind, &str) -> bool + Send + Sync + 'static) -> Self {
        self.config.visibility = Some(Visibility::new(hook));
        self
    }

    /// The OAuth scopes every request of `method` needs (any method: core, an extension's, a
    /// vendor's; added to those set before), whatever it names; tools, resources, templates
    /// and prompts add their own (`Tool::scopes`…). A caller short of one is refused before
    /// anything runs, naming every scope the operation needs: over HTTP a 403 with the
    /// authentication provider's `insufficient_scope` challenge, so that a client steps up
    /// once; a JSON-RPC error (code 403, `data.requiredScopes`) in a batch and over stdio. A
    /// string that is not a scope token makes [`build`](Self::build) fail.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    ///
    /// let builder = McpServer::builder()
    ///     .method_scopes("tools/call", ["mcp:tools"])
    ///     .tool(Tool::new("wipe", "Wipes the disk", |_, _| async { "done" }).scopes(["disk:write"]));
    /// # let _ = builder;
    /// ```
    pub fn method_scopes<S: Into<String>>(mut self, method: &str, scopes: impl IntoIterator<Item = S>) -> Self {
        let current = std::mem::take(&mut self.config.method_scopes);
        let r = current.require(method, scopes).map(|m| self.config.method_scopes = m);
        self.record(r);
        self
    }

    /// Whether the lists show each caller only the tools, resources, templates and prompts
    /// whose scopes it holds (default `false`). Those left out can still be asked for, and are
    /// refused with the scopes they need, so that a client can step up; to hide items from
    /// calls too, use [`visibility`](Self::visibility).
    pub fn lists_in_scope(mut self, on: bool) -> Self {
        self.config.lists_in_scope = on;
        self
    }

    /// Deadline of one handler call (default 60 s).
    pub fn handler_timeout(mut self, d: Duration) -> Self {
        self.config.handler_timeout = d;
        self
    }

    /// Idle time after which a legacy session expires (default 30 min).
    pub fn session_ttl(mut self, d: Duration) -> Self {
        self.config.session_ttl = d;
        self
    }

    /// Most legacy sessions kept at once, all principals together (default
    /// 10 000; over it `initialize` is 503). See [`ServerConfig::max_sessions`].
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.config.max_sessions = n;
        self
    }

    /// Most legacy sessions one principal keeps (default 10 000; over it
    /// `initialize` is 429). See [`ServerConfig::max_sessions_per_principal`].
    pub fn max_sessions_per_principal(mut self, n: usize) -> Self {
        self.config.max_sessions_per_principal = n;
        self
    }

    /// The eras served (default both). `Eras::Modern` serves 2026-07-28 alone: a legacy
    /// client's `initialize` (or any request without the modern `_meta`) is refused with
    /// -32022 naming the revisions served, no session is minted, and HTTP GET and DELETE
    /// answer 405. `Eras::Legacy` refuses modern requests alike. See [`ServerConfig::eras`].
    pub fn eras(mut self, eras: Eras) -> Self {
        self.config.eras = eras;
        self
    }

    /// Offers logging (default off): the server declares the `logging` capability, serves
    /// `logging/setLevel`, and [`Ctx::log`](crate::Ctx::log) sends log messages to the client.
    /// Without it `Ctx::log` sends nothing. The other capabilities follow what is registered:
    /// `tools` with a tool, `resources` with a resource or template, `prompts` with a prompt,
    /// `completions` with a completion handler. See [`ServerConfig::logging`].
    pub fn logging(mut self, on: bool) -> Self {
        self.config.logging = on;
        self
    }

    /// Most `subscriptions/listen` streams open at once, every caller together
    /// (default 10 000; over it 503). See [`ServerConfig::max_listeners`].
    pub fn max_listeners(mut self, n: usize) -> Self {
        self.config.max_listeners = n;
        self
    }

    /// Most `subscriptions/listen` streams one peer (a client address on
    /// HTTP) holds open (default 32; over it 429). See
    /// [`ServerConfig::max_listeners_per_peer`].
    pub fn max_listeners_per_peer(mut self, n: usize) -> Self {
        self.config.max_listeners_per_peer = n;
        self
    }

    /// Most `subscriptions/listen` streams one principal holds open, all its
    /// peers together (default 1 000; over it 429). See
    /// [`ServerConfig::max_listeners_per_principal`].
    pub fn max_listeners_per_principal(mut self, n: usize) -> Self {
        self.config.max_listeners_per_principal = n;
        self
    }

    /// Where tasks are kept (default: in memory). A durable or shared store
    /// implements [`TaskStore`] (see its contract).
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// The key sealing MRTR `requestState` (at least 32 bytes). Give every instance behind one
    /// endpoint the same key, so that a retry reaching another instance opens the state; without
    /// one each process seals with a random key of its own. During a rotation, keep the previous
    /// key with [`request_state_old_key`](Self::request_state_old_key).
    pub fn request_state_key(mut self, key: StateKey) -> Self {
        self.config.request_state_key = Some(key);
        self
    }

    /// A previous request-state key: it still opens the states it sealed, and seals none.
    pub fn request_state_old_key(mut self, key: StateKey) -> Self {
        self.config.request_state_old_keys.push(key);
        self
    }

    /// Seals task records at rest with `key`: a task's result or error, status message and
    /// input requests are encrypted (XChaCha20-Poly1305) before they reach the task store, so
    /// that whoever reads the store (Redis, a backup) reads none of them. Give every instance
    /// the same key (`TaskKey::from_hex`); to rotate, make the new key this one and keep the
    /// old with [`task_encryption_old_key`](Self::task_encryption_old_key). Needs the
    /// `shared-store` feature.
    #[cfg(feature = "shared-store")]
    pub fn task_encryption_key(mut self, key: crate::store::TaskKey) -> Self {
        self.config.task_encryption_key = Some(key);
        self
    }

    /// How tasks that outlive their worker run (resumable tools' tasks, [`Tool::resumable`]):
    /// this instance's role, the lease a worker renews, the attempts and their backoff, the
    /// checkpoint bound, how many tasks from the queue this instance runs at once. See
    /// [`TaskRuns`](crate::tasks::TaskRuns) for the defaults.
    pub fn task_runs(mut self, runs: crate::tasks::TaskRuns) -> Self {
        self.config.task_runs = runs;
        self
    }

    /// A previous task key: it still opens the records it sealed, and seals none.
    #[cfg(feature = "shared-store")]
    pub fn task_encryption_old_key(mut self, key: crate::store::TaskKey) -> Self {
        self.config.task_encryption_old_keys.push(key);
        self
    }

    /// Shares the server's state with every other instance given a store over the same backend
    /// (several instances behind a load balancer that does not pin clients): legacy sessions,
    /// stream events and replay, server-to-client responses and cancellations, tasks, and
    /// change notifications. `Store::memory()` shares between servers of one process; the
    /// `mcp-store-redis` crate (feature `redis`) between processes:
    /// `.store(RedisStore::connect(url).await?.into_store())` (or
    /// `RedisStore::connect_cluster(&nodes)` on a Redis Cluster). Give every instance the same
    /// request-state key as well ([`ServerConfig::request_state_key`]). A task store set with
    /// [`task_store`](Self::task_store) is ignored: the store's own is used. Needs the
    /// `shared-store` feature (on by default, and implied by `redis`).
    #[cfg(feature = "shared-store")]
    pub fn store(mut self, store: impl Into<Store>) -> Self {
        self.store = Some(store.into());
        self
    }

    /// Shares `value` with every handler, which reads it back with
    /// [`Ctx::state`](mcp_runtime::Ctx::state) (one value per type; a second value of a type
    /// replaces the first). Wrap what handlers change in a lock or use a concurrent type.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use mcp_server::prelude::*;
    ///
    /// #[derive(Default)]
    /// struct Notes(Mutex<Vec<String>>);
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { text: String }
    ///
    /// let server = McpServer::builder()
    ///     .state(Notes::default())
    ///     .tool(Tool::typed("add_note", "Keeps a note", |i: Add, ctx| async move {
    ///         let notes = ctx.state::<Notes>()?;
    ///         let mut list = notes.0.lock().map_err(|_| HandlerError::internal("notes poisoned"))?;
    ///         list.push(i.text);
    ///         Ok(format!("{} notes", list.len()))
    ///     }))
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.config.state.insert(value);
        self
    }

    /// Shares a value the application already holds in an `Arc` (an axum app's pool or
    /// store, say): handlers read it with `ctx.state::<T>()` and get this very `Arc`, not an
    /// `Arc<Arc<T>>` as [`state`](Self::state) would keep. One value per type, as with `state`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcp_server::prelude::*;
    ///
    /// struct Db { name: String }
    ///
    /// let db = Arc::new(Db { name: "notes".into() });
    /// // The same `Arc` in the axum app's state and in the server's.
    /// let server = McpServer::builder()
    ///     .state_arc(db.clone())
    ///     .tool(Tool::new("db_name", "Names the database", |_args, ctx| async move {
    ///         Ok(ctx.state::<Db>()?.name.clone())
    ///     }))
    ///     .build()
    ///     .unwrap();
    /// assert!(Arc::ptr_eq(&server.state::<Db>().unwrap(), &db));
    /// ```
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.config.state.insert_arc(value);
        self
    }

    /// Replaces the whole configuration (the [`state`](Self::state) values with it: call
    /// `config` first).
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    fn record(&mut self, r: Result<(), impl Into<ServerError>>) {
        if let (Err(e), None) = (r, &self.error) {
            self.error = Some(e.into());
        }
    }

    /// Declares an extension (in `server/discover`, and in the legacy `initialize` unless it is
    /// modern-only) and registers its methods, which answer clients that declared it (a
    /// duplicate extension or method makes [`build`](Self::build) fail). See
    /// [`Extension`](crate::Extension) and the extensions guide.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Count { prefix: String }
    ///
    /// #[derive(serde::Serialize, schemars::JsonSchema)]
    /// struct Counted { count: usize }
    ///
    /// # fn main() -> Result<(), ServerError> {
    /// let notes = Extension::new("com.example/notes")?
    ///     .settings(json!({"maxNotes": 100}))?
    ///     .method(CustomMethod::typed("com.example/notes.count", |p: Count, _ctx| async move {
    ///         Ok(Counted { count: p.prefix.len() })
    ///     })?);
    /// let server = McpServer::builder().extension(notes).build()?;
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    pub fn extension(mut self, extension: Extension) -> Self {
        let r = self.config.extensions.add(extension);
        self.record(r);
        self
    }

    /// Serves skills (SEP-2640): declares `io.modelcontextprotocol/skills`, serves
    /// `skills/list`, `skills/get` and (unless turned off) `resources/directory/read`, and
    /// registers the `skill://` resources (see the [skills guide](crate::guides::skills)).
    ///
    /// ```
    /// use mcp_server::prelude::*;
    /// use mcp_server::skills::{Skill, Skills};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let md = "---\nname: greet\ndescription: How to greet\n---\nSay hello.\n";
    /// let skills = Skills::new([Skill::new("greet", md)?])?;
    /// let server = McpServer::builder().skills(skills).build()?;
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "skills")]
    pub fn skills(mut self, skills: crate::skills::Skills) -> Self {
        let r = self.config.extensions.add(skills.extension());
        self.record(r);
        self.skills.push(skills);
        self
    }

    /// Serves the Events extension (`io.modelcontextprotocol/events`): declares it and serves
    /// `events/list`, `events/poll` and `events/stream` for the types `events` declares; emit
    /// their occurrences through `events` (a clone) from anywhere (see the
    /// [events guide](crate::guides::events)).
    ///
    /// ```
    /// use mcp_server::prelude::*;
    /// use mcp_server::events::{EventType, Events};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let events = Events::builder()
    ///     .event(EventType::new("build.finished", "A CI build finished"))
    ///     .build()?;
    /// let server = McpServer::builder().events(&events).build()?;
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "events")]
    pub fn events(mut self, events: &crate::events::Events) -> Self {
        let r = events.extension().and_then(|e| self.config.extensions.add(e));
        self.record(r);
        self
    }

    /// Registers a custom method that belongs to no extension (a vendor method such as
    /// `com.example/search`): every client may call it, in the eras it names.
    pub fn method(mut self, method: CustomMethod) -> Self {
        let r = self.config.extensions.add_method(method);
        self.record(r);
        self
    }

    /// Adds a middleware layer, inside the layers added before: it sees every request and
    /// notification on every transport, and may refuse, answer, annotate or time it. See
    /// [`Middleware`](crate::Middleware) and the middleware guide.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    ///
    /// let server = McpServer::builder()
    ///     .middleware(|request: Inbound, next: Next| async move {
    ///         if request.method() == "tools/call" && request.tool_name().as_deref() == Some("forbidden") {
    ///             return Outcome::error(RpcError::invalid_params("That tool is switched off"));
    ///         }
    ///         next.run(request).await
    ///     })
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn middleware(mut self, layer: impl Middleware) -> Self {
        self.config.middleware.push(layer);
        self
    }

    /// Records each request's span straight with this OpenTelemetry tracer (the `otel`
    /// feature): the span of the [`observe`](crate::observe) module docs, kind `SERVER`, the
    /// caller's W3C trace context (`_meta`, or the HTTP `traceparent` header) its parent, and
    /// the handler run with its context current, so that spans a handler starts with the
    /// OpenTelemetry API are its children. No `tracing` subscriber is involved (use this or
    /// `tracing-opentelemetry`, not both, or each request is recorded twice).
    ///
    /// ```ignore
    /// use opentelemetry::trace::TracerProvider as _;
    ///
    /// let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
    ///     .with_batch_exporter(exporter)
    ///     .build();
    /// let server = McpServer::builder().tracer(provider.tracer("my-server")).build()?;
    /// ```
    #[cfg(feature = "otel")]
    pub fn tracer<T, S>(mut self, tracer: T) -> Self
    where
        T: opentelemetry::trace::Tracer<Span = S> + Send + Sync + 'static,
        S: opentelemetry::trace::Span + Send + Sync + 'static,
    {
        self.config.tracer = Some(mcp_runtime::observe::Tracer::new(tracer));
        self
    }

    /// Rate-limits callers with the built-in [`RateLimit`] layer: by default their `tools/call`
    /// requests, one bucket per principal (per client address for anonymous callers), each
    /// call of a batch counted. A request over its quota is refused before any handler runs
    /// (HTTP 429 with `Retry-After`; JSON-RPC error 429 with `data.retryAfterMs`). The layer
    /// runs outside every layer added with [`middleware`](Self::middleware). With a
    /// [`store`](Self::store) the buckets are the store's (shared by every instance) unless the
    /// layer was given its own. See the rate-limits guide.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    /// use mcp_server::store::Quota;
    /// use mcp_server::RateLimit;
    ///
    /// let server = McpServer::builder()
    ///     .rate_limit(RateLimit::new("5:10".parse::<Quota>().unwrap()))
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// Registers a tool (an invalid one makes [`build`](Self::build) fail).
    pub fn tool(mut self, tool: Tool) -> Self {
        let r = tool.into_entry().map(|e| self.registry.add_tool(e));
        self.record(r);
        self
    }

    /// Registers a resource (an [`AppResource`](crate::apps::AppResource) too); a `ui://`
    /// resource without the MCP Apps MIME type makes [`build`](Self::build) fail.
    pub fn resource(mut self, resource: impl Into<Resource>) -> Self {
        let r = resource.into().into_entry().map(|e| self.registry.add_resource(e));
        self.record(r);
        self
    }

    /// Registers a resource template.
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        let r = template.into_entry().map(|e| self.registry.add_template(e));
        self.record(r);
        self
    }

    /// Registers a prompt (a scope that is not a scope token makes [`build`](Self::build) fail).
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        let r = prompt.into_entry().map(|e| self.registry.add_prompt(e));
        self.record(r);
        self
    }

    /// Sets the `_meta` of the results of one list: `tools/list` ([`CatalogKind::Tool`]),
    /// `prompts/list`, `resources/list` or `resources/templates/list`, on every page and in
    /// every era (a modern result's `_meta` gets the server's `Implementation` beside it). It
    /// is static configuration: setting it announces no list change. A value that is not a
    /// JSON object makes [`build`](Self::build) fail
    /// ([`RegistryError::ListMetaNotObject`]).
    ///
    /// ```
    /// use mcp_server::catalog::CatalogKind;
    /// use mcp_server::prelude::*;
    ///
    /// let server = McpServer::builder()
    ///     .tool(Tool::new("ping", "Answers pong", |_, _| async { "pong" }))
    ///     .list_meta(CatalogKind::Tool, json!({"com.example/catalog": "v2"}))
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn list_meta(mut self, kind: CatalogKind, meta: serde_json::Value) -> Self {
        let r = self.registry.set_list_meta(kind, meta);
        self.record(r);
        self
    }

    /// Registers completions for a prompt argument.
    pub fn prompt_completion<F, Fut>(self, prompt: &str, argument: &str, handler: F) -> Self
    where
        F: Fn(CompleteParams, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, HandlerError>> + Send + 'static,
    {
        let key = CompletionKey::Prompt {
            name: prompt.into(),
            argument: argument.into(),
        };
        self.completion(key, handler)
    }

    /// Registers completions for a resource template variable.
    pub fn template_completion<F, Fut>(self, uri_template: &str, argument: &str, handler: F) -> Self
    where
        F: Fn(CompleteParams, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, HandlerError>> + Send + 'static,
    {
        let key = CompletionKey::Resource {
            uri: uri_template.into(),
            argument: argument.into(),
        };
        self.completion(key, handler)
    }

    fn completion<F, Fut>(self, key: CompletionKey, handler: F) -> Self
    where
        F: Fn(CompleteParams, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, HandlerError>> + Send + 'static,
    {
        self.registry.add_completion(key, Arc::new(handler));
        self
    }

    /// Builds the server, or reports the first invalid registration (a tool linked to an MCP
    /// App whose `ui://` resource is not registered among them).
    pub fn build(self) -> Result<McpServer, ServerError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        check_app_links(&self.registry.snapshot())?;
        let registry = Arc::new(self.registry);
        #[cfg(feature = "skills")]
        for skills in &self.skills {
            skills.attach(&registry);
        }
        let mut config = self.config;
        #[cfg(feature = "shared-store")]
        let store = self.store;
        #[cfg(not(feature = "shared-store"))]
        let store: Option<Store> = None;
        if let Some(mut limit) = self.rate_limit {
            if let (Some(store), false) = (&store, limit.has_buckets()) {
                limit = limit.buckets(store.buckets.clone());
            }
            config.middleware.push_outermost(limit);
        }
        let storage = match (store, self.task_store) {
            #[cfg(feature = "shared-store")]
            (Some(store), _) => Storage::Shared(store),
            (_, Some(tasks)) => Storage::Tasks(tasks),
            (_, None) => Storage::Memory,
        };
        let (engine, driver) = Engine::start(config, registry, storage);
        Ok(McpServer {
            engine,
            driver: Arc::new(std::sync::Mutex::new(Some(driver))),
        })
    }
}
