//! A task-capable tool with progress, over Streamable HTTP.
//!
//! ```sh
//! cargo run --example tasks                    # http://127.0.0.1:8080/mcp
//! cargo run --example tasks -- 127.0.0.1:0     # any free port
//! ```
//!
//! `build_index` works through `files` steps of 200 ms, reporting progress after each. A client
//! that supports tasks gets a task for it: a 2025-11-25 client by sending `"task": {}` with the
//! call (core tasks), a 2026-07-28 client by declaring the `io.modelcontextprotocol/tasks`
//! extension (the call then runs inline for 100 ms and becomes a task). Other clients get the
//! answer inline. `tasks/cancel` reaches the handler's cancellation token.

use std::time::Duration;

use mcp_server::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Index {
    /// How many files to index (1 to 100).
    files: u32,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Indexed {
    files: u32,
    terms: u64,
}

fn build_index() -> Tool {
    Tool::structured(
        "build_index",
        "Indexes the files (slow: a task when the client allows)",
        |i: Index, ctx| async move {
            if !(1..=100).contains(&i.files) {
                return Err(HandlerError::tool("files must be between 1 and 100"));
            }
            let mut terms = 0;
            for file in 1..=i.files {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                    _ = ctx.cancellation().cancelled() => {
                        tracing::info!(file, "indexing cancelled");
                        return Err(HandlerError::tool("cancelled"));
                    }
                }
                terms += u64::from(file) * 17;
                let note = format!("indexed file {file} of {}", i.files);
                ctx.progress(f64::from(file), Some(f64::from(i.files)), Some(&note))
                    .await;
            }
            Ok(Indexed { files: i.files, terms })
        },
    )
    .task_support(TaskSupport::Optional)
    .timeout(Duration::from_secs(300))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());

    let server = McpServer::builder()
        .name("tasks-example")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(build_index())
        .build()?;

    // Until Ctrl-C or SIGTERM, then the calls in flight drain; the address is logged.
    server.serve_http(&addr).await?;
    Ok(())
}
