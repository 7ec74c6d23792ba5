//! The coordinator: decodes each frame and sends every message where it
//! belongs (behaviour invariant 28).
//!
//! - undecodable frames and invalid messages are answered at once (with the
//!   id when it could be read, else `null`); malformed notifications are
//!   dropped;
//! - a client response goes to the session's pending server-to-client
//!   request (unknown ids are dropped);
//! - `notifications/cancelled` is handled here and now, never queued behind
//!   the request it cancels;
//! - other notifications wait, in order, in a bounded queue;
//! - a request is checked (duplicate id, then era and method), then
//!   admitted to the worker pool or refused with "Server is overloaded".
//!   A legacy `initialize` runs here, so that the session exists before the
//!   next frame is read.
//! - a batch is checked against the session's revision, then its requests
//!   run as one job that writes one array.

use std::sync::Arc;

use mcp_protocol::classify::check_batch;
use mcp_protocol::jsonrpc::{
    DecodeError, DecodeLimits, Inbound, decode, encode_batch, encode_error, encode_response, split_batch,
};
use mcp_protocol::{Era, Message, Notification, Request, Response, RpcError};
use mcp_runtime::{DuplicateId, Frame, InFlightGuard, Session};
use tokio::sync::mpsc;

use crate::exec::{self, Prepared};
use crate::framing::Input;
use crate::pool::Pool;
use crate::state::Shared;

/// A request refused before it ran: its answer, and the guard (if the id
/// was registered) to release once the answer is written.
type Refusal = (Frame, Option<InFlightGuard>);

/// Classifies inbound messages and starts their handling.
#[derive(Debug)]
pub(crate) struct Coordinator {
    shared: Arc<Shared>,
    pool: Pool,
    notifications: mpsc::Sender<Notification>,
    limits: DecodeLimits,
}

impl Coordinator {
    /// A coordinator feeding `pool` and the notification queue.
    pub(crate) fn new(
        shared: Arc<Shared>,
        pool: Pool,
        notifications: mpsc::Sender<Notification>,
        limits: DecodeLimits,
    ) -> Self {
        Coordinator {
            shared,
            pool,
            notifications,
            limits,
        }
    }

    /// Stops coordinating: the pool, to drain (the notification queue
    /// closes when the coordinator is dropped).
    pub(crate) fn into_pool(self) -> Pool {
        self.pool
    }

    /// Handles one input frame.
    pub(crate) async fn handle(&self, input: Input) {
        match input {
            Input::Oversize => {
                let e = DecodeError::TooLarge {
                    limit: self.limits.max_bytes,
                };
                tracing::warn!(limit = self.limits.max_bytes, "oversize frame discarded");
                self.answer(encode_error(None, &e.to_rpc_error()), None).await;
            }
            Input::Line(bytes) => match decode(&bytes, &self.limits) {
                Ok(Inbound::Single(message)) => self.message(message).await,
                Ok(Inbound::Batch(items)) => self.batch(items).await,
                Err(e) => {
                    if let Some(frame) = decode_answer(&e) {
                        self.answer(frame, None).await;
                    }
                }
            },
        }
    }

    async fn answer(&self, frame: Frame, guard: Option<InFlightGuard>) {
        self.shared.out.respond(frame, guard.into_iter().collect()).await;
    }

    async fn message(&self, message: Message) {
        match message {
            Message::Response(r) => self.deliver(r),
            Message::Notification(n) => self.notification(n),
            Message::Request(r) => self.request(r).await,
        }
    }

    /// A client's answer to one of our server-to-client requests.
    fn deliver(&self, response: Response) {
        let Response { id, outcome } = response;
        let delivered = self.shared.session().is_some_and(|s| s.deliver(&id, outcome));
        if !delivered {
            tracing::debug!(%id, "response to no pending request dropped");
        }
    }

    fn notification(&self, note: Notification) {
        if note.method == "notifications/cancelled" {
            // Routed at once: the request it names may be queued or running.
            let session = self.shared.session();
            self.shared
                .runtime
                .notification(&note, session.as_ref(), &self.shared.in_flight);
            return;
        }
        match self.notifications.try_send(note) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(n)) => {
                tracing::warn!(method = %n.method, "notification queue full; dropped");
            }
            Err(mpsc::error::TrySendError::Closed(n)) => {
                tracing::debug!(method = %n.method, "notification handler stopped; dropped");
            }
        }
    }

    async fn request(&self, req: Request) {
        let session = self.shared.session();
        let prepared = match self.prepare(req, session) {
            Ok(p) => p,
            Err((frame, guard)) => return self.answer(frame, guard).await,
        };
        if prepared.route.era == Era::Legacy && prepared.req.method == "initialize" {
            return self.initialize(prepared).await;
        }
        if prepared.route.era == Era::Modern && prepared.req.method == "subscriptions/listen" {
            return self.listen(prepared).await;
        }
        match self.pool.reserve() {
            Ok(slot) => {
                let job = exec::single(self.shared.clone(), prepared);
                self.pool.submit(slot, job);
            }
            Err(_) => {
                tracing::warn!(id = %prepared.req.id, "pool full; request refused");
                let frame = encode_error(Some(&prepared.req.id), &overloaded());
                self.answer(frame, Some(prepared.guard)).await;
            }
        }
    }

    /// The checks before admission: the id is not in flight (then it is
    /// registered), the method is served in the request's era, and the
    /// modern `_meta` is valid.
    fn prepare(&self, req: Request, session: Option<Arc<Session>>) -> Result<Prepared, Refusal> {
        let guard = match self.shared.in_flight.begin(req.id.clone(), self.pool.token()) {
            Ok(g) => g,
            Err(DuplicateId(id)) => {
                tracing::warn!(%id, "duplicate request id refused");
                let e = RpcError::invalid_request("Duplicate request id");
                return Err((encode_error(Some(&id), &e), None));
            }
        };
        let route = match self.shared.runtime.route(&req, None, session.as_deref()) {
            Ok(r) => r,
            Err(rejection) => {
                let frame = encode_error(Some(&req.id), &rejection.error);
                return Err((frame, Some(guard)));
            }
        };
        // Modern requests are stateless: they never see the session.
        let session = session.filter(|_| route.era == Era::Legacy);
        Ok(Prepared {
            req,
            route,
            session,
            guard,
        })
    }

    /// A legacy `initialize`: one session per process. A second one is
    /// refused with -32600 "Already initialized" (the first session, its
    /// subscriptions and pending requests stay as they are).
    async fn initialize(&self, prepared: Prepared) {
        let Prepared { req, guard, .. } = prepared;
        let outcome = if self.shared.session().is_some() {
            Err(RpcError::invalid_request("Already initialized"))
        } else {
            self.shared
                .runtime
                .initialize(&req, &self.shared.auth)
                .map(|(result, session)| {
                    tracing::info!(revision = %session.revision().as_str(), "legacy session started");
                    // Notifications meant for this session alone go to the writer.
                    let out = self.shared.out.clone();
                    session.set_outlet(move |frame| out.try_notify(frame));
                    self.shared.set_session(session);
                    result
                })
        };
        self.answer(encode_response(&req.id, &outcome), Some(guard)).await;
    }

    /// `subscriptions/listen`: the acknowledgement first, then the
    /// subscription's notifications, correlated by the listen id. The client
    /// ends it with `notifications/cancelled` (no answer); a server shutdown
    /// ends it with `notifications/cancelled` naming the listen id and then
    /// the completion result; the end of input ends it silently.
    async fn listen(&self, prepared: Prepared) {
        let Prepared { req, route, guard, .. } = prepared;
        let tasks = route
            .modern
            .as_ref()
            .is_some_and(|m| m.client_capabilities.tasks_extension());
        let mut listener = match self.shared.runtime.listen(&req, &self.shared.auth.principal, tasks) {
            Ok(l) => l,
            Err(e) => return self.answer(encode_error(Some(&req.id), &e), Some(guard)).await,
        };
        if let Some(ack) = listener.take_ack() {
            self.shared.out.notify(ack).await;
        }
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let cancelled = guard.token().clone();
            loop {
                tokio::select! {
                    biased;
                    () = cancelled.cancelled() => break,
                    () = shared.input_closed.cancelled() => break,
                    next = listener.next() => match next {
                        Some(frame) => {
                            if !shared.out.notify(frame).await {
                                break;
                            }
                        }
                        None => {
                            shared.out.notify(listener.server_cancel_frame()).await;
                            shared.out.respond(listener.completion_frame(), vec![guard]).await;
                            return;
                        }
                    },
                }
            }
            drop(guard);
        });
    }

    async fn batch(&self, items: Vec<Result<Message, DecodeError>>) {
        let session = self.shared.session();
        let (messages, mut answers) = split_batch(items);
        if let Err(e) = check_batch(session.as_ref().map(|s| s.revision()), &messages) {
            tracing::debug!(error = %e.message, "batch refused");
            return self.answer(encode_error(None, &e), None).await;
        }
        let mut guards = Vec::new();
        let mut prepared = Vec::new();
        for message in messages {
            match message {
                Message::Response(r) => self.deliver(r),
                Message::Notification(n) => self.notification(n),
                Message::Request(r) => match self.prepare(r, session.clone()) {
                    Ok(p) => prepared.push(p),
                    Err((frame, guard)) => {
                        answers.push(frame);
                        guards.extend(guard);
                    }
                },
            }
        }
        if prepared.is_empty() {
            if !answers.is_empty() {
                self.shared.out.respond(encode_batch(&answers), guards).await;
            }
            return;
        }
        match self.pool.reserve() {
            Ok(slot) => {
                // The refusals' guards go with the answers they belong to.
                let job = exec::batch(self.shared.clone(), answers, guards, prepared);
                self.pool.submit(slot, job);
            }
            Err(_) => {
                tracing::warn!("pool full; batch refused");
                for p in prepared {
                    answers.push(encode_error(Some(&p.req.id), &overloaded()));
                    guards.push(p.guard);
                }
                self.shared.out.respond(encode_batch(&answers), guards).await;
            }
        }
    }
}

/// The answer to a frame or element that could not be decoded (`None`
/// for a malformed notification: it gets no reply).
fn decode_answer(e: &DecodeError) -> Option<Frame> {
    if !e.wants_reply() {
        tracing::debug!(error = %e, "malformed notification dropped");
        return None;
    }
    tracing::debug!(error = %e, "undecodable message");
    e.answer()
}

fn overloaded() -> RpcError {
    RpcError::internal_with("Server is overloaded")
}
