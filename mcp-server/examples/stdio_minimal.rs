//! The smallest stdio server: one typed tool.
//!
//! ```sh
//! cargo run --example stdio_minimal
//! ```
//!
//! It reads newline-delimited JSON-RPC on stdin and answers on stdout, so an MCP client starts
//! it as a child process (e.g. `npx @modelcontextprotocol/inspector cargo run --example
//! stdio_minimal`). Stdout belongs to the protocol: this program never prints there; its logs
//! go to stderr (`RUST_LOG=debug` for more).

use mcp_server::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[tokio::main]
async fn main() -> Result<(), ServerError> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    tracing::info!("serving MCP on stdin/stdout");

    McpServer::builder()
        .name("stdio-minimal")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(Tool::typed("add", "Adds two integers", |i: Add, _ctx| async move {
            (i.a + i.b).to_string()
        }))
        .build()?
        // Until stdin closes, Ctrl-C or SIGTERM; the requests in flight are answered first.
        .serve_stdio_until(mcp_server::shutdown_signal())
        .await
}
