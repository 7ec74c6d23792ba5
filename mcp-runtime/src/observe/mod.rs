//! Observability: what every request leaves behind in [`tracing`](https://docs.rs/tracing) and in the
//! [`metrics`](https://docs.rs/metrics) facade, after OpenTelemetry's semantic conventions for
//! MCP (`docs/gen-ai/mcp.md` of `open-telemetry/semantic-conventions-genai`, status
//! Development). The names below are the contract; this module is the one place that spells
//! them.
//!
//! The engine calls in here once per request and once per client notification, whatever the
//! transport: `Engine::request` opens the observation, the `Call` it hands back carries it,
//! and `Call::run` closes it (requests of a batch are observed from `Call::run` on);
//! `Engine::notification` (and a batch, for each notification in it) observes a notification
//! from its arrival until it is routed or refused. Each transport tells the engine its
//! [`Network`] (stdio: `pipe`; HTTP: `tcp` with `http` and its version). Nothing here installs
//! a subscriber or a recorder: with none installed, the span is `Span::none()` (no field is
//! formatted, no trace context parsed) and the metrics go to the facade's no-op recorder.
//!
//! # The span
//!
//! One span per request or notification (the conventions' server span covers both), of kind
//! `SERVER`: `tracing` name [`SPAN_NAME`] (`mcp.server`), level
//! `INFO`, target `mcp_runtime::observe`. Its OpenTelemetry name is in `otel.name` (which
//! `tracing-opentelemetry` uses): `{mcp.method.name} {target}`, the target being the tool
//! (`tools/call`) or prompt (`prompts/get`) when it is a registered one, or the method alone
//! (`unknown` for a method no table names, so that a client cannot grow the set of names).
//! The handler runs inside it (events it logs are its children). Attributes:
//!
//! | attribute | value |
//! | --- | --- |
//! | `otel.kind` | `server` |
//! | `mcp.method.name` | the JSON-RPC method (`tools/call`, …) |
//! | `jsonrpc.request.id` | the JSON-RPC request id (none on a notification) |
//! | `mcp.protocol.version` | the protocol revision (`2025-11-25`, `2026-07-28`, …), once known |
//! | `mcp.session.id` | the legacy session the request runs in (for `initialize`, the one it minted); never on 2026-07-28 requests, which have no session |
//! | `gen_ai.operation.name` | `execute_tool` on `tools/call` |
//! | `gen_ai.tool.name` | the tool `tools/call` names |
//! | `gen_ai.prompt.name` | the prompt `prompts/get` names |
//! | `mcp.resource.uri` | the resource `resources/read`, `resources/subscribe` or `resources/unsubscribe` names |
//! | `network.transport` | `pipe` (stdio) or `tcp` (HTTP) |
//! | `network.protocol.name`, `network.protocol.version` | `http` and `1.1` or `2` over HTTP |
//! | `client.address` | the client's IP address, where the transport knows it (HTTP) |
//! | `client.port` | the client's port, with `client.address` when the connection is with the client itself (not with a trusted proxy that forwarded its address) |
//! | `user.id` | the authenticated caller ([`AuthInfo::principal`]; `anonymous` without authentication) |
//! | `error.type` | why it failed (below); absent when it succeeded |
//! | `rpc.response.status_code` | the JSON-RPC error code of an error answer (`-32602`) |
//! | `otel.status_code`, `otel.status_description` | `error` whenever `error.type` is set; the JSON-RPC error's message |
//! | `trace_id`, `parent_span_id`, `trace_flags`, `tracestate` | the caller's W3C trace context, from `traceparent` and `tracestate` |
//!
//! `error.type` is one of:
//!
//! | value | meaning |
//! | --- | --- |
//! | the JSON-RPC error code (`-32602`) | the request was answered with an error: refused before any handler ran (headers, session, route, duplicate id, bounds), or by its method or handler |
//! | `tool_error` | a `tools/call` answered with a result whose `isError` is true |
//! | `cancelled` | cancelled: nothing was answered |
//! | `dropped` | the transport gave the call up without running it to its end (over a bound, shutting down, the client gone) |
//!
//! No token, credential, argument or result is ever recorded (the conventions' opt-in
//! `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` are not offered). `baggage` is
//! not recorded either (it may carry anything).
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
//! # Straight to OpenTelemetry (the `otel` feature)
//!
//! Give the server an OpenTelemetry tracer ([`ServerConfig::tracer`](crate::ServerConfig#structfield.tracer),
//! `McpServerBuilder::tracer` in `mcp-server`) and it records each request's span itself, with
//! the name, kind, attributes and status above, without going through a `tracing` subscriber
//! (several times cheaper per request than `tracing-opentelemetry`, which visits, copies and
//! enters the `tracing` span at every poll). The caller's valid `traceparent` is the span's
//! remote parent, and the handler runs with the span's context current
//! (`opentelemetry::Context::current()`), so spans it starts with the OpenTelemetry API are the
//! request span's children. The `trace_id`, `parent_span_id`, `trace_flags` and `tracestate`
//! fields are the `tracing` span's alone: in OpenTelemetry they are the span's parent.
//!
//! # Through `tracing-opentelemetry`
//!
//! To continue the caller's trace with `tracing-opentelemetry` instead (the conventions: the
//! context from `_meta` is the server span's parent), set a hook with
//! [`set_trace_context_hook`] in `main`: it is called with each request's span and its
//! [`TraceContext`] right after the span is created, before it is first entered, which is when
//! `OpenTelemetrySpanExt::set_parent` takes effect:
//!
//! ```ignore
//! # use mcp_runtime as mcp_server;
//! use opentelemetry::propagation::TextMapPropagator;
//! use opentelemetry_sdk::propagation::TraceContextPropagator;
//! use tracing_opentelemetry::OpenTelemetrySpanExt;
//!
//! mcp_server::observe::set_trace_context_hook(|span, trace| {
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
//! enable `mcp.server`, target `mcp_runtime::observe`, level `INFO`). Use one way or the other:
//! with both, each request is recorded twice.
//!
//! # Metrics
//!
//! Two histograms, in seconds (the recorder is told their unit,
//! [`Unit::Seconds`](::metrics::Unit::Seconds), and a description with the first sample it
//! receives, so that a recorder installed after the first requests learns them too):
//!
//! | metric | recorded | labels |
//! | --- | --- | --- |
//! | [`OPERATION_DURATION`] (`mcp.server.operation.duration`) | once per request or notification | `mcp.method.name`, `error.type`, `rpc.response.status_code`, `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.protocol.version`, `network.transport`, `network.protocol.name`, `network.protocol.version` |
//! | [`SESSION_DURATION`] (`mcp.server.session.duration`) | once per legacy session, when it ends (deleted, expired, its connection closed, or dropped with the runtime when the server shuts down; a session shared through a store outlives an instance that shuts down), by the instance that opened it | `mcp.protocol.version`, `network.transport`, `network.protocol.name`, `network.protocol.version` |
//!
//! A label is present when its attribute is (above): `gen_ai.tool.name` and
//! `gen_ai.prompt.name` only for a registered tool or prompt, and `mcp.method.name` is
//! `unknown` for a method no table names, so that a client cannot grow the label set. The
//! operation runs from the engine receiving the request to its answer being ready (a queued
//! call's wait included, the write not); a task-augmented call ends when its
//! `CreateTaskResult` is ready; a request refused inside a batch, from the batch's arrival to
//! its refusal; a notification, from its arrival to its routing (its session found, every
//! middleware layer passed) or its refusal (`error.type` the code of the answer, `dropped`
//! when a layer dropped it without one).
//!
//! The conventions advise the bucket boundaries [`DURATION_BUCKETS`] for both; the facade
//! carries no advice, so an exporter is told them where it is built, e.g.
//! `metrics-exporter-prometheus`'s
//! `PrometheusBuilder::set_buckets_for_metric(Matcher::Prefix("mcp.server.".into()), &DURATION_BUCKETS)`.
//! Prometheus spells the names `mcp_server_operation_duration_seconds` and
//! `mcp_server_session_duration_seconds` (with the unit suffix), the labels with `_` for `.`.
//!
//! # Tasks
//!
//! The tasks of the queue (resumable tools' tasks, and every task a front queues) have
//! metrics and spans of their own, named by this library (the conventions have none for tasks):
//!
//! | metric | kind | what |
//! | --- | --- | --- |
//! | [`TASKS_QUEUED`] (`mcp.server.tasks.queued`) | gauge | tasks waiting in the shared queue (sampled every 5 s by each instance that runs tasks) |
//! | [`TASKS_RUNNING`] (`mcp.server.tasks.running`) | gauge | attempts running on this instance |
//! | [`TASKS_RETRIED`] (`mcp.server.tasks.retried`) | counter | attempts started again after an earlier one stopped |
//! | [`TASKS_RESUMED`] (`mcp.server.tasks.resumed`) | counter | those of them that started from a checkpoint |
//! | [`TASKS_LOST`] (`mcp.server.tasks.lost`) | counter, label `reason` (`not_resumable`, `attempts`, `tool`, `call`, `stopped`) | tasks failed because their run stopped and could not run again |
//! | [`TASKS_HANDED_BACK`] (`mcp.server.tasks.handed_back`) | counter | running tasks a draining instance gave back to the queue |
//! | [`TASK_QUEUE_AGE`] (`mcp.server.tasks.queue_age`) | histogram, seconds | how long a claimed task had waited since its last write |
//!
//! Each attempt runs in a span [`ATTEMPT_SPAN`] (`mcp.task.attempt`, target
//! `mcp_runtime::observe`, level `INFO`, `otel.kind` `internal`) with `mcp.task.id`,
//! `mcp.task.attempt` and `gen_ai.tool.name`, in the trace of the call that created the task:
//! its `traceparent` (kept with the call's `_meta`) is recorded on the span and handed to the
//! trace-context hook, as for a request (a first attempt that starts inline, before its task
//! exists, gets `mcp.task.id` when the call is handed off).
//!
//! Migration: the counter `mcp_requests_total{method, era, outcome}` and the histogram
//! `mcp_request_duration_seconds{method, era}` of earlier versions are gone: count requests with
//! the operation histogram's count (`_count` in Prometheus), `method` is `mcp.method.name`,
//! `era` follows from `mcp.protocol.version` (`2026-07-28` and later: modern), and `outcome`
//! from `error.type`. The span `mcp.request` is now `mcp.server`, its fields renamed as above
//! (`method`, `id`, `revision`, `session`, `principal`, `outcome` were their old names).
//!
//! [`AuthInfo::principal`]: mcp_protocol::auth::AuthInfo::principal

mod metrics;
mod network;
#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "shared-store")]
pub(crate) mod tasks;
mod trace;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::meta::meta_version;
use mcp_protocol::{Era, Method, Notification, Params, Request, RequestId, Revision, RpcError};
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

pub(crate) use self::metrics::session as session_ended;
pub use self::metrics::{DURATION_BUCKETS, OPERATION_DURATION, SESSION_DURATION};
use self::metrics::{Failure, Operation, TargetKind};
pub use self::network::{HttpVersion, Network};
#[cfg(feature = "otel")]
pub use self::otel::Tracer;
#[cfg(feature = "shared-store")]
pub use self::tasks::{
    ATTEMPT_SPAN, TASK_QUEUE_AGE, TASKS_HANDED_BACK, TASKS_LOST, TASKS_QUEUED, TASKS_RESUMED, TASKS_RETRIED,
    TASKS_RUNNING,
};
pub use self::trace::{TRACEPARENT, TRACESTATE, TraceContext, set_trace_context_hook};
use crate::reply::Reply;

use self::trace::Headers;

/// Without the `otel` feature no tracer exists (an empty type: no value of it can be made).
#[cfg(not(feature = "otel"))]
#[derive(Debug, Clone)]
pub enum Tracer {}

/// The name of the per-request `tracing` span (its OpenTelemetry name is in `otel.name`).
pub const SPAN_NAME: &str = "mcp.server";

/// Where a request came from: what the transport told the engine about it.
#[derive(Clone, Copy)]
pub(crate) struct Origin<'a, 'h> {
    /// The caller.
    pub(crate) auth: &'a AuthInfo,
    /// The revision known beside the body (a legacy request's session, a transport header).
    pub(crate) revision: Option<Revision>,
    /// The HTTP headers (for a `traceparent` header).
    pub(crate) headers: Option<&'a Headers<'h>>,
    /// The transport's network.
    pub(crate) network: Option<Network>,
    /// The client.
    pub(crate) remote: Option<crate::remote::Remote>,
    /// The OpenTelemetry tracer the server records its spans with, if any (the `otel`
    /// feature).
    pub(crate) tracer: Option<&'a Tracer>,
}

/// One request under observation: its span and its clock. Measured once, when finished or
/// dropped.
#[derive(Debug)]
pub(crate) struct Observed {
    span: Span,
    start: Instant,
    method: &'static str,
    revision: Option<Revision>,
    network: Option<Network>,
    /// The registered tool or prompt the request names.
    target: Option<Target>,
    /// How it ended (`None` until it did: dropped).
    end: Option<Option<Failure>>,
    /// The OpenTelemetry span, when the server has a tracer.
    #[cfg(feature = "otel")]
    otel: Option<otel::RequestSpan>,
}

/// The registered tool or prompt a request names: its span's name and its duration's labels
/// carry the name.
#[derive(Clone)]
pub(crate) enum Target {
    Tool(Arc<dyn Named>),
    Prompt(Arc<dyn Named>),
}

/// What the observation needs of a registered tool or prompt: its name. (A trait, so that this
/// module needs nothing of the catalog, which implements it.)
pub(crate) trait Named: Send + Sync {
    /// The registered name.
    fn name(&self) -> &str;
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple(self.kind().attribute()).field(&self.name()).finish()
    }
}

impl Target {
    fn kind(&self) -> TargetKind {
        match self {
            Target::Tool(_) => TargetKind::Tool,
            Target::Prompt(_) => TargetKind::Prompt,
        }
    }

    fn name(&self) -> &str {
        match self {
            Target::Tool(t) => t.name(),
            Target::Prompt(p) => p.name(),
        }
    }
}

/// Resolves the tool (`tools/call`) or prompt (`prompts/get`) a request names among the
/// registered ones.
pub(crate) type Known<'k> = &'k dyn Fn(&Method, &str) -> Option<Target>;

/// What is observed: a request, or a notification (which has no id, and names no tool, prompt
/// or resource).
#[derive(Clone, Copy)]
pub(crate) enum Subject<'r> {
    Request(&'r Request),
    Notification(&'r Notification),
}

impl<'r> Subject<'r> {
    /// The method as sent.
    fn method(self) -> &'r str {
        match self {
            Subject::Request(r) => r.method.as_str(),
            Subject::Notification(n) => n.method.as_str(),
        }
    }

    /// The method's label: as sent when a table names it, `unknown` otherwise.
    fn label(self) -> &'static str {
        match self {
            Subject::Request(r) => r.method.label(),
            Subject::Notification(n) => n.method.label(),
        }
    }

    /// The request's id (a notification has none).
    fn id(self) -> Option<&'r RequestId> {
        match self {
            Subject::Request(r) => Some(&r.id),
            Subject::Notification(_) => None,
        }
    }

    /// The request's method (a notification's is not one).
    fn request(self) -> Option<&'r Method> {
        match self {
            Subject::Request(r) => Some(&r.method),
            Subject::Notification(_) => None,
        }
    }

    fn params(self) -> Option<&'r Params> {
        match self {
            Subject::Request(r) => r.params.as_ref(),
            Subject::Notification(n) => n.params.as_ref(),
        }
    }

    fn is_tool_call(self) -> bool {
        self.request() == Some(&Method::ToolsCall)
    }
}

impl Observed {
    /// Opens the observation of a request the engine received. `known` resolves the tool or
    /// prompt it names among the registered ones (a tool only for a span some subscriber
    /// wants, which is named before routing: otherwise routing resolves it, [`Self::routed`]).
    pub(crate) fn start(req: &Request, era: Era, origin: Origin<'_, '_>, known: Known<'_>) -> Self {
        Self::open(Subject::Request(req), era, origin, known)
    }

    /// Opens the observation of a notification the engine received: a span and a duration like
    /// a request's (the conventions' `mcp.server` span and operation duration cover both),
    /// without an id, closed by [`Self::acknowledged`] once it is routed, or by
    /// [`Self::answered`] with the refusal.
    pub(crate) fn notification(note: &Notification, era: Era, origin: Origin<'_, '_>) -> Self {
        Self::open(Subject::Notification(note), era, origin, &|_, _| None)
    }

    fn open(subject: Subject<'_>, era: Era, origin: Origin<'_, '_>, known: Known<'_>) -> Self {
        let start = Instant::now();
        let method = subject.label();
        let revision = match era {
            Era::Modern => meta_version(subject.params()).and_then(|v| Revision::parse(&v)),
            Era::Legacy => origin.revision,
        };
        // What is known now is set as the span is created (one pass of a subscriber's
        // visitor), rather than recorded afterwards, each `record` a lookup of the span.
        let span = tracing::info_span!(
            target: "mcp_runtime::observe",
            "mcp.server",
            otel.name = method,
            otel.kind = "server",
            otel.status_code = Empty,
            otel.status_description = Empty,
            mcp.method.name = subject.method(),
            jsonrpc.request.id = subject.id().map(tracing::field::display),
            mcp.protocol.version = revision.map(Revision::as_str),
            mcp.session.id = Empty,
            gen_ai.operation.name = subject.is_tool_call().then_some("execute_tool"),
            gen_ai.tool.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty,
            network.transport = origin.network.map(|n| n.transport()),
            network.protocol.name = origin.network.and_then(|n| n.protocol_name()),
            network.protocol.version = origin.network.and_then(|n| n.protocol_version()),
            client.address = origin.remote.map(|r| tracing::field::display(r.address)),
            client.port = origin.remote.and_then(|r| r.port),
            user.id = &*origin.auth.principal,
            error.type = Empty,
            rpc.response.status_code = Empty,
            trace_id = Empty,
            parent_span_id = Empty,
            trace_flags = Empty,
            tracestate = Empty,
        );
        let kind = subject.request().and_then(TargetKind::of);
        let named = match kind {
            Some(TargetKind::Tool) => !span.is_disabled() || origin.tracer.is_some(),
            Some(TargetKind::Prompt) => true,
            None => false,
        };
        let target = match subject.request() {
            Some(m) if named => subject
                .params()
                .and_then(|p| p.str("name"))
                .and_then(|name| known(m, &name)),
            _ => None,
        };
        #[cfg(feature = "otel")]
        let otel = origin.tracer.map(|tracer| {
            let name = match &target {
                Some(t) => Cow::Owned(span_name(method, t.name())),
                None => Cow::Borrowed(method),
            };
            let entry = entry_attribute(target.as_ref(), subject);
            otel::RequestSpan::start(tracer, name, subject, revision, origin, entry)
        });
        let observed = Observed {
            span,
            start,
            method,
            revision,
            network: origin.network,
            target,
            end: None,
            #[cfg(feature = "otel")]
            otel,
        };
        if !observed.span.is_disabled() {
            observed.describe(subject, origin);
        }
        observed
    }

    /// Records what the span says of the request beyond its creation fields (only for a span
    /// some subscriber wants: this formats).
    fn describe(&self, subject: Subject<'_>, origin: Origin<'_, '_>) {
        let span = &self.span;
        if let Some(target) = &self.target {
            span.record("otel.name", span_name(self.method, target.name()).as_str());
        }
        if let Some((key, name)) = entry_attribute(self.target.as_ref(), subject) {
            span.record(key, &*name);
        }
        if let Some(uri) = resource_uri(subject) {
            span.record("mcp.resource.uri", &*uri);
        }
        trace::record_trace(span, subject.params(), origin.headers);
    }

    /// `fut` run inside the request's span: the `tracing` one entered at each poll, and the
    /// OpenTelemetry one's context current (with the `otel` feature and a tracer).
    pub(crate) fn run_in<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        use tracing::Instrument as _;
        let fut = fut.instrument(self.span.clone());
        #[cfg(feature = "otel")]
        {
            use futures::future::Either;
            use opentelemetry::context::FutureExt as _;
            match &self.otel {
                Some(span) => Either::Left(fut.with_context(span.context().clone())),
                None => Either::Right(fut),
            }
        }
        #[cfg(not(feature = "otel"))]
        fut
    }

    /// Records what routing learnt: the revision, the legacy session the call runs in, the
    /// label of a custom method (registered by the server, so that its label set stays bounded)
    /// and the registered tool a `tools/call` names.
    pub(crate) fn routed<T: Named + 'static>(
        &mut self,
        revision: Option<Revision>,
        session: Option<&str>,
        label: Option<&'static str>,
        tool: Option<&Arc<T>>,
    ) {
        if let Some(label) = label {
            self.method = label;
        }
        if self.target.is_none()
            && let Some(tool) = tool
        {
            self.target = Some(Target::Tool(tool.clone() as Arc<dyn Named>));
            #[cfg(feature = "otel")]
            if let Some(span) = &self.otel {
                span.rename(span_name(self.method, tool.name()));
                span.set(TargetKind::Tool.attribute(), Arc::<str>::from(tool.name()));
            }
        }
        self.in_session(revision, session);
    }

    /// Records the revision (when it was not known on arrival) and the legacy session a request
    /// or notification runs in.
    pub(crate) fn in_session(&mut self, revision: Option<Revision>, session: Option<&str>) {
        let fresh = revision.filter(|_| self.revision.is_none());
        if fresh.is_some() {
            self.revision = fresh;
        }
        #[cfg(feature = "otel")]
        if let Some(span) = &self.otel {
            if let Some(r) = fresh {
                span.set("mcp.protocol.version", r.as_str());
            }
            if let Some(s) = session {
                span.set("mcp.session.id", s.to_owned());
            }
        }
        if !self.span.is_disabled() {
            if let Some(r) = fresh {
                self.span.record("mcp.protocol.version", r.as_str());
            }
            if let Some(s) = session {
                self.span.record("mcp.session.id", s);
            }
        }
    }

    /// Closes the observation with how the call ended.
    pub(crate) fn finish(mut self, reply: &Reply) {
        let failure = match reply {
            Reply::Result(v) => (self.method == Method::ToolsCall.as_str()
                && v.get("isError").and_then(Value::as_bool) == Some(true))
            .then_some(Failure::ToolError),
            Reply::Encoded(e) => e.is_tool_error().then_some(Failure::ToolError),
            Reply::Error(e) => {
                self.rpc_error(e.code, &e.message);
                Some(Failure::Code(e.code))
            }
            Reply::Cancelled => Some(Failure::Cancelled),
        };
        self.end = Some(failure);
    }

    /// Closes the observation of a call that was cancelled before it started.
    pub(crate) fn cancelled(mut self) {
        self.end = Some(Some(Failure::Cancelled));
    }

    /// Closes the observation of an immediate answer (`frame`, in `session` when `initialize`
    /// minted one): a refusal, or `initialize`'s result.
    pub(crate) fn answered(mut self, frame: &[u8], session: Option<&str>) {
        if let Some(s) = session.filter(|_| !self.span.is_disabled()) {
            self.span.record("mcp.session.id", s);
        }
        #[cfg(feature = "otel")]
        if let (Some(span), Some(s)) = (&self.otel, session) {
            span.set("mcp.session.id", s.to_owned());
        }
        let failure = error_code(frame).map(|code| {
            if self.traced() {
                let message = error_message(frame).unwrap_or_default();
                self.rpc_error(code, &message);
            }
            Failure::Code(code)
        });
        self.end = Some(failure);
    }

    /// Closes the observation of a request that opened a listen stream.
    pub(crate) fn listening(mut self) {
        self.end = Some(None);
    }

    /// Closes the observation of a notification that was routed (taken: a notification has no
    /// answer).
    pub(crate) fn acknowledged(mut self) {
        self.end = Some(None);
    }

    /// Whether some span records the request: the `tracing` one is wanted by a subscriber, or
    /// the OpenTelemetry one exists.
    fn traced(&self) -> bool {
        #[cfg(feature = "otel")]
        if self.otel.is_some() {
            return true;
        }
        !self.span.is_disabled()
    }

    /// Records a failure of a fixed `error.type` (`tool_error`, `cancelled`, `dropped`) on the
    /// spans, with the error status.
    fn fixed_failure(&self, error_type: &'static str) {
        #[cfg(feature = "otel")]
        if let Some(span) = &self.otel {
            span.fail(error_type.into(), None, None);
        }
        if !self.span.is_disabled() {
            self.span.record("error.type", error_type);
            self.span.record("otel.status_code", "error");
        }
    }

    /// Records a JSON-RPC error on the spans: its code and the status with its message.
    fn rpc_error(&self, code: i32, message: &str) {
        #[cfg(feature = "otel")]
        if let Some(span) = &self.otel {
            span.fail(code.to_string().into(), Some(code), Some(message));
        }
        if self.span.is_disabled() {
            return;
        }
        let code = code.to_string();
        self.span.record("error.type", code.as_str());
        self.span.record("rpc.response.status_code", code.as_str());
        self.span.record("otel.status_code", "error");
        self.span.record("otel.status_description", message);
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        let failure = self.end.unwrap_or(Some(Failure::Dropped));
        if let Some(fixed) = failure.and_then(Failure::fixed) {
            self.fixed_failure(fixed);
        }
        let (kind, name) = match &self.target {
            Some(target) => (Some(target.kind()), target.name()),
            None => (None, ""),
        };
        let op = Operation {
            method: self.method,
            failure,
            revision: self.revision,
            network: self.network,
            target: kind,
        };
        metrics::operation(op, name, self.start.elapsed().as_secs_f64());
    }
}

/// Measures a request refused inside a batch received at `received` (it gets no span): its
/// error's code.
pub(crate) fn refused(
    method: &Method,
    error: &RpcError,
    revision: Option<Revision>,
    network: Option<Network>,
    received: Instant,
) {
    let op = Operation {
        method: method.label(),
        failure: Some(Failure::Code(error.code)),
        revision,
        network,
        target: None,
    };
    metrics::operation(op, "", received.elapsed().as_secs_f64());
}

/// A span's name when the request names a registered tool or prompt: `{method} {name}`.
fn span_name(method: &str, target: &str) -> String {
    let mut name = String::with_capacity(method.len() + 1 + target.len());
    name.push_str(method);
    name.push(' ');
    name.push_str(target);
    name
}

/// The attribute naming the tool or prompt a request names: the registered one, or the name
/// it gives without being registered (an attribute then, never the span's name).
fn entry_attribute<'r>(target: Option<&'r Target>, subject: Subject<'r>) -> Option<(&'static str, Cow<'r, str>)> {
    match target {
        Some(t) => Some((t.kind().attribute(), Cow::Borrowed(t.name()))),
        None => subject
            .request()
            .and_then(TargetKind::of)
            .zip(subject.params().and_then(|p| p.str("name")))
            .map(|(kind, name)| (kind.attribute(), name)),
    }
}

/// The resource a request names (`mcp.resource.uri`): `resources/read`, `resources/subscribe`
/// and `resources/unsubscribe`.
fn resource_uri(subject: Subject<'_>) -> Option<Cow<'_, str>> {
    match subject.request()? {
        Method::ResourcesRead | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            subject.params()?.str("uri")
        }
        _ => None,
    }
}

/// The error code of an encoded error response (`None` for a result). The id cannot hide the
/// keys: inside a JSON string a quote is escaped, so `,"` only occurs between members.
fn error_code(frame: &[u8]) -> Option<i32> {
    let find = |needle: &[u8], from: usize| {
        frame[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    };
    let error = find(b",\"error\":", 0)?;
    if find(b",\"result\":", 0).is_some_and(|r| r < error) {
        return None;
    }
    let at = find(b"\"code\":", error)? + b"\"code\":".len();
    let digits = frame[at..]
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'-'))
        .map_or(&frame[at..], |end| &frame[at..at + end]);
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The message of an encoded error response (a parse: only for a span some subscriber wants).
fn error_message(frame: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(frame).ok()?;
    Some(v.get("error")?.get("message")?.as_str()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_frames() {
        use mcp_protocol::RequestId;
        use mcp_protocol::jsonrpc::{encode_error, encode_result};
        let id = RequestId::from(",\"error\":");
        assert_eq!(
            error_code(&encode_result(&id, &serde_json::json!({"error": {"code": 1}}))),
            None
        );
        let internal = mcp_protocol::RpcError::internal();
        assert_eq!(error_code(&encode_error(Some(&id), &internal)), Some(internal.code));
        assert_eq!(error_code(&encode_error(None, &internal)), Some(internal.code));
        assert_eq!(error_message(&encode_error(None, &internal)), Some(internal.message));
    }

    #[test]
    fn method_labels_are_bounded() {
        assert_eq!(Method::parse("tools/call").label(), "tools/call");
        assert_eq!(Method::parse("x/whatever").label(), "unknown");
    }
}
