//! The request span recorded straight with OpenTelemetry (the `otel` feature): the same span
//! as the `tracing` one (the [module docs](super) list its name and attributes), built with the
//! tracer the server was given ([`Tracer`]) instead of going through a `tracing` subscriber.
//!
//! Why a second way: `tracing-opentelemetry` turns every `tracing` span into an OpenTelemetry
//! one through the subscriber's registry, visiting and copying each field, entering and
//! leaving the span at every poll of the request; measured on the bench's W1, that multiplied
//! the server's CPU per request by 1.6. Here the span is built once from values the engine
//! already holds (static strings, the shared principal), and only its id and the client's
//! address are formatted.
//!
//! The caller's W3C trace context (`_meta`, or the HTTP headers) is the span's remote parent,
//! and the request's handler runs with the span's context current
//! (`opentelemetry::Context::current()`): spans a handler starts with the OpenTelemetry API
//! are its children.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use mcp_protocol::{Method, Notification, NotificationMethod, Request, RequestId, Revision};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue};

use super::trace::read_trace;
use super::{Origin, Subject};

/// The OpenTelemetry tracer the server records its request spans with (the `otel` feature;
/// `ServerConfig::tracer`). Cheap to clone.
///
/// ```ignore
/// # use mcp_runtime as mcp_server;
/// use opentelemetry::trace::TracerProvider as _;
/// let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
///     .with_batch_exporter(exporter)
///     .build();
/// let tracer = mcp_server::observe::Tracer::new(provider.tracer("my-server"));
/// ```
#[derive(Clone)]
pub struct Tracer(Arc<opentelemetry::global::BoxedTracer>);

impl Tracer {
    /// Wraps any OpenTelemetry tracer (the SDK's `SdkTracer`, a provider's `tracer(…)`).
    pub fn new<T, S>(tracer: T) -> Tracer
    where
        T: opentelemetry::trace::Tracer<Span = S> + Send + Sync + 'static,
        S: opentelemetry::trace::Span + Send + Sync + 'static,
    {
        Tracer(Arc::new(opentelemetry::global::BoxedTracer::new(Box::new(tracer))))
    }
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tracer")
    }
}

/// One request's OpenTelemetry span, open until dropped: held in its context, which the
/// handler runs in.
pub(crate) struct RequestSpan {
    cx: Context,
}

impl std::fmt::Debug for RequestSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RequestSpan")
            .field(&self.cx.span().span_context().span_id())
            .finish()
    }
}

impl RequestSpan {
    /// Starts the span of a request or notification (named `name`), its attributes those known
    /// on arrival.
    pub(super) fn start(
        tracer: &Tracer,
        name: Cow<'static, str>,
        subject: Subject<'_>,
        revision: Option<Revision>,
        origin: Origin<'_, '_>,
        entry: Option<(&'static str, Cow<'_, str>)>,
    ) -> RequestSpan {
        let mut attributes = Vec::with_capacity(12);
        attributes.push(KeyValue::new("mcp.method.name", method_text(subject)));
        if let Some(id) = subject.id() {
            attributes.push(KeyValue::new("jsonrpc.request.id", id_text(id)));
        }
        if let Some(r) = revision {
            attributes.push(KeyValue::new("mcp.protocol.version", r.as_str()));
        }
        if subject.is_tool_call() {
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some((key, name)) = entry {
            attributes.push(KeyValue::new(key, name.into_owned()));
        }
        if let Some(uri) = super::resource_uri(subject) {
            attributes.push(KeyValue::new("mcp.resource.uri", uri.into_owned()));
        }
        if let Some(network) = origin.network {
            attributes.push(KeyValue::new("network.transport", network.transport()));
            if let Some(name) = network.protocol_name() {
                attributes.push(KeyValue::new("network.protocol.name", name));
            }
            if let Some(version) = network.protocol_version() {
                attributes.push(KeyValue::new("network.protocol.version", version));
            }
        }
        if let Some(remote) = origin.remote {
            attributes.push(KeyValue::new("client.address", ip_text(remote.address)));
            if let Some(port) = remote.port {
                attributes.push(KeyValue::new("client.port", i64::from(port)));
            }
        }
        attributes.push(KeyValue::new("user.id", origin.auth.principal.clone()));
        let parent = remote_parent(subject, origin);
        let builder = tracer
            .0
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes);
        let span = tracer.0.build_with_context(builder, &parent);
        RequestSpan {
            cx: parent.with_span(span),
        }
    }

    /// The context the request's handler runs in.
    pub(super) fn context(&self) -> &Context {
        &self.cx
    }

    /// Renames the span (a registered tool or prompt learnt at routing).
    pub(super) fn rename(&self, name: String) {
        self.cx.span().update_name(name);
    }

    /// Adds an attribute.
    pub(super) fn set(&self, key: &'static str, value: impl Into<opentelemetry::Value>) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// Marks the span failed: `error.type`, and the error status with its description.
    pub(super) fn fail(&self, error_type: Cow<'static, str>, code: Option<i32>, message: Option<&str>) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("error.type", error_type));
        if let Some(code) = code {
            span.set_attribute(KeyValue::new("rpc.response.status_code", code.to_string()));
        }
        span.set_status(Status::error(message.unwrap_or_default().to_owned()));
    }
}

impl Drop for RequestSpan {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// The method as its attribute's text: the table's `'static` string, or the one sent.
fn method_text(subject: Subject<'_>) -> opentelemetry::Value {
    match subject {
        Subject::Request(Request {
            method: Method::Unknown(name),
            ..
        })
        | Subject::Notification(Notification {
            method: NotificationMethod::Unknown(name),
            ..
        }) => name.clone().into(),
        known => known.label().into(),
    }
}

/// A request id as its attribute's text (the `tracing` span's `Display`), an integer written
/// without the formatting machinery.
fn id_text(id: &RequestId) -> opentelemetry::Value {
    match id {
        RequestId::Number(n) => itoa::Buffer::new().format(*n).to_owned().into(),
        RequestId::String(s) => s.clone().into(),
    }
}

/// A client address as its attribute's text (`Display`'s), an IPv4 one written without the
/// formatting machinery, into a string of its exact length (the attribute keeps it as a boxed
/// `str`: a longer buffer would be reallocated to fit).
fn ip_text(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let mut text = [0u8; 15];
            let mut len = 0;
            let mut digits = itoa::Buffer::new();
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    text[len] = b'.';
                    len += 1;
                }
                let d = digits.format(octet).as_bytes();
                text[len..len + d.len()].copy_from_slice(d);
                len += d.len();
            }
            // Digits and dots only.
            String::from_utf8_lossy(&text[..len]).into_owned()
        }
        IpAddr::V6(v6) => v6.to_string(),
    }
}

/// The caller's trace context as the span's remote parent (an empty context without one).
fn remote_parent(subject: Subject<'_>, origin: Origin<'_, '_>) -> Context {
    let mut parent = None;
    read_trace(subject.params(), origin.headers, |trace| {
        let (Ok(trace_id), Ok(span_id), Ok(flags)) = (
            TraceId::from_hex(trace.trace_id),
            SpanId::from_hex(trace.parent_span_id),
            u8::from_str_radix(trace.trace_flags, 16),
        ) else {
            return;
        };
        let state = trace
            .tracestate
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        let context = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state);
        parent = Some(Context::new().with_remote_span_context(context));
    });
    parent.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_read_as_display_writes_them() {
        for ip in ["127.0.0.1", "0.0.0.0", "255.255.255.255", "10.20.3.44", "2001:db8::1"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(ip_text(ip), ip.to_string());
        }
        for id in [
            RequestId::Number(0),
            RequestId::Number(-42),
            RequestId::Number(i64::MAX),
            RequestId::from("a-b"),
        ] {
            assert_eq!(id_text(&id).as_str(), id.to_string());
        }
    }
}
