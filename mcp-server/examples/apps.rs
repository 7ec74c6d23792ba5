//! An MCP App (SEP-1865) over Streamable HTTP: a counter kept by the server, shown in an
//! interactive page the host renders in a sandboxed iframe.
//!
//! - `ui://counter/view` is the page (`text/html;profile=mcp-app`, `examples/apps/counter.html`);
//! - `counter_show` (for the model and the app) opens it: its `_meta.ui.resourceUri` names it;
//! - `counter_increment` is app-only (`visibility: ["app"]`): the page's button calls it back
//!   through the host's app bridge, and shows the new count in its DOM. Hosts keep it out of the
//!   model's tool list.
//!
//! The server declares the `io.modelcontextprotocol/ui` extension by itself, in both eras.
//!
//! ```sh
//! cargo run --example apps                          # http://127.0.0.1:8080/mcp
//! cargo run --example apps -- --port 0              # any free port
//! ```
//!
//! It prints `listening on http://HOST:PORT/mcp` on stdout and stops gracefully on Ctrl-C or `SIGTERM`.
//! `cargo xtask interop` loads the page in headless Chromium inside a host page built on the
//! official `@modelcontextprotocol/ext-apps` app bridge (`interop/apps/`).

use std::sync::atomic::{AtomicU64, Ordering};

use mcp_server::apps::{AppResource, ToolUi};
use mcp_server::prelude::*;

/// The page's URI.
const VIEW: &str = "ui://counter/view";

/// The count, shared by every handler.
#[derive(Default)]
struct Counter(AtomicU64);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Increment {
    /// How much to add (1 to 100).
    #[schemars(range(min = 1, max = 100))]
    by: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Show {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Count {
    /// The count after the call.
    count: u64,
}

/// The server: what this example serves (its tests use it too).
pub(crate) fn server() -> Result<McpServer, Box<dyn std::error::Error>> {
    let view = AppResource::html(VIEW, "counter-view", include_str!("apps/counter.html"))?
        .title("Server counter")
        .description("A counter kept by the server, with a button that adds one")
        .prefers_border(true);
    let show = Tool::structured(
        "counter_show",
        "Shows the server's counter",
        |_: Show, ctx| async move {
            Ok(Count {
                count: ctx.state::<Counter>()?.0.load(Ordering::SeqCst),
            })
        },
    )
    .ui(ToolUi::new(VIEW)?);
    let increment = Tool::structured(
        "counter_increment",
        "Adds to the server's counter (called by the counter view)",
        |i: Increment, ctx| async move {
            let counter = ctx.state::<Counter>()?;
            Ok(Count {
                count: counter.0.fetch_add(i.by, Ordering::SeqCst) + i.by,
            })
        },
    )
    .ui(ToolUi::new(VIEW)?.app_only());
    Ok(McpServer::builder()
        .name("apps-counter")
        .version(env!("CARGO_PKG_VERSION"))
        .state(Counter::default())
        .resource(view)
        .tool(show)
        .tool(increment)
        .build()?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let (mut host, mut port) = ("127.0.0.1".to_owned(), "8080".to_owned());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--host", Some(v)) => host = v,
            ("--port", Some(v)) => port = v,
            _ => return Err(format!("usage: apps [--host H] [--port P] (got {arg:?})").into()),
        }
    }
    let server = server()?;
    let listener = tokio::net::TcpListener::bind(format!("{host}:{port}")).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // Until Ctrl-C or SIGTERM, then the calls in flight drain.
    server.serve_http_listener(listener).await?;
    Ok(())
}
