//! `drain-server`: a server with one slow tool, served by the library's own helpers, for the
//! signal tests of the `health` suite.
//!
//! ```text
//! drain-server http 127.0.0.1:PORT   # McpServer::serve_http
//! drain-server stdio                 # McpServer::serve_stdio
//! ```
//!
//! The tool `slow` (argument `ms`, default 1000) sleeps that long and answers `slept <ms> ms`;
//! it ignores cancellation, so a reply after a shutdown signal shows that the call drained.
//! Exits 0 once the helper returns, 1 when it fails, 2 on bad arguments; says so on stderr.

use std::process::ExitCode;
use std::time::Duration;

use mcp_server::prelude::*;

const USAGE: &str = "usage: drain-server http ADDR | drain-server stdio";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = match server() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("drain-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["http", addr] => server.serve_http(*addr).await,
        ["stdio"] => server.serve_stdio().await,
        _ => {
            eprintln!("drain-server: {USAGE}");
            return ExitCode::from(2);
        }
    };
    match served {
        Ok(()) => {
            eprintln!("drain-server: drained; exiting");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("drain-server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn server() -> Result<McpServer, ServerError> {
    McpServer::builder()
        .name("drain-server")
        .version("1")
        .tool(Tool::new(
            "slow",
            "Sleeps `ms` milliseconds (default 1000)",
            |args, _ctx| async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(1000);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                format!("slept {ms} ms")
            },
        ))
        .build()
}
