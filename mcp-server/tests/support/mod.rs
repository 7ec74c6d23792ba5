//! What the facade's example, extension and middleware suites share: the bounds on a wait and
//! on a whole test (`WAIT`, `TEST`, [`bounded`]), the revisions of both eras (`BOTH`), the
//! JSON-RPC error of a failed test-client request ([`rpc`]), the parts of a request
//! ([`init_params`], [`modern_meta`]), a server on a free loopback port answering raw HTTP
//! requests ([`Running`], its [`Answer`]s), and, with the `stdio` feature, the test's side of a
//! `serve_io` on in-memory pipes ([`Pipe`]).

// Each suite uses only some of these helpers.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use mcp_server::prelude::*;
#[cfg(feature = "stdio")]
use mcp_server::stdio::{StdioConfig, StdioError, serve_io};
use mcp_server::testing::ClientError;
#[cfg(feature = "stdio")]
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream, Lines};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The key of the server's `Implementation` in a modern result's `_meta`.
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Bound on any single wait.
pub(crate) const WAIT: Duration = Duration::from_secs(10);
/// Bound on a whole test.
pub(crate) const TEST: Duration = Duration::from_secs(60);
/// A legacy revision and the modern one.
pub(crate) const BOTH: [Revision; 2] = [Revision::V2025_11_25, Revision::V2026_07_28];

/// Fails a test that runs longer than [`TEST`].
pub(crate) async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(TEST, f).await.expect("the test timed out")
}

/// The JSON-RPC error of a failed test-client request.
pub(crate) fn rpc<T: std::fmt::Debug>(result: Result<T, ClientError>) -> RpcError {
    match result {
        Err(ClientError::Rpc(e)) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// The params of a legacy `initialize` asking for `version`, declaring no capability.
pub(crate) fn init_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "mcp-server-test", "version": "1"}
    })
}

/// The `_meta` of a 2026-07-28 request declaring `capabilities`.
pub(crate) fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-server-test", "version": "1"}
    })
}

// ------------------------------------------------------------------------ stdio

/// The test's side of a `serve_io` on in-memory pipes: it writes the server's input and
/// reads its output, one JSON message a line.
#[cfg(feature = "stdio")]
pub(crate) struct Pipe {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<Result<(), StdioError>>,
}

#[cfg(feature = "stdio")]
impl Pipe {
    /// Serves `server` with `serve_io` on a fresh pair of pipes.
    pub(crate) fn start(server: &McpServer) -> Pipe {
        let (input, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, output) = tokio::io::duplex(64 * 1024);
        if let Some(driver) = server.driver() {
            tokio::spawn(std::future::IntoFuture::into_future(driver));
        }
        let engine = server.engine().clone();
        let server = tokio::spawn(serve_io(engine, StdioConfig::default(), server_in, server_out));
        Pipe {
            input: Some(input),
            output: BufReader::new(output).lines(),
            server,
        }
    }

    /// Writes `message` as one line of the server's input.
    pub(crate) async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("json");
        line.push(b'\n');
        let input = self.input.as_mut().expect("input open");
        input.write_all(&line).await.expect("write");
        input.flush().await.expect("flush");
    }

    /// The next message the server wrote (within [`WAIT`]).
    pub(crate) async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.output.next_line())
            .await
            .expect("no message from the server in time")
            .expect("read")
            .expect("the server closed its output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and returns its response (skipping notifications the server sent).
    pub(crate) async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let m = self.recv().await;
            if m.get("id").is_some() {
                assert_eq!(m["id"], json!(id), "expected the response to {id}, got {m}");
                return m;
            }
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// `initialize` (2025-11-25) then `notifications/initialized`; the `initialize` response.
    pub(crate) async fn handshake(&mut self, id: i64) -> Value {
        let init = self.call(id, "initialize", init_params("2025-11-25")).await;
        self.notify("notifications/initialized", json!({})).await;
        init
    }

    /// Closes the server's input and waits for `serve_io` to return.
    pub(crate) async fn finish(mut self) {
        self.input = None;
        let result = tokio::time::timeout(WAIT, self.server)
            .await
            .expect("serve_io did not return in time")
            .expect("serve_io panicked");
        assert!(result.is_ok(), "serve_io failed: {result:?}");
    }
}

// ------------------------------------------------------------------------- HTTP

/// A server on a free loopback port; cancel the token to stop it.
pub(crate) struct Running {
    addr: std::net::SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// An HTTP answer: its status, its headers (lowercase names) and its JSON-RPC message (the
/// JSON body, or the last SSE `data:` with an `id`).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) message: Option<Value>,
}

impl Answer {
    /// The value of the header `name` (lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message; panics if there is none.
    pub(crate) fn message(&self) -> &Value {
        self.message.as_ref().expect("a JSON-RPC message")
    }
}

impl Running {
    /// Serves `server` over Streamable HTTP (the default config) on a free loopback port.
    pub(crate) async fn start(server: McpServer) -> Running {
        Running::start_with(server, HttpConfig::default()).await
    }

    /// Serves `server` over Streamable HTTP with `config` on a free loopback port.
    pub(crate) async fn start_with(server: McpServer, config: HttpConfig) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            server.serve_http_on(listener, config, token).await.expect("serves");
        });
        Running { addr, stop, task }
    }

    /// Stops the server and waits for it to end.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("stops in time")
            .expect("the server task ends");
    }

    /// POSTs `body` to `/mcp` with `headers`.
    pub(crate) async fn post(&self, headers: &[(&str, &str)], body: &Value) -> Answer {
        self.send("POST", headers, &body.to_string()).await
    }

    /// Sends `verb` to `/mcp` with `headers` and `body` (`Connection: close`).
    pub(crate) async fn send(&self, verb: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        self.request(verb, "/mcp", headers, body).await
    }

    /// Sends `verb` to `path` with `headers` and `body` (`Connection: close`); the answer's
    /// message is its JSON body, whatever the path.
    pub(crate) async fn request(&self, verb: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut request = format!(
            "{verb} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);

        let mut stream = tokio::net::TcpStream::connect(self.addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut raw = Vec::new();
        tokio::time::timeout(WAIT, stream.read_to_end(&mut raw))
            .await
            .expect("answered in time")
            .expect("read");
        parse_response(&String::from_utf8_lossy(&raw))
    }

    /// A legacy `initialize` with `params` (answered 200) and, in the session it minted and at
    /// the revision it asked for, `notifications/initialized` (answered 202): the `initialize`
    /// answer and the session id.
    pub(crate) async fn legacy_handshake(&self, params: Value) -> (Answer, String) {
        let version = params["protocolVersion"]
            .as_str()
            .expect("a protocolVersion")
            .to_owned();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
        let answer = self.post(&[], &init).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let session = answer.header("mcp-session-id").expect("a session id").to_owned();
        let initialized = self
            .post(
                &[("Mcp-Session-Id", &session), ("MCP-Protocol-Version", &version)],
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(initialized.status, 202, "{initialized:?}");
        (answer, session)
    }

    /// [`Running::legacy_handshake`] at `version`, declaring no capability: the session id.
    pub(crate) async fn legacy_session(&self, version: &str) -> String {
        self.legacy_handshake(init_params(version)).await.1
    }

    /// POSTs `body` in `session` at 2025-11-25.
    pub(crate) async fn legacy_post(&self, session: &str, body: &Value) -> Answer {
        let headers = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-11-25")];
        self.post(&headers, body).await
    }

    /// A legacy (2025-11-25) request in `session`.
    pub(crate) async fn legacy(&self, session: &str, id: u64, method: &str, params: Value) -> Answer {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.legacy_post(session, &body).await
    }

    /// A 2026-07-28 request with its `_meta` (declaring `capabilities`) and `Mcp-*` headers
    /// (`Mcp-Name` when the params have a `name`).
    pub(crate) async fn modern(&self, id: u64, method: &str, mut params: Value, capabilities: Value) -> Answer {
        params["_meta"] = modern_meta(capabilities);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
        let mut headers = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
        if let Some(name) = &name {
            headers.push(("Mcp-Name", name));
        }
        self.post(&headers, &body).await
    }
}

/// Parses a raw HTTP/1.1 response (`Connection: close`, maybe chunked).
fn parse_response(raw: &str) -> Answer {
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let body = if header("transfer-encoding") == Some("chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let message = if header("content-type").is_some_and(|c| c.starts_with("text/event-stream")) {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .rfind(|m: &Value| m.get("id").is_some())
    } else {
        serde_json::from_str(&body).ok()
    };
    Answer {
        status,
        headers,
        message,
    }
}

/// The body of a chunked transfer, its chunks joined.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}
