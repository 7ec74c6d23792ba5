//! Running a routed request and writing its answer: JSON when the reply comes before any frame,
//! SSE once the handler emits a frame (progress, a log message, a legacy server-to-client
//! request) — every frame of a call travels on that call's own stream.
//!
//! The dispatch runs in its own task. A legacy call of a session streams through a resumable
//! [`Tape`](crate::resume::Tape) (priming event, ids, `Last-Event-ID` resumption): a client that
//! disconnects does not cancel it, and finds the rest of the stream when it resumes. A legacy
//! call without a session streams plainly (its frames are dropped when the client leaves). A
//! modern request is cancelled when its client goes away: a drop guard on the request's token
//! lives in the response future, then in the stream pump. In the simple mode nothing streams.

use std::sync::Arc;

use axum::body::Bytes;
use axum::response::Response;
use http::StatusCode;
use mcp_protocol::error::dispatch_http_status;
use mcp_protocol::jsonrpc::encode_error;
use mcp_protocol::{Era, RequestId, RpcError};
use mcp_runtime::{Frame, Reply, RequestEnv, Route, Session, Sink};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::post::PostCtx;
use crate::resume::{self, Follow, Streams, Tape};
use crate::sse;
use crate::state::{Shared, empty, json, rpc_error};

/// The era of a call, as far as its answer is concerned.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    /// Legacy: streams whenever the handler emits; disconnect is not cancellation.
    Legacy,
    /// Modern: streams only when asked (progress token or log level); disconnect cancels.
    Modern {
        /// Whether the request asked for a stream.
        stream: bool,
    },
}

fn dispatch_status(mode: Mode, code: i32) -> u16 {
    let era = match mode {
        Mode::Legacy => Era::Legacy,
        Mode::Modern { .. } => Era::Modern,
    };
    dispatch_http_status(era, code)
}

/// Runs a routed request (anything but a legacy `initialize`) and answers it.
pub(crate) async fn run(
    cx: PostCtx,
    req: mcp_protocol::Request,
    route: Route,
    session: Option<Arc<Session>>,
    mode: Mode,
) -> Response {
    let shared = cx.shared.clone();
    let id = req.id.clone();
    let cancel = CancellationToken::new();
    let registration = match &session {
        Some(s) => match s.in_flight().begin(id.clone(), cancel.clone()) {
            Ok(g) => Some(g),
            Err(dup) => return rpc_error(200, Some(&id), &RpcError::invalid_request(dup.to_string())),
        },
        None => None,
    };
    let streams = shared.streams()
        && match mode {
            Mode::Legacy => true,
            Mode::Modern { stream } => stream,
        };
    let poll = match (&session, mode) {
        (Some(_), Mode::Legacy) if streams && req.method == "tools/call" => req
            .params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .and_then(|tool| shared.config.polls(tool)),
        _ => None,
    };
    let (sink, mut frames) = Sink::channel(shared.config.sse_buffer_size.max(1));
    let sink = if streams { sink } else { Sink::detached() };
    let env = RequestEnv {
        auth: cx.auth,
        session: session.clone(),
        sink,
        cancel: cancel.clone(),
        extensions: cx.parts.extensions,
    };
    let runtime = shared.runtime.clone();
    let permit = cx.permit;
    let mut job = shared.tracker.spawn(async move {
        let _registration = registration;
        let _permit = permit;
        runtime.dispatch(req, &route, env).await
    });
    let seen = cancel.clone();
    let guard = matches!(mode, Mode::Modern { .. }).then(|| cancel.drop_guard());
    let close_at = poll.map(|after| Instant::now() + after);
    let first = tokio::select! {
        biased;
        f = frames.recv() => f,
        r = &mut job => return finish(guard, json_reply(&id, prefer_cancel(r, &seen), mode)),
        _ = until(close_at) => None,
    };
    if let (Some(session), Mode::Legacy) = (&session, mode)
        && (first.is_some() || close_at.is_some_and(|at| at <= Instant::now()))
    {
        return resumable(&shared, session, first, frames, job, seen, id, close_at);
    }
    let Some(first) = first else {
        let r = (&mut job).await;
        return finish(guard, json_reply(&id, prefer_cancel(r, &seen), mode));
    };
    let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
    shared.tracker.spawn(pump(first, frames, job, tx, guard, seen, id));
    sse::response(rx)
}

/// Sleeps until `at`, or forever.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Answers a legacy call of a session with a resumable stream: the call's frames and reply go
/// to a tape, which the POST response follows until `close_at` (SEP-1699 polling) or the end.
#[allow(clippy::too_many_arguments)]
fn resumable(
    shared: &Shared,
    session: &Arc<Session>,
    first: Option<Frame>,
    frames: mpsc::Receiver<Frame>,
    job: JoinHandle<Reply>,
    cancel: CancellationToken,
    id: RequestId,
    close_at: Option<Instant>,
) -> Response {
    let channel = shared.hub.channel(session);
    let tape = channel.streams.open();
    shared.tracker.spawn(collect(
        tape.clone(),
        channel.streams.clone(),
        first,
        frames,
        job,
        cancel,
        id,
    ));
    let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
    let follow = Follow {
        streams: channel.streams.clone(),
        tape,
        from: None,
        close_at,
        retry: shared.config.sse_retry,
        keep_alive: shared.config.sse_keep_alive,
        shutdown: shared.shutdown.clone(),
        session: session.closed().clone(),
    };
    shared.tracker.spawn(resume::follow(follow, tx));
    sse::response(rx)
}

/// Moves a call's frames, then its reply, to its tape.
async fn collect(
    tape: Arc<Tape>,
    streams: Arc<Streams>,
    first: Option<Frame>,
    mut frames: mpsc::Receiver<Frame>,
    mut job: JoinHandle<Reply>,
    cancel: CancellationToken,
    id: RequestId,
) {
    if let Some(f) = first {
        tape.push(Bytes::from(f)).await;
    }
    let mut open = true;
    let reply = loop {
        tokio::select! {
            biased;
            f = frames.recv(), if open => match f {
                Some(f) => tape.push(Bytes::from(f)).await,
                None => open = false,
            },
            r = &mut job => break r,
        }
    };
    while let Ok(f) = frames.try_recv() {
        tape.push(Bytes::from(f)).await;
    }
    tape.finish(final_frame(&id, prefer_cancel(reply, &cancel)).map(Bytes::from));
    streams.finished(tape.number());
}

/// A call whose cancellation was seen is answered as cancelled, even when its handler raced to
/// an outcome (behaviour invariant 13).
fn prefer_cancel(
    r: Result<Reply, tokio::task::JoinError>,
    cancel: &CancellationToken,
) -> Result<Reply, tokio::task::JoinError> {
    match r {
        Ok(_) if cancel.is_cancelled() => Ok(Reply::Cancelled),
        other => other,
    }
}

/// The call is over: its token no longer needs cancelling on drop.
fn finish(guard: Option<DropGuard>, resp: Response) -> Response {
    if let Some(g) = guard {
        g.disarm();
    }
    resp
}

fn json_reply(id: &RequestId, r: Result<Reply, tokio::task::JoinError>, mode: Mode) -> Response {
    match r {
        Ok(Reply::Error(e)) => rpc_error(dispatch_status(mode, e.code), Some(id), &e),
        // A cancelled call is answered with an empty 200 (behaviour invariant 13).
        Ok(Reply::Cancelled) => empty(StatusCode::OK),
        Ok(reply) => match reply.encode(id) {
            Some(body) => json(StatusCode::OK, body),
            None => empty(StatusCode::OK),
        },
        Err(e) => {
            tracing::error!(%id, error = %e, "request task failed");
            rpc_error(500, Some(id), &RpcError::internal())
        }
    }
}

/// The final message of a stream (`None`: cancelled, nothing is written).
fn final_frame(id: &RequestId, r: Result<Reply, tokio::task::JoinError>) -> Option<Vec<u8>> {
    match r {
        Ok(reply) => reply.encode(id),
        Err(e) => {
            tracing::error!(%id, error = %e, "request task failed");
            Some(encode_error(Some(id), &RpcError::internal()))
        }
    }
}

/// Writes a call's frames, then its reply, then ends the stream. `_guard` (modern) cancels the
/// call if the client leaves first.
async fn pump(
    first: Frame,
    mut frames: mpsc::Receiver<Frame>,
    mut job: JoinHandle<Reply>,
    tx: mpsc::Sender<Bytes>,
    _guard: Option<DropGuard>,
    cancel: CancellationToken,
    id: RequestId,
) {
    if tx.send(sse::event(None, &first)).await.is_err() {
        return;
    }
    let mut open = true;
    let reply = loop {
        tokio::select! {
            biased;
            f = frames.recv(), if open => match f {
                Some(f) => {
                    if tx.send(sse::event(None, &f)).await.is_err() {
                        tracing::debug!(%id, "client left the stream");
                        return;
                    }
                }
                None => open = false,
            },
            r = &mut job => break r,
            _ = tx.closed() => {
                tracing::debug!(%id, "client left the stream");
                return;
            }
        }
    };
    while let Ok(f) = frames.try_recv() {
        if tx.send(sse::event(None, &f)).await.is_err() {
            return;
        }
    }
    if let Some(last) = final_frame(&id, prefer_cancel(reply, &cancel)) {
        let _ = tx.send(sse::event(None, &last)).await;
    }
}
