//! Extensions and custom methods through the facade: the extension example's server (its
//! `server()`, as its `main` serves it) with the in-process test client in both eras, over stdio
//! (`serve_io` on in-memory pipes) and over Streamable HTTP on a loopback port; and small servers
//! of this file's own for the registration rules and the eras an extension is declared in.

#![cfg(all(feature = "http", feature = "stdio"))]

use std::future::Future;
use std::time::Duration;

use mcp_server::prelude::*;
use mcp_server::stdio::{StdioConfig, StdioError, serve_io};
use mcp_server::testing::{ClientError, TestClient};
use mcp_server::{Eras, ExtensionError};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[allow(dead_code)]
#[path = "../examples/extension.rs"]
mod extension;

/// The example's extension.
const NOTES: &str = extension::NOTES;
/// The key of the server's `Implementation` in a modern result's `_meta`.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Bound on any single wait.
const WAIT: Duration = Duration::from_secs(10);
/// Bound on a whole test.
const TEST: Duration = Duration::from_secs(60);
const BOTH: [Revision; 2] = [Revision::V2025_11_25, Revision::V2026_07_28];

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(TEST, f).await.expect("the test timed out")
}

/// The JSON-RPC error of a failed test-client request.
fn rpc(result: Result<Value, ClientError>) -> RpcError {
    match result {
        Err(ClientError::Rpc(e)) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// The `requiredCapabilities` a -32021 for `id` carries.
fn required(id: &str) -> Value {
    json!({ "requiredCapabilities": { "extensions": { id: {} } } })
}

// ------------------------------------------------------------------------ stdio

/// The test's side of a `serve_io` on in-memory pipes: it writes the server's input and reads
/// its output, one JSON message a line.
struct Pipe {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<Result<(), StdioError>>,
}

impl Pipe {
    fn start(server: &McpServer) -> Pipe {
        let (input, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, output) = tokio::io::duplex(64 * 1024);
        let runtime = server.runtime().clone();
        let server = tokio::spawn(serve_io(runtime, StdioConfig::default(), server_in, server_out));
        Pipe {
            input: Some(input),
            output: BufReader::new(output).lines(),
            server,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("json");
        line.push(b'\n');
        let input = self.input.as_mut().expect("input open");
        input.write_all(&line).await.expect("write");
        input.flush().await.expect("flush");
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.output.next_line())
            .await
            .expect("no message from the server in time")
            .expect("read")
            .expect("the server closed its output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and returns its response (skipping notifications the server sent).
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
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

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Closes the server's input and waits for `serve_io` to return.
    async fn finish(mut self) {
        self.input = None;
        let result = tokio::time::timeout(WAIT, self.server)
            .await
            .expect("serve_io did not return in time")
            .expect("serve_io panicked");
        assert!(result.is_ok(), "serve_io failed: {result:?}");
    }
}

fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "extension-test", "version": "1"}
    })
}

fn declaring() -> Value {
    json!({ "extensions": { NOTES: {} } })
}

// ------------------------------------------------------------------------- HTTP

/// A server on a free loopback port; cancel the token to stop it.
struct Running {
    addr: std::net::SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// An HTTP answer: its status, its headers (lowercase names) and its JSON-RPC message.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    message: Option<Value>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn message(&self) -> &Value {
        self.message.as_ref().expect("a JSON-RPC message")
    }
}

impl Running {
    async fn start(server: McpServer) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            server
                .serve_http_on(listener, HttpConfig::default(), token)
                .await
                .expect("serves");
        });
        Running { addr, stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("stops in time")
            .expect("the server task ends");
    }

    /// POSTs `body` to `/mcp` with `headers`.
    async fn post(&self, headers: &[(&str, &str)], body: &Value) -> Answer {
        let body = body.to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);

        let mut stream = tokio::net::TcpStream::connect(self.addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut raw = Vec::new();
        tokio::time::timeout(WAIT, stream.read_to_end(&mut raw))
            .await
            .expect("answered in time")
            .expect("read");
        parse_response(&String::from_utf8_lossy(&raw))
    }

    /// A 2026-07-28 request with its `_meta` (declaring `capabilities`) and `Mcp-*` headers.
    async fn modern(&self, id: u64, method: &str, mut params: Value, capabilities: Value) -> Answer {
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

// ------------------------------------------------------------------------ tests

/// The example's own demo runs to its end (it fails on any unexpected answer).
#[tokio::test]
async fn the_example_demo_runs() {
    let server = extension::server().expect("builds");
    bounded(extension::demo(&server)).await.expect("the demo succeeds");
}

/// A declaring client sees the extension with its settings and calls its typed method and the
/// vendor method, in both eras; modern results are decorated, legacy ones are not.
#[tokio::test]
async fn a_declaring_client_uses_the_extension_in_both_eras() {
    bounded(async {
        let server = extension::server().expect("builds");
        for (n, revision) in BOTH.into_iter().enumerate() {
            let client = server
                .test_client()
                .revision(revision)
                .extension(NOTES, json!({}))
                .discover(true)
                .connect()
                .await
                .expect("connects");
            let declared = match revision.era() {
                Era::Legacy => client.initialize_result(),
                Era::Modern => client.discover_result(),
            }
            .expect("an initialize or discover result");
            assert_eq!(
                declared["capabilities"]["extensions"][NOTES],
                json!({"maxHits": 10}),
                "{revision}: {declared}"
            );

            let note = format!("note of {revision}");
            client
                .call_tool("add_note", json!({ "text": note }))
                .await
                .expect("add_note");
            let hits = client
                .request("com.example/notes.search", json!({ "query": revision.as_str() }))
                .await
                .expect("search");
            assert_eq!(hits["hits"], json!([note]), "{revision}: {hits}");
            let count = client
                .request("com.example/notes.count", json!({}))
                .await
                .expect("count");
            assert_eq!(count["count"], json!(n + 1), "{revision}: {count}");

            for result in [&hits, &count] {
                match revision.era() {
                    Era::Modern => {
                        assert_eq!(result["resultType"], "complete", "{result}");
                        assert_eq!(result["_meta"][SERVER_INFO]["name"], "notes-extension", "{result}");
                    }
                    Era::Legacy => {
                        assert!(result.get("resultType").is_none(), "{result}");
                        assert!(result.get("_meta").is_none(), "{result}");
                    }
                }
            }
        }
    })
    .await;
}

/// A client that did not declare the extension (or declared another one) gets -32021 naming
/// it, in both eras, and still calls the vendor method of no extension.
#[tokio::test]
async fn an_undeclared_client_gets_32021_and_still_counts() {
    bounded(async {
        let server = extension::server().expect("builds");
        for revision in BOTH {
            let plain = server.test_client().revision(revision).connect();
            let other = server
                .test_client()
                .revision(revision)
                .extension("com.example/other", json!({}))
                .connect();
            for client in [plain.await.expect("connects"), other.await.expect("connects")] {
                let e = rpc(client.request("com.example/notes.search", json!({"query": "x"})).await);
                assert_eq!(e.code, -32021, "{revision}: {e:?}");
                assert_eq!(e.data, Some(required(NOTES)), "{revision}: {e:?}");
                assert!(e.message.contains(NOTES), "{revision}: {e:?}");

                let count = client
                    .request("com.example/notes.count", json!({}))
                    .await
                    .expect("count answers every client");
                assert_eq!(count["count"], 0, "{revision}: {count}");
            }
        }
    })
    .await;
}

/// Typed params that do not fit the params schema are -32602 naming the problem; an unknown
/// method under the extension's prefix stays -32601.
#[tokio::test]
async fn bad_params_are_32602_and_unknown_methods_32601() {
    bounded(async {
        let server = extension::server().expect("builds");
        for revision in BOTH {
            let client = server
                .test_client()
                .revision(revision)
                .extension(NOTES, json!({}))
                .connect()
                .await
                .expect("connects");

            let wrong_type = rpc(client.request("com.example/notes.search", json!({"query": 5})).await);
            assert_eq!(wrong_type.code, -32602, "{revision}: {wrong_type:?}");
            assert!(
                wrong_type.message.starts_with("Invalid params")
                    && wrong_type.message.contains("/query")
                    && wrong_type.message.contains("string"),
                "{revision}: {wrong_type:?}"
            );

            let missing = rpc(client.request("com.example/notes.search", json!({})).await);
            assert_eq!(missing.code, -32602, "{revision}: {missing:?}");
            assert!(
                missing.message.contains("query") && missing.message.contains("required"),
                "{revision}: {missing:?}"
            );

            for unknown in ["com.example/notes.delete", "com.example/unknown"] {
                let e = rpc(client.request(unknown, json!({})).await);
                assert_eq!(e.code, -32601, "{revision} {unknown}: {e:?}");
                assert!(e.message.contains(unknown), "{revision}: {e:?}");
            }
        }
    })
    .await;
}

/// Over stdio: a legacy handshake declaring the extension, then its method; a modern request
/// whose `_meta` declares it; a modern one whose `_meta` does not.
#[tokio::test]
async fn stdio_serves_the_extension_in_both_eras() {
    bounded(async {
        let server = extension::server().expect("builds");

        let mut legacy = Pipe::start(&server);
        let init = legacy
            .call(
                1,
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": declaring(),
                    "clientInfo": {"name": "stdio-test", "version": "1"}
                }),
            )
            .await;
        assert_eq!(
            init["result"]["capabilities"]["extensions"][NOTES],
            json!({"maxHits": 10}),
            "{init}"
        );
        legacy.notify("notifications/initialized", json!({})).await;
        let added = legacy
            .call(
                2,
                "tools/call",
                json!({"name": "add_note", "arguments": {"text": "piped legacy note"}}),
            )
            .await;
        assert_eq!(added["result"]["content"][0]["text"], "1 notes", "{added}");
        let hits = legacy
            .call(3, "com.example/notes.search", json!({"query": "piped"}))
            .await;
        assert_eq!(hits["result"]["hits"], json!(["piped legacy note"]), "{hits}");
        legacy.finish().await;

        let mut modern = Pipe::start(&server);
        let hits = modern
            .call(
                1,
                "com.example/notes.search",
                json!({"query": "piped", "_meta": modern_meta(declaring())}),
            )
            .await;
        assert_eq!(hits["result"]["hits"], json!(["piped legacy note"]), "{hits}");
        assert_eq!(hits["result"]["resultType"], "complete", "{hits}");
        assert_eq!(
            hits["result"]["_meta"][SERVER_INFO]["name"], "notes-extension",
            "{hits}"
        );
        let refused = modern
            .call(
                2,
                "com.example/notes.search",
                json!({"query": "piped", "_meta": modern_meta(json!({}))}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32021, "{refused}");
        assert_eq!(refused["error"]["data"], required(NOTES), "{refused}");
        let count = modern
            .call(3, "com.example/notes.count", json!({"_meta": modern_meta(json!({}))}))
            .await;
        assert_eq!(count["result"]["count"], 1, "{count}");
        modern.finish().await;
    })
    .await;
}

/// Over Streamable HTTP: the method with its `Mcp-Method` header is 200; without the extension
/// in `clientCapabilities` 400 with -32021; an unknown method 404 with -32601; a header that
/// disagrees with the body 400 with -32020; `server/discover` declares the extension; a legacy
/// session that declared it at `initialize` calls it too.
#[tokio::test]
async fn http_serves_the_extension_with_its_statuses() {
    bounded(async {
        let server = Running::start(extension::server().expect("builds")).await;

        let added = server
            .modern(
                1,
                "tools/call",
                json!({"name": "add_note", "arguments": {"text": "wire note"}}),
                json!({}),
            )
            .await;
        assert_eq!(added.status, 200, "{:?}", added.message);

        let hits = server
            .modern(2, "com.example/notes.search", json!({"query": "wire"}), declaring())
            .await;
        assert_eq!(hits.status, 200, "{:?}", hits.message);
        let result = &hits.message()["result"];
        assert_eq!(result["hits"], json!(["wire note"]), "{result}");
        assert_eq!(result["resultType"], "complete", "{result}");

        let refused = server
            .modern(3, "com.example/notes.search", json!({"query": "wire"}), json!({}))
            .await;
        assert_eq!(refused.status, 400, "{:?}", refused.message);
        assert_eq!(refused.message()["error"]["code"], -32021);
        assert_eq!(refused.message()["error"]["data"], required(NOTES));

        let unknown = server
            .modern(4, "com.example/notes.delete", json!({}), declaring())
            .await;
        assert_eq!(unknown.status, 404, "{:?}", unknown.message);
        assert_eq!(unknown.message()["error"]["code"], -32601);

        // The header must name the method the body names, custom methods included.
        let body = json!({
            "jsonrpc": "2.0", "id": 5, "method": "com.example/notes.search",
            "params": {"query": "wire", "_meta": modern_meta(declaring())}
        });
        let mismatch = server
            .post(
                &[
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", "com.example/notes.count"),
                ],
                &body,
            )
            .await;
        assert_eq!(mismatch.status, 400, "{:?}", mismatch.message);
        assert_eq!(mismatch.message()["error"]["code"], -32020);

        let discover = server.modern(6, "server/discover", json!({}), json!({})).await;
        assert_eq!(discover.status, 200, "{:?}", discover.message);
        assert_eq!(
            discover.message()["result"]["capabilities"]["extensions"][NOTES],
            json!({"maxHits": 10})
        );

        // Legacy: the session declared the extension at initialize.
        let init = json!({
            "jsonrpc": "2.0", "id": 7, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": declaring(),
                "clientInfo": {"name": "http-test", "version": "1"}
            }
        });
        let answer = server.post(&[], &init).await;
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.message()["result"]["capabilities"]["extensions"][NOTES],
            json!({"maxHits": 10})
        );
        let session = answer.header("mcp-session-id").expect("a session id").to_owned();
        let legacy = [
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        let initialized = server
            .post(
                &legacy,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(initialized.status, 202);
        let search = json!({
            "jsonrpc": "2.0", "id": 8, "method": "com.example/notes.search",
            "params": {"query": "wire"}
        });
        let hits = server.post(&legacy, &search).await;
        assert_eq!(hits.status, 200, "{:?}", hits.message);
        assert_eq!(hits.message()["result"]["hits"], json!(["wire note"]));

        server.stop().await;
    })
    .await;
}

fn noop(name: &str) -> Result<CustomMethod, ExtensionError> {
    CustomMethod::new(name, |_params, _ctx| async { Ok(json!({})) })
}

/// Invalid identifiers, reserved prefixes, core method names, settings that are no object and
/// duplicates are refused with the variant that says why (by the constructor, or by `build`).
#[test]
fn registrations_are_refused_with_their_reason() {
    assert!(
        matches!(Extension::new("notes"), Err(ExtensionError::InvalidId(id)) if id == "notes"),
        "an identifier without a prefix"
    );
    assert!(
        matches!(
            Extension::new("io.modelcontextprotocol/mine"),
            Err(ExtensionError::Reserved(id)) if id == "io.modelcontextprotocol/mine"
        ),
        "a reserved prefix"
    );
    assert!(
        matches!(
            Extension::new("io.modelcontextprotocol/tasks"),
            Err(ExtensionError::Builtin(_))
        ),
        "the tasks extension is the runtime's"
    );
    assert!(
        matches!(
            noop("tools/call"),
            Err(ExtensionError::InvalidMethod(name, _)) if name == "tools/call"
        ),
        "a core method"
    );
    for reserved in ["rpc.discover", "notifications/notes", "", "com.example/a b"] {
        assert!(
            matches!(noop(reserved), Err(ExtensionError::InvalidMethod(..))),
            "{reserved:?}"
        );
    }
    let settings = Extension::new("com.example/notes").expect("valid").settings(json!([1]));
    assert!(matches!(settings, Err(ExtensionError::SettingsNotObject(_))));

    // Duplicates are found by the builder.
    let method = || noop("com.example/notes.count").expect("a valid name");
    let twice = McpServer::builder().method(method()).method(method()).build();
    assert!(
        matches!(
            &twice,
            Err(ServerError::Extension(ExtensionError::DuplicateMethod(name))) if name == "com.example/notes.count"
        ),
        "{twice:?}"
    );
    let ext = || Extension::new("com.example/notes").expect("valid").method(method());
    let in_both = McpServer::builder().extension(ext()).method(method()).build();
    assert!(
        matches!(
            &in_both,
            Err(ServerError::Extension(ExtensionError::DuplicateMethod(_)))
        ),
        "{in_both:?}"
    );
    let declared_twice = McpServer::builder().extension(ext()).extension(ext()).build();
    assert!(
        matches!(
            &declared_twice,
            Err(ServerError::Extension(ExtensionError::DuplicateExtension(id))) if id == "com.example/notes"
        ),
        "{declared_twice:?}"
    );
    let no_common_era = Extension::new("com.example/dead")
        .expect("valid")
        .eras(Eras::Modern)
        .method(noop("com.example/dead.x").expect("valid").eras(Eras::Legacy));
    let dead = McpServer::builder().extension(no_common_era).build();
    assert!(
        matches!(&dead, Err(ServerError::Extension(ExtensionError::InvalidMethod(..)))),
        "{dead:?}"
    );
    // The same extension registered once builds.
    assert!(McpServer::builder().extension(ext()).build().is_ok());
}

const MODERN_ONLY: &str = "com.example/modern";

fn eras_server() -> McpServer {
    let modern = Extension::new(MODERN_ONLY)
        .expect("valid")
        .settings(json!({"level": 2}))
        .expect("an object")
        .eras(Eras::Modern)
        .method(
            CustomMethod::new("com.example/modern.ping", |_p, _c| async { Ok(json!({"pong": true})) }).expect("valid"),
        );
    let legacy_only = CustomMethod::new("com.example/legacy.ping", |_p, ctx: Ctx| async move {
        Ok(json!({"era": format!("{:?}", ctx.era())}))
    })
    .expect("valid")
    .eras(Eras::Legacy);
    McpServer::builder()
        .name("eras")
        .version("1")
        .extension(modern)
        .method(legacy_only)
        .build()
        .expect("builds")
}

/// A modern-only extension is declared in `server/discover` but not in a legacy `initialize`
/// result, and its method is -32601 for a legacy client even one that declared it; a
/// legacy-only vendor method is the mirror image.
#[tokio::test]
async fn a_modern_only_extension_is_invisible_to_legacy_clients() {
    bounded(async {
        let server = eras_server();

        let legacy = server
            .test_client()
            .legacy()
            .extension(MODERN_ONLY, json!({}))
            .connect()
            .await
            .expect("connects");
        let init = legacy.initialize_result().expect("an initialize result");
        assert!(
            init["capabilities"]
                .get("extensions")
                .and_then(|e| e.get(MODERN_ONLY))
                .is_none(),
            "{init}"
        );
        let e = rpc(legacy.request("com.example/modern.ping", json!({})).await);
        assert_eq!(e.code, -32601, "{e:?}");
        let ping = legacy
            .request("com.example/legacy.ping", json!({}))
            .await
            .expect("the legacy-only method");
        assert_eq!(ping["era"], "Legacy");

        let modern = server
            .test_client()
            .modern()
            .extension(MODERN_ONLY, json!({}))
            .discover(true)
            .connect()
            .await
            .expect("connects");
        let discover = modern.discover_result().expect("a discover result");
        assert_eq!(
            discover["capabilities"]["extensions"][MODERN_ONLY],
            json!({"level": 2}),
            "{discover}"
        );
        let pong = modern
            .request("com.example/modern.ping", json!({}))
            .await
            .expect("the modern-only method");
        assert_eq!(pong["pong"], true);
        let e = rpc(modern.request("com.example/legacy.ping", json!({})).await);
        assert_eq!(e.code, -32601, "{e:?}");
    })
    .await;
}

/// An extension serving undeclared clients answers them; a custom method's handler gets the
/// caller's context (principal, era) and its params without `_meta`.
#[tokio::test]
async fn an_open_extension_answers_undeclared_clients_with_their_context() {
    bounded(async {
        let echo = CustomMethod::new("com.example/open.echo", |params, ctx: Ctx| async move {
            Ok(json!({
                "params": Value::Object(params),
                "principal": ctx.principal(),
                "era": format!("{:?}", ctx.era()),
            }))
        })
        .expect("valid");
        let open = Extension::new("com.example/open")
            .expect("valid")
            .serving_undeclared_clients()
            .method(echo);
        let server = McpServer::builder()
            .name("open")
            .version("1")
            .extension(open)
            .build()
            .expect("builds");
        for revision in BOTH {
            let client = TestClient::builder(&server)
                .revision(revision)
                .principal("ada")
                .connect()
                .await
                .expect("connects");
            let echoed = client
                .request("com.example/open.echo", json!({"x": 1}))
                .await
                .expect("answers an undeclared client");
            assert_eq!(echoed["params"], json!({"x": 1}), "{revision}: {echoed}");
            assert_eq!(echoed["principal"], "ada");
            assert_eq!(echoed["era"], format!("{:?}", revision.era()));
        }
    })
    .await;
}

/// A server's own extension is declared beside the tasks extension the runtime declares for a
/// task-capable tool (neither replaces the other).
#[tokio::test]
async fn the_tasks_extension_and_a_custom_one_are_declared_together() {
    bounded(async {
        let server = McpServer::builder()
            .name("both")
            .version("1")
            .tool(
                Tool::new("slow", "May run as a task", |_args, _ctx| async { "done" })
                    .task_support(TaskSupport::Optional),
            )
            .extension(Extension::new(NOTES).expect("valid"))
            .build()
            .expect("builds");
        let client = server
            .test_client()
            .modern()
            .discover(true)
            .connect()
            .await
            .expect("connects");
        let discover = client.discover_result().expect("a discover result");
        let extensions = &discover["capabilities"]["extensions"];
        assert_eq!(extensions[NOTES], json!({}), "{discover}");
        assert!(extensions.get("io.modelcontextprotocol/tasks").is_some(), "{discover}");
    })
    .await;
}

/// Custom methods run through the middleware chain like core methods (a layer sees them, with
/// the handler's outcome); a request the route refuses (-32021 for an undeclared extension,
/// -32601 for an unknown method) is answered before the chain and never seen by it.
#[tokio::test]
async fn custom_methods_go_through_the_middleware_chain() {
    use std::sync::{Arc, Mutex};

    bounded(async {
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let log = seen.clone();
        let search =
            CustomMethod::new("com.example/notes.search", |_p, _c| async { Ok(json!({"hits": []})) }).expect("valid");
        let server = McpServer::builder()
            .name("layered")
            .version("1")
            .extension(Extension::new(NOTES).expect("valid").method(search))
            .middleware(move |request: Inbound, next: Next| {
                let log = log.clone();
                async move {
                    let method = request.method().to_owned();
                    let outcome = next.run(request).await;
                    let ended = match outcome.rpc_error() {
                        Some(e) => format!("error {}", e.code),
                        None => "ok".to_owned(),
                    };
                    log.lock().expect("log").push((method, ended));
                    outcome
                }
            })
            .build()
            .expect("builds");
        let declaring = server
            .test_client()
            .modern()
            .extension(NOTES, json!({}))
            .connect()
            .await
            .expect("connects");
        let other = server.test_client().modern().connect().await.expect("connects");
        declaring
            .request("com.example/notes.search", json!({}))
            .await
            .expect("answered");
        assert_eq!(
            rpc(other.request("com.example/notes.search", json!({})).await).code,
            -32021
        );
        assert_eq!(
            rpc(declaring.request("com.example/notes.nope", json!({})).await).code,
            -32601
        );
        let seen = seen.lock().expect("log").clone();
        assert_eq!(seen, vec![("com.example/notes.search".to_owned(), "ok".to_owned())]);
    })
    .await;
}
