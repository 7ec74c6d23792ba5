//! `rmcp-peer`: the bench peer on the official Rust SDK, `rmcp` 3.11 from crates.io.
//!
//! It exposes the same `echo` tool as `ours` (input `{"text": string}`, output one text block
//! with the same text), written the way rmcp documents it (`#[tool_router]`, `#[tool]`,
//! `#[tool_handler]`), and with `--tools N` `N - 1` more tools of the same shape (`echo_1` …).
//!
//! ```text
//! rmcp-peer --http PORT [--tools N]   # Streamable HTTP on 127.0.0.1:PORT/mcp
//! rmcp-peer --stdio [--tools N]       # newline-delimited JSON-RPC on stdin/stdout
//! ```
//!
//! Its fastest honest setup, over HTTP:
//! - legacy clients get sessions (`legacy_session_mode`, rmcp's default, with its in-memory
//!   `LocalSessionManager`); rmcp answers every request of a session on an SSE stream (its
//!   `json_response` applies to stateless requests only);
//! - 2026-07-28 requests are always served statelessly by rmcp, and with `json_response` a reply
//!   that nothing streams before is plain `application/json`;
//! - no SSE priming event (`sse_retry: None`) and no keep-alive timer on streams
//!   (`sse_keep_alive: None`): both cost time on every legacy request stream and nothing the
//!   bench needs;
//! - `TCP_NODELAY` on accepted sockets (`axum::serve` leaves it off; our library sets it), else
//!   every multi-segment SSE reply waits ~40 ms for the client's delayed ACK;
//! - the tool router is built once and shared (`Arc`), not rebuilt per session or per stateless
//!   request, which is what `#[tool_handler]` without `router = …` would do.
//!
//! Over stdio: `rmcp::transport::stdio_pipes()`, rmcp's fastest documented stdio setup (the
//! standard streams reopened as non-blocking pipes driven by the reactor, when both are FIFOs,
//! which is how the load generator starts it), not `stdio()` (every read and write on tokio's
//! blocking pool).

use std::sync::Arc;

use axum::serve::ListenerExt;
use clap::Parser;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};

#[derive(Parser, Debug)]
#[command(about = "The bench peer on rmcp")]
struct Args {
    /// Serve Streamable HTTP on 127.0.0.1:PORT (0 picks a free port).
    #[arg(long, conflicts_with = "stdio")]
    http: Option<u16>,
    /// Serve newline-delimited JSON-RPC on stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// How many tools to register (the first is `echo`).
    #[arg(long, default_value_t = 1)]
    tools: usize,
}

/// The echo tool's input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

/// The server: its tools, built once.
#[derive(Clone)]
struct Bench {
    tool_router: Arc<ToolRouter<Bench>>,
}

#[tool_router]
impl Bench {
    /// Echoes the text back.
    #[tool(description = "Echoes the text back")]
    async fn echo(&self, Parameters(Echo { text }): Parameters<Echo>) -> String {
        text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bench-rmcp", "1.0.0"))
    }
}

impl Bench {
    /// `tools` tools of the echo shape, the first named `echo`.
    fn new(tools: usize) -> Self {
        let mut router = Self::tool_router();
        let attr = router.get("echo").cloned().expect("the echo route exists");
        for i in 1..tools {
            let mut attr = attr.clone();
            attr.name = format!("echo_{i}").into();
            router.add_route(ToolRoute::new(
                attr,
                |Parameters(Echo { text }): Parameters<Echo>| async move { text },
            ));
        }
        Bench {
            tool_router: Arc::new(router),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let bench = Bench::new(args.tools);
    if args.stdio {
        let service = bench.serve(rmcp::transport::stdio_pipes()).await?;
        service.waiting().await?;
        return Ok(());
    }
    let Some(port) = args.http else {
        return Err("give --http PORT or --stdio".into());
    };
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_sse_retry(None)
        .with_sse_keep_alive(None);
    let service: StreamableHttpService<Bench, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(bench.clone()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // TCP_NODELAY, as our library sets it: without it a reply written in more than one segment
    // (rmcp's SSE streams) waits for the client's delayed ACK, ~40 ms per request.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}
