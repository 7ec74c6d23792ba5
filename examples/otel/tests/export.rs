//! The example's telemetry reaches a collector: the binary is started against a small OTLP/HTTP
//! receiver, serves one 2026-07-28 `tools/call` of `add` whose `_meta` carries a W3C
//! `traceparent`, and exports, as protobuf, the request's span (named `tools/call add`, with the
//! conventions' attributes, in the caller's trace) and the `mcp.server.operation.duration`
//! histogram. Then `SIGTERM` stops it cleanly.
//!
//! The receiver decodes nothing: protobuf carries strings as raw UTF-8 and a trace id as its
//! 16 bytes, so the test looks for those bytes in the bodies.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// The caller's trace: its id is what the exported span must carry.
const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
/// The `traceparent` the call sends in `_meta`: a span of [`TRACE_ID`].
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
/// How long anything the test waits for may take.
const PATIENCE: Duration = Duration::from_secs(20);

/// One POST the receiver got: its path, `content-type` and body.
struct Export {
    path: String,
    content_type: String,
    body: Bytes,
}

/// Every POST the receiver got, in order.
type Received = Arc<Mutex<Vec<Export>>>;

/// Starts the OTLP/HTTP receiver: it records every POST and answers each with an empty
/// protobuf `Export*ServiceResponse`. Returns its address and what it received.
async fn receiver() -> (std::net::SocketAddr, Received) {
    let received = Received::default();
    let record = received.clone();
    let app = axum::Router::new().fallback(axum::routing::post(
        move |uri: Uri, headers: HeaderMap, body: Bytes| async move {
            let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
            record.lock().unwrap().push(Export {
                path: uri.path().to_owned(),
                content_type: content_type.unwrap_or_default().to_owned(),
                body,
            });
            ([(header::CONTENT_TYPE, "application/x-protobuf")], Bytes::new())
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, received)
}

/// The example's process, killed if the test ends before it exits.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts the example, exporting to `collector` every few hundred milliseconds. Returns it and
/// the MCP endpoint it logs; its stderr is echoed (captured by the test harness) until it ends.
async fn start(collector: std::net::SocketAddr) -> (Server, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-example-otel"));
    command
        .arg("127.0.0.1:0")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{collector}"))
        .env("OTEL_BSP_SCHEDULE_DELAY", "200")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "500")
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Nothing from the environment may send the export elsewhere.
    for var in [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        command.env_remove(var);
    }
    let mut child = command.spawn().expect("the example starts");
    let stderr = child.stderr.take().unwrap();
    let server = Server(child);

    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[example] {line}");
            if let Some(rest) = line.split("listening on ").nth(1)
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(rest.trim().to_owned());
            }
        }
    });
    let url = tokio::time::timeout(PATIENCE, rx)
        .await
        .expect("the example logs its address in time")
        .expect("the example logs its address before it exits");
    (server, url)
}

/// Calls `add` with 2 and 3 (2026-07-28, no session), in the trace of [`TRACEPARENT`].
async fn call_add(url: &str) -> (hyper::StatusCode, String) {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": TRACEPARENT,
        }},
    });
    let req = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "add")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http();
    let exchange = async {
        let resp = client.request(req).await.expect("an answer");
        let status = resp.status();
        let body = resp.into_body().collect().await.expect("a body").to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    };
    tokio::time::timeout(PATIENCE, exchange)
        .await
        .expect("answered in time")
}

/// The text of the first content of the result in `answer` (JSON, or the `data:` of an event).
fn result_text(answer: &str) -> Option<String> {
    let json = answer.lines().find_map(|l| l.strip_prefix("data:")).unwrap_or(answer);
    let value: serde_json::Value = serde_json::from_str(json.trim()).ok()?;
    Some(value["result"]["content"][0]["text"].as_str()?.to_owned())
}

/// Whether `haystack` holds `needle`, byte for byte.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The 16 bytes a hex trace id stands for.
fn trace_id_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// Waits until the receiver got a protobuf POST on `path` holding every one of `needles`.
async fn wait_for_export(received: &Received, path: &str, needles: &[&[u8]]) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let found = received.lock().unwrap().iter().any(|e| {
            e.path == path && e.content_type == "application/x-protobuf" && needles.iter().all(|n| holds(&e.body, n))
        });
        if found {
            return;
        }
        if Instant::now() > deadline {
            let mut got = std::collections::BTreeMap::<_, usize>::new();
            for e in received.lock().unwrap().iter() {
                *got.entry(format!("{} ({})", e.path, e.content_type)).or_default() += 1;
            }
            panic!("no export on {path} with everything expected within {PATIENCE:?}; POSTs received: {got:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_is_exported_as_a_span_and_a_metric() {
    let (collector, received) = receiver().await;
    let (mut server, url) = start(collector).await;

    let (status, answer) = call_add(&url).await;
    assert_eq!(status, hyper::StatusCode::OK, "{answer}");
    assert_eq!(result_text(&answer).as_deref(), Some("5"), "{answer}");

    let trace_id = trace_id_bytes(TRACE_ID);
    let span: [&[u8]; 4] = [b"tools/call add", b"mcp.method.name", b"gen_ai.tool.name", &trace_id];
    wait_for_export(&received, "/v1/traces", &span).await;
    wait_for_export(&received, "/v1/metrics", &[b"mcp.server.operation.duration"]).await;

    // SIGTERM (the workspace forbids `unsafe`, so not `libc::kill`): a graceful stop.
    let kill = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success(), "kill -TERM failed: {kill}");
    let deadline = Instant::now() + PATIENCE;
    let exit = loop {
        if let Some(exit) = server.0.try_wait().expect("the example's status") {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "the example did not stop within {PATIENCE:?} of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "the example stopped with {exit}");
}
