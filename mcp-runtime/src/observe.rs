//! Observability: what every request leaves behind in [`tracing`](https://docs.rs/tracing) and in the
//! [`metrics`](https://docs.rs/metrics) facade. The names below are the contract; this module is
//! the one place that spells them.
//!
//! The engine calls in here once per request, whatever the transport: `Engine::request`
//! opens the observation, the `Call` it hands back carries it, and `Call::run` closes it
//! (requests of a batch are observed from `Call::run` on). Nothing here installs a
//! subscriber or a recorder: with none installed, the span is `Span::none()` (no field is
//! formatted, no trace context parsed) and the metrics go to the facade's no-op recorder.
//!
//! # The span
//!
//! One span per request, named `mcp.request`, at level `INFO`, target `mcp_runtime::observe`.
//! The handler runs inside it (events it logs are its children). Fields:
//!
//! | field | value |
//! | --- | --- |
//! | `method` | the JSON-RPC method (`tools/call`, …) |
//! | `id` | the JSON-RPC request id |
//! | `era` | `legacy` or `modern` |
//! | `revision` | the protocol revision (`2025-11-25`, `2026-07-28`, …), once known |
//! | `session` | the legacy session the request runs in, if any (for `initialize`, the one it minted) |
//! | `principal` | the authenticated caller ([`AuthInfo::principal`]; `anonymous` without authentication) |
//! | `trace_id`, `parent_span_id`, `trace_flags` | the caller's W3C trace context, from `traceparent` |
//! | `tracestate` | the caller's W3C `tracestate`, as sent |
//! | `outcome` | how it ended: one of the outcomes below |
//!
//! No token, credential, argument or result is ever recorded. `baggage` is not recorded
//! either (it may carry anything).
//!
//! # W3C trace context
//!
//! A client continues its trace into the server by putting `traceparent` (and `tracestate`)
//! in the request's `params._meta`, un-prefixed, in the W3C formats (the OpenTelemetry keys
//! reserved by the specification, SEP-414). Over HTTP a `traceparent` header is used when
//! `_meta` has none. A valid `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, lowercase, not all
//! zeros) is recorded as `trace_id`, `parent_span_id` and `trace_flags`; an invalid one is
//! ignored. A `tracestate` is recorded when a valid `traceparent` came with it and it is
//! printable ASCII of at most 512 bytes.
//!
//! The library has no OpenTelemetry dependency. To continue the caller's trace with
//! `tracing-opentelemetry`, set a hook with [`set_trace_context_hook`] in `main`: it is called
//! with each request's span and its [`TraceContext`] right after the span is created, before
//! it is first entered, which is when `OpenTelemetrySpanExt::set_parent` takes effect:
//!
//! ```ignore
//! use opentelemetry::propagation::TextMapPropagator;
//! use opentelemetry_sdk::propagation::TraceContextPropagator;
//! use tracing_opentelemetry::OpenTelemetrySpanExt;
//!
//! mcp_runtime::observe::set_trace_context_hook(|span, trace| {
//!     let mut carrier = std::collections::HashMap::new();
//!     carrier.insert("traceparent".to_owned(), trace.traceparent.to_owned());
//!     if let Some(state) = trace.tracestate {
//!         carrier.insert("tracestate".to_owned(), state.to_owned());
//!     }
//!     let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
//! });
//! ```
//!
//! The hook runs only for spans some subscriber is interested in (the OpenTelemetry layer must
//! enable `mcp.request`, target `mcp_runtime::observe`, level `INFO`).
//!
//! # Metrics
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | [`REQUESTS_TOTAL`] (`mcp_requests_total`) | counter | `method`, `era`, `outcome` |
//! | [`REQUEST_DURATION_SECONDS`] (`mcp_request_duration_seconds`) | histogram | `method`, `era` |
//!
//! `method` is the method's wire name, or `unknown` for a method no table names (so that a
//! client cannot grow the label set). The duration runs from the engine receiving the request
//! to its reply being ready (a queued call's wait included, the write not); a task-augmented
//! call ends when its `CreateTaskResult` is ready.
//!
//! Outcomes (the `outcome` label and span field):
//!
//! | outcome | meaning |
//! | --- | --- |
//! | `ok` | a result (an MRTR `input_required` or a `CreateTaskResult` included) |
//! | `error` | the method or its handler answered a JSON-RPC error |
//! | `refused` | answered before any handler ran (headers, session, route, duplicate id, bounds) |
//! | `cancelled` | cancelled: nothing was answered |
//! | `listen` | a `subscriptions/listen` stream was opened |
//! | `dropped` | the transport gave the call up without running it to its end (over a bound, shutting down, the client gone) |
//!
//! [`AuthInfo::principal`]: mcp_protocol::auth::AuthInfo::principal

use std::sync::{LazyLock, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::meta::{meta_of, meta_version};
use mcp_protocol::{Era, Method, Request, Revision};
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::FastMap;
use crate::reply::Reply;

/// Reads one HTTP request header by (lowercase) name.
type Headers<'h> = dyn Fn(&str) -> Option<&'h [u8]> + Sync + 'h;

/// The name of the per-request span.
pub const SPAN_NAME: &str = "mcp.request";
/// Counter of requests, labelled `method`, `era` and `outcome`.
pub const REQUESTS_TOTAL: &str = "mcp_requests_total";
/// Histogram of request durations in seconds, labelled `method` and `era`.
pub const REQUEST_DURATION_SECONDS: &str = "mcp_request_duration_seconds";
/// The `_meta` key (and HTTP header) of the W3C trace parent.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key (and HTTP header) of the W3C trace state.
pub const TRACESTATE: &str = "tracestate";

/// The longest `tracestate` recorded (the W3C limit a vendor must propagate).
const MAX_TRACESTATE: usize = 512;

/// A caller's valid W3C trace context, borrowed from its request: what the hook of
/// [`set_trace_context_hook`] receives (the same values as the span's fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceContext<'a> {
    /// The whole `traceparent`, as sent (`00-<trace id>-<parent span id>-<flags>`).
    pub traceparent: &'a str,
    /// The trace id: 32 lowercase hex digits, not all zeros.
    pub trace_id: &'a str,
    /// The caller's span id: 16 lowercase hex digits, not all zeros.
    pub parent_span_id: &'a str,
    /// The trace flags: 2 hex digits (`01`: sampled).
    pub trace_flags: &'a str,
    /// The `tracestate`, when one came with the `traceparent` (printable ASCII, at most 512
    /// bytes).
    pub tracestate: Option<&'a str>,
}

type Hook = Box<dyn Fn(&Span, &TraceContext<'_>) + Send + Sync>;

static TRACE_CONTEXT_HOOK: OnceLock<Hook> = OnceLock::new();

/// Sets the function called with each request's span and its caller's trace context (see the
/// [module docs](self#w3c-trace-context)): right after the span is created, before it is first
/// entered, and only when some subscriber is interested in the span. Once per process: `false`
/// when a hook was set already (the first one stays).
pub fn set_trace_context_hook(hook: impl Fn(&Span, &TraceContext<'_>) + Send + Sync + 'static) -> bool {
    TRACE_CONTEXT_HOOK.set(Box::new(hook)).is_ok()
}

/// How a request ended (the `outcome` label and span field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    Error,
    Refused,
    Cancelled,
    Listen,
    Dropped,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Refused => "refused",
            Outcome::Cancelled => "cancelled",
            Outcome::Listen => "listen",
            Outcome::Dropped => "dropped",
        }
    }

    fn of(reply: &Reply) -> Self {
        match reply {
            Reply::Result(_) | Reply::Encoded(_) => Outcome::Ok,
            Reply::Error(_) => Outcome::Error,
            Reply::Cancelled => Outcome::Cancelled,
        }
    }
}

fn era_label(era: Era) -> &'static str {
    match era {
        Era::Legacy => "legacy",
        Era::Modern => "modern",
    }
}

/// One request under observation: its span and its clock. Counted once, when finished or
/// dropped.
#[derive(Debug)]
pub(crate) struct Observed {
    span: Span,
    start: Instant,
    method: &'static str,
    era: Era,
    revision: bool,
    outcome: Option<Outcome>,
}

impl Observed {
    /// Opens the observation of a request the engine received.
    pub(crate) fn start(
        req: &Request,
        era: Era,
        auth: &AuthInfo,
        revision: Option<Revision>,
        headers: Option<&Headers<'_>>,
    ) -> Self {
        let span = tracing::info_span!(
            target: "mcp_runtime::observe",
            "mcp.request",
            method = req.method.as_str(),
            id = %req.id,
            era = era_label(era),
            revision = Empty,
            session = Empty,
            principal = &*auth.principal,
            trace_id = Empty,
            parent_span_id = Empty,
            trace_flags = Empty,
            tracestate = Empty,
            outcome = Empty,
        );
        let mut observed = Observed {
            span,
            start: Instant::now(),
            method: req.method.label(),
            era,
            revision: false,
            outcome: None,
        };
        if !observed.span.is_disabled() {
            let meta = meta_of(req.params.as_ref());
            let revision = match era {
                Era::Modern => meta_version(req.params.as_ref()).and_then(|v| Revision::parse(&v)),
                Era::Legacy => revision,
            };
            observed.record_revision(revision);
            record_trace(&observed.span, meta, headers);
        }
        observed
    }

    /// The request's span (for `Instrument`).
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    fn record_revision(&mut self, revision: Option<Revision>) {
        if let Some(r) = revision.filter(|_| !self.revision) {
            self.span.record("revision", r.as_str());
            self.revision = true;
        }
    }

    fn record_session(&self, session: Option<&str>) {
        if let Some(s) = session {
            self.span.record("session", s);
        }
    }

    /// Records what routing learnt: the revision, the session the call runs in, and the label of
    /// a custom method (registered by the server, so that its label set stays bounded).
    pub(crate) fn routed(&mut self, revision: Option<Revision>, session: Option<&str>, label: Option<&'static str>) {
        if let Some(label) = label {
            self.method = label;
        }
        if !self.span.is_disabled() {
            self.record_revision(revision);
            self.record_session(session);
        }
    }

    /// Closes the observation with how the call ended.
    pub(crate) fn finish(mut self, reply: &Reply) {
        self.outcome = Some(Outcome::of(reply));
    }

    /// Closes the observation of a call that was cancelled before it started.
    pub(crate) fn cancelled(mut self) {
        self.outcome = Some(Outcome::Cancelled);
    }

    /// Closes the observation of an immediate answer (`frame`, in `session` when `initialize`
    /// minted one): a refusal, except `initialize`'s result.
    pub(crate) fn answered(mut self, frame: &[u8], session: Option<&str>) {
        if !self.span.is_disabled() {
            self.record_session(session);
        }
        let initialized = self.method == Method::Initialize.as_str() && !is_error_frame(frame);
        self.outcome = Some(if initialized { Outcome::Ok } else { Outcome::Refused });
    }

    /// Closes the observation of a request that opened a listen stream.
    pub(crate) fn listening(mut self) {
        self.outcome = Some(Outcome::Listen);
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        let outcome = self.outcome.unwrap_or(Outcome::Dropped);
        self.span.record("outcome", outcome.as_str());
        count(self.method, self.era, outcome, Some(self.start));
    }
}

/// Counts a request refused inside a batch (it gets no span).
pub(crate) fn refused(method: &Method, era: Era) {
    count(method.label(), era, Outcome::Refused, None);
}

/// The metadata of both metrics (what `metrics::counter!` would give them here).
static METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// The metric keys built so far, by their labels. The label sets are closed (`method` is a
/// catalogue name or `unknown`, `era` and `outcome` are fixed words), so the table stays small,
/// and a request's metrics cost a lookup instead of a label vector and a key hash each.
#[derive(Default)]
struct Keys {
    counters: FastMap<(&'static str, &'static str, &'static str), metrics::Key>,
    histograms: FastMap<(&'static str, &'static str), metrics::Key>,
}

static KEYS: LazyLock<RwLock<Keys>> = LazyLock::new(RwLock::default);

fn label(key: &'static str, value: &'static str) -> metrics::Label {
    metrics::Label::from_static_parts(key, value)
}

fn count(method: &'static str, era: Era, outcome: Outcome, start: Option<Instant>) {
    let era = era_label(era);
    let counter = (method, era, outcome.as_str());
    let histogram = (method, era);
    {
        let keys = KEYS.read().unwrap_or_else(PoisonError::into_inner);
        if let (Some(c), Some(h)) = (keys.counters.get(&counter), keys.histograms.get(&histogram)) {
            record(c, h, start);
            return;
        }
    }
    let mut keys = KEYS.write().unwrap_or_else(PoisonError::into_inner);
    let keys = &mut *keys;
    let c = keys.counters.entry(counter).or_insert_with(|| {
        let labels = vec![label("method", method), label("era", era), label("outcome", counter.2)];
        metrics::Key::from_parts(REQUESTS_TOTAL, labels)
    });
    let h = keys.histograms.entry(histogram).or_insert_with(|| {
        let labels = vec![label("method", method), label("era", era)];
        metrics::Key::from_parts(REQUEST_DURATION_SECONDS, labels)
    });
    record(c, h, start);
}

/// Counts a request under its keys, and its duration when it has a start.
fn record(counter: &metrics::Key, histogram: &metrics::Key, start: Option<Instant>) {
    metrics::with_recorder(|r| {
        r.register_counter(counter, &METADATA).increment(1);
        if let Some(start) = start {
            r.register_histogram(histogram, &METADATA)
                .record(start.elapsed().as_secs_f64());
        }
    });
}

/// Whether an encoded response is an error: its first top-level member after the id is
/// `error`. The id cannot hide either key: inside a JSON string a quote is escaped, so `,"`
/// only occurs between members.
fn is_error_frame(frame: &[u8]) -> bool {
    let find = |needle: &[u8]| frame.windows(needle.len()).position(|w| w == needle);
    match (find(b",\"error\":"), find(b",\"result\":")) {
        (Some(e), Some(r)) => e < r,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Records the caller's trace context on the span: `_meta` first, then the HTTP header.
fn record_trace(span: &Span, meta: Option<&serde_json::Map<String, Value>>, headers: Option<&Headers<'_>>) {
    let from_meta = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
    let from_header = |key: &str| {
        headers
            .and_then(|get| get(key))
            .and_then(|v| std::str::from_utf8(v).ok())
    };
    let (parent, state) = match from_meta(TRACEPARENT) {
        Some(p) => (Some(p), from_meta(TRACESTATE)),
        None => (from_header(TRACEPARENT), from_header(TRACESTATE)),
    };
    let Some((traceparent, parent)) = parent.and_then(|p| Some((p, TraceParent::parse(p)?))) else {
        return;
    };
    span.record("trace_id", parent.trace_id);
    span.record("parent_span_id", parent.parent_id);
    span.record("trace_flags", parent.flags);
    let tracestate = state.filter(|s| valid_tracestate(s));
    if let Some(state) = tracestate {
        span.record("tracestate", state);
    }
    if let Some(hook) = TRACE_CONTEXT_HOOK.get() {
        hook(
            span,
            &TraceContext {
                traceparent,
                trace_id: parent.trace_id,
                parent_span_id: parent.parent_id,
                trace_flags: parent.flags,
                tracestate,
            },
        );
    }
}

fn valid_tracestate(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_TRACESTATE && s.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// The parts of a W3C `traceparent`, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TraceParent<'a> {
    trace_id: &'a str,
    parent_id: &'a str,
    flags: &'a str,
}

impl<'a> TraceParent<'a> {
    /// Parses `version-traceid-parentid-flags` (W3C Trace Context §3.2): lowercase hex, version
    /// `ff` invalid, all-zero ids invalid; a version above `00` may carry more fields after a
    /// `-`, which are ignored.
    fn parse(s: &'a str) -> Option<Self> {
        let hex = |part: &str, len: usize| {
            part.len() == len && part.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let nonzero = |part: &str| part.bytes().any(|b| b != b'0');
        let version = s.get(0..2)?;
        if !hex(version, 2) || version == "ff" || s.as_bytes().get(2) != Some(&b'-') {
            return None;
        }
        let rest = &s[3..];
        let (trace_id, parent_id, flags) = (rest.get(0..32)?, rest.get(33..49)?, rest.get(50..52)?);
        let dashes = rest.as_bytes().get(32) == Some(&b'-') && rest.as_bytes().get(49) == Some(&b'-');
        let tail = &rest[52..];
        let tail_ok = if version == "00" {
            tail.is_empty()
        } else {
            tail.is_empty() || tail.starts_with('-')
        };
        (dashes
            && tail_ok
            && hex(trace_id, 32)
            && nonzero(trace_id)
            && hex(parent_id, 16)
            && nonzero(parent_id)
            && hex(flags, 2))
        .then_some(TraceParent {
            trace_id,
            parent_id,
            flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_table() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            TraceParent::parse(ok),
            Some(TraceParent {
                trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
                parent_id: "00f067aa0ba902b7",
                flags: "01",
            })
        );
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
        assert!(TraceParent::parse(future).is_some());
        for bad in [
            "",
            "00",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473é-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn tracestate_bounds() {
        assert!(valid_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
        assert!(!valid_tracestate(""));
        assert!(!valid_tracestate("a=b\nc=d"));
        assert!(!valid_tracestate(&"a".repeat(MAX_TRACESTATE + 1)));
    }

    #[test]
    fn error_frames() {
        use mcp_protocol::RequestId;
        use mcp_protocol::jsonrpc::{encode_error, encode_result};
        let id = RequestId::from(",\"error\":");
        assert!(!is_error_frame(&encode_result(&id, &serde_json::json!({"error": 1}))));
        assert!(is_error_frame(&encode_error(
            Some(&id),
            &mcp_protocol::RpcError::internal()
        )));
        assert!(is_error_frame(&encode_error(None, &mcp_protocol::RpcError::internal())));
    }

    #[test]
    fn method_labels_are_bounded() {
        assert_eq!(Method::parse("tools/call").label(), "tools/call");
        assert_eq!(Method::parse("x/whatever").label(), "unknown");
    }
}
