//! # mcp-server
//!
//! Build MCP (Model Context Protocol) servers in Rust that serve every
//! protocol revision from one endpoint: legacy clients (2024-11-05 …
//! 2025-11-25: `initialize`, sessions, server-to-client requests) and modern
//! ones (2026-07-28: stateless, per-request `_meta`, `server/discover`) at the
//! same time, on the same process.
//!
//! This is the crate a server depends on (the top of the workspace; see
//! `docs/ARCHITECTURE.md` for the layers below it). It re-exports what a server needs
//! and offers:
//!
//! - [`McpServer::builder()`]: name, version, instructions, and the tools,
//!   resources, templates, prompts and completions the server offers;
//! - [`Tool`]: handlers as async closures or functions, raw (JSON arguments)
//!   or typed ([`Tool::typed`], [`Tool::structured`]) with input and output
//!   schemas derived by `schemars` from `serde` types (inlined, an object root:
//!   [`SchemaStyle`]); typed [`ToolAnnotations`] and [`Icon`]s;
//! - [`Resource`], [`ResourceTemplate`], [`Prompt`];
//! - transports: [`McpServer::serve_http`] (Streamable HTTP, both eras on
//!   one endpoint), [`McpServer::router`] to mount it in an axum app, and
//!   [`McpServer::serve_stdio`], which drain gracefully on Ctrl-C and `SIGTERM`
//!   ([`shutdown_signal`]); the HTTP ones serve the `/livez` and `/readyz` probes.
//! - `testing` (feature `testing`, for `[dev-dependencies]`): an in-process `TestClient`
//!   (both eras, scripted elicitation, sampling and roots, the MRTR loop) for the tests of
//!   your server.
//! - [`apps`]: MCP Apps, interactive HTML views hosts render for tools
//!   ([`apps::AppResource`], [`Tool::ui`]); the `io.modelcontextprotocol/ui` extension is
//!   declared by itself.
//! - [`server_json`] and [`server_card`]: the server's `server.json` for the MCP registry, and
//!   its Server Card and MCP Catalog (SEP-2127) for discovery before connecting, made from the
//!   server itself.
//! - [`Extension`] and [`CustomMethod`]: extensions the server declares and methods the
//!   core protocol does not know; [`McpServerBuilder::middleware`]: layers every request
//!   and notification goes through, on every transport.
//! - `guides` (also `docs/guides/` in the repository): getting started, tools,
//!   resources, prompts, progress, elicitation and sampling, tasks,
//!   authentication, axum, testing, extensions, middleware, observability,
//!   migrating from `rmcp`; their code is tested.
//!
//! A tool may run as a task ([`Tool::task_support`]): for 2025-11-25 clients
//! that ask for one (core tasks), and for 2026-07-28 clients that declared
//! the tasks extension, after a short inline window. Tasks are kept in memory
//! unless [`McpServerBuilder::task_store`] plugs in a durable store.
//!
//! Handlers receive a [`Ctx`]: the caller's principal, the era and revision,
//! the client's capabilities, progress and log emitters, a cancellation
//! token, and client input in both eras: [`Ctx::elicit`] (a form derived
//! from a `JsonSchema` type, answered as an [`Elicitation`](input::Elicitation)), [`Ctx::sample`]
//! and [`Ctx::roots`], MRTR rounds for 2026-07-28 clients (the handler runs
//! again from the top with the answers; see [`input`]) and real
//! server-to-client requests for legacy ones. A 2025-11-25 URL-mode elicitation ([`Ctx::elicit_url`])
//! gets an `elicitationId` owned by the caller, which
//! [`McpServer::complete_elicitation`] ends.
//!
//! Authentication belongs to the transport ([`HttpConfig::auth`] with a
//! provider of [`auth`]); the identity reaches handlers through
//! [`Ctx::auth`], and [`McpServerBuilder::visibility`] filters the catalog
//! per principal.
//!
//! ```no_run
//! use mcp_server::prelude::*;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), ServerError> {
//!     McpServer::builder()
//!         .name("adder")
//!         .version("1.0.0")
//!         .tool(Tool::typed("add", "Adds two integers", |i: Add, _ctx| async move {
//!             (i.a + i.b).to_string()
//!         }))
//!         .build()?
//!         .serve_stdio()
//!         .await
//! }
//! ```
//!
//! ## Cargo features
//!
//! | feature | default | brings |
//! | --- | --- | --- |
//! | `shared-store` | yes | `McpServerBuilder::store`: state shared by several instances (sessions, stream events, tasks, notifications, the bus); without it nothing of the cluster is compiled in |
//! | `http` | yes | [`McpServer::serve_http`], [`McpServer::serve_http_on`], [`McpServer::router`], [`HttpConfig`], [`http`] (axum, hyper; HTTP/1.1), and [`auth`] with the providers that need no JWT library |
//! | `tls` | yes | TLS on the listener: `HttpConfig::with_tls`, `HttpConfig::with_rustls` (rustls with ring); implies `http` |
//! | `http2` | yes | HTTP/2 beside HTTP/1.1 on the listener (h2c, and `h2` through ALPN with `tls`); implies `http` |
//! | `stdio` | yes | [`McpServer::serve_stdio`], [`StdioConfig`], [`stdio`] |
//! | `auth` | yes | [`auth`] with the JWT bearer provider (`jsonwebtoken`) |
//! | `events` | yes | `mcp_server::events` (`mcp-events`) and `McpServerBuilder::events`: event types and their occurrences, served as the `io.modelcontextprotocol/events` extension (poll and push) |
//! | `skills` | yes | `mcp_server::skills` (`mcp-skills`) and `McpServerBuilder::skills`: Agent Skills served as the `io.modelcontextprotocol/skills` extension (SEP-2640) |
//! | `redis` | no | `mcp_server::redis` (`mcp-store-redis`; implies `shared-store`): sessions, stream events, tasks and the bus shared by several instances through Redis (one server or a Redis Cluster) |
//!
//! A stdio-only server builds without any HTTP, TLS or JWT code:
//!
//! ```toml
//! mcp-server = { version = "0.1", default-features = false, features = ["stdio"] }
//! ```
//!
//! Behind a balancer or proxy that terminates TLS (and speaks HTTP/1.1 to its upstreams, as
//! nginx and HAProxy do by default), HTTP without TLS and HTTP/2 is the lightest HTTP build:
//!
//! ```toml
//! mcp-server = { version = "0.1", default-features = false, features = ["http", "stdio"] }
//! ```
//!
//! What each feature costs in crates and binary size is in the README (`cargo xtask weight`
//! measures it).
//!
//! ## `serde` and `schemars`
//!
//! Typed tools derive `serde::Deserialize` (and `Serialize` for structured
//! output) and `schemars::JsonSchema`. The simple path is to depend on the same
//! major versions as this crate, `serde = { version = "1", features = ["derive"] }`
//! and `schemars = "1"`: cargo then unifies them with the ones used here. This
//! crate also re-exports both (and `serde_json`), so that a server can derive
//! without naming them in its `Cargo.toml`; the derives must then be told
//! where the crates are:
//!
//! ```
//! use mcp_server::{schemars, serde};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(crate = "mcp_server::serde")]
//! #[schemars(crate = "mcp_server::schemars")]
//! struct Add { a: i64, b: i64 }
//!
//! let tool = mcp_server::Tool::typed("add", "Adds two integers", |i: Add, _ctx| async move {
//!     (i.a + i.b).to_string()
//! });
//! # let _ = tool;
//! ```
//!
//! ## Observability
//!
//! Telemetry follows OpenTelemetry's semantic conventions for MCP. Every
//! request that reaches the runtime, on any transport, runs inside one
//! `tracing` span of kind `SERVER` (`mcp.server`, level `INFO`, named
//! `{mcp.method.name} {tool or prompt}` for OpenTelemetry, with the
//! conventions' attributes: `mcp.method.name`, `mcp.session.id`,
//! `gen_ai.tool.name`, `network.transport`, `error.type`, …), and is timed
//! through the [`metrics`](https://docs.rs/metrics) facade in the histogram
//! `mcp.server.operation.duration`; a legacy session's length goes to
//! `mcp.server.session.duration`. With no subscriber and no recorder
//! installed both cost little: the span is disabled (nothing is formatted or
//! parsed) and the facade's no-op recorder takes the durations (it still
//! builds each metric's key). The attributes, metric names and labels are
//! listed in [`observe`]. Install a `tracing-subscriber` (or
//! `tracing-opentelemetry`) subscriber and a metrics exporter (e.g.
//! `metrics-exporter-prometheus`, with [`observe::DURATION_BUCKETS`]) in
//! `main`; the library installs neither (the observability guide shows both).
//! A request's W3C trace context (`traceparent`, `tracestate` in its `_meta`)
//! is recorded on the span as `trace_id`, `parent_span_id`, `trace_flags` and
//! `tracestate`; to continue the client's trace with `tracing-opentelemetry`,
//! hand it to `set_parent` from a hook set with
//! [`observe::set_trace_context_hook`] (the module shows how). With the `otel`
//! feature, `McpServerBuilder::tracer` records the same spans straight with an
//! OpenTelemetry tracer, the client's trace their parent, for a fraction of the
//! cost (no `tracing` subscriber in between).
//!
//! Beside what a server author needs (the root and the [`prelude`]), a few
//! modules open the layers below: [`protocol`] (`mcp-protocol`, the sans-IO
//! rules and wire types, for what the prelude lacks), [`transport`] (what a
//! transport of your own needs: the runtime's engine and what it hands back),
//! [`catalog`] (the registry behind [`McpServer::registry`]), [`store`] (the
//! store seams, for a shared store of your own), [`observe`] (span and metric
//! names, the trace-context hook), [`auth`] (the providers [`HttpConfig::auth`]
//! takes), [`http`] (the transport crate: lower-level `serve`, `router`, and,
//! with `tls`, the `rustls` that `HttpConfig::with_rustls` takes), [`stdio`] (its configuration and
//! `serve_io` for other streams), and `redis` with the `redis` feature.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod apps;
mod prompt;
mod resource;
mod schema;
#[cfg(any(feature = "http", feature = "stdio"))]
mod serve;
mod server;
pub mod server_card;
pub mod server_json;
mod signal;
mod tool;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

#[cfg(feature = "mount")]
#[cfg_attr(docsrs, doc(cfg(feature = "mount")))]
pub mod mount;

/// What a transport of your own needs: the server's [`Engine`](transport::Engine) (from
/// [`McpServer::engine`]) and its [`Driver`](transport::Driver) (from [`McpServer::driver`], to
/// spawn once), the [`Peer`](transport::Peer) a transport hands the engine with each decoded
/// message (the caller, the declared revision, how it keeps sessions), and what the engine
/// hands back: a [`Step`](transport::Step) (an [`Answer`](transport::Answer) at once, a
/// [`Call`](transport::Call) to run with a [`Sink`](transport::Sink), or a
/// [`Listening`](transport::Listening) stream) or, for a batch, a
/// [`BatchStep`](transport::BatchStep). A handler that must reach the engine it is registered
/// with holds a [`WeakEngine`](transport::WeakEngine) (`server.engine().downgrade()`).
/// `docs/ARCHITECTURE.md` (§3) walks a message through it.
pub mod transport {
    pub use mcp_runtime::engine::{BatchStep, HeaderLookup, WeakEngine};
    pub use mcp_runtime::{
        Answer, Call, Completed, Driver, Engine, Frame, Listening, Peer, SessionSlot, Sessions, Sink, Step,
    };
}

/// The catalog behind [`McpServer::registry`]: what is registered, its snapshots, its changes,
/// and who sees what.
pub mod catalog {
    pub use mcp_runtime::registry::{
        Catalog, Change, ChangeFeed, CompletionKey, PromptEntry, Registry, RegistryError, ResourceEntry, TemplateEntry,
        ToolEntry, Unannounced,
    };
    pub use mcp_runtime::visibility::{CatalogKind, Visibility};
}

/// The store seams several instances of one server share (sessions, stream events, the bus,
/// membership, tasks, mailbox records), for a store of your own; `Store::memory()` and, with the
/// `redis` feature, `mcp_server::redis` are the two this workspace ships.
pub mod store {
    pub use mcp_runtime::store::*;
}

/// How tasks run when they outlive their worker: [`TaskRuns`](tasks::TaskRuns) (roles, leases,
/// attempts, checkpoints) and the messages a task that stopped ends with.
pub mod tasks {
    pub use mcp_runtime::tasks::{GAVE_UP, HANDED_BACK, INSTANCE_STOPPED, INTERRUPTED, Role, TaskRuns};
}

#[doc(inline)]
pub use mcp_runtime::input;

/// Observability: the span's and the metrics' names and labels, and the hook that hands a
/// request's W3C trace context to `tracing-opentelemetry`.
pub mod observe {
    pub use mcp_runtime::observe::*;
}

/// The guides (`docs/guides/`): getting started, tools, resources, prompts, progress,
/// elicitation and sampling, tasks, authentication, axum, testing, extensions, middleware,
/// observability, migrating from `rmcp`.
#[cfg(all(feature = "http", feature = "stdio", feature = "auth"))]
pub mod guides;

/// Authentication providers (`mcp-auth`): what [`HttpConfig::auth`] takes. [`auth::NoAuth`] is
/// the default; API keys, basic and custom providers come with `http`, the JWT bearer provider
/// ([`auth::BearerAuth`]) with the `auth` feature. A server on stdio needs none: its caller is
/// the process that started it.
#[cfg(any(feature = "http", feature = "auth"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "auth"))))]
#[doc(inline)]
pub use mcp_auth as auth;
/// Events (`io.modelcontextprotocol/events`, `features = ["events"]`, on by default):
/// [`events::EventType`]s declared in code, occurrences emitted through [`events::Events`],
/// served with `McpServerBuilder::events`.
#[cfg(feature = "events")]
#[cfg_attr(docsrs, doc(cfg(feature = "events")))]
pub use mcp_events as events;
/// The sans-IO protocol layer (`mcp-protocol`): wire types ([`protocol::model`]), revisions and
/// eras, error codes. Needed for what the prelude does not re-export, e.g. completion references
/// or a request's raw `_meta`.
#[doc(inline)]
pub use mcp_protocol as protocol;

/// Skills (SEP-2640, `features = ["skills"]`, on by default): [`skills::Skills`] loaded from a
/// directory tree or built in code, served with `McpServerBuilder::skills`.
#[cfg(feature = "skills")]
#[cfg_attr(docsrs, doc(cfg(feature = "skills")))]
#[doc(inline)]
pub use mcp_skills as skills;
/// The Redis store (`features = ["redis"]`): `.store(redis::RedisStore::connect(url).await?)`, or
/// `redis::RedisStore::connect_cluster(&nodes)` on a Redis Cluster.
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
#[doc(inline)]
pub use mcp_store_redis as redis;
/// The Streamable HTTP transport (`mcp-transport-http`, on axum and hyper): [`HttpConfig`], the
/// lower-level `serve`/`router` functions, and (feature `tls`) the `rustls` it serves TLS with. Most servers
/// need only [`McpServer::serve_http`] or [`McpServer::router`]. (Not inlined: it re-exports
/// the whole of `rustls`.)
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use mcp_transport_http as http;
/// The stdio transport (`mcp-transport-stdio`): its configuration ([`stdio::StdioConfig`]: line
/// size cap, worker pool, queue, drain timeout) and [`stdio::serve`] /
/// [`stdio::serve_io`] to run [`McpServer::engine`] with it (its [`McpServer::driver`] spawned
/// beside), or on other streams than stdin/stdout. Most servers need only
/// [`McpServer::serve_stdio`].
#[cfg(feature = "stdio")]
#[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
#[doc(inline)]
pub use mcp_transport_stdio as stdio;

/// `axum` (0.8), the version [`McpServer::router`]'s `Router` is from: an application that
/// mounts the server can use it through `mcp_server::axum` instead of depending on a matching
/// `axum = "0.8"` itself.
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use axum;
/// `schemars`, the version that derives the input and output schemas of typed tools. Deriving
/// through the re-export needs `#[schemars(crate = "mcp_server::schemars")]` (see the crate docs).
pub use schemars;
/// `serde`, the version this crate's typed tools use. Deriving through the re-export needs
/// `#[serde(crate = "mcp_server::serde")]` (see the crate docs).
pub use serde;
/// `serde_json`, the version [`Tool`] handlers and results use ([`prelude`] has `Value` and
/// `json!`).
pub use serde_json;

pub use mcp_protocol::auth::AuthInfo;
pub use mcp_protocol::extension::ExtensionError;
/// What the client declared it supports ([`Ctx::client_capabilities`]): per request in the
/// modern era, from `initialize` in the legacy one.
pub use mcp_protocol::model::ClientCapabilities;
pub use mcp_protocol::model::{
    CallToolResult, Completion, Content, GetPromptResult, Icon, IconTheme, IncludeContext, LoggingLevel, PromptMessage,
    ReadResourceResult, ResourceContents, ToolAnnotations,
};
pub use mcp_protocol::task_mode::TaskSupport;
pub use mcp_protocol::{Era, Revision, RpcError};
pub use mcp_runtime::extension::{CustomMethod, Eras, Extension};
pub use mcp_runtime::middleware::{Headers, Inbound, Middleware, Next, OnStoreFailure, Outcome, RateLimit};
pub use mcp_runtime::mrtr::InputRequired;
pub use mcp_runtime::{
    Attachments, ClientRequestError, Ctx, ElicitationError, HandlerError, ServerConfig, UrlElicitation,
};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
#[doc(inline)]
pub use mcp_transport_http::HttpConfig;
#[cfg(feature = "stdio")]
#[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
#[doc(inline)]
pub use mcp_transport_stdio::StdioConfig;
pub use prompt::{IntoPromptResult, Prompt};
pub use resource::{IntoReadResult, Resource, ResourceTemplate};
pub use schema::{SchemaStyle, schema_of};
pub use server::{McpServer, McpServerBuilder, ServerError};
pub use signal::shutdown_signal;
pub use tool::{IntoToolResult, Tool};

/// The result of a handler: `Result<T>` is `Result<T, HandlerError>`, and `?` converts any
/// `std::error::Error + Send + Sync + 'static` into an internal [`HandlerError`] (logged,
/// answered without detail); [`HandlerError::tool`] is the error the model sees. The second
/// parameter is there so that `Result<(), ServerError>` still reads as usual.
pub type Result<T, E = HandlerError> = std::result::Result<T, E>;

/// Everything a server module usually needs.
pub mod prelude {
    #[cfg(feature = "http")]
    pub use crate::HttpConfig;
    pub use crate::input::{Elicit, Elicitation, Sampling, SamplingReply};
    pub use crate::{
        CallToolResult, Completion, Content, Ctx, CustomMethod, Era, Extension, GetPromptResult, HandlerError, Icon,
        Inbound, InputRequired, IntoToolResult, LoggingLevel, McpServer, Next, Outcome, Prompt, PromptMessage,
        ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Result, Revision, RpcError, ServerError,
        TaskSupport, Tool, ToolAnnotations,
    };
    pub use serde_json::{Value, json};
}
