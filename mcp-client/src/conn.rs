//! One connection's core, whatever carries it: request ids, the requests waiting for their
//! answers, the dispatch of what the server sends (answers, notifications, its own requests),
//! and the negotiated state every request is stamped with.
//!
//! The transport ([`Link`]) never calls into this module: it posts [`Event`]s to a bounded
//! inbox that one dispatcher task reads, so a server that floods the client fills the inbox
//! and is then read no faster than the client handles it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};

use bytes::Bytes;
use mcp_protocol::jsonrpc::{DecodeLimits, Inbound, Message, decode, encode_response};
use mcp_protocol::{RequestId, Revision};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::error::ClientError;
use crate::handlers::Handlers;
use crate::link::{Kind, Link, Outbound};
use mcp_protocol::client::ServerNotification;

/// What a transport tells the connection.
#[derive(Debug)]
pub(crate) enum Event {
    /// One JSON-RPC message (or batch) from the server.
    Frame(Bytes),
    /// A request's answer will not come: its stream ended and could not be resumed.
    Lost(RequestId, ClientError),
    /// The connection went down (the child exited): every waiting request fails.
    Down(String),
    /// The child process was started again: the handshake runs again.
    Restarted,
}

/// The capacity of the inbox between the transport and the dispatcher.
pub(crate) const INBOX: usize = 256;

/// A progress callback.
pub(crate) type OnProgress = Arc<dyn Fn(Value) + Send + Sync>;

/// Greets a restarted child again.
pub(crate) type Regreet = Arc<dyn Fn(Arc<Conn>) + Send + Sync>;

/// What the handshake settled.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    pub(crate) revision: Revision,
    /// The `initialize` or `server/discover` result.
    pub(crate) result: Value,
}

/// One connection.
pub(crate) struct Conn {
    pub(crate) link: Link,
    pub(crate) handlers: Handlers,
    pub(crate) client_info: Value,
    pub(crate) limits: DecodeLimits,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ClientError>>>>,
    progress: Mutex<HashMap<String, OnProgress>>,
    next_id: AtomicI64,
    notes: broadcast::Sender<ServerNotification>,
    state: RwLock<Option<Negotiated>>,
    /// Whether the handshake holds (false while a restarted child is greeted again).
    ready: watch::Sender<bool>,
    /// Runs the handshake again after a restart (set by the client once connected).
    pub(crate) rehandshake: Mutex<Option<Regreet>>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("state", &self.negotiated())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Conn {
    /// A connection over `link`, and starts its dispatcher on `inbox`.
    pub(crate) fn start(
        link: Link,
        inbox: mpsc::Receiver<Event>,
        handlers: Handlers,
        client_info: Value,
        limits: DecodeLimits,
    ) -> Arc<Conn> {
        let conn = Arc::new(Conn {
            link,
            handlers,
            client_info,
            limits,
            pending: Mutex::default(),
            progress: Mutex::default(),
            next_id: AtomicI64::new(1),
            notes: broadcast::channel(256).0,
            state: RwLock::new(None),
            ready: watch::channel(false).0,
            rehandshake: Mutex::new(None),
        });
        tokio::spawn(dispatch(Arc::downgrade(&conn), inbox));
        conn
    }

    /// A fresh request id.
    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// What the handshake settled, once it has.
    pub(crate) fn negotiated(&self) -> Option<Negotiated> {
        self.state.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Records the handshake and opens the door to requests.
    pub(crate) fn settle(&self, negotiated: Negotiated) {
        self.link.set_revision(negotiated.revision);
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = Some(negotiated);
        self.ready.send_replace(true);
    }

    /// Waits until the handshake holds.
    pub(crate) async fn ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    /// The notifications of the server, from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ServerNotification> {
        self.notes.subscribe()
    }

    /// Sends a request and waits for its answer (no timeout here: the caller bounds it).
    /// `progress` is called with each progress notification naming `token`.
    pub(crate) async fn send_request(
        &self,
        out: Outbound,
        progress: Option<(String, OnProgress)>,
    ) -> Result<Value, ClientError> {
        let Kind::Request { id, .. } = &out.kind else {
            return Err(ClientError::Unexpected("not a request".into()));
        };
        let id = id.clone();
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let token = progress.map(|(token, f)| {
            lock(&self.progress).insert(token.clone(), f);
            token
        });
        let _forget = Forget {
            conn: self,
            id: &id,
            token,
        };
        self.link.send(out).await?;
        match rx.await {
            Ok(answer) => answer,
            Err(_) => Err(ClientError::Closed("the client closed".into())),
        }
    }

    /// Sends a notification or a reply.
    pub(crate) async fn send(&self, out: Outbound) -> Result<(), ClientError> {
        self.link.send(out).await
    }

    /// Fails every waiting request.
    fn fail_all(&self, why: &str) {
        for (_, tx) in lock(&self.pending).drain() {
            let _ = tx.send(Err(ClientError::Closed(why.to_owned())));
        }
    }

    /// One frame from the server.
    fn receive(self: &Arc<Self>, bytes: &[u8]) {
        let messages = match decode(bytes, &self.limits) {
            Ok(Inbound::Single(m)) => vec![Ok(m)],
            Ok(Inbound::Batch(items)) => items,
            Err(e) => {
                tracing::warn!(error = %e, "a message from the server could not be read");
                return;
            }
        };
        for m in messages {
            match m {
                Ok(m) => self.route(m),
                Err(e) => tracing::warn!(error = %e, "a message from the server could not be read"),
            }
        }
    }

    fn route(self: &Arc<Self>, message: Message) {
        match message {
            Message::Response(r) => match lock(&self.pending).remove(&r.id) {
                Some(tx) => {
                    let _ = tx.send(r.outcome.map_err(ClientError::Rpc));
                }
                None => tracing::debug!(id = %r.id, "an answer to no waiting request"),
            },
            Message::Notification(n) => {
                let params = n.params.map_or(Value::Null, |p| Value::Object(p.into_object()));
                if n.method.as_str() == "notifications/progress" {
                    let token = params.get("progressToken").map(token_key);
                    let f = token.and_then(|t| lock(&self.progress).get(&t).cloned());
                    if let Some(f) = f {
                        f(params.clone());
                    }
                }
                let _ = self.notes.send(ServerNotification {
                    method: n.method.as_str().to_owned(),
                    params,
                });
            }
            Message::Request(r) => {
                let conn = self.clone();
                tokio::spawn(async move {
                    let params = r.params.map_or(Value::Null, |p| Value::Object(p.into_object()));
                    let answer = conn.handlers.answer(r.method.as_str(), params).await;
                    let bytes = encode_response(&r.id, &answer);
                    if let Err(e) = conn.send(Outbound::reply(bytes)).await {
                        tracing::warn!(error = %e, method = r.method.as_str(), "the answer to a server request was not sent");
                    }
                });
            }
        }
    }
}

/// The key of a progress token in the map (a string token and a number token never collide:
/// the JSON text is the key).
pub(crate) fn token_key(token: &Value) -> String {
    token.to_string()
}

/// Forgets a request that ended (answered, failed, or dropped by its caller).
struct Forget<'a> {
    conn: &'a Conn,
    id: &'a RequestId,
    token: Option<String>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.conn.pending).remove(self.id);
        if let Some(t) = &self.token {
            lock(&self.conn.progress).remove(t);
        }
    }
}

/// Reads the inbox until every handle on the connection is gone.
async fn dispatch(conn: Weak<Conn>, mut inbox: mpsc::Receiver<Event>) {
    while let Some(event) = inbox.recv().await {
        let Some(conn) = conn.upgrade() else { return };
        match event {
            Event::Frame(bytes) => conn.receive(&bytes),
            Event::Lost(id, error) => {
                if let Some(tx) = lock(&conn.pending).remove(&id) {
                    let _ = tx.send(Err(error));
                }
            }
            Event::Down(why) => {
                conn.ready.send_replace(false);
                conn.fail_all(&why);
            }
            Event::Restarted => {
                let again = lock(&conn.rehandshake).clone();
                if let Some(again) = again {
                    again(conn.clone());
                }
            }
        }
    }
    if let Some(conn) = conn.upgrade() {
        conn.fail_all("the transport ended");
    }
}
