//! The telemetry cases, run by `telemetry` (spans through `tracing-opentelemetry`) and
//! `telemetry_direct` (the server's own tracer): see those binaries.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Once};
use std::time::Duration;

use mcp_runtime::Engine;
use mcp_runtime::observe::{OPERATION_DURATION, SESSION_DURATION};
use mcp_server::prelude::*;
use mcp_tests::pipe::StdioPipe;
use metrics_util::CompositeKey;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value as OtelValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

pub(crate) const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
pub(crate) const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
pub(crate) const PARENT_ID: &str = "00f067aa0ba902b7";
/// An argument value that must never reach an attribute.
const SECRET_ARG: &str = "argument-value-never-exported";

// ------------------------------------------------------------------ capture

/// What a test left behind: the finished spans, and the metrics.
pub(crate) struct Telemetry {
    spans: Vec<SpanData>,
    metrics: Vec<(CompositeKey, Option<metrics::Unit>, DebugValue)>,
}

impl Telemetry {
    /// The span of the request with `id`.
    pub(crate) fn span(&self, id: &str) -> &SpanData {
        self.spans
            .iter()
            .find(|s| attr(s, "jsonrpc.request.id").as_deref() == Some(id))
            .unwrap_or_else(|| panic!("no span for request {id} in {:#?}", self.spans))
    }

    /// The histograms named `name`: each series' labels and its number of samples.
    fn histograms(&self, name: &str) -> Vec<(HashMap<String, String>, usize)> {
        self.metrics
            .iter()
            .filter_map(|(key, unit, value)| {
                let key = key.key();
                if key.name() != name {
                    return None;
                }
                let DebugValue::Histogram(samples) = value else {
                    panic!("{name} is a histogram");
                };
                assert_eq!(*unit, Some(metrics::Unit::Seconds), "{name} is in seconds");
                assert!(samples.iter().all(|s| s.0 >= 0.0 && s.0 < 30.0), "{samples:?}");
                let labels = key
                    .labels()
                    .map(|l| (l.key().to_owned(), l.value().to_owned()))
                    .collect();
                Some((labels, samples.len()))
            })
            .collect()
    }
}

/// An attribute of a span, as a string.
fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| match &kv.value {
            OtelValue::String(s) => s.as_str().to_owned(),
            other => other.to_string(),
        })
}

/// Sets the trace context hook of this binary once: the caller's context from `_meta` becomes
/// the parent of the request's OpenTelemetry span.
fn hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        mcp_runtime::observe::set_trace_context_hook(|span, trace| {
            let mut carrier = HashMap::new();
            carrier.insert("traceparent".to_owned(), trace.traceparent.to_owned());
            if let Some(state) = trace.tracestate {
                carrier.insert("tracestate".to_owned(), state.to_owned());
            }
            let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
        });
    });
}

/// How the spans reach OpenTelemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// `tracing-opentelemetry` over the library's `tracing` spans.
    Tracing,
    /// The server's own tracer (`McpServerBuilder::tracer`), no `tracing` subscriber.
    Direct,
}

thread_local! {
    /// The tracer [`server`] gives the server it builds (the direct way).
    static TRACER: std::cell::RefCell<Option<opentelemetry_sdk::trace::SdkTracer>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` on a current-thread runtime with OpenTelemetry (in-memory exporter) fed `way`,
/// and a debugging recorder installed for this thread only.
pub(crate) fn observed<F: Future<Output = ()>>(way: Way, f: impl FnOnce() -> F) -> Telemetry {
    hook();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = match way {
        Way::Tracing => tracing::Dispatch::new(
            tracing_subscriber::registry()
                .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("telemetry"))),
        ),
        Way::Direct => {
            TRACER.with(|t| *t.borrow_mut() = Some(provider.tracer("telemetry")));
            tracing::Dispatch::none()
        }
    };
    let recorder = DebuggingRecorder::new();
    let metrics = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::dispatcher::with_default(&subscriber, || {
        metrics::with_local_recorder(&recorder, || {
            runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(30), f())
                    .await
                    .expect("test timed out")
            })
        })
    });
    TRACER.with(|t| t.borrow_mut().take());
    provider.force_flush().expect("flushed");
    let spans = exporter.get_finished_spans().expect("finished spans");
    for span in &spans {
        for kv in &span.attributes {
            assert!(
                !kv.value.to_string().contains(SECRET_ARG),
                "an argument reached an attribute: {span:#?}"
            );
        }
    }
    let metrics = metrics
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, _, value)| (key, unit, value))
        .collect();
    Telemetry { spans, metrics }
}

// ------------------------------------------------------------------ server

/// The test server, with the thread's tracer when the spans go to OpenTelemetry directly. Its
/// tool `context` answers the span id current in the handler's OpenTelemetry context.
pub(crate) fn server() -> Engine {
    let mut builder = McpServer::builder();
    if let Some(tracer) = TRACER.with(|t| t.borrow().clone()) {
        builder = builder.tracer(tracer);
    }
    let server = builder
        .name("telemetry")
        .version("1.0.0")
        .tool(Tool::new(
            "echo",
            "Echoes `text`",
            |args: serde_json::Map<String, Value>, _ctx| async move {
                args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()
            },
        ))
        .tool(Tool::new("fail", "Always a tool error", |_, _| async {
            CallToolResult::error("failed on purpose")
        }))
        .tool(Tool::new(
            "context",
            "The current OpenTelemetry span id",
            |_, _| async {
                use opentelemetry::trace::TraceContextExt as _;
                opentelemetry::Context::current()
                    .span()
                    .span_context()
                    .span_id()
                    .to_string()
            },
        ))
        .resource(Resource::text("test://note", "note", "text/plain", "A note"))
        .prompt(Prompt::new("greet", "A greeting", |_, _| async {
            Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text("Hello"))]))
        }))
        .build()
        .expect("server");
    server.engine().clone()
}

/// Opens the legacy session of the connection.
async fn initialize(c: &mut StdioPipe) {
    let init = json!({
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "telemetry-test", "version": "1.0.0"}
    });
    let answer = c.call(0, "initialize", init).await;
    assert_eq!(answer["result"]["protocolVersion"], LEGACY, "{answer}");
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn echo(meta: Value) -> Value {
    json!({"name": "echo", "arguments": {"text": SECRET_ARG}, "_meta": meta})
}

/// Asserts a span of the conventions: name, kind `SERVER`, `mcp.method.name`.
pub(crate) fn assert_server_span(span: &SpanData, name: &str, method: &str) {
    assert_eq!(span.name, name, "{span:#?}");
    assert_eq!(span.span_kind, SpanKind::Server, "{span:#?}");
    assert_eq!(attr(span, "mcp.method.name").as_deref(), Some(method), "{span:#?}");
}

// ------------------------------------------------------------------ tests

pub(crate) fn a_legacy_tool_call_over_stdio_carries_its_session_and_the_pipe(way: Way) {
    let t = observed(way, || async {
        let mut c = StdioPipe::start(server());
        initialize(&mut c).await;
        let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
        let answer = c.call(1, "tools/call", echo(json!({"traceparent": traceparent}))).await;
        assert_eq!(answer["result"]["content"][0]["text"], SECRET_ARG, "{answer}");
        c.finish().await;
    });
    let init = t.span("0");
    assert_server_span(init, "initialize", "initialize");
    let session = attr(init, "mcp.session.id").expect("initialize names the session it minted");

    let call = t.span("1");
    assert_server_span(call, "tools/call echo", "tools/call");
    assert_eq!(attr(call, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attr(call, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(attr(call, "mcp.session.id"), Some(session));
    assert_eq!(attr(call, "mcp.protocol.version").as_deref(), Some(LEGACY));
    assert_eq!(attr(call, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(
        attr(call, "network.protocol.name"),
        None,
        "stdio has no application protocol"
    );
    assert_eq!(attr(call, "error.type"), None);
    assert_eq!(call.status, Status::Unset);
    assert_eq!(
        call.span_context.trace_id().to_string(),
        TRACE_ID,
        "the caller's trace continues"
    );
    assert_eq!(
        call.parent_span_id.to_string(),
        PARENT_ID,
        "the caller's span is the parent"
    );

    let durations = t.histograms(OPERATION_DURATION);
    let labels = HashMap::from([
        ("mcp.method.name", "tools/call"),
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "echo"),
        ("mcp.protocol.version", LEGACY),
        ("network.transport", "pipe"),
    ]);
    let labels: HashMap<String, String> = labels.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    assert!(durations.contains(&(labels, 1)), "{durations:#?}");

    let sessions = t.histograms(SESSION_DURATION);
    let labels: HashMap<String, String> = [("mcp.protocol.version", LEGACY), ("network.transport", "pipe")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(sessions, vec![(labels, 1)], "the session ended with its connection");
}

pub(crate) fn a_modern_tool_call_has_no_session_and_a_tool_error_is_an_error(way: Way) {
    let t = observed(way, || async {
        let mut c = StdioPipe::start(server());
        let answer = c.call(1, "tools/call", echo(modern_meta())).await;
        assert_eq!(answer["result"]["content"][0]["text"], SECRET_ARG, "{answer}");
        let fail = json!({"name": "fail", "arguments": {}, "_meta": modern_meta()});
        let answer = c.call(2, "tools/call", fail).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        c.finish().await;
    });
    let call = t.span("1");
    assert_server_span(call, "tools/call echo", "tools/call");
    assert_eq!(attr(call, "mcp.protocol.version").as_deref(), Some(MODERN));
    assert_eq!(attr(call, "mcp.session.id"), None, "2026-07-28 has no session");
    assert_eq!(attr(call, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(call.status, Status::Unset);

    let fail = t.span("2");
    assert_server_span(fail, "tools/call fail", "tools/call");
    assert_eq!(attr(fail, "error.type").as_deref(), Some("tool_error"));
    assert_eq!(attr(fail, "rpc.response.status_code"), None, "a tool error is a result");
    assert!(matches!(fail.status, Status::Error { .. }), "{fail:#?}");

    let durations = t.histograms(OPERATION_DURATION);
    assert!(
        durations.iter().any(|(l, n)| *n == 1
            && l.get("gen_ai.tool.name").map(String::as_str) == Some("fail")
            && l.get("error.type").map(String::as_str) == Some("tool_error")),
        "{durations:#?}"
    );
    assert!(t.histograms(SESSION_DURATION).is_empty(), "no legacy session");
}

pub(crate) fn a_json_rpc_error_records_its_code_and_message(way: Way) {
    let answered = Arc::new(std::sync::Mutex::new(None));
    let t = observed(way, || async {
        let mut c = StdioPipe::start(server());
        let unknown = json!({"name": "no-such-prompt", "_meta": modern_meta()});
        let answer = c.call(1, "prompts/get", unknown).await;
        let code = answer["error"]["code"].as_i64().expect("an error");
        let message = answer["error"]["message"].as_str().unwrap().to_owned();
        *answered.lock().unwrap() = Some((code.to_string(), message));
        c.finish().await;
    });
    let (code, message) = answered.lock().unwrap().take().expect("answered");
    let span = t.span("1");
    assert_server_span(span, "prompts/get", "prompts/get");
    assert_eq!(
        attr(span, "gen_ai.prompt.name").as_deref(),
        Some("no-such-prompt"),
        "named, if not registered: an attribute, not the span's name"
    );
    assert_eq!(attr(span, "error.type"), Some(code.clone()));
    assert_eq!(attr(span, "rpc.response.status_code"), Some(code.clone()));
    assert_eq!(
        span.status,
        Status::error(message),
        "the status carries the JSON-RPC message"
    );
    let durations = t.histograms(OPERATION_DURATION);
    assert!(
        durations.iter().any(|(l, _)| l.get("error.type") == Some(&code)
            && l.get("rpc.response.status_code") == Some(&code)
            && !l.contains_key("gen_ai.prompt.name")),
        "an unregistered prompt's name is no label: {durations:#?}"
    );
}

pub(crate) fn resources_read_and_prompts_get_over_http_are_tcp(way: Way) {
    let t = observed(way, || async {
        let s = crate::support::Server::serve_engine(server(), mcp_server::HttpConfig::default()).await;
        let post = |id: i64, method: &'static str, name: Option<&'static str>, params: Value| {
            let mut req = s
                .post(crate::support::modern(id, method, params))
                .header("mcp-protocol-version", MODERN)
                .header("mcp-method", method);
            if let Some(name) = name {
                req = req.header("mcp-name", name);
            }
            req
        };
        let read = post(1, "resources/read", Some("test://note"), json!({"uri": "test://note"}));
        assert_eq!(read.send().await.status, http::StatusCode::OK);
        let get = post(2, "prompts/get", Some("greet"), json!({"name": "greet"}));
        assert_eq!(get.send().await.status, http::StatusCode::OK);
        let sid = s.initialize().await;
        let delete = s.req(http::Method::DELETE).header("mcp-session-id", &sid).send().await;
        assert!(delete.status.is_success(), "{}", delete.status);
        // A session still open when the server shuts down ends with it.
        s.initialize().await;
        s.shutdown().await.unwrap();
    });
    let read = t.span("1");
    assert_server_span(read, "resources/read", "resources/read");
    assert_eq!(attr(read, "mcp.resource.uri").as_deref(), Some("test://note"));
    assert_eq!(attr(read, "network.transport").as_deref(), Some("tcp"));
    assert_eq!(attr(read, "network.protocol.name").as_deref(), Some("http"));
    assert_eq!(attr(read, "network.protocol.version").as_deref(), Some("1.1"));
    assert_eq!(attr(read, "client.address").as_deref(), Some("127.0.0.1"));
    let port = attr(read, "client.port").expect("client.port beside client.address");
    assert!(port.parse::<u16>().is_ok_and(|p| p > 0), "client.port {port}");
    assert_eq!(attr(read, "mcp.session.id"), None);

    let get = t.span("2");
    assert_server_span(get, "prompts/get greet", "prompts/get");
    assert_eq!(attr(get, "gen_ai.prompt.name").as_deref(), Some("greet"));
    assert_eq!(
        attr(get, "gen_ai.operation.name"),
        None,
        "execute_tool is for tools only"
    );
    assert_eq!(get.status, Status::Unset);

    let durations = t.histograms(OPERATION_DURATION);
    assert!(
        durations.iter().any(|(l, n)| *n == 1
            && l.get("gen_ai.prompt.name").map(String::as_str) == Some("greet")
            && l.get("network.transport").map(String::as_str) == Some("tcp")
            && l.get("network.protocol.version").map(String::as_str) == Some("1.1")),
        "{durations:#?}"
    );
    let sessions = t.histograms(SESSION_DURATION);
    assert_eq!(sessions.len(), 1, "one series: {sessions:#?}");
    let (labels, n) = &sessions[0];
    assert_eq!(*n, 2, "the deleted session, and the one the shutdown ended");
    assert_eq!(labels.get("network.transport").map(String::as_str), Some("tcp"));
    assert_eq!(labels.get("mcp.protocol.version").map(String::as_str), Some(LEGACY));
}

pub(crate) fn a_notification_is_a_server_span_without_an_id(way: Way) {
    let t = observed(way, || async {
        let mut c = StdioPipe::start(server());
        initialize(&mut c).await;
        let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
        let cancel = json!({"requestId": 99, "_meta": {"traceparent": traceparent}});
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}))
            .await;
        // Answered after the notification was routed (a connection's messages are taken in
        // order).
        c.call(1, "ping", json!({})).await;
        c.finish().await;
    });
    let session = attr(t.span("0"), "mcp.session.id").expect("initialize names the session it minted");
    let named = |method: &str| {
        let spans: Vec<_> = t
            .spans
            .iter()
            .filter(|s| attr(s, "mcp.method.name").as_deref() == Some(method))
            .collect();
        assert_eq!(spans.len(), 1, "one span for {method}: {:#?}", t.spans);
        spans[0]
    };
    for method in ["notifications/initialized", "notifications/cancelled"] {
        let span = named(method);
        assert_server_span(span, method, method);
        assert_eq!(attr(span, "jsonrpc.request.id"), None, "a notification has no id");
        assert_eq!(attr(span, "mcp.session.id").as_ref(), Some(&session));
        assert_eq!(attr(span, "mcp.protocol.version").as_deref(), Some(LEGACY));
        assert_eq!(attr(span, "network.transport").as_deref(), Some("pipe"));
        assert_eq!(attr(span, "error.type"), None);
        assert_eq!(span.status, Status::Unset);
    }
    let cancelled = named("notifications/cancelled");
    assert_eq!(
        cancelled.span_context.trace_id().to_string(),
        TRACE_ID,
        "the caller's trace continues"
    );
    assert_eq!(cancelled.parent_span_id.to_string(), PARENT_ID);

    let durations = t.histograms(OPERATION_DURATION);
    for method in ["notifications/initialized", "notifications/cancelled"] {
        assert!(
            durations
                .iter()
                .any(|(l, n)| *n == 1 && l.get("mcp.method.name").map(String::as_str) == Some(method)),
            "{method} is timed: {durations:#?}"
        );
    }
}

/// The `#[test]` of each case above, run `$way`.
macro_rules! tests_for {
    ($way:expr) => {
        #[test]
        fn a_legacy_tool_call_over_stdio_carries_its_session_and_the_pipe() {
            $crate::cases::a_legacy_tool_call_over_stdio_carries_its_session_and_the_pipe($way)
        }
        #[test]
        fn a_modern_tool_call_has_no_session_and_a_tool_error_is_an_error() {
            $crate::cases::a_modern_tool_call_has_no_session_and_a_tool_error_is_an_error($way)
        }
        #[test]
        fn a_json_rpc_error_records_its_code_and_message() {
            $crate::cases::a_json_rpc_error_records_its_code_and_message($way)
        }
        #[test]
        fn resources_read_and_prompts_get_over_http_are_tcp() {
            $crate::cases::resources_read_and_prompts_get_over_http_are_tcp($way)
        }
        #[test]
        fn a_notification_is_a_server_span_without_an_id() {
            $crate::cases::a_notification_is_a_server_span_without_an_id($way)
        }
    };
}
pub(crate) use tests_for;
