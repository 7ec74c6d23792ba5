//! Running a call the engine prepared and writing its answer: JSON when the reply comes before any frame,
//! SSE once the handler emits a frame (progress, a log message, a legacy server-to-client
//! request) — every frame of a call travels on that call's own stream.
//!
//! The dispatch runs in its own task. A legacy call of a session streams through a resumable
//! [`Tape`](crate::streams::resume::Tape) (priming event, ids, `Last-Event-ID` resumption): a
//! client that disconnects does not cancel it, and finds the rest of the stream when it
//! resumes. A legacy call without a session streams plainly (its frames are dropped when the
//! client leaves). A modern request is cancelled when its client goes away: a drop guard on the
//! request's token lives in the response future, then in the stream pump. In the simple mode
//! nothing streams.

use std::sync::Arc;
use std::task::Poll;

use axum::body::Bytes;
use axum::response::Response;
use mcp_protocol::jsonrpc::encode_error;
use mcp_protocol::{Era, RequestId, RpcError};
use mcp_runtime::middleware::Headers;
use mcp_runtime::{Call, Completed, Frame, SessionHandle, Sink};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::response::{json, rpc_error};
use crate::state::Shared;
use crate::status;
use crate::streams::pump::{self, Feed, Next};
use crate::streams::resume::{self, Follow, Streams, Tape};
use crate::streams::sse;

/// Runs a call the engine prepared and answers it, holding `permit` (a slot of the in-flight
/// cap, or of the stream budget for a long-lived call) until the call ends.
pub(crate) async fn run<P: Send + 'static>(shared: &Arc<Shared>, permit: P, call: Call) -> Response {
    let id = call.id().clone();
    let long_lived = call.long_lived();
    let streams = call.may_stream();
    let session = call.session();
    let legacy = call.era() == Era::Legacy;
    let poll = match &session {
        Some(_) if legacy && streams => call.tool_name().and_then(|tool| shared.config.polls(&tool)),
        _ => None,
    };
    // A call that cannot stream gets no channel: its sink would be detached anyway.
    let (sink, mut frames) = if streams {
        let (sink, frames) = Sink::channel(shared.config.sse_buffer_size.max(1));
        (sink, Some(frames))
    } else {
        (Sink::detached(), None)
    };
    let guard = call
        .disconnect_cancels()
        .then(|| call.cancel_token().clone().drop_guard());
    // The first poll runs here: a call that ends at once (most do) is answered without a task
    // of its own. One that has to wait moves, as it is, to a task, where a shutdown whose grace
    // ran out cancels it (a modern call belongs to no session that closing would cancel); it
    // still runs to its end, within its grace.
    let token = call.cancel_token().clone();
    let close_at = poll.map(|after| Instant::now() + after);
    // A modern call silent for this long answers with a stream anyway (`open_stream_after`).
    let open_at = match shared.config.open_stream_after {
        Some(after) if !legacy && shared.streams() => Some(Instant::now() + after),
        _ => None,
    };
    let mut run = Box::pin(call.run(sink));
    let (mut job, first) = match futures::poll!(run.as_mut()) {
        Poll::Ready(done) => match frames.as_mut().and_then(|f| f.try_recv().ok()) {
            None => return finish(guard, json_reply(&id, Ok(done))),
            // It streamed before it ended: its stream, already complete.
            Some(first) => (shared.tracker.spawn(std::future::ready(done)), Some(first)),
        },
        Poll::Pending => {
            let stop = shared.stop_calls.clone();
            let mut job = shared.tracker.spawn(async move {
                let _permit = permit;
                tokio::select! {
                    biased;
                    done = &mut run => done,
                    () = stop.cancelled() => {
                        token.cancel();
                        run.await
                    }
                }
            });
            let first = tokio::select! {
                biased;
                f = next_frame(&mut frames) => f,
                r = &mut job => return finish(guard, json_reply(&id, r)),
                _ = until(close_at) => None,
                _ = until(open_at) => None,
            };
            (job, first)
        }
    };
    // A long-lived call is not resumed from a tape: its client resumes it with its cursor.
    if let (Some(session), true) = (&session, legacy && !long_lived)
        && (first.is_some() || close_at.is_some_and(|at| at <= Instant::now()))
        && let Some(frames) = frames.take()
    {
        return resumable(shared, session, first, frames, job, id, close_at);
    }
    // A call that emitted a frame streams; so does a silent one whose stream opens now.
    let opened = open_at.is_some_and(|at| at <= Instant::now());
    if first.is_none() && !opened {
        let r = (&mut job).await;
        return finish(guard, json_reply(&id, r));
    }
    let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
    let feed = CallFeed {
        first,
        frames,
        job,
        _guard: guard,
        id,
        long_lived,
    };
    // Shutdown does not end a call's stream: the call's grace does, and its reply ends it.
    let keep_alive = shared.config.sse_keep_alive;
    shared
        .tracker
        .spawn(pump::run(feed, tx, keep_alive, CancellationToken::new()));
    sse::response(rx)
}

/// The next frame of a call that streams; never, for one that cannot.
async fn next_frame(frames: &mut Option<mpsc::Receiver<Frame>>) -> Option<Frame> {
    match frames {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
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
    session: &SessionHandle,
    first: Option<Frame>,
    frames: mpsc::Receiver<Frame>,
    job: JoinHandle<Completed>,
    id: RequestId,
    close_at: Option<Instant>,
) -> Response {
    let channel = shared.hub.channel(session);
    let tape = channel.streams.open();
    shared
        .tracker
        .spawn(collect(tape.clone(), channel.streams.clone(), first, frames, job, id));
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
    mut job: JoinHandle<Completed>,
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
    tape.finish(final_frame(&id, reply).map(Bytes::from));
    streams.finished(tape.number());
}

/// The call is over: its token no longer needs cancelling on drop.
fn finish(guard: Option<DropGuard>, resp: Response) -> Response {
    if let Some(g) = guard {
        g.disarm();
    }
    resp
}

/// Adds the headers middleware layers chose to a response.
fn with_headers(mut resp: Response, headers: &Headers) -> Response {
    crate::bridge::write_headers(resp.headers_mut(), headers);
    resp
}

fn json_reply(id: &RequestId, r: Result<Completed, tokio::task::JoinError>) -> Response {
    match r {
        Ok(done) => match done.frame() {
            Some(body) => with_headers(json(status::completed(done.status()), body), done.headers()),
            // A cancelled call gets no JSON-RPC answer: an SSE stream that ends at once
            // (behaviour invariant 13; see `sse::ended`).
            None => sse::ended(),
        },
        Err(e) => {
            tracing::error!(%id, error = %e, "request task failed");
            rpc_error(status::TASK_FAILED, Some(id), &RpcError::internal())
        }
    }
}

/// The final message of a stream (`None`: cancelled, nothing is written).
fn final_frame(id: &RequestId, r: Result<Completed, tokio::task::JoinError>) -> Option<Vec<u8>> {
    match r {
        Ok(done) => done.frame(),
        Err(e) => {
            tracing::error!(%id, error = %e, "request task failed");
            Some(encode_error(Some(id), &RpcError::internal()))
        }
    }
}

/// The stream of a call that is not resumable, written by the transport's one pump
/// ([`pump::run`]: keep-alives, the client leaving): the call's first frame (or, for a call
/// that had emitted nothing when its stream was opened, an empty event), its other frames, then
/// its reply, which ends the stream. Dropped with the stream: `_guard` (modern) then cancels
/// the call if the client left first.
///
/// Unlike stdio (`mcp-transport-stdio`'s writer), a reply may follow its frames at once, even
/// in one TCP read: the official TypeScript SDK clients take SSE events one `await`ed read at a
/// time, so the microtask that dispatches a progress notification runs before the next event
/// (the reply) is handled. Measured with both SDK majors over 200 calls each of the fixture's
/// progress tool, modern (this feed) and legacy (the tape of [`collect`]): no notification lost.
struct CallFeed {
    /// The frame that opened the stream, until it is written.
    first: Option<Frame>,
    /// The call's frames, until the call drops its sink.
    frames: Option<mpsc::Receiver<Frame>>,
    /// The call; its reply ends the stream.
    job: JoinHandle<Completed>,
    /// (Modern) cancels the call if the client leaves first.
    _guard: Option<DropGuard>,
    /// The call's request id.
    id: RequestId,
    /// A long-lived call: its own frames keep its stream alive (no keep-alive comments).
    long_lived: bool,
}

impl Feed for CallFeed {
    fn keeps_alive(&self) -> bool {
        !self.long_lived
    }

    fn open(&mut self) -> Next {
        let opening = match self.first.take() {
            Some(f) => sse::event(None, &f),
            None => Bytes::from_static(sse::EMPTY),
        };
        Next::Write(vec![opening])
    }

    async fn next(&mut self) -> Next {
        // Both waits are cancel safe: a keep-alive tick may come first.
        let reply = tokio::select! {
            biased;
            f = next_frame(&mut self.frames) => {
                return match f {
                    Some(f) => Next::Write(vec![sse::event(None, &f)]),
                    None => {
                        self.frames = None;
                        Next::Write(Vec::new())
                    }
                };
            }
            r = &mut self.job => r,
        };
        // Frames the call emitted before it ended go first, then its reply.
        let mut chunks = Vec::new();
        if let Some(rx) = self.frames.as_mut() {
            while let Ok(f) = rx.try_recv() {
                chunks.push(sse::event(None, &f));
            }
        }
        if let Some(last) = final_frame(&self.id, reply) {
            chunks.push(sse::event(None, &last));
        }
        Next::End(chunks)
    }
}
