//! The SSE path of the 2024-11-05 pair: a GET authenticates, mints the pair's id, opens its
//! stream with the `endpoint` event naming the message path, then writes the pair's messages
//! and (once `initialize` ran) its session's events, until the stream ends and the pair with it.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use http::Method;
use http::header::ACCEPT;
use mcp_runtime::{Frame, SessionSlot, SessionStore};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::admit::{admit, with_cors};
use crate::guard;
use crate::response::{challenge, empty, not_allowed, store_unavailable};
use crate::state::{Pair, Shared};
use crate::status;
use crate::streams::hub::Channel;
use crate::streams::pump::{self, Feed, Next};
use crate::streams::sse;

/// Ends a pair however its stream ends.
struct Ending {
    shared: Arc<Shared>,
    id: Arc<str>,
    pair: Arc<Pair>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        self.shared.pairs.remove(&self.id);
        self.pair.ended().cancel();
        if let Some(s) = self.pair.session() {
            s.close();
            self.shared.hub.remove(s.id());
        }
        tracing::debug!(pair = %self.id, "HTTP+SSE session ended with its stream");
    }
}

/// Every verb on the SSE path: Origin and Host first, then GET opens a stream.
pub(crate) async fn entry(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let cors = match admit(&shared, &req) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let resp = match *req.method() {
        Method::GET => open(&shared, req).await,
        Method::OPTIONS => empty(status::PREFLIGHT),
        _ => not_allowed("GET, OPTIONS"),
    };
    with_cors(&shared, resp, cors)
}

/// Opens a pair: its stream, whose first event names the message path to POST to.
async fn open(shared: &Arc<Shared>, req: Request) -> Response {
    if req.headers().contains_key(ACCEPT) && !guard::accepts_sse(req.headers()) {
        return empty(status::NOT_ACCEPTABLE);
    }
    let (mut parts, _body) = req.into_parts();
    let auth = match crate::client::authenticate(&shared.config, &mut parts).await {
        Ok(a) => a,
        Err(c) => return challenge(&c),
    };
    let Some((_, message_path)) = &shared.config.sse_pair else {
        return empty(status::NOT_CONFIGURED);
    };
    // The pair lives as long as its stream, which the stream budget holds.
    let permit = match shared.stream(crate::client::address(&parts.extensions)) {
        Ok(p) => p,
        Err(refusal) => return refusal.response(None),
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
    shared.pairs.insert(id.clone(), pair.clone());
    // With a shared store, the pair's record is written before the stream names the message
    // path: the client's first POST may reach any instance.
    match shared
        .engine
        .hold_mailbox(&id, &auth.principal, pair.ended().clone())
        .await
    {
        Ok(Some(inbox)) => {
            shared.tracker.spawn(mcp_runtime::background::boxed(super::relay::inbox(
                shared.clone(),
                pair.clone(),
                inbox,
            )));
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(error = %e, "HTTP+SSE pair not opened: shared store unavailable");
            shared.pairs.remove(&id);
            pair.ended().cancel();
            return store_unavailable();
        }
    }
    let (tx, rx) = sse::channel(capacity);
    let endpoint = format!("{message_path}?sessionId={id}");
    if tx.try_send(sse::named("endpoint", endpoint.as_bytes())).is_err() {
        shared.pairs.remove(&id);
        pair.ended().cancel();
        return empty(status::STREAM_NOT_OPENED);
    }
    tracing::debug!(pair = %id, "HTTP+SSE session opened");
    let ending = Ending {
        shared: shared.clone(),
        id,
        pair,
    };
    shared
        .tracker
        .spawn(mcp_runtime::background::boxed(pump(ending, frames, tx)));
    sse::holding(rx, permit)
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
