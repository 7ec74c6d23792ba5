//! A server over Streamable HTTP (spec basic/transports §Streamable HTTP, each revision).
//!
//! Every message is a POST. The answer is `202` (a notification or a reply), one JSON message,
//! or an SSE stream that carries the request's notifications and server requests before its
//! answer; each message read goes to the inbox. An error status with a JSON-RPC error body is
//! that request's answer; one without becomes [`ClientError::Status`].
//!
//! - **Headers.** `MCP-Protocol-Version` once a revision is settled (and on every modern
//!   request); `Mcp-Method` and `Mcp-Name` on modern requests (SEP-2243); the session's
//!   `Mcp-Session-Id` once `initialize` gave one; the user's own headers (credentials) on all.
//! - **Resumption.** A legacy stream that ends before its answer is resumed with a GET
//!   carrying `Last-Event-ID`, a few times, after the delay the stream's `retry` asked for.
//! - **The session's stream.** After the legacy handshake a GET stream is opened (a `405`
//!   means the server offers none) and reopened with `Last-Event-ID` when it drops.
//! - **Cancellation.** A modern request is cancelled by closing its stream.
//! - **Closing.** A session is ended with DELETE.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_protocol::headers::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, encode_header_value};
use mcp_protocol::{Era, Feature, RequestId, Revision};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::frames::{Event, Kind, Outbound};
use super::sse::SseReader;
use crate::error::ClientError;

/// The session header (any revision with sessions).
const SESSION_HEADER: &str = "mcp-session-id";
/// How many times a dropped stream is resumed before its request fails.
const RESUMPTIONS: u32 = 3;
/// The wait before resuming when the stream asked for none.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);
/// The most of an error body quoted in [`ClientError::Status`].
const QUOTED: usize = 200;

/// A Streamable HTTP transport.
pub(crate) struct Http {
    shared: Arc<Shared>,
    /// The reader of each request's SSE stream, by request id.
    streams: Arc<Mutex<HashMap<RequestId, AbortHandle>>>,
    /// The session's GET stream, once open.
    session_stream: Mutex<Option<AbortHandle>>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("url", &self.shared.url)
            .finish_non_exhaustive()
    }
}

/// What every request and stream reader of the transport reads.
struct Shared {
    client: HyperClient<HttpConnector, Full<Bytes>>,
    url: Uri,
    headers: HeaderMap,
    session: Mutex<Option<HeaderValue>>,
    revision: Mutex<Option<Revision>>,
    max_bytes: usize,
    inbox: mpsc::Sender<Event>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Http {
    /// A transport to `url`, sending `headers` on every request.
    pub(crate) fn new(url: Uri, headers: HeaderMap, max_bytes: usize, inbox: mpsc::Sender<Event>) -> Http {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(10)));
        connector.set_nodelay(true);
        let client = HyperClient::builder(TokioExecutor::new()).build(connector);
        Http {
            shared: Arc::new(Shared {
                client,
                url,
                headers,
                session: Mutex::new(None),
                revision: Mutex::new(None),
                max_bytes,
                inbox,
            }),
            streams: Arc::default(),
            session_stream: Mutex::new(None),
        }
    }

    pub(crate) fn set_revision(&self, revision: Revision) {
        *lock(&self.shared.revision) = Some(revision);
    }

    pub(crate) async fn send(&self, out: Outbound) -> Result<(), ClientError> {
        let s = &self.shared;
        let mut req = s.request(Method::POST)?;
        let h = req
            .headers_mut()
            .ok_or_else(|| ClientError::Transport("invalid request".into()))?;
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        if let Kind::Request {
            method,
            name,
            revision: Some(r),
            ..
        } = &out.kind
            && r.era() == Era::Modern
        {
            h.insert(PROTOCOL_VERSION_HEADER, HeaderValue::from_static(r.as_str()));
            h.insert(METHOD_HEADER, header_value(method)?);
            if let Some(name) = name {
                let encoded = encode_header_value(&Value::String(name.clone()))
                    .ok_or_else(|| ClientError::Unexpected(format!("{name:?} cannot travel in a header")))?;
                h.insert(NAME_HEADER, header_value(&encoded)?);
            }
        }
        let request_id = match &out.kind {
            Kind::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        let req = req
            .body(Full::new(Bytes::from(out.bytes)))
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        let resp = s
            .client
            .request(req)
            .await
            .map_err(|e| ClientError::Transport(format!("{}: {e}", s.url)))?;
        if let Some(session) = resp.headers().get(SESSION_HEADER) {
            *lock(&s.session) = Some(session.clone());
        }
        let status = resp.status();
        if status == StatusCode::ACCEPTED {
            return Ok(());
        }
        if status.is_success() && is_sse(resp.headers()) {
            let Some(id) = request_id else {
                // A stream for a notification or a reply: read what it carries all the same.
                tokio::spawn(read_stream(
                    s.clone(),
                    resp.into_body(),
                    SseReader::new(s.max_bytes),
                    None,
                ));
                return Ok(());
            };
            let shared = s.clone();
            let streams = self.streams.clone();
            // Held while the reader is registered: its own removal waits for the insertion.
            let mut registered = lock(&self.streams);
            let key = id.clone();
            let task = tokio::spawn(async move {
                let reader = SseReader::new(shared.max_bytes);
                let lost = follow(shared.clone(), resp.into_body(), reader, id.clone()).await;
                lock(&streams).remove(&id);
                if let Some(error) = lost {
                    let _ = shared.inbox.send(Event::Lost(id, error)).await;
                }
            });
            registered.insert(key, task.abort_handle());
            return Ok(());
        }
        let body = read_body(resp.into_body(), s.max_bytes).await?;
        if let Some(answer) = rpc_message(&body) {
            let _ = s.inbox.send(Event::Frame(answer, request_id)).await;
            return Ok(());
        }
        if status == StatusCode::NOT_FOUND && lock(&s.session).is_some() {
            return Err(ClientError::SessionExpired);
        }
        if status.is_success() {
            return Ok(());
        }
        Err(ClientError::Status {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body[..body.len().min(QUOTED)]).into_owned(),
        })
    }

    pub(crate) fn end_stream(&self, id: &RequestId) -> bool {
        match lock(&self.streams).remove(id) {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }

    pub(crate) fn open_session_stream(&self) {
        if lock(&self.shared.session).is_none() {
            return;
        }
        let task = tokio::spawn(session_stream(self.shared.clone()));
        if let Some(old) = lock(&self.session_stream).replace(task.abort_handle()) {
            old.abort();
        }
    }

    pub(crate) async fn close(&self) {
        if let Some(t) = lock(&self.session_stream).take() {
            t.abort();
        }
        for (_, t) in lock(&self.streams).drain() {
            t.abort();
        }
        let s = &self.shared;
        if lock(&s.session).is_none() {
            return;
        }
        if let Ok(req) = s.request(Method::DELETE)
            && let Ok(req) = req.body(Full::default())
        {
            let _ = tokio::time::timeout(Duration::from_secs(5), s.client.request(req)).await;
        }
        *lock(&s.session) = None;
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        if let Some(t) = lock(&self.session_stream).take() {
            t.abort();
        }
        for (_, t) in lock(&self.streams).drain() {
            t.abort();
        }
    }
}

impl Shared {
    /// A request to the endpoint with the user's headers, the session and the revision.
    fn request(&self, method: Method) -> Result<http::request::Builder, ClientError> {
        let mut b = Request::builder().method(method).uri(self.url.clone());
        let h = b
            .headers_mut()
            .ok_or_else(|| ClientError::Transport("invalid request".into()))?;
        h.extend(self.headers.clone());
        if let Some(session) = lock(&self.session).clone() {
            h.insert(SESSION_HEADER, session);
        }
        if let Some(r) = *lock(&self.revision)
            && r.has(Feature::ProtocolVersionHeader)
        {
            h.insert(PROTOCOL_VERSION_HEADER, HeaderValue::from_static(r.as_str()));
        }
        Ok(b)
    }

    /// A GET of the session's stream, resuming after `last_id` when given.
    async fn get(&self, last_id: Option<&str>) -> Result<hyper::Response<Incoming>, ClientError> {
        let mut req = self.request(Method::GET)?;
        let h = req
            .headers_mut()
            .ok_or_else(|| ClientError::Transport("invalid request".into()))?;
        h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(id) = last_id {
            h.insert(HeaderName::from_static("last-event-id"), header_value(id)?);
        }
        let req = req
            .body(Full::default())
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        self.client
            .request(req)
            .await
            .map_err(|e| ClientError::Transport(format!("{}: {e}", self.url)))
    }
}

fn header_value(v: &str) -> Result<HeaderValue, ClientError> {
    HeaderValue::from_str(v).map_err(|_| ClientError::Unexpected(format!("{v:?} cannot travel in a header")))
}

fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

async fn read_body(body: Incoming, max: usize) -> Result<Bytes, ClientError> {
    Limited::new(body, max)
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| ClientError::Transport(format!("reading the answer: {e}")))
}

/// The body, when it is a JSON-RPC message (an answer, or an error answer with an id).
fn rpc_message(body: &Bytes) -> Option<Bytes> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let is_rpc = |m: &Value| m.get("jsonrpc").is_some() && (m.get("result").is_some() || m.get("error").is_some());
    let rpc = match &v {
        Value::Array(items) => items.iter().any(is_rpc),
        m => is_rpc(m) && m.get("id").is_some_and(|id| !id.is_null()),
    };
    rpc.then(|| body.clone())
}

/// Whether `frame` is the answer to request `id`.
fn answers(frame: &str, id: &RequestId) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(frame) else {
        return false;
    };
    v.get("id") == Some(&id.to_value()) && (v.get("result").is_some() || v.get("error").is_some())
}

/// Reads one SSE body into the inbox. Returns whether `until` (a request's answer) was read,
/// or `None` when the stream ended in error or was not watched for one.
async fn read_stream(
    shared: Arc<Shared>,
    mut body: Incoming,
    mut reader: SseReader,
    until: Option<&RequestId>,
) -> (bool, SseReader) {
    let mut answered = false;
    loop {
        let frame = match body.frame().await {
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                tracing::debug!(error = %e, "an SSE stream broke");
                break;
            }
            None => break,
        };
        let Ok(chunk) = frame.into_data() else { continue };
        let events = match reader.feed(&chunk) {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!(error = %e, "an SSE stream of the server was dropped");
                break;
            }
        };
        for event in events {
            if event.data.is_empty() {
                continue;
            }
            if until.is_some_and(|id| answers(&event.data, id)) {
                answered = true;
            }
            if shared
                .inbox
                .send(Event::Frame(Bytes::from(event.data), until.cloned()))
                .await
                .is_err()
            {
                return (answered, reader);
            }
        }
        if answered {
            break;
        }
    }
    (answered, reader)
}

/// Follows a request's stream to its answer, resuming it with `Last-Event-ID` when a legacy
/// stream drops first. Returns why the answer will not come, if it will not.
async fn follow(shared: Arc<Shared>, body: Incoming, reader: SseReader, id: RequestId) -> Option<ClientError> {
    let (mut answered, mut reader) = read_stream(shared.clone(), body, reader, Some(&id)).await;
    let mut tries = 0;
    while !answered {
        let legacy = lock(&shared.revision).is_none_or(|r| r.era() == Era::Legacy);
        let resumable = legacy && lock(&shared.session).is_some();
        let Some(last) = reader.last_id.clone().filter(|_| resumable && tries < RESUMPTIONS) else {
            return Some(ClientError::Transport(
                "the answer's stream ended before the answer".into(),
            ));
        };
        tries += 1;
        tokio::time::sleep(reader.retry_ms.map_or(DEFAULT_RETRY, Duration::from_millis)).await;
        match shared.get(Some(&last)).await {
            Ok(resp) if resp.status().is_success() && is_sse(resp.headers()) => {
                (answered, reader) = read_stream(shared.clone(), resp.into_body(), reader, Some(&id)).await;
            }
            Ok(resp) => tracing::debug!(status = %resp.status(), "resuming a stream was refused"),
            Err(e) => tracing::debug!(error = %e, "resuming a stream failed"),
        }
    }
    None
}

/// Holds the session's GET stream open, reopening it (with `Last-Event-ID`) when it drops,
/// until the server refuses it.
async fn session_stream(shared: Arc<Shared>) {
    let mut reader = SseReader::new(shared.max_bytes);
    let mut failures = 0u32;
    loop {
        let last = reader.last_id.clone();
        match shared.get(last.as_deref()).await {
            Ok(resp) if resp.status().is_success() && is_sse(resp.headers()) => {
                failures = 0;
                (_, reader) = read_stream(shared.clone(), resp.into_body(), reader, None).await;
            }
            Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => return,
            Ok(resp) if resp.status() == StatusCode::NOT_FOUND => return,
            Ok(resp) => {
                tracing::debug!(status = %resp.status(), "the session's stream was refused");
                failures += 1;
            }
            Err(e) => {
                tracing::debug!(error = %e, "the session's stream failed");
                failures += 1;
            }
        }
        if failures > 5 {
            tracing::warn!("the session's stream keeps failing: given up");
            return;
        }
        let wait = reader.retry_ms.map_or(DEFAULT_RETRY, Duration::from_millis) * (failures + 1);
        tokio::time::sleep(wait).await;
    }
}
