//! The 2024-11-05 HTTP+SSE transport, served beside the Streamable endpoint when
//! [`HttpConfig::sse_pair`](crate::HttpConfig::sse_pair) names its two paths.
//!
//! A GET on the SSE path authenticates, mints a session id (CSPRNG) bound to the principal,
//! opens the stream and sends `event: endpoint` with `data: <message path>?sessionId=<id>`. The
//! client POSTs every message there: the POST is answered `202` (or `400`/`413`/`408` when the
//! body is unusable) and the reply travels on the stream as `event: message`. A POST without
//! `sessionId` is `400`; an unknown id and another principal's are the same `404`.
//!
//! The session is the stream, as in the reference implementation: the pair exists from the GET,
//! the runtime's [`Session`] is created by `runtime.initialize` when the client's `initialize`
//! arrives on the message path (requests before it run without a session, like on a sessionless
//! endpoint), and everything ends with the stream, however it ends (the client leaves, a write
//! fails, the server shuts down): the pair is removed, the session closed (its calls cancelled,
//! its pending server-to-client requests failed), and calls made before `initialize` cancelled.
//! The session is not in the runtime's session store: no `Mcp-Session-Id` reaches it.
//!
//! Every message goes to the runtime's engine with no transport revision (`MCP-Protocol-Version`
//! is not part of this transport and is ignored), the pair's [`SessionSlot`] and "legacy only": a request
//! carrying the modern `_meta` envelope is -32600, everything else is answered as on any other
//! transport (`server/discover` included, by the one method table). `initialize` negotiates the
//! session's revision as on the Streamable endpoint. The session receives list-changed and
//! subscribed resource-updated notifications on its stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::{Request, State};
use axum::response::Response;
use http::header::{ACCEPT, ALLOW};
use http::{HeaderValue, Method, StatusCode};
use mcp_protocol::jsonrpc::{DecodeLimits, Inbound, decode};
use mcp_protocol::{Message, RpcError};
use mcp_runtime::engine::BatchStep;
use mcp_runtime::{Frame, Peer, Session, SessionSlot, SessionStore, Sessions, Sink, Step};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::guard;
use crate::state::{Shared, empty, rpc_error, session_not_found};
use crate::streams::hub::Channel;
use crate::streams::pump::{self, Feed, Next};
use crate::streams::sse;
use crate::verbs::post::{answer, challenge, read_body, unsupported_media_type};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One open HTTP+SSE session.
#[derive(Debug)]
pub(crate) struct Pair {
    principal: Arc<str>,
    /// Replies and call frames, written to the stream by its pump.
    out: mpsc::Sender<Frame>,
    /// The runtime's session once `initialize` ran, and the pair's requests in flight. Its
    /// root token is cancelled when the stream ends: every call of the pair is cancelled.
    slot: SessionSlot,
    /// The session's event channel, once `initialize` ran.
    joined: watch::Sender<Option<Arc<Channel>>>,
}

impl Pair {
    fn session(&self) -> Option<Arc<Session>> {
        self.slot.session()
    }

    fn ended(&self) -> &CancellationToken {
        self.slot.root()
    }

    async fn push(&self, frame: Frame) {
        if self.out.send(frame).await.is_err() {
            tracing::debug!("HTTP+SSE stream gone; message dropped");
        }
    }
}

/// The open pairs of an endpoint, by id.
#[derive(Debug, Default)]
pub(crate) struct Pairs {
    map: Mutex<HashMap<Arc<str>, Arc<Pair>>>,
}

impl Pairs {
    /// The pair `id` if `principal` opened it.
    fn get(&self, id: &str, principal: &str) -> Option<Arc<Pair>> {
        lock(&self.map)
            .get(id)
            .filter(|p| *p.principal == *principal && !p.ended().is_cancelled())
            .cloned()
    }
}

/// Ends a pair however its stream ends.
struct Ending {
    shared: Arc<Shared>,
    id: Arc<str>,
    pair: Arc<Pair>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        lock(&self.shared.pairs.map).remove(&self.id);
        self.pair.ended().cancel();
        if let Some(s) = self.pair.session() {
            s.close();
            self.shared.hub.remove(s.id());
        }
        tracing::debug!(pair = %self.id, "HTTP+SSE session ended with its stream");
    }
}

fn not_allowed(allow: &'static str) -> Response {
    let mut r = empty(StatusCode::METHOD_NOT_ALLOWED);
    r.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    r
}

/// Every verb on the SSE path: Origin and Host first, then GET opens a stream.
pub(crate) async fn stream_entry(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let cors = match crate::admit(&shared, &req) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let resp = match *req.method() {
        Method::GET => open(&shared, req).await,
        Method::OPTIONS => empty(StatusCode::NO_CONTENT),
        _ => not_allowed("GET, OPTIONS"),
    };
    crate::with_cors(&shared, resp, cors)
}

/// Every verb on the message path: Origin and Host first, then POST delivers a message.
pub(crate) async fn message_entry(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let cors = match crate::admit(&shared, &req) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let resp = match *req.method() {
        Method::POST => post(&shared, req).await,
        Method::OPTIONS => empty(StatusCode::NO_CONTENT),
        _ => not_allowed("POST, OPTIONS"),
    };
    crate::with_cors(&shared, resp, cors)
}

async fn open(shared: &Arc<Shared>, req: Request) -> Response {
    if req.headers().contains_key(ACCEPT) && !guard::accepts_sse(req.headers()) {
        return empty(StatusCode::NOT_ACCEPTABLE);
    }
    let (parts, _body) = req.into_parts();
    let auth = match shared.config.auth.authenticate(&parts).await {
        Ok(a) => a,
        Err(c) => return challenge(&c),
    };
    let Some((_, message_path)) = &shared.config.sse_pair else {
        return empty(StatusCode::NOT_FOUND);
    };
    let capacity = shared.config.sse_buffer_size.max(1);
    let id = SessionStore::mint_id();
    let (out, frames) = mpsc::channel(capacity);
    let pair = Arc::new(Pair {
        principal: auth.principal.clone(),
        out,
        slot: SessionSlot::new(CancellationToken::new()),
        joined: watch::Sender::new(None),
    });
    lock(&shared.pairs.map).insert(id.clone(), pair.clone());
    let (tx, rx) = sse::channel(capacity);
    let endpoint = format!("{message_path}?sessionId={id}");
    if tx.try_send(sse::named("endpoint", endpoint.as_bytes())).is_err() {
        lock(&shared.pairs.map).remove(&id);
        return empty(StatusCode::SERVICE_UNAVAILABLE);
    }
    tracing::debug!(pair = %id, "HTTP+SSE session opened");
    let ending = Ending {
        shared: shared.clone(),
        id,
        pair,
    };
    shared.tracker.spawn(pump(ending, frames, tx));
    sse::response(rx)
}

/// Waits for a change of the session's events (forever before `initialize`).
async fn changed(events: &mut Option<watch::Receiver<u64>>) -> bool {
    match events {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// Writes the pair's messages and its session's events until the stream ends; then the pair ends.
async fn pump(ending: Ending, frames: mpsc::Receiver<Frame>, tx: mpsc::Sender<axum::body::Bytes>) {
    let feed = PairFeed {
        pair: ending.pair.clone(),
        joined: ending.pair.joined.subscribe(),
        frames,
        channel: None,
        events: None,
        cursor: 0,
    };
    let shared = &ending.shared;
    pump::run(feed, tx, shared.config.sse_keep_alive, shared.shutdown.clone()).await;
    drop(ending);
}

/// The [`Feed`] of a pair's stream: the replies and call frames of its POSTs, and (once
/// `initialize` ran) its session's events, each as an `event: message`.
struct PairFeed {
    pair: Arc<Pair>,
    frames: mpsc::Receiver<Frame>,
    joined: watch::Receiver<Option<Arc<Channel>>>,
    channel: Option<Arc<Channel>>,
    events: Option<watch::Receiver<u64>>,
    /// The last session event written.
    cursor: u64,
}

impl Feed for PairFeed {
    async fn next(&mut self) -> Next {
        loop {
            tokio::select! {
                f = self.frames.recv() => return match f {
                    Some(f) => Next::Write(vec![sse::named("message", &f)]),
                    None => Next::Stop,
                },
                r = self.joined.changed() => {
                    if r.is_err() {
                        return Next::Stop;
                    }
                    if let Some(c) = self.joined.borrow_and_update().clone() {
                        let (newest, rx) = c.watch();
                        self.cursor = newest;
                        self.events = Some(rx);
                        self.channel = Some(c);
                    }
                }
                ok = changed(&mut self.events) => {
                    if !ok {
                        return Next::Stop;
                    }
                    let Some(c) = &self.channel else { continue };
                    let backlog = c.events_after(self.cursor).unwrap_or_else(|| {
                        tracing::debug!("HTTP+SSE stream fell behind its session's events");
                        Vec::new()
                    });
                    self.cursor = c.watch().0.max(self.cursor);
                    return Next::Write(backlog.iter().map(|(_, f)| sse::named("message", f)).collect());
                }
            }
        }
    }

    fn on_keep_alive(&mut self) {
        if let Some(s) = self.pair.session() {
            s.touch();
        }
    }
}

/// The `sessionId` query parameter.
fn session_param(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .filter(|v| !v.is_empty())
}

async fn post(shared: &Arc<Shared>, req: Request) -> Response {
    if !guard::is_json_body(req.headers()) {
        return unsupported_media_type();
    }
    let (parts, body) = req.into_parts();
    let auth = match shared.config.auth.authenticate(&parts).await {
        Ok(a) => Arc::new(a),
        Err(c) => return challenge(&c),
    };
    let Some(id) = session_param(parts.uri.query()) else {
        return rpc_error(
            400,
            None,
            &RpcError::invalid_request("sessionId query parameter required"),
        );
    };
    let Some(pair) = shared.pairs.get(id, &auth.principal) else {
        return session_not_found();
    };
    let Some(permit) = shared.permit() else {
        tracing::warn!(limit = shared.config.max_in_flight, "too many requests in flight");
        return rpc_error(503, None, &RpcError::overloaded());
    };
    let bytes = match read_body(shared, body, &parts).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let limits = DecodeLimits::new(shared.config.max_body_bytes, shared.config.max_depth)
        .with_max_batch(shared.config.max_batch);
    let inbound = match decode(&bytes, &limits) {
        Ok(i) => i,
        Err(e) if !e.wants_reply() => return empty(StatusCode::ACCEPTED),
        Err(e) => return rpc_error(400, e.id(), &e.to_rpc_error()),
    };
    // `MCP-Protocol-Version` is not part of this transport: no revision is declared beside the
    // body, and the pair serves the legacy revisions only.
    let mut peer = Peer::new(auth, Sessions::Slot(&pair.slot)).with_extensions(parts.extensions);
    peer.legacy_only = true;
    let engine = &shared.engine;
    match inbound {
        Inbound::Single(Message::Response(r)) => engine.deliver(&peer, r).await,
        Inbound::Single(Message::Notification(n)) => {
            engine.notification(&peer, &n).await;
        }
        Inbound::Single(Message::Request(r)) => match engine.request(&peer, r).await {
            // Written before the 202, so that a session `initialize` minted exists when the
            // client sends its next message.
            Step::Answer(a) => {
                if let Some(session) = &a.session {
                    joined(shared, &pair, session);
                }
                pair.push(a.frame).await;
            }
            Step::Call(call) => {
                let out = pair.clone();
                shared.tracker.spawn(async move {
                    let _permit = permit;
                    let done = call.run(Sink::new(out.out.clone())).await;
                    if let Some(frame) = done.frame() {
                        out.push(frame).await;
                    }
                });
            }
            Step::Listen(_) => tracing::debug!("no subscription streams on the HTTP+SSE pair"),
        },
        Inbound::Batch(items) => match engine.batch(&peer, items).await {
            BatchStep::Answer(a) => return answer(a),
            BatchStep::Run(batch) => {
                let out = pair.clone();
                shared.tracker.spawn(async move {
                    let _permit = permit;
                    let done = batch.run(Sink::new(out.out.clone())).await;
                    if let Some(frame) = done.frame {
                        out.push(frame).await;
                    }
                });
            }
        },
    }
    empty(StatusCode::ACCEPTED)
}

/// The pair's session exists: its events reach the stream from now on.
fn joined(shared: &Shared, pair: &Pair, session: &Arc<Session>) {
    pair.joined.send_replace(Some(shared.hub.channel(session)));
    if pair.ended().is_cancelled() {
        // The stream ended meanwhile: the session must not outlive it.
        session.close();
        shared.hub.remove(session.id());
    }
    tracing::debug!(revision = %session.revision(), "HTTP+SSE session initialized");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_parameter() {
        assert_eq!(session_param(Some("sessionId=mcp_1")), Some("mcp_1"));
        assert_eq!(session_param(Some("a=b&sessionId=x")), Some("x"));
        assert_eq!(session_param(Some("sessionId=")), None);
        assert_eq!(session_param(Some("session=x")), None);
        assert_eq!(session_param(None), None);
    }
}
