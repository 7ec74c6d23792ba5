//! # mcp-runtime
//!
//! The runtime executes MCP requests on top of the pure rules of
//! `mcp-protocol`. It owns what has state:
//!
//! - the [`Registry`] of tools, resources, templates, prompts and
//!   completions: lock-free reads of an `Arc` snapshot, writes that publish a
//!   new snapshot and announce a [`registry::Change`];
//! - the handler traits ([`handler`]) and the per-request [`Ctx`]: principal,
//!   era, revision, client capabilities, progress and log emitters, a
//!   cancellation token, and (legacy) server-to-client requests;
//! - the [`Runtime`]: routes a request to its era, runs the checks that come
//!   before any handler, dispatches the method, and finalizes the result for
//!   the era (`resultType`, `serverInfo`, cache hints);
//! - the hub of `subscriptions/listen` subscriptions ([`listen`]), fed by
//!   registry changes;
//! - legacy [`Session`]s, bound to the principal that created them, with
//!   their pending server-to-client requests, requests in flight and
//!   subscriptions, and the [`SessionStore`] that expires idle ones;
//! - [`tasks`]: long-running tool calls as tasks (2025-11-25 core tasks and
//!   the 2026-07-28 extension), the inline-then-task hand-off, and the
//!   pluggable [`TaskStore`] (in memory by default);
//! - 2025-11-25 URL-mode elicitation ids, owned by the principal and bound to
//!   the session that elicited ([`Runtime::complete_elicitation`] notifies
//!   that session only);
//! - the optional [`Visibility`] hook filtering the catalog per principal;
//! - [`observe`]: the `tracing` span and the metrics every request leaves behind (field and
//!   metric names, W3C trace context from `_meta`), recorded by the engine;
//! - the [`store`] seams (session records, stream event log, bus, membership, with the task
//!   store) that let several instances behind a load balancer serve as one
//!   ([`Runtime::with_store`]); with none configured everything stays in the process.
//!
//! The [`Engine`] ([`engine`]) is the one message pipeline: a transport
//! (stdio, HTTP, the 2024-11-05 pair, or your own) decodes bytes with
//! `mcp-protocol` and hands each message to it with a [`Peer`] (what only the
//! transport knows: the caller, its declared revision, how it keeps
//! sessions, whether it can stream). The engine delivers responses, routes
//! notifications and cancellations, resolves or mints the legacy session,
//! registers requests in flight, routes them ([`Runtime::route`]) and hands
//! back an [`Answer`], a [`Call`] to run (which dispatches through
//! [`Runtime::dispatch`]) or a [`Listening`] stream. Handlers emit progress,
//! logs and server-to-client requests through the request's [`Sink`], which
//! the transport connects to the request's own stream.
//!
//! Its place in the workspace and the way a request travels through the
//! engine are described in `docs/ARCHITECTURE.md` (§3); the invariants the
//! code cites are defined in `docs/INVARIANTS.md`.

mod api;
mod catalog;
mod cluster;
mod config;
mod dispatch;
mod elicitation;
pub mod engine;
mod exec;
pub mod extension;
pub mod listen;
pub mod middleware;
pub mod observe;
mod reply;
mod runtime;
mod session;
mod sink;
pub mod store;
pub mod tasks;

pub use api::{BoxError, ClientRequestError, Ctx, HandlerError, InputRequired, States, UrlElicitation, handler, input};
pub use catalog::Registry;
pub use catalog::{CatalogKind, Visibility};
pub use config::ServerConfig;
pub use dispatch::RequestEnv;
pub use dispatch::route::{Rejection, Route};
pub use elicitation::ElicitationError;
pub use engine::{Answer, Call, Completed, Engine, Listening, Peer, SessionSlot, Sessions, Step};
pub use handler::ToolResult;
pub use input::{Elicit, Elicitation, FormSchemaError, Root, Sampling, SamplingReply, form_schema};
pub use listen::{Holder, ListenError, Listener, Subscriptions};
pub use reply::{EncodedResult, Reply};
pub use runtime::Runtime;
pub use session::{DuplicateId, InFlight, InFlightGuard};
pub use session::{Outlet, Session, SessionLimit, SessionStore, StartError};
pub use sink::{Frame, Sink};
pub use store::{Store, StoreError};
pub use tasks::{InMemoryTaskStore, TaskOutcome, TaskOwner, TaskRecord, TaskStore, TaskStoreError};

/// The catalog: registration, snapshots, changes.
pub mod registry {
    pub use crate::catalog::{
        Catalog, Change, ChangeFeed, CompletionKey, PromptEntry, Registry, RegistryError, ResourceEntry, TemplateEntry,
        ToolEntry, Unannounced,
    };
}

/// Per-principal catalogs.
pub mod visibility {
    pub use crate::catalog::{CatalogKind, Visibility};
}

/// RFC 6570 level-1 URI templates, as resource templates route them.
pub mod uri_template {
    pub use crate::catalog::uri_template::*;
}

/// Multi round-trip requests (SEP-2322): what a handler returns when it needs input first.
pub mod mrtr {
    pub use crate::api::InputRequired;
}
