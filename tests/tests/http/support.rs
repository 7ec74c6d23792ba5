//! Support for the HTTP suite: a small runtime served on `127.0.0.1:0`, a raw HTTP/1.1 client
//! (one connection per request, every header explicit) and an SSE reader.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::{Ctx, Engine, Registry, ServerConfig, ToolResult};
use mcp_transport_http::{HttpConfig, HttpError, serve};
use serde_json::{Map, Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Fails a test that runs longer than 20 s.
pub(crate) async fn bounded<F: Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test timed out");
}

/// A legacy `tools/call`, with an optional `_meta`.
pub(crate) fn call(id: i64, name: &str, meta: Option<Value>) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if let Some(m) = meta {
        params["_meta"] = m;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A legacy `initialize` (id 0, the sampling capability) asking for `version`.
pub(crate) fn init_body(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "http-suite", "version": "1"}
    }})
}

/// A legacy `tools/list`.
pub(crate) fn list(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})
}

/// A modern request: `params` with the `_meta` envelope.
pub(crate) fn modern(id: i64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = modern_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A modern `tools/call` of `name` with its headers, asking for progress when `progress`.
pub(crate) fn modern_call(s: &Server, id: i64, name: &str, progress: bool) -> Req {
    let mut body = modern(id, "tools/call", json!({"name": name, "arguments": {}}));
    if progress {
        body["params"]["_meta"]["progressToken"] = json!("p");
    }
    s.post(body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
}

/// The modern `_meta` envelope.
pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

async fn echo(args: Map<String, Value>, _ctx: Ctx) -> ToolResult {
    Ok(CallToolResult::text(format!("echo: {}", Value::Object(args))))
}

async fn progress(_args: Map<String, Value>, ctx: Ctx) -> ToolResult {
    for i in 1..=3 {
        ctx.progress(f64::from(i), Some(3.0), None).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(CallToolResult::text("progress done"))
}

async fn sample(_args: Map<String, Value>, ctx: Ctx) -> ToolResult {
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10});
    let reply = ctx.create_message(params).await?;
    let text = reply
        .pointer("/content/text")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    Ok(CallToolResult::text(format!("LLM said: {text}")))
}

async fn slow(_args: Map<String, Value>, ctx: Ctx) -> ToolResult {
    tokio::select! {
        _ = ctx.cancellation().cancelled() => {}
        _ = tokio::time::sleep(Duration::from_secs(30)) => {}
    }
    Ok(CallToolResult::text("slow done"))
}

async fn nap(_args: Map<String, Value>, _ctx: Ctx) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(CallToolResult::text("nap done"))
}

/// A tool entry with a description and an empty object schema.
pub(crate) fn tool<F, Fut>(name: &str, schema: Value, f: F) -> ToolEntry
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    let def = ToolDef::new(name)
        .with_description(format!("The {name} tool"))
        .with_input_schema(schema);
    ToolEntry::new(def, Arc::new(f), true, true).expect("valid tool")
}

/// A server on `127.0.0.1:0`, shut down when dropped.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    pub(crate) path: String,
    pub(crate) registry: Arc<Registry>,
    pub(crate) engine: Engine,
    shutdown: CancellationToken,
    handle: Option<JoinHandle<Result<(), HttpError>>>,
}

impl Server {
    /// A client for an endpoint served by something else (e.g. a mounted router).
    pub(crate) fn external(addr: SocketAddr, path: &str, engine: Engine, registry: Arc<Registry>) -> Server {
        Server {
            addr,
            path: path.into(),
            registry,
            engine,
            shutdown: CancellationToken::new(),
            handle: None,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(h) = self.handle.take() {
            h.abort();
        }
    }
}

/// An engine with the test tools.
pub(crate) fn engine() -> (Engine, Arc<Registry>) {
    engine_with(ServerConfig::default())
}

/// An engine with the test tools and `config`.
pub(crate) fn engine_with(config: ServerConfig) -> (Engine, Arc<Registry>) {
    let registry = Arc::new(Registry::new());
    let object = json!({"type": "object"});
    registry.add_tool(tool("echo", object.clone(), echo));
    registry.add_tool(tool("progress", object.clone(), progress));
    registry.add_tool(tool("sample", object.clone(), sample));
    registry.add_tool(tool("slow", object.clone(), slow));
    registry.add_tool(tool("nap", object, nap));
    let region = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    registry.add_tool(tool("regional", region, echo));
    // The suites subscribe to and list resources: the server declares them with one.
    registry.add_resource(mcp_tests::catalog::text_resource("test://static", "static"));
    (mcp_tests::engine::memory(config, registry.clone()), registry)
}

impl Server {
    /// Serves the test tools with `config`.
    pub(crate) async fn start(config: HttpConfig) -> Server {
        let (engine, _) = engine();
        Server::serve_engine(engine, config).await
    }

    /// Serves `engine` with `config`.
    pub(crate) async fn serve_engine(engine: Engine, config: HttpConfig) -> Server {
        let registry = engine.registry().clone();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(serve(engine.clone(), config, listener, shutdown.clone()));
        Server {
            addr,
            path: "/mcp".into(),
            registry,
            engine,
            shutdown,
            handle: Some(handle),
        }
    }

    /// Cancels the shutdown token and waits for `serve` to return.
    pub(crate) async fn shutdown(mut self) -> Result<(), HttpError> {
        self.shutdown.cancel();
        let handle = self.handle.take().expect("running");
        handle.await.expect("serve task")
    }

    /// Serves with the default configuration.
    pub(crate) async fn default_config() -> Server {
        Server::start(HttpConfig::default()).await
    }

    /// A request to the endpoint with the usual headers (Host, Accept, Content-Type).
    pub(crate) fn req(&self, method: Method) -> Req {
        Req {
            addr: self.addr,
            path: self.path.clone(),
            method,
            headers: vec![
                ("host".into(), format!("127.0.0.1:{}", self.addr.port())),
                ("accept".into(), "application/json, text/event-stream".into()),
                ("content-type".into(), "application/json".into()),
            ],
            body: Vec::new(),
        }
    }

    /// A POST of a JSON body.
    pub(crate) fn post(&self, body: Value) -> Req {
        self.req(Method::POST).body(body.to_string().into_bytes())
    }

    /// Runs `initialize` (with the sampling capability) and returns the session id.
    pub(crate) async fn initialize(&self) -> String {
        let resp = self.post(init_body("2025-11-25")).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        let sid = resp.header("mcp-session-id").expect("session id").to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = self.post(initialized).header("mcp-session-id", &sid).send().await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        sid
    }
}

/// A request being built.
pub(crate) struct Req {
    addr: SocketAddr,
    path: String,
    method: Method,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    /// Sets (replaces) a header.
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Removes a header.
    pub(crate) fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    /// Sets the path (and query).
    pub(crate) fn at(mut self, path: &str) -> Self {
        self.path = path.to_owned();
        self
    }

    /// Sets the body.
    pub(crate) fn body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    /// The request as an `http::Request`; `absolute` puts the authority in the URI (HTTP/2).
    pub(crate) fn into_request(self, absolute: bool) -> http::Request<Full<Bytes>> {
        let uri = if absolute {
            format!("http://{}{}", self.addr, self.path)
        } else {
            self.path.clone()
        };
        let mut builder = http::Request::builder().method(self.method).uri(uri);
        for (n, v) in &self.headers {
            if absolute && n.eq_ignore_ascii_case("host") {
                continue;
            }
            builder = builder.header(n.as_str(), v.as_str());
        }
        builder.body(Full::new(Bytes::from(self.body))).expect("request")
    }

    /// The request as HTTP/1.1 bytes (origin form, every header as set, `Content-Length`), for
    /// a raw connection the test closes when it wants.
    pub(crate) fn raw_bytes(&self) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        for (n, v) in &self.headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", self.body.len()));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }

    /// Sends the request on a fresh connection.
    pub(crate) async fn send(self) -> Resp {
        self.try_send().await.expect("response")
    }

    /// Sends the request on a fresh connection from the loopback address `local` (say
    /// `127.0.0.2`: another client as far as the server can tell).
    pub(crate) async fn send_from(self, local: std::net::IpAddr) -> Resp {
        self.try_send_from(local).await.expect("response")
    }

    /// Sends the request on a fresh connection; `None` when the connection fails.
    pub(crate) async fn try_send(self) -> Option<Resp> {
        let stream = TcpStream::connect(self.addr).await.ok()?;
        self.send_on(stream).await
    }

    /// Sends the request on a fresh connection from the local address `local` (e.g.
    /// `127.0.0.2`: another client address on loopback); `None` when the connection fails.
    pub(crate) async fn try_send_from(self, local: std::net::IpAddr) -> Option<Resp> {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind(SocketAddr::new(local, 0)).ok()?;
        let stream = socket.connect(self.addr).await.ok()?;
        self.send_on(stream).await
    }

    /// Sends the request on `stream`.
    async fn send_on(self, stream: TcpStream) -> Option<Resp> {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.ok()?;
        tokio::spawn(conn);
        let resp = sender.send_request(self.into_request(false)).await.ok()?;
        Some(Resp::new(resp))
    }
}

/// A response whose body has not been read yet.
pub(crate) struct Resp {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    body: Incoming,
}

impl Resp {
    /// Wraps a hyper response.
    pub(crate) fn new(resp: http::Response<Incoming>) -> Resp {
        let (parts, body) = resp.into_parts();
        Resp {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// A header as a string.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The whole body.
    pub(crate) async fn bytes(self) -> Bytes {
        self.body.collect().await.expect("body").to_bytes()
    }

    /// The body as JSON.
    pub(crate) async fn json(self) -> Value {
        let b = self.bytes().await;
        serde_json::from_slice(&b).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&b)))
    }

    /// The body as an SSE event stream.
    pub(crate) fn sse(self) -> Sse {
        assert_eq!(self.header("content-type"), Some("text/event-stream"));
        Sse {
            body: self.body,
            buf: BytesMut::new(),
        }
    }
}

/// One SSE event.
#[derive(Debug, Default)]
pub(crate) struct Event {
    pub(crate) event: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) retry: Option<String>,
    pub(crate) data: String,
}

impl Event {
    /// The data as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.data))
    }
}

/// Reads SSE events from a body.
pub(crate) struct Sse {
    body: Incoming,
    buf: BytesMut,
}

impl Sse {
    /// The next event if one arrives within `wait`.
    pub(crate) async fn next_within(&mut self, wait: Duration) -> Option<Event> {
        tokio::time::timeout(wait, self.next()).await.ok().flatten()
    }

    /// Whether a keep-alive comment (`:` alone) arrives within `wait` before any event; it is
    /// taken from the stream.
    pub(crate) async fn keep_alive_within(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, async {
            loop {
                if self.buf.starts_with(b":\n\n") {
                    let _ = self.buf.split_to(3);
                    return true;
                }
                if self.buf.windows(2).any(|w| w == b"\n\n") {
                    return false;
                }
                match self.body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            self.buf.extend_from_slice(&data);
                        }
                    }
                    _ => return false,
                }
            }
        })
        .await
        .unwrap_or(false)
    }

    /// The next event with data (priming events skipped), as JSON.
    pub(crate) async fn message(&mut self) -> Option<Value> {
        loop {
            let e = self.next().await?;
            if !e.data.is_empty() {
                return Some(e.json());
            }
        }
    }

    /// The next event (comments and bare `retry:` blocks are folded into the next event), or
    /// `None` when the stream ends.
    pub(crate) async fn next(&mut self) -> Option<Event> {
        let mut pending = Event::default();
        loop {
            while let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block = self.buf.split_to(end + 2);
                let text = String::from_utf8_lossy(&block);
                let mut has_data = false;
                for line in text.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        pending.event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        pending.id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("retry:") {
                        pending.retry = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        pending.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                        has_data = true;
                    }
                }
                if has_data {
                    return Some(pending);
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
    }
}

/// Authenticates `Authorization: Bearer <name>` as principal `<name>`; anything else is a 401.
pub(crate) struct NamedUsers;

impl mcp_auth::AuthProvider for NamedUsers {
    fn authenticate<'a>(
        &'a self,
        parts: &'a http::request::Parts,
    ) -> mcp_auth::BoxFuture<'a, Result<mcp_auth::AuthInfo, mcp_auth::Challenge>> {
        let name = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        Box::pin(async move {
            name.map(mcp_auth::AuthInfo::new)
                .ok_or_else(|| mcp_auth::Challenge::unauthorized("Bearer realm=\"mcp\""))
        })
    }
}

// Raw connections and a chosen-authority HTTP/2 client, for the hardening suite.

impl Req {
    /// The request in absolute form with `authority` in the URI (HTTP/2: `:authority`),
    /// keeping every header as set, `Host` included.
    pub(crate) fn into_request_at(self, authority: &str) -> http::Request<Full<Bytes>> {
        let mut builder = http::Request::builder()
            .method(self.method)
            .uri(format!("http://{authority}{}", self.path));
        for (n, v) in &self.headers {
            builder = builder.header(n.as_str(), v.as_str());
        }
        builder.body(Full::new(Bytes::from(self.body))).expect("request")
    }
}

/// An HTTP/2 (prior knowledge) connection to `addr`; `stream_window` sets the client's initial
/// stream window (`Some(0)`: a client that never lets the server send body bytes).
pub(crate) async fn h2_connect(
    addr: SocketAddr,
    stream_window: Option<u32>,
) -> hyper::client::conn::http2::SendRequest<Full<Bytes>> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let mut builder = hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
    if let Some(w) = stream_window {
        builder.initial_stream_window_size(w);
    }
    let (sender, conn) = builder.handshake(TokioIo::new(tcp)).await.expect("h2 handshake");
    tokio::spawn(conn);
    sender
}

/// A raw TCP connection to `addr`.
pub(crate) async fn raw(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.expect("connect")
}

/// Reads from `tcp` (discarding the bytes) until the peer closes it; `false` when it is still
/// open after `within`.
pub(crate) async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// Writes `request` on a fresh raw connection and reads until the server closes it (send
/// `Connection: close`); returns the status code and the whole answer.
pub(crate) async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    exchange_on(raw(addr).await, request).await
}

/// Writes `request` on `tcp` and reads until the server closes it: the status and the answer.
async fn exchange_on(mut tcp: TcpStream, request: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tcp.write_all(request).await.expect("write");
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    (status, text)
}

/// A raw HTTP/1.1 POST of an `initialize` body to `target` with the given `Host` lines.
pub(crate) fn raw_post(target: &str, hosts: &[&str]) -> Vec<u8> {
    raw_post_with(target, hosts, &[])
}

/// [`raw_post`] with more header lines (`Name: value`).
pub(crate) fn raw_post_with(target: &str, hosts: &[&str], extra: &[&str]) -> Vec<u8> {
    let body = init_body("2025-11-25").to_string();
    let mut head = format!("POST {target} HTTP/1.1\r\n");
    for h in hosts {
        head.push_str(&format!("Host: {h}\r\n"));
    }
    for line in extra {
        head.push_str(&format!("{line}\r\n"));
    }
    head.push_str(&format!(
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    head.into_bytes()
}

/// [`raw_exchange`] from a socket bound to `local` (another loopback address such as
/// 127.0.0.2: a second client the server tells apart by its address).
pub(crate) async fn raw_exchange_from(local: std::net::IpAddr, addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(local, 0)).expect("bind the local address");
    exchange_on(socket.connect(addr).await.expect("connect"), request).await
}
