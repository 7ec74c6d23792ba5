//! # mcp-runtime
//!
//! The runtime executes MCP requests on top of the pure rules of `mcp-protocol`: it owns
//! everything with state, in layers whose imports point one way (each imports only the ones
//! below it):
//!
//! | layer | holds |
//! | --- | --- |
//! | [`engine`] | the one message pipeline every transport hands its decoded messages to |
//! | runtime, [`mailbox`] | one server's state and services, wired together (private: the engine is the door); addressed delivery over the bus |
//! | cluster | this instance's part of a shared [`store`]: the ports below, implemented (feature `shared-store`) |
//! | dispatch | routing (what a request names, decided once) and the methods |
//! | [`tasks`], [`listen`] | tasks and their hand-off; the `subscriptions/listen` hub |
//! | exec | running handlers: deadlines, the cancellation grace, panics, MRTR rounds |
//! | config, [`extension`], [`middleware`] | configuration, the extension registry, the middleware chain |
//! | catalog ([`registry`]) | tools, resources, templates, prompts, completions; [`Visibility`] |
//! | api | what a handler sees: [`Ctx`], [`handler`] traits, [`HandlerError`], typed [`input`], [`States`] |
//! | URL elicitations, [`Session`]s, [`observe`] | records, legacy sessions, the span and metrics |
//! | [`store`], [`Sink`], [`Reply`] | the store seams; where a request's messages go; how it ended |
//!
//! The [`Engine`] ([`engine`]) is the one message pipeline: a transport (stdio, HTTP, or your
//! own) decodes bytes with `mcp-protocol` and hands each message to it with a [`Peer`] (what
//! only the transport knows: the caller, its declared revision, how it keeps sessions, whether
//! it can stream). The engine delivers responses, routes notifications and cancellations,
//! classifies a request's era once, resolves or mints the legacy session, routes the request
//! (the route carries what it decided: era, revision, `_meta`, the tool a `tools/call` names),
//! registers it in flight, and hands back an [`Answer`], a [`Call`] to run or a [`Listening`]
//! stream; every request and notification goes through the [`middleware`] chain on the way.
//! Handlers emit progress, logs and server-to-client requests through the request's [`Sink`],
//! which the transport connects to the request's own stream.
//!
//! Its place in the workspace and the way a request travels through the engine are described
//! in `docs/ARCHITECTURE.md` (§3); the invariants the code cites are defined in
//! `docs/INVARIANTS.md`.

mod api;
mod attachments;
pub mod background;
mod catalog;
#[cfg(feature = "shared-store")]
mod cluster;
#[cfg(not(feature = "shared-store"))]
#[path = "cluster/absent.rs"]
mod cluster;
mod config;
mod dispatch;
mod elicitation;
pub mod engine;
mod exec;
pub mod extension;
mod fast_map;
pub mod listen;
pub mod mailbox;
pub mod middleware;
mod mint;
pub mod observe;
mod quota;
mod remote;
mod reply;
mod runtime;
mod session;
mod sink;
pub mod store;
mod task_runs;
pub mod tasks;

pub use api::{BoxError, ClientRequestError, Ctx, HandlerError, InputRequired, States, UrlElicitation, handler, input};
pub use attachments::Attachments;
pub use catalog::Registry;
pub use catalog::{CatalogKind, Visibility};
pub use config::ServerConfig;
pub use elicitation::ElicitationError;
pub use engine::{
    Answer, Call, Completed, Driver, Engine, Listening, Peer, Remote, SessionSlot, Sessions, Step, Storage,
};
pub use handler::ToolResult;
pub use input::{Elicit, Elicitation, FormSchemaError, Root, Sampling, SamplingReply, form_schema};
pub use listen::{Holder, ListenError, Listener, Subscriptions};
pub use reply::{EncodedResult, Reply};
pub use session::store::{SessionLimit, SessionStore, StartError};
pub use session::{DuplicateId, InFlight, InFlightGuard};
pub use session::{LogNews, LogWatcher, Outlet, Session, SessionHandle};
pub use sink::{Frame, Sink};
pub use store::{Store, StoreError};
pub use tasks::{InMemoryTaskStore, TaskCall, TaskOutcome, TaskOwner, TaskRecord, TaskStore, TaskStoreError};

/// The catalog: registration, snapshots, changes.
pub mod registry {
    pub use crate::catalog::{
        Catalog, Change, ChangeFeed, CompletionKey, PromptEntry, Registry, RegistryError, ResourceEntry, SchemaUse,
        TemplateEntry, ToolEntry, Unannounced,
    };
}

/// Per-principal catalogs.
pub mod visibility {
    pub use crate::catalog::{CatalogKind, Visibility};
}

/// The OAuth scopes operations need: per method, and per tool, resource, template and prompt.
pub mod scopes {
    pub use crate::catalog::{MethodScopes, ScopeError, Scopes};
}

/// RFC 6570 level-1 URI templates, as resource templates route them.
pub mod uri_template {
    pub use crate::catalog::uri_template::*;
}

/// Multi round-trip requests (SEP-2322): what a handler returns when it needs input first.
pub mod mrtr {
    pub use crate::api::InputRequired;
}
