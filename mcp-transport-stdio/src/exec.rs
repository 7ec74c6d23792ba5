//! Running admitted requests on a worker: one request, or the requests of
//! one batch, each with its own environment (caller, session, sink,
//! cancellation token) and the answer written when it ends.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::join_all;
use mcp_protocol::jsonrpc::encode_batch;
use mcp_protocol::{Request, RpcError};
use mcp_runtime::{Frame, InFlightGuard, Reply, RequestEnv, Route, Session};

use crate::pool::Job;
use crate::state::Shared;

/// A request ready to run: registered in flight and routed to its era.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The request.
    pub(crate) req: Request,
    /// Its era and revision.
    pub(crate) route: Route,
    /// The legacy session it runs in (`None` for modern requests and for
    /// legacy ones before `initialize`).
    pub(crate) session: Option<Arc<Session>>,
    /// Keeps the id in flight until the answer is written; carries the
    /// request's cancellation token.
    pub(crate) guard: InFlightGuard,
}

/// The job of one request: run it, then write its answer (if any).
pub(crate) fn single(shared: Arc<Shared>, prepared: Prepared) -> Job {
    Box::pin(async move {
        let (frame, guard) = run(&shared, prepared).await;
        match frame {
            Some(frame) => shared.out.respond(frame, vec![guard]).await,
            None => drop(guard),
        }
    })
}

/// The job of one batch: run its requests concurrently, then write one
/// array holding `answers` (already known, e.g. invalid elements, with the
/// `guards` of their ids) and the responses of the requests. Nothing is
/// written when there is nothing to answer (every request cancelled).
pub(crate) fn batch(
    shared: Arc<Shared>,
    answers: Vec<Frame>,
    mut guards: Vec<InFlightGuard>,
    prepared: Vec<Prepared>,
) -> Job {
    Box::pin(async move {
        let results = join_all(prepared.into_iter().map(|p| run(&shared, p))).await;
        let mut frames = answers;
        for (frame, guard) in results {
            frames.extend(frame);
            guards.push(guard);
        }
        if !frames.is_empty() {
            shared.out.respond(encode_batch(&frames), guards).await;
        }
    })
}

/// Runs one request; the encoded response (`None` when cancelled) and the
/// guard to release once it is written.
async fn run(shared: &Shared, prepared: Prepared) -> (Option<Frame>, InFlightGuard) {
    let Prepared {
        req,
        route,
        session,
        guard,
    } = prepared;
    let cancel = guard.token().clone();
    if cancel.is_cancelled() {
        // Cancelled while it waited for a worker.
        tracing::debug!(id = %req.id, "request cancelled before it started");
        return (None, guard);
    }
    let id = req.id.clone();
    let method = req.method.clone();
    let mut env = RequestEnv::new(shared.auth.clone(), shared.out.sink());
    env.session = session;
    env.cancel = cancel.clone();
    let dispatched = AssertUnwindSafe(shared.runtime.dispatch(req, &route, env))
        .catch_unwind()
        .await;
    let reply = dispatched.unwrap_or_else(|_| {
        tracing::error!(%id, %method, "request handler panicked");
        Reply::Error(RpcError::internal())
    });
    // A cancelled request is never answered, even when its handler won the
    // race against the cancellation (behaviour invariant 13).
    let frame = match reply {
        _ if cancel.is_cancelled() => None,
        reply => reply.encode(&id),
    };
    if frame.is_none() {
        tracing::debug!(%id, %method, "request cancelled; no answer");
    }
    (frame, guard)
}
