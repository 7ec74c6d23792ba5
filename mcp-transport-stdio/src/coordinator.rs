//! The coordinator: decodes each frame and hands every message to the
//! engine, in the order behaviour invariant 28 asks for.
//!
//! - undecodable frames and invalid messages are answered at once (with the
//!   id when it could be read, else `null`); malformed notifications are
//!   dropped;
//! - a client response is delivered by the engine to the session's pending
//!   server-to-client request (unknown ids are dropped);
//! - `notifications/cancelled` is routed here and now, never queued behind
//!   the request it cancels; other notifications wait, in order, in a
//!   bounded queue;
//! - a request goes through the engine's checks; what it answers at once
//!   (refusals, `initialize`, so that the session exists before the next
//!   frame is read) is written here, a call is admitted to the worker pool
//!   or refused with "Server is overloaded", a `subscriptions/listen`
//!   stream runs in its own task;
//! - a batch is checked by the engine, then its calls run as one job that
//!   writes one array.

use std::sync::Arc;

use mcp_protocol::jsonrpc::{DecodeError, DecodeLimits, Inbound, decode, encode_error};
use mcp_protocol::{Message, Notification, Request, RpcError};
use mcp_runtime::engine::{BatchStep, Listening};
use mcp_runtime::{Frame, InFlightGuard, Step};
use tokio::sync::mpsc;

use crate::exec;
use crate::framing::Input;
use crate::pool::Pool;
use crate::state::Shared;

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
                Ok(Inbound::Single(Message::Response(r))) => self.shared.engine.deliver(&self.shared.peer(), r).await,
                Ok(Inbound::Single(Message::Notification(n))) => self.notification(n).await,
                Ok(Inbound::Single(Message::Request(r))) => self.request(r).await,
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

    async fn notification(&self, note: Notification) {
        if note.method.is_cancellation() {
            // Routed at once: the request it names may be queued or running.
            self.shared.engine.notification(&self.shared.peer(), &note).await;
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
        let step = self.shared.engine.request(&self.shared.peer(), req).await;
        match step {
            Step::Answer(answer) => {
                if let Some(session) = &answer.session {
                    tracing::info!(revision = %session.revision().as_str(), "legacy session started");
                    // Notifications meant for this session alone go to the writer.
                    let out = self.shared.out.clone();
                    session.set_outlet(move |frame| out.try_notify(frame));
                }
                self.answer(answer.frame, None).await;
            }
            Step::Listen(listening) => self.listen(listening).await,
            Step::Call(call) if call.long_lived() => self.long_lived(call),
            Step::Call(call) => match self.pool.reserve() {
                Ok(slot) => self.pool.submit(slot, exec::single(self.shared.clone(), call)),
                Err(_) => {
                    tracing::warn!(id = %call.id(), "pool full; request refused");
                    let frame = encode_error(Some(call.id()), &RpcError::overloaded());
                    self.answer(frame, call.into_guard()).await;
                }
            },
        }
    }

    /// A long-lived request (an `events/stream`): run beside the pool, which bounds requests
    /// that end, not subscriptions (the client, the one process at the other end of the pipe,
    /// ends it with `notifications/cancelled`); cancelled when the input ends or a shutdown
    /// begins, like a listen stream.
    fn long_lived(&self, call: mcp_runtime::Call) {
        let token = call.cancel_token().clone();
        let (closed, shutdown) = (self.shared.input_closed.clone(), self.shared.shutdown.clone());
        let mut job = exec::single(self.shared.clone(), call);
        self.shared.listens.spawn(mcp_runtime::background::boxed(async move {
            tokio::select! {
                biased;
                () = &mut job => return,
                () = closed.cancelled() => {}
                () = shutdown.cancelled() => {}
            }
            token.cancel();
            job.await;
        }));
    }

    /// `subscriptions/listen`: the acknowledgement first, then the
    /// subscription's notifications, correlated by the listen id. The client
    /// ends it with `notifications/cancelled` (no answer); a server shutdown
    /// (the runtime's, or this transport's graceful one) ends it with
    /// `notifications/cancelled` naming the listen id and then the completion
    /// result; the end of input ends it silently.
    async fn listen(&self, listening: Listening) {
        let Listening { mut listener, guard } = listening;
        if let Some(ack) = listener.take_ack() {
            self.shared.out.notify(ack).await;
        }
        let shared = self.shared.clone();
        self.shared.listens.spawn(mcp_runtime::background::boxed(async move {
            let cancelled = guard.as_ref().map(|g| g.token().clone()).unwrap_or_default();
            loop {
                let ended = tokio::select! {
                    biased;
                    () = cancelled.cancelled() => break,
                    () = shared.shutdown.cancelled() => true,
                    () = shared.input_closed.cancelled() => break,
                    next = listener.next() => match next {
                        Some(frame) => {
                            if !shared.out.notify(frame).await {
                                break;
                            }
                            false
                        }
                        None => true,
                    },
                };
                if ended {
                    shared.out.notify(listener.server_cancel_frame()).await;
                    shared
                        .out
                        .respond(listener.completion_frame(), guard.into_iter().collect())
                        .await;
                    return;
                }
            }
            drop(guard);
        }));
    }

    async fn batch(&self, items: Vec<Result<Message, DecodeError>>) {
        let batch = match self.shared.engine.batch(&self.shared.peer(), items).await {
            BatchStep::Answer(answer) => return self.answer(answer.frame, None).await,
            BatchStep::Run(batch) => batch,
        };
        if !batch.has_calls() {
            let done = batch.run(self.shared.out.sink()).await;
            if let Some(frame) = done.frame {
                self.shared.out.respond(frame, done.guards).await;
            }
            return;
        }
        match self.pool.reserve() {
            Ok(slot) => self.pool.submit(slot, exec::batch(self.shared.clone(), batch)),
            Err(_) => {
                tracing::warn!("pool full; batch refused");
                let done = batch.refuse(&RpcError::overloaded());
                if let Some(frame) = done.frame {
                    self.shared.out.respond(frame, done.guards).await;
                }
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
