//! JSON-RPC batches: legacy only, where the revision allows them (`check_batch`: 2025-03-26 and,
//! for compatibility, 2024-11-05). A batch uses the session its transport names and never mints
//! one; its elements are split, each answered (decode errors and refusals at once), and its
//! requests run concurrently into one array.

use futures::future::join_all;
use mcp_protocol::classify::{check_batch, request_era};
use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::{DecodeError, encode_batch, encode_error, split_batch};
use mcp_protocol::{Era, Message, RpcError, TransportRevision};

use super::{Answer, Call, Engine, Peer, Resolved, Sessions, call, deliver_to, noted, register};
use crate::dispatch::route::route;
use crate::observe::Observed;
use crate::session::InFlightGuard;
use crate::sink::{Frame, Sink};

/// What the engine made of a batch.
#[derive(Debug)]
pub enum BatchStep {
    /// The whole batch is refused.
    Answer(Answer),
    /// Its elements, to run.
    Run(Batch),
}

/// A checked batch: the answers already known, and the requests to run.
#[derive(Debug)]
pub struct Batch {
    answers: Vec<Frame>,
    calls: Vec<Call>,
}

/// A batch that ended.
#[derive(Debug)]
pub struct BatchDone {
    /// The array of answers (`None` when nothing in the batch is answered: HTTP 202).
    pub frame: Option<Frame>,
    /// The registrations of its requests, to drop once the answer is written.
    pub guards: Vec<InFlightGuard>,
}

impl Batch {
    /// Whether the batch has requests to run (otherwise [`Batch::run`] finishes at once).
    pub fn has_calls(&self) -> bool {
        !self.calls.is_empty()
    }

    /// How many requests the batch runs.
    pub fn calls(&self) -> usize {
        self.calls.len()
    }

    /// Runs the requests concurrently (each with a clone of `sink` for what it emits), then
    /// answers with one array.
    pub async fn run(self, sink: Sink) -> BatchDone {
        let Batch { mut answers, calls } = self;
        let mut guards = Vec::new();
        let done = join_all(calls.into_iter().map(|c| c.run(sink.clone()))).await;
        for mut completed in done {
            answers.extend(completed.frame());
            guards.extend(completed.guard.take());
        }
        finish(answers, guards)
    }

    /// Answers every request with `error` without running it (the transport is over a bound).
    pub fn refuse(self, error: &RpcError) -> BatchDone {
        let Batch { mut answers, calls } = self;
        let mut guards = Vec::new();
        for c in calls {
            answers.push(encode_error(Some(c.id()), error));
            guards.extend(c.into_guard());
        }
        finish(answers, guards)
    }
}

fn finish(answers: Vec<Frame>, guards: Vec<InFlightGuard>) -> BatchDone {
    BatchDone {
        frame: (!answers.is_empty()).then(|| encode_batch(&answers)),
        guards,
    }
}

impl Engine {
    /// Checks a decoded batch and prepares its elements.
    pub async fn batch(&self, peer: &Peer<'_>, items: Vec<Result<Message, DecodeError>>) -> BatchStep {
        let received = std::time::Instant::now();
        let refuse = |stage, e: &RpcError| BatchStep::Answer(Answer::error(stage, Era::Legacy, None, e));
        if let TransportRevision::Unknown(v) = &peer.revision {
            return refuse(Stage::Envelope, &RpcError::unknown_revision_header(v));
        }
        // Batches are legacy: a server that does not serve that era refuses them whole.
        if !self.runtime.config().eras.has(Era::Legacy) {
            let requested = peer.revision.known().map_or("", |r| r.as_str());
            return refuse(Stage::Envelope, &self.unserved_error(requested));
        }
        let session = match self.resolve(peer).await {
            Resolved::Found(s) => Some(s),
            Resolved::Unknown => return refuse(Stage::Session, &RpcError::session_not_found()),
            Resolved::Unavailable => return refuse(Stage::Overload, &RpcError::store_unavailable()),
            Resolved::Absent => None,
        };
        let (messages, mut answers) = split_batch(items);
        let revision = peer.revision.known().or(session.as_ref().map(|s| s.revision()));
        if let Err(e) = check_batch(revision, &messages) {
            tracing::debug!(error = %e.message, "batch refused");
            return refuse(Stage::Envelope, &e);
        }
        let has_requests = messages.iter().any(|m| matches!(m, Message::Request(_)));
        if has_requests && session.is_none() && matches!(peer.sessions, Sessions::Store(_)) {
            return refuse(Stage::Session, &RpcError::session_required());
        }
        let mut calls = Vec::new();
        let attachments = peer.take_attachments();
        for message in messages {
            match message {
                Message::Response(r) => deliver_to(session.as_deref(), r),
                Message::Notification(n) => {
                    // Each item on its own: a notification a layer refuses is dropped.
                    let observed = Observed::notification(&n, Era::Legacy, self.origin(peer));
                    let outcome = observed
                        .run_in(self.notify_in(peer, Era::Legacy, session.as_ref(), &n))
                        .await;
                    noted(observed, session.as_ref(), &outcome);
                }
                Message::Request(req) => {
                    let era = request_era(&req, peer.revision.known());
                    let route = match route(&self.runtime.routing(), &req, era, session.as_deref(), &peer.auth) {
                        Ok(r) => r,
                        Err(rej) => {
                            crate::observe::refused(&req.method, &rej.error, revision, peer.network, received);
                            answers.push(encode_error(Some(&req.id), &rej.error));
                            continue;
                        }
                    };
                    let (guard, cancel) = match register(peer, route.era, session.as_ref(), &req.id) {
                        Ok(r) => r,
                        Err(e) => {
                            crate::observe::refused(&req.method, &e, route.revision, peer.network, received);
                            answers.push(encode_error(Some(&req.id), &e));
                            continue;
                        }
                    };
                    let env = call::Env {
                        auth: peer.auth.clone(),
                        session: session.clone(),
                        cancel,
                        guard,
                        attachments: attachments.clone(),
                        remote: peer.remote,
                        network: peer.network,
                    };
                    calls.push(Call::new(self.runtime.clone(), req, route, env, true));
                }
            }
        }
        BatchStep::Run(Batch { answers, calls })
    }
}
