//! Support for the health suite: a server with a slow tool (served by `serve_http_on`), a raw
//! HTTP/1.1 client (one connection per request, `Connection: close`), and the requests the
//! tests send.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_server::prelude::*;
use mcp_server::{McpServerBuilder, ServerError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Fails a test that runs longer than `secs` seconds.
pub(crate) async fn bounded<F: Future>(secs: u64, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("test timed out")
}

/// A builder with the tool `slow`: it tells `started` it runs, sleeps `ms` (argument, default
/// 1000) ignoring cancellation, and answers `slept <ms> ms`.
pub(crate) fn builder(started: Arc<Notify>) -> McpServerBuilder {
    McpServer::builder()
        .name("health-suite")
        .version("1")
        .tool(Tool::new("slow", "Sleeps", move |args, _ctx| {
            let started = started.clone();
            async move {
                started.notify_one();
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(1000);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                format!("slept {ms} ms")
            }
        }))
}

/// A server served by `serve_http_on` on `127.0.0.1:0` until [`Running::stop`] (or the end of
/// the test's runtime).
pub(crate) struct Running {
    pub(crate) addr: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), ServerError>>,
}

impl Running {
    /// Serves `server` with `config`.
    pub(crate) async fn start(server: McpServer, config: HttpConfig) -> Running {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(server.serve_http_on(listener, config, shutdown.clone()));
        Running { addr, shutdown, task }
    }

    /// Begins the graceful shutdown (returns at once).
    pub(crate) fn stop(&self) {
        self.shutdown.cancel();
    }

    /// Waits for `serve_http_on` to return.
    pub(crate) async fn stopped(self) {
        self.task.await.expect("the serve task").expect("served");
    }
}

/// An answer: its status, its head (lowercase) and its body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: String,
}

impl Answer {
    /// The value of header `name` (lowercase), if any.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            (n.trim() == name).then(|| v.trim())
        })
    }
}

/// Sends one request on a fresh connection (`Host: 127.0.0.1:<port>` unless `headers` names
/// one) and reads the answer until the server closes the connection.
pub(crate) async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Answer {
    let mut request = format!("{method} {path} HTTP/1.1\r\nconnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("host: 127.0.0.1:{}\r\n", addr.port()));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        request.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.write_all(request.as_bytes()).await.expect("write the head");
    tcp.write_all(body).await.expect("write the body");
    let mut out = Vec::new();
    tcp.read_to_end(&mut out).await.expect("read the answer");
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    Answer {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

/// `GET path` with no other header.
pub(crate) async fn get(addr: SocketAddr, path: &str) -> Answer {
    send(addr, "GET", path, &[], b"").await
}

/// Asks `GET path` every 50 ms until it answers `status`; fails after `within`. Returns the
/// answer.
pub(crate) async fn until_status(addr: SocketAddr, path: &str, status: u16, within: Duration) -> Answer {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let a = get(addr, path).await;
        if a.status == status {
            return a;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} still answers {} ({:?}) after {within:?}",
            a.status,
            a.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The headers of a modern (2026-07-28) `tools/call` of `name`, and `extra`.
pub(crate) fn call_headers(name: &str, extra: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("accept", "application/json, text/event-stream".to_owned()),
        ("content-type", "application/json".to_owned()),
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", "tools/call".to_owned()),
        ("mcp-name", name.to_owned()),
    ];
    h.extend(extra.iter().cloned());
    h
}

/// The body of a modern `tools/call` of `name` with `arguments`.
pub(crate) fn call_body(id: i64, name: &str, arguments: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
    .to_string()
    .into_bytes()
}

/// Sends a modern `tools/call` of `slow` sleeping `ms` to `addr`'s `/mcp`.
pub(crate) async fn call_slow(addr: SocketAddr, ms: u64) -> Answer {
    let body = call_body(1, "slow", json!({"ms": ms}));
    send(addr, "POST", "/mcp", &call_headers("slow", &[]), &body).await
}

/// Checks a probe's answer: `status`, the plain-text `body`, `Cache-Control: no-store`.
pub(crate) fn assert_probe(a: &Answer, status: u16, body: &str) {
    assert_eq!(a.status, status, "{a:?}");
    assert_eq!(a.body, body, "{a:?}");
    assert_eq!(a.header("cache-control"), Some("no-store"), "{a:?}");
    assert_eq!(a.header("content-type"), Some("text/plain; charset=utf-8"), "{a:?}");
}
