//! A small command-line MCP client: connects to a server (a command over stdio, or a URL over
//! Streamable HTTP), says which era it settled, lists the tools, and calls one.
//!
//! ```text
//! cargo run -p mcp-client --example call -- --stdio "cargo run --example everything -- --stdio"
//! cargo run -p mcp-client --example call -- --http http://127.0.0.1:8080/mcp test_simple_text '{}'
//! ```
//!
//! `--legacy` pins 2025-11-25 instead of discovering the era. Elicitation is declined, sampling
//! refused, and the server's log lines and progress are printed to stderr.

use std::process::ExitCode;

use mcp_client::{Client, Revision, ServerCommand};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let mut builder = Client::builder()
        .name("mcp-client-example")
        .on_elicit(|params: Value| async move {
            eprintln!("the server asks: {} (declined)", params["message"]);
            Ok(json!({"action": "decline"}))
        });
    let mut target = None;
    let mut rest = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--legacy" => builder = builder.revision(Revision::V2025_11_25),
            "--stdio" | "--http" => target = Some((a, args.next().ok_or("a value after the flag")?)),
            _ => rest.push(a),
        }
    }
    let client = match target {
        Some((flag, line)) if flag == "--stdio" => {
            let mut words = line.split_whitespace();
            let program = words.next().ok_or("an empty command")?;
            builder.stdio(ServerCommand::new(program).args(words)).await?
        }
        Some((_, url)) => builder.http(&url).await?,
        None => return Err("usage: call (--stdio CMD | --http URL) [--legacy] [TOOL [ARGS_JSON]]".into()),
    };
    let mut notes = client.notifications();
    tokio::spawn(async move {
        while let Ok(n) = notes.recv().await {
            eprintln!("<- {} {}", n.method, n.params);
        }
    });
    println!("connected: {} ({:?} era)", client.revision().as_str(), client.era());
    for tool in client.list_tools().await? {
        println!("tool {}: {}", tool.name, tool.description.unwrap_or_default());
    }
    if let Some(name) = rest.first() {
        let arguments: Value = match rest.get(1) {
            Some(a) => serde_json::from_str(a)?,
            None => json!({}),
        };
        let result = client.call_tool(name, arguments).await?;
        println!("{}", serde_json::to_string_pretty(&result)?);
    }
    client.close().await;
    Ok(())
}
