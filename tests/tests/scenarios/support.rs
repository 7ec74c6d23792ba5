//! The `everything` fixture as a process on a free port, and a client that sends one request
//! per connection the way the scenarios do (raw `fetch`, every header explicit) and reads the
//! answer as JSON or as SSE events.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::process::Child;

/// Fails a test that runs longer than `secs`.
pub(crate) async fn bounded<F: std::future::Future<Output = ()>>(secs: u64, f: F) {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("test timed out");
}

/// A logical server the events scenarios may be pointed at instead of a fresh process:
/// `http://host:port` (`cargo xtask scaleout` sets it to a balancer in front of several
/// `everything --events-fixture --api-key <key> --redis …` instances on one Redis).
pub(crate) const EVENTS_TARGET: &str = "MCP_EVENTS_TARGET";
/// The API key of [`EVENTS_TARGET`]'s instances.
pub(crate) const EVENTS_TARGET_KEY: &str = "MCP_EVENTS_TARGET_KEY";
/// The loopback port of the webhook receiver whose origin [`EVENTS_TARGET`]'s instances permit
/// (`--events-permit-origin`): the delivery scenario listens there.
pub(crate) const EVENTS_RECEIVER_PORT: &str = "MCP_EVENTS_RECEIVER_PORT";

/// The fixture (a process killed when dropped, or a logical server run by someone else).
pub(crate) struct Fixture {
    pub(crate) addr: SocketAddr,
    /// The API key every request carries (a logical server's), if any.
    pub(crate) key: Option<String>,
    _child: Option<Child>,
}

impl Fixture {
    /// Starts `everything` on `127.0.0.1:0` and waits for the line naming its endpoint.
    pub(crate) async fn start() -> Fixture {
        Fixture::start_with(&[]).await
    }

    /// Starts `everything` with `args` (e.g. `--events-fixture`).
    pub(crate) async fn start_with(args: &[&str]) -> Fixture {
        let (child, addr, _) = mcp_tests::fixture::start_everything(args, 0).await;
        Fixture {
            addr,
            key: None,
            _child: Some(child),
        }
    }

    /// Kills the process at once (`SIGKILL`): nothing of it runs after.
    pub(crate) async fn kill(&mut self) {
        if let Some(child) = &mut self._child {
            child.kill().await.expect("kill the fixture");
        }
    }

    /// Asks the process to stop (`SIGTERM`: it drains) and waits until it exited.
    pub(crate) async fn terminate(&mut self) {
        if let Some(child) = &mut self._child {
            let pid = child.id().expect("a running fixture");
            let sent = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .expect("kill -TERM");
            assert!(sent.success(), "SIGTERM sent");
            child.wait().await.expect("the fixture exits");
        }
    }

    /// Whether this is a logical server run by someone else ([`EVENTS_TARGET`]).
    pub(crate) fn is_external(&self) -> bool {
        self._child.is_none()
    }

    /// The events fixture for a scenario that holds for one logical server however many
    /// processes make it: [`EVENTS_TARGET`] when set (every request then carries its key),
    /// else a fresh `everything` with `args`.
    pub(crate) async fn events(args: &[&str]) -> Fixture {
        let Ok(target) = std::env::var(EVENTS_TARGET) else {
            return Fixture::start_with(args).await;
        };
        let addr = target
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap_or_else(|_| panic!("{EVENTS_TARGET} is not http://host:port: {target}"));
        Fixture {
            addr,
            key: std::env::var(EVENTS_TARGET_KEY).ok(),
            _child: None,
        }
    }

    /// A POST of `body` to `/mcp` with the usual headers and `extra` (and the logical server's
    /// key, unless `extra` has one).
    pub(crate) async fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Answer {
        self.send(body, extra, true).await
    }

    /// A POST of `body` with the usual headers and `extra`, and no key whatever the server.
    pub(crate) async fn post_without_key(&self, body: &Value, extra: &[(&str, &str)]) -> Answer {
        self.send(body, extra, false).await
    }

    async fn send(&self, body: &Value, extra: &[(&str, &str)], with_key: bool) -> Answer {
        let mut req = http::Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (n, v) in extra {
            req = req.header(*n, *v);
        }
        if let (true, Some(key)) = (with_key, &self.key)
            && !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case("x-api-key"))
        {
            req = req.header("x-api-key", key.as_str());
        }
        let req = req.body(Full::new(Bytes::from(body.to_string()))).expect("request");
        let tcp = TcpStream::connect(self.addr).await.expect("connect");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        let resp = sender.send_request(req).await.expect("response");
        let (parts, body) = resp.into_parts();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            buf: BytesMut::new(),
            comments: 0,
        }
    }

    /// A 2026-07-28 request the way the scenarios build it (`buildStandardHeaders`,
    /// `withRequestMeta`): the `_meta` keys, `MCP-Protocol-Version`, `Mcp-Method`, and
    /// `Mcp-Name` for a call. Keys already in `params._meta` stay.
    pub(crate) async fn modern(&self, id: u64, method: &str, params: Value) -> Answer {
        let mut params = params;
        let meta = params["_meta"].as_object().cloned().unwrap_or_default();
        let mut full = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "conformance-test-client", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}
        });
        for (k, v) in meta {
            full[k] = v;
        }
        params["_meta"] = full;
        let name = ["name", "uri", "taskId"]
            .iter()
            .find_map(|k| params[*k].as_str())
            .map(str::to_owned);
        let mut headers = vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
        if let Some(name) = &name {
            headers.push(("mcp-name", name));
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post(&body, &headers).await
    }
}

/// A legacy client's session on a logical server (any instance serves it).
pub(crate) struct Legacy {
    pub(crate) sid: String,
}

impl Legacy {
    /// `initialize` (2025-11-25) and `notifications/initialized`.
    pub(crate) async fn open(f: &Fixture) -> Legacy {
        Legacy::open_with(f, json!({})).await
    }

    /// [`Legacy::open`] declaring `capabilities`.
    pub(crate) async fn open_with(f: &Fixture, capabilities: Value) -> Legacy {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "scenarios", "version": "1"}}});
        let answer = f.post(&init, &[]).await;
        let sid = answer.header("mcp-session-id").expect("a session").to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        f.post(
            &initialized,
            &[("mcp-session-id", &sid), ("mcp-protocol-version", "2025-11-25")],
        )
        .await;
        Legacy { sid }
    }

    /// A request in the session: its answer.
    pub(crate) async fn call(&self, f: &Fixture, id: u64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let headers = [
            ("mcp-session-id", self.sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        f.post(&body, &headers).await.answer(id).await
    }

    /// A task-augmented `tools/call` of `tool`: the task's id.
    pub(crate) async fn task(&self, f: &Fixture, id: u64, tool: &str, arguments: Value) -> String {
        let created = self
            .call(
                f,
                id,
                "tools/call",
                json!({"name": tool, "arguments": arguments, "task": {}}),
            )
            .await;
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned()
    }
}

/// An answer whose body is read as it comes.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    body: Incoming,
    buf: BytesMut,
    /// The SSE comment lines (`:` …) read so far.
    pub(crate) comments: usize,
}

impl Answer {
    /// A header's value, if it is text.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `Content-Type`.
    pub(crate) fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// Whether the answer is an SSE stream.
    pub(crate) fn is_sse(&self) -> bool {
        self.content_type().starts_with("text/event-stream")
    }

    /// The next `data:` line of an SSE stream within `wait` (empty for an event without data),
    /// `None` when the stream ends or nothing comes.
    pub(crate) async fn data_line(&mut self, wait: Duration) -> Option<String> {
        tokio::time::timeout(wait, async {
            loop {
                while let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
                    let line = self.buf.split_to(end + 1);
                    let line = String::from_utf8_lossy(&line).trim_end().to_owned();
                    if let Some(data) = line.strip_prefix("data:") {
                        return Some(data.trim_start().to_owned());
                    }
                    if line.starts_with(':') {
                        self.comments += 1;
                    }
                }
                match self.body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            self.buf.extend_from_slice(&data);
                        }
                    }
                    _ => return None,
                }
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// The next JSON message of an SSE stream within `wait` (skipping events without data);
    /// `None` when the stream ends or nothing comes in time.
    pub(crate) async fn next_message(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let data = self.data_line(left).await?;
            if !data.is_empty() {
                return Some(serde_json::from_str(&data).expect("a JSON event"));
            }
        }
    }

    /// Every message of the answer: the JSON body, or each non-empty `data:` line of the SSE
    /// stream, read to its end.
    pub(crate) async fn messages(mut self) -> Vec<Value> {
        if !self.is_sse() {
            let body = self.body.collect().await.expect("body").to_bytes();
            return vec![serde_json::from_slice(&body).expect("a JSON body")];
        }
        let mut out = Vec::new();
        while let Some(data) = self.data_line(Duration::from_secs(30)).await {
            if !data.is_empty() {
                out.push(serde_json::from_str(&data).expect("a JSON event"));
            }
        }
        out
    }

    /// The JSON-RPC answer to request `id` (the scenarios' `body`).
    pub(crate) async fn answer(self, id: u64) -> Value {
        let messages = self.messages().await;
        messages
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no answer to {id} in {messages:?}"))
    }
}
