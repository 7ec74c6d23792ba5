//! A server with two middleware layers, the same on every transport and in both eras:
//!
//! - `timing` times every request and notification, and logs its method, principal, era,
//!   duration and how it ended;
//! - `policy` refuses `prompts/get` with a clear error (and, over HTTP, the status 403), before
//!   any handler runs.
//!
//! ```sh
//! cargo run --example middleware                  # http://127.0.0.1:8080/mcp
//! cargo run --example middleware -- --stdio       # newline-delimited JSON-RPC on stdin/stdout
//! cargo run --example middleware -- --demo        # calls itself in both eras and exits
//! ```

use std::time::Instant;

use mcp_server::prelude::*;

/// What `policy` answers a refused `prompts/get`.
pub(crate) const REFUSAL: &str = "prompts/get is switched off on this server";

/// Times a request and logs how it ended.
async fn timing(request: Inbound, next: Next) -> Outcome {
    let started = Instant::now();
    let method = request.method().to_owned();
    let principal = request.principal().to_owned();
    let era = request.era();
    let outcome = next.run(request).await;
    let ended = match (outcome.rpc_error(), outcome.is_cancelled()) {
        (Some(e), _) => format!("error {}", e.code),
        (None, true) => "cancelled".to_owned(),
        (None, false) => "ok".to_owned(),
    };
    tracing::info!(
        %method,
        %principal,
        ?era,
        micros = started.elapsed().as_micros() as u64,
        %ended,
        "request"
    );
    outcome
}

/// Refuses `prompts/get`.
async fn policy(request: Inbound, next: Next) -> Outcome {
    if request.method() == "prompts/get" {
        return Outcome::error(RpcError::invalid_request(REFUSAL)).with_status(403);
    }
    next.run(request).await
}

/// The server: what this example serves (its tests use it too).
pub(crate) fn server() -> Result<McpServer, ServerError> {
    McpServer::builder()
        .name("middleware")
        .version(env!("CARGO_PKG_VERSION"))
        .middleware(timing)
        .middleware(policy)
        .tool(Tool::new("hello", "Says hello", |_args, _ctx| async { "hello" }))
        .prompt(Prompt::new("greeting", "A greeting", |_args, _ctx| async {
            Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text("Hi!"))]))
        }))
        .build()
}

/// Calls the server in-process in both eras and prints what it answers; an answer other than
/// the expected one is an error.
pub(crate) async fn demo(server: &McpServer) -> Result<(), Box<dyn std::error::Error>> {
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let client = server.test_client().revision(revision).connect().await?;
        let hello = client.call_tool("hello", json!({})).await?;
        println!("{revision}: tools/call hello -> {:?}", hello.content);
        match client.get_prompt("greeting", json!({})).await {
            Err(e) => println!("{revision}: prompts/get -> {e}"),
            Ok(p) => return Err(format!("prompts/get was not refused: {p:?}").into()),
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let arg = std::env::args().nth(1);
    let server = server()?;
    match arg.as_deref() {
        Some("--demo") => demo(&server).await,
        Some("--stdio") => Ok(server.serve_stdio().await?),
        other => {
            let addr = other.unwrap_or("127.0.0.1:8080");
            tracing::info!("serving http://{addr}/mcp until Ctrl-C or SIGTERM");
            Ok(server.serve_http(addr).await?)
        }
    }
}
