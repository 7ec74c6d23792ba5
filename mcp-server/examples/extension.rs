//! A server that declares an extension and serves its vendor method, in both protocol eras.
//!
//! ```sh
//! cargo run --example extension                   # http://127.0.0.1:8080/mcp
//! cargo run --example extension -- --stdio        # newline-delimited JSON-RPC on stdin/stdout
//! cargo run --example extension -- --demo         # calls itself in both eras and exits
//! ```
//!
//! - The extension `com.example/notes` is declared with its settings (`{"maxHits": 10}`) in
//!   `capabilities.extensions`: in `server/discover` (2026-07-28) and in the `initialize`
//!   result (2025-11-25 and earlier).
//! - Its method `com.example/notes.search` (typed params and result) answers clients that
//!   declared the extension; another client gets -32021 naming it.
//! - `com.example/notes.count` is a vendor method of no extension: every client may call it.
//! - The tool `add_note` keeps notes for both to find.

use std::sync::Mutex;

use mcp_server::prelude::*;
use mcp_server::testing::TestClient;

/// The extension's identifier.
pub(crate) const NOTES: &str = "com.example/notes";

/// The notes every handler shares.
#[derive(Default)]
struct Notes(Mutex<Vec<String>>);

impl Notes {
    fn with<R>(&self, f: impl FnOnce(&mut Vec<String>) -> R) -> Result<R, HandlerError> {
        let mut notes = self
            .0
            .lock()
            .map_err(|_| HandlerError::internal("the notes lock is poisoned"))?;
        Ok(f(&mut notes))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddNote {
    /// The note's text.
    text: String,
}

/// The params of `com.example/notes.search`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    /// The words a note must contain.
    query: String,
}

/// The result of `com.example/notes.search`.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Hits {
    /// The notes that contain the query, at most `maxHits`.
    hits: Vec<String>,
}

/// The server: what this example serves (its tests use it too).
pub(crate) fn server() -> Result<McpServer, ServerError> {
    let search = CustomMethod::typed("com.example/notes.search", |p: Search, ctx: Ctx| async move {
        let notes = ctx.state::<Notes>()?;
        let hits = notes.with(|n| n.iter().filter(|t| t.contains(&p.query)).take(10).cloned().collect())?;
        Ok(Hits { hits })
    })?;
    let notes = Extension::new(NOTES)?
        .settings(json!({ "maxHits": 10 }))?
        .method(search);
    let count = CustomMethod::new("com.example/notes.count", |_params, ctx: Ctx| async move {
        let notes = ctx.state::<Notes>()?;
        Ok(json!({ "count": notes.with(|n| n.len())? }))
    })?;
    McpServer::builder()
        .name("notes-extension")
        .version(env!("CARGO_PKG_VERSION"))
        .state(Notes::default())
        .tool(Tool::typed(
            "add_note",
            "Keeps a note",
            |i: AddNote, ctx: Ctx| async move {
                let notes = ctx.state::<Notes>()?;
                let n = notes.with(|n| {
                    n.push(i.text);
                    n.len()
                })?;
                Ok(format!("{n} notes"))
            },
        ))
        .extension(notes)
        .method(count)
        .build()
}

/// Calls the server in-process in both eras, as a declaring and as another client, and prints
/// what it answers; an answer other than the expected one is an error.
pub(crate) async fn demo(server: &McpServer) -> Result<(), Box<dyn std::error::Error>> {
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let client = server
            .test_client()
            .revision(revision)
            .extension(NOTES, json!({}))
            .discover(true)
            .connect()
            .await?;
        let declared = match client.era() {
            Era::Legacy => client.initialize_result(),
            Era::Modern => client.discover_result(),
        };
        let settings = declared.map(|r| r["capabilities"]["extensions"][NOTES].clone());
        println!("{revision}: the server declares {NOTES} with {settings:?}");
        client
            .call_tool("add_note", json!({ "text": format!("notes of {revision}") }))
            .await?;
        let hits = client
            .request("com.example/notes.search", json!({ "query": "notes" }))
            .await?;
        println!("{revision}: com.example/notes.search -> {hits}");
        let count = client.request("com.example/notes.count", json!({})).await?;
        println!("{revision}: com.example/notes.count -> {count}");

        let other = TestClient::builder(server).revision(revision).connect().await?;
        match other
            .request("com.example/notes.search", json!({ "query": "notes" }))
            .await
        {
            Err(e) => println!("{revision}: a client without the extension -> {e}"),
            Ok(v) => return Err(format!("a client without the extension got {v}").into()),
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
