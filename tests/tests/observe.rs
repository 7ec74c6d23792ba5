//! Observability: the per-request `tracing` span (its fields, the W3C trace context from
//! `_meta`, that handler events are its children, that no argument reaches it) and the request
//! duration histogram, over stdio in both eras, and the `traceparent` header over HTTP. (The
//! names as OpenTelemetry sees them, with its SDK: `telemetry.rs`.)
//!
//! Each test runs on a current-thread runtime inside a thread-local subscriber and recorder,
//! so that the tests of this binary do not see each other's requests.

#[allow(dead_code)]
#[path = "http/support.rs"]
mod support;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::Engine;
use mcp_runtime::observe::{OPERATION_DURATION, SPAN_NAME};
use mcp_server::{McpServer, Tool};
use mcp_tests::pipe::StdioPipe;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde_json::{Map, Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
/// The one revision with JSON-RPC batches.
const BATCHING: &str = "2025-03-26";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const TRACESTATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
/// An argument value that must never reach a span or an event.
const SECRET_ARG: &str = "argument-value-never-logged";

// ------------------------------------------------------------------ capture

/// A closed span: its name and fields, and the messages of the events logged inside it.
#[derive(Debug, Clone, Default)]
struct SpanRecord {
    name: String,
    fields: HashMap<String, String>,
    events: Vec<String>,
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<SpanRecord>>>);

impl Captured {
    /// The closed request spans, in the order they closed.
    fn requests(&self) -> Vec<SpanRecord> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.name == SPAN_NAME)
            .cloned()
            .collect()
    }

    /// The closed spans of `method` (a notification's: it has no id).
    fn of_method(&self, method: &str) -> Vec<SpanRecord> {
        let mut all = self.requests();
        all.retain(|s| s.fields.get("mcp.method.name").map(String::as_str) == Some(method));
        all
    }

    /// The session `initialize` (request 1) named, and the one span of
    /// `notifications/initialized`.
    fn initialized(&self) -> (String, SpanRecord) {
        let session = field(&self.request("1"), "mcp.session.id")
            .expect("initialize names its session")
            .to_owned();
        let mut notes = self.of_method("notifications/initialized");
        assert_eq!(notes.len(), 1, "one span for the notification: {notes:#?}");
        (session, notes.remove(0))
    }

    /// The request span of the request with `id`.
    fn request(&self, id: &str) -> SpanRecord {
        let all = self.requests();
        all.iter()
            .find(|s| s.fields.get("jsonrpc.request.id").map(String::as_str) == Some(id))
            .cloned()
            .unwrap_or_else(|| panic!("no span for request {id} in {all:#?}"))
    }
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// A layer that keeps every span's fields and the events inside it.
struct CaptureLayer(Captured);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for CaptureLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut record = SpanRecord {
            name: attrs.metadata().name().to_owned(),
            ..SpanRecord::default()
        };
        attrs.record(&mut Fields(&mut record.fields));
        ctx.span(id).expect("new span").extensions_mut().insert(record);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("recorded span");
        let mut ext = span.extensions_mut();
        let record = ext.get_mut::<SpanRecord>().expect("record");
        values.record(&mut Fields(&mut record.fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        let message = fields.remove("message").unwrap_or_default();
        for span in ctx.event_scope(event).into_iter().flatten() {
            if let Some(record) = span.extensions_mut().get_mut::<SpanRecord>() {
                record.events.push(message.clone());
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).expect("closed span");
        if let Some(record) = span.extensions_mut().remove::<SpanRecord>() {
            self.0.0.lock().unwrap().push(record);
        }
    }
}

/// Runs `f` on a current-thread runtime with a capturing subscriber and a debugging recorder
/// installed for this thread only.
fn observed<F: Future<Output = ()>>(f: impl FnOnce() -> F) -> (Captured, metrics_util::debugging::Snapshotter) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(CaptureLayer(captured.clone()));
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        metrics::with_local_recorder(&recorder, || {
            runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(30), f())
                    .await
                    .expect("test timed out")
            })
        })
    });
    (captured, snapshotter)
}

// ------------------------------------------------------------------ server

fn server() -> Engine {
    let server = McpServer::builder()
        .name("observe")
        .version("1.0.0")
        .tool(Tool::new(
            "echo",
            "Echoes `text`",
            |args: Map<String, Value>, _ctx| async move {
                tracing::info!("echo handler ran");
                args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()
            },
        ))
        .build()
        .expect("server");
    server.engine().clone()
}

/// `initialize`'s params for a legacy session of `version`.
fn legacy_init(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "observe-test", "version": "1.0.0"}
    })
}

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{PARENT_ID}-01")
}

fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    meta.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    meta
}

fn echo(meta: Value) -> Value {
    json!({"name": "echo", "arguments": {"text": SECRET_ARG}, "_meta": meta})
}

fn field<'a>(span: &'a SpanRecord, name: &str) -> Option<&'a str> {
    span.fields.get(name).map(String::as_str)
}

/// How many operation durations were recorded in the series whose `label` is `value`.
fn durations_where(snapshotter: &metrics_util::debugging::Snapshotter, label: &str, value: &str) -> usize {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| {
            let key = key.key();
            key.name() == OPERATION_DURATION && key.labels().any(|l| l.key() == label && l.value() == value)
        })
        .map(|(.., sample)| match sample {
            DebugValue::Histogram(samples) => samples.len(),
            other => panic!("a histogram: {other:?}"),
        })
        .sum()
}

// ------------------------------------------------------------------ tests

#[test]
fn a_modern_request_gets_one_span_with_its_fields_and_trace_context() {
    let (captured, _) = observed(|| async {
        let mut c = StdioPipe::start(server());
        let meta = modern_meta(json!({"traceparent": traceparent(), "tracestate": TRACESTATE}));
        let answer = c.call(1, "tools/call", echo(meta)).await;
        assert_eq!(answer["result"]["content"][0]["text"], SECRET_ARG, "{answer}");
        c.finish().await;
    });
    let span = captured.request("1");
    assert_eq!(field(&span, "mcp.method.name"), Some("tools/call"));
    assert_eq!(field(&span, "otel.name"), Some("tools/call echo"));
    assert_eq!(field(&span, "mcp.protocol.version"), Some(MODERN));
    assert_eq!(field(&span, "user.id"), Some("anonymous"));
    assert_eq!(field(&span, "network.transport"), Some("pipe"));
    assert_eq!(field(&span, "mcp.session.id"), None, "a modern request has no session");
    assert_eq!(field(&span, "trace_id"), Some(TRACE_ID));
    assert_eq!(field(&span, "parent_span_id"), Some(PARENT_ID));
    assert_eq!(field(&span, "trace_flags"), Some("01"));
    assert_eq!(field(&span, "tracestate"), Some(TRACESTATE));
    assert_eq!(field(&span, "error.type"), None);
    assert!(
        span.events.iter().any(|e| e == "echo handler ran"),
        "the handler runs inside the request span: {span:#?}"
    );
    for s in captured.0.lock().unwrap().iter() {
        assert!(
            !s.fields.values().chain(s.events.iter()).any(|v| v.contains(SECRET_ARG)),
            "an argument reached a span: {s:#?}"
        );
    }
}

#[test]
fn legacy_requests_carry_their_session_and_revision_and_bad_trace_context_is_ignored() {
    let (captured, _) = observed(|| async {
        let mut c = StdioPipe::start(server());
        let answer = c.call(1, "initialize", legacy_init(LEGACY)).await;
        assert_eq!(answer["result"]["protocolVersion"], LEGACY, "{answer}");
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        c.call(2, "tools/call", echo(json!({"traceparent": traceparent()})))
            .await;
        c.call(
            3,
            "tools/call",
            echo(json!({"traceparent": "00-not-a-trace-01", "tracestate": TRACESTATE})),
        )
        .await;
        let answer = c.call(4, "resources/read", json!({"uri": "file:///nowhere"})).await;
        assert!(answer.get("error").is_some(), "{answer}");
        c.finish().await;
    });
    let init = captured.request("1");
    assert_eq!(field(&init, "mcp.method.name"), Some("initialize"));
    assert_eq!(field(&init, "error.type"), None);
    let session = field(&init, "mcp.session.id")
        .expect("initialize names the session it minted")
        .to_owned();

    let call = captured.request("2");
    assert_eq!(field(&call, "mcp.protocol.version"), Some(LEGACY));
    assert_eq!(field(&call, "mcp.session.id"), Some(session.as_str()));
    assert_eq!(
        field(&call, "trace_id"),
        Some(TRACE_ID),
        "legacy requests may carry _meta too"
    );
    assert_eq!(field(&call, "parent_span_id"), Some(PARENT_ID));

    let bad = captured.request("3");
    assert_eq!(
        field(&bad, "trace_id"),
        None,
        "an invalid traceparent is ignored: {bad:#?}"
    );
    assert_eq!(
        field(&bad, "tracestate"),
        None,
        "no tracestate without a valid traceparent"
    );
    assert_eq!(field(&bad, "error.type"), None);

    let missing = captured.request("4");
    assert_eq!(field(&missing, "mcp.method.name"), Some("resources/read"));
    assert_eq!(field(&missing, "mcp.resource.uri"), Some("file:///nowhere"));
    let code = field(&missing, "error.type").expect("an error answer has an error.type");
    assert!(code.parse::<i32>().is_ok_and(|c| c < 0), "{missing:#?}");
    assert_eq!(field(&missing, "rpc.response.status_code"), Some(code));
    assert_eq!(field(&missing, "otel.status_code"), Some("error"));
}

#[test]
fn requests_are_timed_by_method_revision_and_error_type() {
    let (_, snapshotter) = observed(|| async {
        let mut c = StdioPipe::start(server());
        c.call(1, "tools/call", echo(modern_meta(json!({})))).await;
        c.call(2, "tools/call", echo(modern_meta(json!({})))).await;
        c.call(3, "tools/list", json!({"_meta": modern_meta(json!({}))})).await;
        // Not served in the modern era: refused before any handler.
        c.call(4, "initialize", json!({"_meta": modern_meta(json!({}))})).await;
        // A method no table names is timed as `unknown`, whatever its name.
        c.call(5, "x/made-up", json!({"_meta": modern_meta(json!({}))})).await;
        c.finish().await;
    });
    let mut timings = HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: HashMap<&str, &str> = key.labels().map(|l| (l.key(), l.value())).collect();
        let label = |k: &str| labels.get(k).copied().unwrap_or("-").to_owned();
        if let (OPERATION_DURATION, DebugValue::Histogram(samples)) = (key.name(), value) {
            assert!(samples.iter().all(|s| s.0 >= 0.0 && s.0 < 30.0), "{samples:?}");
            assert_eq!(label("network.transport"), "pipe", "{labels:?}");
            let error = label("error.type");
            if error != "-" {
                assert!(error.parse::<i32>().is_ok(), "{labels:?}");
                assert_eq!(label("rpc.response.status_code"), error, "{labels:?}");
            }
            let refused = if error == "-" { "ok" } else { "refused" };
            let key = (
                label("mcp.method.name"),
                label("mcp.protocol.version"),
                refused.to_owned(),
            );
            *timings.entry(key).or_insert(0) += samples.len();
        }
    }
    let count = |m: &str, o: &str| timings.get(&(m.to_owned(), MODERN.to_owned(), o.to_owned())).copied();
    assert_eq!(count("tools/call", "ok"), Some(2), "{timings:?}");
    assert_eq!(count("tools/list", "ok"), Some(1), "{timings:?}");
    assert_eq!(count("initialize", "refused"), Some(1), "{timings:?}");
    assert_eq!(count("unknown", "refused"), Some(1), "{timings:?}");
    assert!(!timings.keys().any(|(m, _, _)| m == "x/made-up"), "{timings:?}");
    assert_eq!(
        timings.values().sum::<usize>(),
        5,
        "one duration per request: {timings:?}"
    );
}

#[test]
fn over_http_the_traceparent_header_is_used_when_meta_has_none() {
    let other_parent = "b7ad6b7169203331";
    let (captured, snapshotter) = observed(|| async {
        let s = support::Server::default_config().await;
        let post = |id: i64, meta: Value| {
            let mut body = support::modern(id, "tools/list", json!({}));
            body["params"]["_meta"]
                .as_object_mut()
                .unwrap()
                .extend(meta.as_object().unwrap().clone());
            s.post(body)
                .header("mcp-protocol-version", MODERN)
                .header("mcp-method", "tools/list")
                .header("traceparent", &traceparent())
                .header("tracestate", TRACESTATE)
        };
        assert_eq!(post(1, json!({})).send().await.status, http::StatusCode::OK);
        let meta = json!({"traceparent": format!("00-{TRACE_ID}-{other_parent}-00")});
        assert_eq!(post(2, meta).send().await.status, http::StatusCode::OK);
        // No `Mcp-Method` header: refused before any handler (-32020).
        let refused = s
            .post(support::modern(3, "tools/list", json!({})))
            .header("mcp-protocol-version", MODERN)
            .send()
            .await;
        assert_eq!(refused.status, http::StatusCode::BAD_REQUEST);
        s.shutdown().await.unwrap();
    });
    let header = captured.request("1");
    assert_eq!(field(&header, "trace_id"), Some(TRACE_ID));
    assert_eq!(field(&header, "parent_span_id"), Some(PARENT_ID));
    assert_eq!(field(&header, "tracestate"), Some(TRACESTATE));
    assert_eq!(field(&header, "user.id"), Some("anonymous"));
    assert_eq!(field(&header, "network.transport"), Some("tcp"));
    assert_eq!(field(&header, "network.protocol.name"), Some("http"));
    assert_eq!(field(&header, "error.type"), None);

    let meta = captured.request("2");
    assert_eq!(
        field(&meta, "parent_span_id"),
        Some(other_parent),
        "_meta wins over the header"
    );
    assert_eq!(field(&meta, "trace_flags"), Some("00"));
    assert_eq!(
        field(&meta, "tracestate"),
        None,
        "the header's tracestate does not pair with _meta's parent"
    );

    assert_eq!(field(&captured.request("3"), "error.type"), Some("-32020"));
    assert_eq!(durations_where(&snapshotter, "error.type", "-32020"), 1);
}

#[test]
fn the_trace_context_hook_gets_the_request_span_and_the_callers_context() {
    static SEEN: Mutex<Vec<(String, String, Option<String>)>> = Mutex::new(Vec::new());
    let set = mcp_runtime::observe::set_trace_context_hook(|span, trace| {
        let name = span.metadata().map(|m| m.name()).unwrap_or_default().to_owned();
        let state = trace.tracestate.map(str::to_owned);
        SEEN.lock().unwrap().push((name, trace.traceparent.to_owned(), state));
    });
    assert!(set, "no other test sets the hook");
    assert!(
        !mcp_runtime::observe::set_trace_context_hook(|_, _| {}),
        "the first hook stays"
    );
    let unique = "0af7651916cd43dd8448eb211c80319c";
    let parent = format!("00-{unique}-{PARENT_ID}-01");
    observed(|| async {
        let mut c = StdioPipe::start(server());
        let meta = modern_meta(json!({"traceparent": parent.clone(), "tracestate": TRACESTATE}));
        c.call(1, "tools/call", echo(meta)).await;
        c.finish().await;
    });
    let seen = SEEN.lock().unwrap();
    let ours: Vec<_> = seen.iter().filter(|(_, p, _)| p.contains(unique)).collect();
    assert_eq!(
        ours,
        vec![&(SPAN_NAME.to_owned(), parent.clone(), Some(TRACESTATE.to_owned()))],
        "{seen:?}"
    );
}

#[test]
fn a_notification_gets_a_span_and_a_duration_without_an_id() {
    let (captured, snapshotter) = observed(|| async {
        let mut c = StdioPipe::start(server());
        c.call(1, "initialize", legacy_init(LEGACY)).await;
        let meta = json!({"traceparent": traceparent()});
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": meta}}))
            .await;
        // A request after it: the notification was routed (in order) before this is answered.
        c.call(2, "ping", json!({})).await;
        c.finish().await;
    });
    let (session, span) = captured.initialized();
    let note = &span;
    assert_eq!(field(note, "otel.name"), Some("notifications/initialized"));
    assert_eq!(field(note, "otel.kind"), Some("server"));
    assert_eq!(field(note, "jsonrpc.request.id"), None, "a notification has no id");
    assert_eq!(field(note, "mcp.session.id"), Some(session.as_str()));
    assert_eq!(field(note, "mcp.protocol.version"), Some(LEGACY));
    assert_eq!(field(note, "network.transport"), Some("pipe"));
    assert_eq!(
        field(note, "trace_id"),
        Some(TRACE_ID),
        "a notification continues its trace too"
    );
    assert_eq!(field(note, "error.type"), None);

    assert_eq!(
        durations_where(&snapshotter, "mcp.method.name", "notifications/initialized"),
        1,
        "the notification is timed"
    );
}

#[test]
fn a_notification_refused_over_http_records_why() {
    let (captured, _) = observed(|| async {
        let s = support::Server::default_config().await;
        let refused = s
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .header("mcp-protocol-version", LEGACY)
            .header("mcp-session-id", "no-such-session")
            .send()
            .await;
        assert_eq!(refused.status, http::StatusCode::NOT_FOUND);
        s.shutdown().await.unwrap();
    });
    let notes = captured.of_method("notifications/initialized");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let code = mcp_protocol::codes::SESSION_NOT_FOUND.to_string();
    assert_eq!(field(&notes[0], "error.type"), Some(code.as_str()));
    assert_eq!(field(&notes[0], "rpc.response.status_code"), Some(code.as_str()));
    assert_eq!(field(&notes[0], "otel.status_code"), Some("error"));
    assert_eq!(
        field(&notes[0], "mcp.session.id"),
        None,
        "an unknown session is not named"
    );
}

#[test]
fn a_notification_in_a_batch_is_observed_in_its_session() {
    let (captured, _) = observed(|| async {
        let mut c = StdioPipe::start(server());
        c.call(1, "initialize", legacy_init(BATCHING)).await;
        c.send(json!([
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        ]))
        .await;
        let answers = c.next().await;
        assert_eq!(answers[0]["id"], 2, "the batch's one request is answered: {answers}");
        c.finish().await;
    });
    let (session, note) = captured.initialized();
    assert_eq!(field(&note, "mcp.session.id"), Some(session.as_str()));
    assert_eq!(field(&note, "mcp.protocol.version"), Some(BATCHING));
    assert_eq!(field(&note, "error.type"), None);
}
