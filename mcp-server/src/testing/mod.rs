//! An in-process test client for your own tests of your server: no sockets, no child process.
//!
//! A [`TestClient`] speaks either era to an [`McpServer`](crate::McpServer):
//!
//! - **legacy** (2024-11-05 … 2025-11-25): it sends `initialize` and
//!   `notifications/initialized` itself, keeps its session, and answers the server's
//!   server-to-client requests (elicitation, sampling, roots) with scripted replies while the
//!   call runs; list-changed and resource-updated notifications reach its log;
//! - **modern** (2026-07-28): it sends the `_meta` envelope (protocol version, client
//!   capabilities, client info, log level) on every request, `server/discover` when asked, and
//!   runs the MRTR loop itself: an `input_required` result is answered from the same script and
//!   the request retried with `inputResponses` and the `requestState`, so that a test sees the
//!   final result (and can count the rounds).
//!
//! Typed helpers cover the catalog ([`TestClient::list_tools`], [`TestClient::call_tool`],
//! [`TestClient::read_resource`], [`TestClient::get_prompt`], [`TestClient::complete`], …);
//! [`TestClient::request`] sends anything. The `*_exchange` variants and
//! [`TestClient::exchange`] return an [`Exchange`]: the result with the progress and log
//! notifications of that request, the input the server asked for, and the rounds.
//! [`TestClient::start`] runs a request in the background so that a test can cancel it.
//! [`TestClient::take_notifications`] and [`TestClient::wait_for_notification`] read the
//! client's log of every notification (calls, the legacy session, registry changes),
//! [`TestClient::take_server_requests`] the input it gave; [`TestClient::listen`] opens a
//! modern `subscriptions/listen` stream; [`TestClient::call_tool_as_task`] and
//! [`TestClient::task_result`] follow a task-capable tool in either era.
//!
//! ```
//! use mcp_server::prelude::*;
//! use mcp_server::testing::accept;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Name {
//!     /// Your name
//!     name: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A tool that asks the user for their name, in either era.
//! let server = McpServer::builder()
//!     .name("greeter")
//!     .version("1.0.0")
//!     .tool(Tool::new("greet", "Greets the user", |_args, ctx: Ctx| async move {
//!         let name = match ctx.elicit::<Name>("Your name?").await? {
//!             Elicitation::Accept(n) => n.name,
//!             _ => "stranger".to_owned(),
//!         };
//!         Ok(format!("Hello, {name}!"))
//!     }))
//!     .build()?;
//!
//! for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
//!     let client = server
//!         .test_client()
//!         .revision(revision)
//!         .on_elicit(|_params| accept(json!({"name": "Ada"})))
//!         .connect()
//!         .await?;
//!     let call = client.call_tool_exchange("greet", json!({})).await?;
//!     assert_eq!(call.result.content, vec![Content::text("Hello, Ada!")]);
//!     assert_eq!(call.server_requests[0].params["message"], "Your name?");
//!     // Legacy: one call answered a server-to-client request; modern: one MRTR retry.
//!     assert_eq!(call.rounds, if revision.era() == Era::Modern { 2 } else { 1 });
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ## Design
//!
//! The client drives the runtime's [`Engine`](mcp_runtime::Engine), the message pipeline
//! every transport hands its decoded messages to, as a transport of its own: each message is
//! encoded to JSON and decoded with `mcp-protocol` exactly as a transport receives it, and
//! each client is one connection with its own session slot (one legacy session, its own
//! request ids, like a stdio process), so several clients of one server run side by side.
//! Driving the engine rather than the stdio transport over an in-memory pipe gives a test what
//! a pipe cannot: the caller's identity ([`TestClientBuilder::auth`]: stdio serves the
//! anonymous local user only), and a stream of its own per request, so that the progress and
//! log notifications of a call are the call's own, with no correlation guesswork. What the
//! client does not exercise is transport framing (line splitting, HTTP headers, SSE): the
//! transports' own suites cover those.
//!
//! Each request runs as a Tokio task: build clients inside a Tokio runtime
//! (`#[tokio::test]`). The module needs no transport feature: it is there in every build.
//!
//! Left out: batches (send them with a transport), HTTP-only behaviour (headers, status
//! codes, SSE resumption, the 2024-11-05 pair), and modern list-changed notifications outside
//! a `listen` stream (the modern era has none).

mod builder;
mod client;
mod exchange;
mod listen;
mod pending;
mod script;
mod tasks;

pub use builder::TestClientBuilder;
pub use client::TestClient;
pub use exchange::{ClientError, Exchange, ServerRequest, text_of};
pub use listen::Subscription;
pub use mcp_protocol::client::{LogMessage, Progress, ServerNotification};
pub use mcp_protocol::model::CompleteReference;
pub use mcp_protocol::model::{PromptInfo, ResourceInfo, TemplateInfo, ToolInfo};
pub use pending::PendingRequest;
pub use script::{accept, cancel, decline, sampled_text};
pub use tasks::{TaskInfo, ToolCall};

impl crate::McpServer {
    /// A [`TestClient`] builder for this server (modern by default; see
    /// [`TestClientBuilder`]): `server.test_client().legacy().connect().await?`.
    pub fn test_client(&self) -> TestClientBuilder {
        TestClient::builder(self)
    }
}
