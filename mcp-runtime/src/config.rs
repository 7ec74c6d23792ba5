//! Server configuration, with the reference implementation's defaults.

use mcp_protocol::bounds::SubscriptionBounds;
use std::time::Duration;

use mcp_protocol::model::{CacheHint, CacheScope, Implementation};
use mcp_protocol::request_state::StateKey;
use mcp_protocol::revision::AdvertiseVersions;

use crate::api::States;
use crate::catalog::{MethodScopes, Visibility};
use crate::extension::{Eras, Extensions};
use crate::middleware::Middlewares;
use crate::observe::Tracer;

/// How a server presents itself and the bounds it keeps.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The server's name and version (`serverInfo`).
    pub server_info: Implementation,
    /// Instructions for the model, sent at `initialize` and `server/discover`.
    pub instructions: Option<String>,
    /// Which revisions `server/discover` and -32022 name (default: modern).
    pub advertise: AdvertiseVersions,
    /// Whether modern results carry `serverInfo` in `result._meta` (default true).
    pub send_server_info: bool,
    /// Cache hint of lists and reads (default 60 s, private).
    pub cache: CacheHint,
    /// Cache hint of `server/discover` (default 60 s, public).
    pub discover_cache: CacheHint,
    /// Page size of the catalog lists (default 50).
    pub page_size: usize,
    /// Deadline of one handler call (default 60 s). A tool may set its own
    /// (`ToolEntry::with_timeout`).
    pub handler_timeout: Duration,
    /// How long a handler whose call was cancelled keeps running before it is
    /// dropped (default 1 s; behaviour invariant 13). The handler sees
    /// [`Ctx::cancellation`](crate::Ctx::cancellation) cancelled at once and
    /// may clean up (a `select!` on the token, then its cleanup) within this
    /// grace; whatever it returns is discarded (a cancelled call is never
    /// answered). Zero drops it at once.
    pub cancel_grace: Duration,
    /// How long a server-to-client request waits for its answer (default 30 s).
    pub client_request_timeout: Duration,
    /// Idle time after which a legacy session expires (default 30 min).
    pub session_ttl: Duration,
    /// Most legacy sessions kept in the session store, all principals together
    /// (default 10 000). At it, a newcomer is admitted in place of the longest-idle
    /// session of the client holding the most (when that client holds at least two
    /// more than the newcomer; the shed session is ended as a DELETE ends it), so
    /// that a few clients at their caps cannot lock the others out. When every
    /// client holds about the same share, `initialize` is refused with -32603 "Too
    /// many sessions" (HTTP 503) until sessions end or expire.
    pub max_sessions: usize,
    /// Most legacy sessions one client keeps (default 1 000, a tenth of
    /// [`ServerConfig::max_sessions`]): one authenticated principal, or one
    /// client address for anonymous callers (who all share the principal
    /// `anonymous`; without an address, on stdio, they share the count too).
    /// Over it `initialize` is refused with -32603 "Too many sessions for this
    /// client" (HTTP 429).
    pub max_sessions_per_principal: usize,
    /// Largest `clientInfo` and `capabilities` of an `initialize`, their JSON
    /// together, that a session keeps (default 16 KiB); larger is -32602.
    pub max_client_data_bytes: usize,
    /// The eras served (default both): with [`Eras::Modern`] a legacy message (an
    /// `initialize`, a request without the modern `_meta`) is refused with -32022 naming the
    /// revisions served, and the HTTP transport mints no session and answers GET and DELETE
    /// 405; with [`Eras::Legacy`] a modern request is refused alike.
    pub eras: Eras,
    /// Whether the server offers logging (default false): it then declares the `logging`
    /// capability, serves `logging/setLevel`, and [`Ctx::log`](crate::Ctx::log) sends
    /// `notifications/message`. Without it, `logging/setLevel` is -32601 and `Ctx::log` sends
    /// nothing (the protocol has a server that logs declare it).
    pub logging: bool,
    /// Events kept per session stream in a shared store's event log, for replay from an
    /// event id on any instance (default 256; a single process uses the HTTP transport's own
    /// stream buffer).
    pub max_stream_events: usize,
    /// The key sealing MRTR `requestState` (share it between instances behind
    /// one endpoint); random per process when unset.
    pub request_state_key: Option<StateKey>,
    /// Older keys that still open the states they sealed, never used to seal (a key rotation:
    /// make the new key `request_state_key` and keep the old one here for
    /// `request_state_ttl`).
    pub request_state_old_keys: Vec<StateKey>,
    /// The key that seals task records at rest (default none): a task's result or error,
    /// status message and input requests are encrypted before they reach the task store
    /// ([`SealedTaskStore`](crate::store::SealedTaskStore)). Give every instance the same.
    #[cfg(feature = "shared-store")]
    pub task_encryption_key: Option<crate::store::TaskKey>,
    /// Older task keys that still open the records they sealed, never used to seal (a key
    /// rotation: make the new key `task_encryption_key` and keep the old one here until the
    /// records it sealed have expired).
    #[cfg(feature = "shared-store")]
    pub task_encryption_old_keys: Vec<crate::store::TaskKey>,
    /// Values handed to every handler, one per type ([`Ctx::state`](crate::Ctx::state)).
    pub state: States,
    /// Lifetime of a sealed `requestState` (default 300 s).
    pub request_state_ttl: Duration,
    /// Most rounds of client input one legacy call may go through when its
    /// handler answers `input_required` (default 8).
    pub max_input_rounds: usize,
    /// Most `subscriptions/listen` streams open at once, every caller
    /// together (default 10 000); over it a listen is refused with -32603
    /// (HTTP 503).
    pub max_listeners: usize,
    /// Most `subscriptions/listen` streams one peer (a client address on HTTP)
    /// may hold open (default 32); over it -32603 (HTTP 429). Peers are told
    /// apart even when they share a principal (every unauthenticated client is
    /// `anonymous`), so that one client cannot lock the others out.
    pub max_listeners_per_peer: usize,
    /// Most `subscriptions/listen` streams one principal may hold open, all its
    /// peers together (default 1 000); over it -32603 (HTTP 429).
    pub max_listeners_per_principal: usize,
    /// What one request may make the server hold in subscriptions: URIs per legacy session and
    /// per listen filter list (default 256), bytes per URI (default 4096), bytes per listen
    /// filter (default 64 KiB); over a bound the request is refused with -32602 naming it.
    pub subscription_bounds: SubscriptionBounds,
    /// How long a modern call that may become a task runs inline before it
    /// is handed to a task, in milliseconds (default 100).
    pub task_inline_ms: u64,
    /// The polling interval suggested to clients, in milliseconds (default
    /// 1000).
    pub task_poll_interval_ms: u64,
    /// How long a task is kept from its creation (its `ttl`/`ttlMs`), and
    /// the deadline of its handler (default 1 h). A 2025-11-25 client may ask
    /// for less.
    pub task_ttl: Duration,
    /// How often expired tasks are swept (default 60 s).
    pub task_sweep_interval: Duration,
    /// How long a 2025-11-25 `tasks/result` waits for its task to end
    /// (default 300 s).
    pub task_result_timeout: Duration,
    /// Most tasks running at once on this instance, all clients together (default 10 000).
    /// Over it a call that would become a task is refused with -32603 "Too many running
    /// tasks" and its work is stopped. Finished tasks do not count.
    pub max_tasks_total: usize,
    /// Most tasks one client has running at once on this instance (default 100): one
    /// principal, or one address for anonymous callers. Over it -32603 "Too many running
    /// tasks for this client".
    pub max_tasks_per_principal: usize,
    /// Most task records one client keeps in the store, running and finished together
    /// (default 1 000): a principal, or an anonymous caller's address (an IPv6 one by its
    /// `/64`), as for `max_tasks_per_principal`. At the bound a new task takes the place of
    /// that client's oldest finished one (its result is gone early); only when all of them are
    /// running is the call refused (-32603 "Too many stored tasks for this client, none of
    /// them finished").
    pub max_stored_tasks_per_principal: usize,
    /// How tasks that any worker may run are run: this instance's role (front, worker or
    /// both), leases, attempts and their backoff, the checkpoint bound, the workers'
    /// concurrency. See [`TaskRuns`](crate::tasks::TaskRuns).
    pub task_runs: crate::task_runs::TaskRuns,
    /// How long a 2025-11-25 URL-mode elicitation id stays valid for
    /// [`Engine::complete_elicitation`](crate::Engine::complete_elicitation)
    /// (default 15 min).
    pub elicitation_ttl: Duration,
    /// Most live URL-mode elicitation ids one principal holds (default 20);
    /// over it, a URL-mode elicitation is refused.
    pub max_elicitations_per_principal: usize,
    /// Which tools, prompts, resources and templates each principal sees
    /// (default `None`: everyone sees everything). See [`Visibility`].
    pub visibility: Option<Visibility>,
    /// With a shared store, how stale a session held by this instance may be: a request after
    /// this long checks the record is still stored (one store round trip, which also pushes its
    /// expiry back) and answers 404 when it is not (default 2 s). What the store loses (a
    /// flush, a restart without persistence, a DELETE through another instance that found no
    /// record) is lost to every instance within this bound.
    pub session_check_interval: Duration,
    /// The OAuth scopes each method needs of every caller, whatever it names (default none);
    /// tools, resources, templates and prompts add their own (`ToolEntry::with_scopes`…). A
    /// caller short of one is refused before anything runs, with every needed scope named
    /// (over HTTP: 403 and an `insufficient_scope` challenge). See [`MethodScopes`].
    pub method_scopes: MethodScopes,
    /// Whether the lists show each caller only the items whose scopes it holds (default
    /// `false`: lists show everything visible). A hidden item can still be asked for, and is
    /// then refused with the scopes it needs, so that a client can step up; hide an item from
    /// calls too with [`visibility`](Self::visibility). A template's scopes that name its
    /// variables are not known before a read, and do not hide it.
    pub lists_in_scope: bool,
    /// The extensions the server declares and the custom methods it serves (default none).
    /// See [`Extensions`].
    pub extensions: Extensions,
    /// The middleware every inbound request and notification goes through, outermost first
    /// (default none). See [`Middlewares`].
    pub middleware: Middlewares,
    /// The OpenTelemetry tracer each request's span is recorded with, straight (the `otel`
    /// feature; default none): see [`observe`](crate::observe). Without the feature no
    /// [`Tracer`] can be made, and the spans are `tracing`'s alone.
    pub tracer: Option<Tracer>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            server_info: Implementation::new("mcp-rs", env!("CARGO_PKG_VERSION")),
            instructions: None,
            advertise: AdvertiseVersions::default(),
            send_server_info: true,
            cache: CacheHint::new(60_000, CacheScope::Private),
            discover_cache: CacheHint::new(60_000, CacheScope::Public),
            page_size: 50,
            handler_timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(1),
            client_request_timeout: Duration::from_secs(30),
            session_ttl: Duration::from_secs(30 * 60),
            max_sessions: 10_000,
            max_sessions_per_principal: 1_000,
            max_client_data_bytes: 16 * 1024,
            eras: Eras::Both,
            logging: false,
            max_stream_events: 256,
            request_state_key: None,
            request_state_old_keys: Vec::new(),
            #[cfg(feature = "shared-store")]
            task_encryption_key: None,
            #[cfg(feature = "shared-store")]
            task_encryption_old_keys: Vec::new(),
            state: States::default(),
            request_state_ttl: Duration::from_secs(300),
            max_input_rounds: 8,
            max_listeners: 10_000,
            max_listeners_per_peer: 32,
            max_listeners_per_principal: 1_000,
            subscription_bounds: SubscriptionBounds::default(),
            task_inline_ms: 100,
            task_poll_interval_ms: 1000,
            task_ttl: Duration::from_secs(3600),
            task_sweep_interval: Duration::from_secs(60),
            task_result_timeout: Duration::from_secs(300),
            max_tasks_total: 10_000,
            max_tasks_per_principal: 100,
            max_stored_tasks_per_principal: 1_000,
            task_runs: crate::task_runs::TaskRuns::default(),
            elicitation_ttl: Duration::from_secs(15 * 60),
            max_elicitations_per_principal: 20,
            visibility: None,
            session_check_interval: Duration::from_secs(2),
            method_scopes: MethodScopes::default(),
            lists_in_scope: false,
            extensions: Extensions::default(),
            middleware: Middlewares::default(),
            tracer: None,
        }
    }
}
