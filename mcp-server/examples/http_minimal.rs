//! The smallest Streamable HTTP server: one typed tool, both protocol eras on `/mcp`.
//!
//! ```sh
//! cargo run --example http_minimal                    # http://127.0.0.1:8080/mcp
//! cargo run --example http_minimal -- 127.0.0.1:0     # any free port
//! ```
//!
//! It prints the URL it serves on stderr and stops gracefully on Ctrl-C or `SIGTERM`.

use mcp_server::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// The server: what this example serves (the tests of the examples use it too).
pub(crate) fn server() -> Result<McpServer, ServerError> {
    McpServer::builder()
        .name("http-minimal")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(Tool::typed("add", "Adds two integers", |i: Add, _ctx| async move {
            (i.a + i.b).to_string()
        }))
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());

    // Until Ctrl-C or SIGTERM, then the calls in flight drain; the address is logged.
    server()?.serve_http(&addr).await?;
    Ok(())
}
