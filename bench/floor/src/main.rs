//! `floor`: the physical floor of the bench, which no MCP server can beat.
//!
//! Over HTTP, a bare axum endpoint (tokio's multi-threaded runtime, as the servers) that answers
//! every request (any path, any verb) with one fixed JSON-RPC result, without reading the body as
//! JSON; over stdio, a blocking loop on the main thread that answers every line carrying an
//! `"id"` with the same fixed result under that id (lines without one, notifications, get no
//! answer). The result is an echo result (one text block holding the bench's text),
//! padded with a `_pad` field to `--body-bytes` so that it has the size of the answer of the
//! server it stands beside.
//!
//! ```text
//! floor --http PORT [--body-bytes N]
//! floor --stdio [--body-bytes N]
//! ```

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::serve::ListenerExt;
use bytes::Bytes;
use clap::Parser;
use std::io::{BufRead, BufReader, BufWriter, Write};

/// The text the load generator sends to `echo` (and checks in answers).
const TEXT: &str = "hello from the bench";

#[derive(Parser, Debug)]
#[command(about = "A bare endpoint answering every request with a fixed JSON-RPC result")]
struct Args {
    /// Serve HTTP on 127.0.0.1:PORT (0 picks a free port).
    #[arg(long, conflicts_with = "stdio")]
    http: Option<u16>,
    /// Answer newline-delimited JSON-RPC on stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Size of the HTTP answer body (and of the stdio answer line without its id), in bytes.
    #[arg(long, default_value_t = 0)]
    body_bytes: usize,
}

/// The fixed answer with `id` as its id, padded to at least `size` bytes.
fn answer(id: &str, size: usize) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{TEXT}"}}]"#);
    let tail = "}}";
    let bare = head.len() + tail.len();
    let pad = r#","_pad":"""#.len();
    if size <= bare + pad {
        return format!("{head}{tail}");
    }
    format!(r#"{head},"_pad":"{}"{tail}"#, " ".repeat(size - bare - pad))
}

/// The id of a JSON-RPC line, found by scanning (the floor parses nothing).
fn id_of(line: &str) -> Option<&str> {
    let start = line.find(r#""id":"#)? + 5;
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// Answers stdin line by line with blocking reads and writes on the main thread (no runtime, no
/// thread hop), flushing only when no more input is buffered, so that answers to requests sent
/// together leave together.
fn stdio(size: usize) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return out.flush();
        }
        if let Some(id) = id_of(&line) {
            out.write_all(answer(id, size).as_bytes())?;
            out.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}

/// Serves the fixed answer over HTTP on 127.0.0.1:`port`.
async fn http(port: u16, size: usize) -> Result<(), Box<dyn std::error::Error>> {
    let body = Bytes::from(answer("1", size));
    let app = Router::new().fallback(move || {
        let body = body.clone();
        async move { ([(CONTENT_TYPE, "application/json")], body).into_response() }
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // TCP_NODELAY, as our library sets it.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if args.stdio {
        return Ok(stdio(args.body_bytes)?);
    }
    let Some(port) = args.http else {
        return Err("give --http PORT or --stdio".into());
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(http(port, args.body_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_padded_to_size() {
        assert_eq!(answer("7", 400).len(), 400);
        assert!(answer("7", 0).contains(TEXT));
        assert_eq!(id_of(r#"{"jsonrpc":"2.0","id":42,"method":"x"}"#), Some("42"));
        assert_eq!(id_of(r#"{"jsonrpc":"2.0","method":"x"}"#), None);
    }
}
