//! Server-Sent Events framing and the streamed response body.
//!
//! Every JSON-RPC message is one `data:` line (compact JSON never holds a raw newline). Streams
//! are fed by a [`pump`](crate::streams::pump) task through a bounded channel; the body ends
//! when the pump drops its sender, and the pump sees the client leave when the body (the
//! receiver) is dropped.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::HeaderValue;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use mcp_protocol::notifications::replay_truncated;
use tokio::sync::mpsc;

/// A keep-alive comment.
pub(crate) const KEEP_ALIVE: &[u8] = b":\n\n";

/// An event with empty data and no id: it opens a stream before anything else is ready, and SSE
/// clients do not dispatch it (`HttpConfig::open_stream_after`).
pub(crate) const EMPTY: &[u8] = b"data: \n\n";

/// One event: an optional `id:` line and one `data:` line.
pub(crate) fn event(id: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The `notifications/replay_truncated` event (no id): the events after `last_event_id` were
/// lost, the stream goes on with the next one it still has.
pub(crate) fn truncated(last_event_id: &str) -> Bytes {
    event(None, &replay_truncated(last_event_id))
}

/// One event with an `event:` type (the 2024-11-05 transport names its events).
pub(crate) fn named(kind: &str, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + kind.len() + 16);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The SEP-1699 priming event: an id and empty data, preceded by the `retry:` delay.
pub(crate) fn priming(id: &str, retry: Duration) -> Bytes {
    Bytes::from(format!("retry: {}\nid: {id}\ndata: \n\n", retry.as_millis()))
}

/// A `retry:` field on its own.
pub(crate) fn retry(retry: Duration) -> Bytes {
    Bytes::from(format!("retry: {}\n\n", retry.as_millis()))
}

/// A bounded channel whose receiving end becomes an SSE response body.
pub(crate) fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, mpsc::Receiver<Bytes>) {
    mpsc::channel(capacity.max(1))
}

/// A `200 text/event-stream` response whose body is fed by `rx`.
pub(crate) fn response(rx: mpsc::Receiver<Bytes>) -> Response {
    holding(rx, ())
}

/// A `200 text/event-stream` response whose body is fed by `rx` and holds `hold` (a stream
/// permit) until it is dropped: when the stream ends or the client leaves.
pub(crate) fn holding<H: Send + 'static>(rx: mpsc::Receiver<Bytes>, hold: H) -> Response {
    let stream = futures::stream::unfold((rx, hold), |(mut rx, hold)| async move {
        rx.recv().await.map(|chunk| (Ok::<_, Infallible>(chunk), (rx, hold)))
    });
    with_body(Body::from_stream(stream))
}

/// A `200 text/event-stream` response with `body` (a [`pump::body`](crate::streams::pump::body)).
pub(crate) fn with_body(body: Body) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// A `200 text/event-stream` response that ends before any event: the answer to a request
/// whose call was cancelled before its reply started (behaviour invariant 13). The SDK clients
/// take it without complaint: the Python SDK resolves the (already abandoned) request with
/// "SSE stream ended without a response", the TypeScript SDKs end the stream silently (no
/// event id, so nothing to resume); an empty `200` without a content type made both report
/// "Unexpected content type". It is also what the specification allows for a request (SSE or
/// JSON), unlike a `202`.
pub(crate) fn ended() -> Response {
    let (_, rx) = channel(1);
    response(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing() {
        assert_eq!(&event(None, b"{}")[..], b"data: {}\n\n");
        assert_eq!(&event(Some("7"), b"{}")[..], b"id: 7\ndata: {}\n\n");
        assert_eq!(&named("message", b"{}")[..], b"event: message\ndata: {}\n\n");
        assert_eq!(
            &priming("2-0", Duration::from_millis(1500))[..],
            b"retry: 1500\nid: 2-0\ndata: \n\n"
        );
        assert_eq!(&retry(Duration::from_secs(1))[..], b"retry: 1000\n\n");
        assert_eq!(
            &truncated("3-1")[..],
            &b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/replay_truncated\",\"params\":{\"lastEventId\":\"3-1\"}}\n\n"[..]
        );
    }
}
