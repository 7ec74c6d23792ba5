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

cases::tests_for!(cases::Way::Tracing);
