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
//!   schemas derived by `schemars` from `serde` types;
//! - [`Resource`], [`ResourceTemplate`], [`Prompt`];
//! - transports: [`McpServer::serve_http`] (Streamable HTTP, both eras on
//!   one endpoint), [`McpServer::router`] to mount it in an axum app, and
//!   [`McpServer::serve_stdio`].
//! - [`testing`]: an in-process [`testing::TestClient`] (both eras, scripted
//!   elicitation, sampling and roots, the MRTR loop) for the tests of your server.
//!
//! A tool may run as a task ([`Tool::task_support`]): for 2025-11-25 clients
//! that ask for one (core tasks), and for 2026-07-28 clients that declared
//! the tasks extension, after a short inline window. Tasks are kept in memory
//! unless [`McpServerBuilder::task_store`] plugs in a durable store.
//!
//! Handlers receive a [`Ctx`]: the caller's principal, the era and revision,
//! the client's capabilities, progress and log emitters, a cancellation
//! token, and, for legacy clients, server-to-client requests (sampling,
//! elicitation, roots). A 2025-11-25 URL-mode elicitation ([`Ctx::elicit_url`])
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
//! The layers below are usable on their own: `mcp-protocol` (the sans-IO
//! rules), `mcp-runtime` (registry, dispatcher, sessions), the transports,
//! and `mcp-auth`.

mod prompt;
mod resource;
mod serve;
mod server;
mod tool;

pub mod testing;

pub use mcp_auth as auth;
pub use mcp_protocol as protocol;
pub use mcp_runtime as runtime;
/// The Redis store (`features = ["redis"]`): `.store(redis::RedisStore::connect(url).await?)`.
#[cfg(feature = "redis")]
pub use mcp_store_redis as redis;
pub use mcp_transport_http as http;

pub use mcp_protocol::auth::AuthInfo;
pub use mcp_protocol::model::{
    CallToolResult, Completion, Content, GetPromptResult, LoggingLevel, PromptMessage, ReadResourceResult,
    ResourceContents,
};
pub use mcp_protocol::task_mode::TaskSupport;
pub use mcp_protocol::{Era, Revision, RpcError};
pub use mcp_runtime::mrtr::InputRequired;
pub use mcp_runtime::{CatalogKind, ClientRequestError, Ctx, ElicitationError, HandlerError, Store, UrlElicitation};
pub use mcp_transport_http::HttpConfig;
pub use prompt::{IntoPromptResult, Prompt};
pub use resource::{IntoReadResult, Resource, ResourceTemplate};
pub use server::{McpServer, McpServerBuilder, ServerError};
pub use tool::{IntoToolResult, Tool, schema_of};

/// The result of a handler: `Result<T>` is `Result<T, HandlerError>`, and `?` converts any
/// `std::error::Error + Send + Sync + 'static` into an internal [`HandlerError`] (logged,
/// answered without detail); [`HandlerError::tool`] is the error the model sees. The second
/// parameter is there so that `Result<(), ServerError>` still reads as usual.
pub type Result<T, E = HandlerError> = std::result::Result<T, E>;

/// Everything a server module usually needs.
pub mod prelude {
    pub use crate::{
        CallToolResult, Completion, Content, Ctx, Era, GetPromptResult, HandlerError, HttpConfig, InputRequired,
        IntoToolResult, LoggingLevel, McpServer, Prompt, PromptMessage, ReadResourceResult, Resource, ResourceContents,
        ResourceTemplate, Result, Revision, RpcError, ServerError, TaskSupport, Tool,
    };
    pub use serde_json::{Value, json};
}
