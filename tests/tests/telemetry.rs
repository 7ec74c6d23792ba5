//! OpenTelemetry's semantic conventions for MCP, as the real OpenTelemetry SDK sees them: the
//! request spans (`tracing-opentelemetry` over the library's `tracing` spans, into
//! `opentelemetry_sdk`'s in-memory exporter; `telemetry_direct` runs the same cases with the
//! server's own tracer) with
//! their names, kind, attributes and status, for tool calls of both eras, a tool error, a
//! JSON-RPC error, `resources/read` and `prompts/get`, over stdio (`pipe`) and Streamable HTTP
//! (`tcp`), the caller's trace context from `_meta` as the parent; and the duration histograms
//! (names, units, labels) through the `metrics` facade, the legacy session's included.
//!
//! Each test runs on a current-thread runtime inside a thread-local subscriber and recorder,
//! so that the tests of this binary do not see each other's requests.

#[allow(dead_code)]
#[path = "telemetry/cases.rs"]
mod cases;
#[allow(dead_code)]
#[path = "http/support.rs"]
mod support;

use cases::Way;

#[test]
fn a_legacy_tool_call_over_stdio_carries_its_session_and_the_pipe() {
    cases::a_legacy_tool_call_over_stdio_carries_its_session_and_the_pipe(Way::Tracing)
}

#[test]
fn a_modern_tool_call_has_no_session_and_a_tool_error_is_an_error() {
    cases::a_modern_tool_call_has_no_session_and_a_tool_error_is_an_error(Way::Tracing)
}

#[test]
fn a_json_rpc_error_records_its_code_and_message() {
    cases::a_json_rpc_error_records_its_code_and_message(Way::Tracing)
}

#[test]
fn resources_read_and_prompts_get_over_http_are_tcp() {
    cases::resources_read_and_prompts_get_over_http_are_tcp(Way::Tracing)
}
