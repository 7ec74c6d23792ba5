//! The README's "Use it" example, exactly as the README shows it (`tests/readme.rs` checks the
//! two agree, and CI builds every example): a server with one typed tool, for every revision.
//!
//! ```text
//! cargo run --example readme     # Streamable HTTP on 127.0.0.1:8080/mcp
//! ```

use mcp_server::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::main]
async fn main() -> Result<(), ServerError> {
    McpServer::builder()
        .name("adder")
        .version("1.0.0")
        .tool(Tool::typed("add", "Adds two integers", |i: Add, _ctx| async move {
            (i.a + i.b).to_string()
        }))
        .build()?
        .serve_http("127.0.0.1:8080") // or .serve_stdio()
        .await
}
