//! The caller's W3C trace context (`traceparent`, `tracestate`): read from the request's
//! `_meta` (or, over HTTP, its headers), recorded on the request span, and handed to the hook
//! of [`set_trace_context_hook`] (see the [module docs](super#w3c-trace-context)).

use std::borrow::Cow;
use std::sync::OnceLock;

use mcp_protocol::Params;
use tracing::Span;

/// Reads one HTTP request header by (lowercase) name.
pub(super) type Headers<'h> = dyn Fn(&str) -> Option<&'h [u8]> + Sync + 'h;
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
/// [module docs](super#w3c-trace-context)): right after the span is created, before it is first
/// entered, and only when some subscriber is interested in the span. Once per process: `false`
/// when a hook was set already (the first one stays).
pub fn set_trace_context_hook(hook: impl Fn(&Span, &TraceContext<'_>) + Send + Sync + 'static) -> bool {
    TRACE_CONTEXT_HOOK.set(Box::new(hook)).is_ok()
}

/// Records the caller's trace context on the span, and hands it to the hook.
pub(super) fn record_trace(span: &Span, params: Option<&Params>, headers: Option<&Headers<'_>>) {
    read_trace(params, headers, |trace| {
        span.record("trace_id", trace.trace_id);
        span.record("parent_span_id", trace.parent_span_id);
        span.record("trace_flags", trace.trace_flags);
        if let Some(state) = trace.tracestate {
            span.record("tracestate", state);
        }
        if let Some(hook) = TRACE_CONTEXT_HOOK.get() {
            hook(span, trace);
        }
    });
}

/// Reads the caller's valid trace context, `_meta` first, then the HTTP header, and hands it
/// to `f` (not called without a valid `traceparent`). The two `_meta` members are read from
/// the params' index, without building their object.
pub(super) fn read_trace(params: Option<&Params>, headers: Option<&Headers<'_>>, f: impl FnOnce(&TraceContext<'_>)) {
    let meta = params.and_then(Params::meta);
    let from_meta = |key: &str| meta.as_ref().and_then(|m| m.str(key));
    let from_header = |key: &str| {
        headers
            .and_then(|get| get(key))
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(Cow::Borrowed)
    };
    let (parent, state) = match from_meta(TRACEPARENT) {
        Some(p) => (Some(p), from_meta(TRACESTATE)),
        None => (from_header(TRACEPARENT), from_header(TRACESTATE)),
    };
    let Some(traceparent) = parent.as_deref() else {
        return;
    };
    let Some(parent) = TraceParent::parse(traceparent) else {
        return;
    };
    f(&TraceContext {
        traceparent,
        trace_id: parent.trace_id,
        parent_span_id: parent.parent_id,
        trace_flags: parent.flags,
        tracestate: state.as_deref().filter(|s| valid_tracestate(s)),
    });
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
}
