//! # mcp-client
//!
//! An MCP client on the workspace's protocol core (`mcp-protocol`: every wire rule it follows
//! is written there once, for this crate and the servers alike).
//!
//! - **Both eras.** Unless a revision is pinned ([`ClientBuilder::revision`]), the client asks
//!   `server/discover` first and falls back to `initialize` on anything but a modern answer
//!   (spec 2026-07-28, basic/versioning). Modern requests carry the `_meta` envelope (and, over
//!   HTTP, the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers); legacy ones the
//!   session.
//! - **Transports.** A child process over stdio ([`ClientBuilder::stdio`]: stderr logged
//!   through `tracing`, a bounded outbound queue, lines over the bound dropped, restart with a
//!   backoff on request) and Streamable HTTP ([`ClientBuilder::http`]: JSON or SSE answers,
//!   the session's GET stream, resumption with `Last-Event-ID`, DELETE at close).
//! - **What the server asks.** Elicitation, sampling and roots are answered by handlers given
//!   to the builder, whether the server asks with a request (legacy) or an `input_required`
//!   result (modern MRTR, followed until the final result); the client's capabilities follow
//!   from which handlers are set.
//! - **Requests.** Typed calls for the catalog ([`Client::list_tools`], [`Client::call_tool`],
//!   [`Client::read_resource`], [`Client::get_prompt`], [`Client::complete`], …),
//!   [`Client::request`] for anything else; each is bounded by a timeout and cancelled when its
//!   future is dropped; progress reaches a callback ([`RequestOptions::on_progress`]) and
//!   every notification [`Client::notifications`]; [`Client::listen`] opens a modern
//!   subscription.
//!
//! ```no_run
//! use mcp_client::{Client, ServerCommand};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), mcp_client::ClientError> {
//! let client = Client::builder()
//!     .name("my-agent")
//!     .on_elicit(|_params| async { Ok(json!({"action": "decline"})) })
//!     .stdio(ServerCommand::new("my-mcp-server").arg("--stdio"))
//!     .await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("echo", json!({"message": "hi"})).await?;
//! println!("{:?}", result.content);
//! client.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! The [`guide`] walks through all of it; `examples/call.rs` is a small command-line client.
//!
//! Left out for now: HTTPS (an `http://` URL only), the 2024-11-05 HTTP+SSE pair, the
//! `Mcp-Param-*` headers of annotated tool arguments, and tasks beyond [`Client::request`].

/// The guide (`docs/guides/client.md`), its code compiled as doc tests.
#[doc = include_str!("../guides/client.md")]
pub mod guide {}

mod builder;
mod client;
mod conn;
mod error;
mod handlers;
mod handshake;
mod link;
mod listen;

pub use builder::ClientBuilder;
pub use client::{Client, Page, RequestOptions};
pub use error::ClientError;
pub use handlers::Handler;
pub use link::stdio::{Restart, ServerCommand};
pub use listen::Subscription;
pub use mcp_protocol::client::{LogMessage, Progress, ServerNotification};
pub use mcp_protocol::model::{PromptInfo, ResourceInfo, TemplateInfo, ToolInfo};
pub use mcp_protocol::{Era, Revision, RpcError};
