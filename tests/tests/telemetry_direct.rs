//! The telemetry cases of `telemetry` with the spans recorded by the server's own tracer
//! (`McpServerBuilder::tracer`, the `otel` feature) instead of `tracing-opentelemetry`: the same
//! names, kind, attributes, status and parent, as the OpenTelemetry SDK's in-memory exporter
//! receives them; and what only this way gives, the handler running in its span's context.
//!
//! A binary of its own: a histogram is described to a recorder with its first series, or when
//! the recorder is at another address than the last one told; each case's recorder lives on its
//! test thread's stack, which a later test's thread may reuse, and the two ways' cases record
//! the same series.

#[allow(dead_code)]
#[path = "telemetry/cases.rs"]
mod cases;
#[allow(dead_code)]
#[path = "http/support.rs"]
mod support;

use std::sync::Arc;

use cases::{MODERN, PARENT_ID, TRACE_ID, Way};
use serde_json::json;

cases::tests_for!(Way::Direct);

/// The direct way only: the handler runs with the request span's OpenTelemetry context
/// current, and over HTTP a `traceparent` header continues the caller's trace when `_meta`
/// has none.
#[test]
fn a_handler_runs_in_its_request_span_and_the_header_is_the_parent() {
    let answered = Arc::new(std::sync::Mutex::new(None));
    let t = cases::observed(Way::Direct, || async {
        let s = crate::support::Server::serve_engine(cases::server(), mcp_server::HttpConfig::default()).await;
        let params = json!({"name": "context", "arguments": {}});
        let answer = s
            .post(crate::support::modern(7, "tools/call", params))
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "context")
            .header("traceparent", &format!("00-{TRACE_ID}-{PARENT_ID}-01"))
            .send()
            .await;
        assert_eq!(answer.status, http::StatusCode::OK);
        let body = answer.json().await;
        let text = body["result"]["content"][0]["text"].as_str().expect("text").to_owned();
        *answered.lock().unwrap() = Some(text);
        s.shutdown().await.unwrap();
    });
    let span = t.span("7");
    cases::assert_server_span(span, "tools/call context", "tools/call");
    assert_eq!(span.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(span.parent_span_id.to_string(), PARENT_ID);
    assert!(span.parent_span_is_remote, "the parent is the caller's");
    let current = answered.lock().unwrap().take().expect("answered");
    assert_eq!(
        current,
        span.span_context.span_id().to_string(),
        "the handler's current span is the request's"
    );
}
