//! One connection's core, whatever carries it: request ids, the requests waiting for their
//! answers, the dispatch of what the server sends (answers, notifications, its own requests),
//! and the negotiated state every request is stamped with.
//!
//! The transport ([`Link`]) never calls into this module: it posts [`Event`](crate::link::Event)s to a bounded
//! inbox that one dispatcher task reads, so a server that floods the client fills the inbox
//! and is then read no faster than the client handles it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};

use futures::future::BoxFuture;
use mcp_protocol::jsonrpc::{DecodeLimits, Inbound, Message, decode, encode_response};
use mcp_protocol::{RequestId, Revision, RpcError};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::error::ClientError;
use crate::handlers::Handlers;
use crate::link::{Event, Kind, Link, Outbound};
use mcp_protocol::client::ServerNotification;

/// A progress callback.
pub(crate) type OnProgress = Arc<dyn Fn(Value) + Send + Sync>;

/// Greets a restarted child again.
pub(crate) type Regreet = Arc<dyn Fn(Arc<Conn>) + Send + Sync>;

/// Whether requests may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Not yet (the handshake runs).
    Waiting,
    /// Yes.
    Ready,
    /// Never again, and why.
    Closed(String),
}

/// What the handshake settled.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    pub(crate) revision: Revision,
    /// The `initialize` or `server/discover` result.
    pub(crate) result: Value,
}

/// A request's own answerer of what the server asks while it runs (method, params).
pub(crate) type OnInput = Arc<dyn Fn(String, Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// What one request watches for besides its answer.
#[derive(Default)]
pub(crate) struct Watch {
    /// Its progress token's key and callback.
    pub(crate) progress: Option<(String, OnProgress)>,
    /// Its own answerer of server requests.
    pub(crate) input: Option<OnInput>,
}

/// One connection.
pub(crate) struct Conn {
    pub(crate) link: Link,
    pub(crate) handlers: Handlers,
    pub(crate) client_info: Value,
    pub(crate) limits: DecodeLimits,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ClientError>>>>,
    progress: Mutex<HashMap<String, OnProgress>>,
    inputs: Mutex<HashMap<RequestId, OnInput>>,
    next_id: AtomicI64,
    notes: broadcast::Sender<ServerNotification>,
    state: RwLock<Option<Negotiated>>,
    /// Whether requests may go: the handshake holds, is awaited (at first, and while a
    /// restarted child is greeted again), or the connection is closed for good.
    ready: watch::Sender<Readiness>,
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
            inputs: Mutex::default(),
            next_id: AtomicI64::new(1),
            notes: broadcast::channel(256).0,
            state: RwLock::new(None),
            ready: watch::channel(Readiness::Waiting).0,
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
        self.ready.send_if_modified(|r| {
            let open = !matches!(r, Readiness::Closed(_));
            if open {
                *r = Readiness::Ready;
            }
            open
        });
    }

    /// Waits until the handshake holds; fails at once on a connection closed for good.
    pub(crate) async fn ready(&self) -> Result<(), ClientError> {
        let mut rx = self.ready.subscribe();
        let r = rx.wait_for(|r| *r != Readiness::Waiting).await;
        match r.as_deref() {
            Ok(Readiness::Ready) => Ok(()),
            Ok(Readiness::Closed(why)) => Err(ClientError::Closed(why.clone())),
            _ => Err(ClientError::Closed("the client closed".into())),
        }
    }

    /// Closes the connection for good: waiting requests and later ones fail with `why`.
    pub(crate) fn close_for_good(&self, why: &str) {
        self.ready.send_replace(Readiness::Closed(why.to_owned()));
        self.fail_all(why);
    }

    /// The notifications of the server, from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ServerNotification> {
        self.notes.subscribe()
    }

    /// Sends a request and waits for its answer (no timeout here: the caller bounds it), with
    /// what it watches for besides.
    pub(crate) async fn send_request(&self, out: Outbound, watch: Watch) -> Result<Value, ClientError> {
        let Kind::Request { id, .. } = &out.kind else {
            return Err(ClientError::Unexpected("not a request".into()));
        };
        let id = id.clone();
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let token = watch.progress.map(|(token, f)| {
            lock(&self.progress).insert(token.clone(), f);
            token
        });
        if let Some(input) = watch.input {
            lock(&self.inputs).insert(id.clone(), input);
        }
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

    /// The answerer of a server request: the one of the request whose stream carried it, or
    /// (when no stream says) of the only request waiting with one; else the client's.
    fn input_handler(&self, origin: Option<&RequestId>) -> Option<OnInput> {
        let inputs = lock(&self.inputs);
        match origin {
            Some(id) => inputs.get(id).cloned(),
            None if inputs.len() == 1 => inputs.values().next().cloned(),
            None => None,
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
    fn receive(self: &Arc<Self>, bytes: &[u8], origin: Option<&RequestId>) {
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
                Ok(m) => self.route(m, origin),
                Err(e) => tracing::warn!(error = %e, "a message from the server could not be read"),
            }
        }
    }

    fn route(self: &Arc<Self>, message: Message, origin: Option<&RequestId>) {
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
                let handler = self.input_handler(origin);
                tokio::spawn(async move {
                    let params = r.params.map_or(Value::Null, |p| Value::Object(p.into_object()));
                    let answer = match handler {
                        Some(h) => h(r.method.as_str().to_owned(), params).await,
                        None => conn.handlers.answer(r.method.as_str(), params).await,
                    };
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
        lock(&self.conn.inputs).remove(self.id);
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
            Event::Frame(bytes, origin) => conn.receive(&bytes, origin.as_ref()),
            Event::Lost(id, error) => {
                if let Some(tx) = lock(&conn.pending).remove(&id) {
                    let _ = tx.send(Err(error));
                }
            }
            Event::Down { why, for_good: true } => conn.close_for_good(&why),
            Event::Down { why, for_good: false } => {
                conn.ready.send_replace(Readiness::Waiting);
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
