//! `subscriptions/listen` (2026-07-28): a long-lived POST answered with an SSE stream.
//!
//! The runtime registers the subscription before it builds the acknowledgement; the pump writes
//! that acknowledgement first, then every notification of the subscription, with keep-alive
//! comments in between. The client ends a subscription by closing the stream (dropping the
//! runtime's `Listener` unsubscribes); a server that shuts down writes the completion result,
//! then closes.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::response::Response;
use mcp_protocol::{Era, Request};
use mcp_runtime::Route;
use mcp_runtime::listen::Listener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::post::PostCtx;
use crate::sse;
use crate::state::{Permit, rpc_error};

/// Opens a subscription for a routed modern `subscriptions/listen`.
pub(crate) fn open(cx: PostCtx, req: &Request, route: &Route) -> Response {
    let tasks = route
        .modern
        .as_ref()
        .is_some_and(|m| m.client_capabilities.tasks_extension());
    let listener = match cx.shared.runtime.listen(req, &cx.auth.principal, tasks) {
        Ok(l) => l,
        Err(e) => return rpc_error(e.http_status(Era::Modern), Some(&req.id), &e),
    };
    let (tx, rx) = sse::channel(cx.shared.config.sse_buffer_size);
    let keep_alive = cx.shared.config.sse_keep_alive;
    let shutdown = cx.shared.shutdown.clone();
    cx.shared
        .tracker
        .spawn(pump(listener, tx, keep_alive, shutdown, cx.permit));
    sse::response(rx)
}

async fn pump(
    mut listener: Listener,
    tx: mpsc::Sender<Bytes>,
    keep_alive: Duration,
    shutdown: CancellationToken,
    _permit: Arc<Permit>,
) {
    if let Some(ack) = listener.take_ack()
        && tx.send(sse::event(None, &ack)).await.is_err()
    {
        return;
    }
    let mut tick = tokio::time::interval(keep_alive.max(Duration::from_millis(10)));
    tick.reset();
    loop {
        tokio::select! {
            _ = tx.closed() => {
                tracing::debug!(id = %listener.id(), "subscription closed by the client");
                return;
            }
            _ = shutdown.cancelled() => break,
            next = listener.next() => match next {
                Some(frame) => {
                    if tx.send(sse::event(None, &frame)).await.is_err() {
                        return;
                    }
                }
                None => break,
            },
            _ = tick.tick() => {
                if tx.send(Bytes::from_static(sse::KEEP_ALIVE)).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(sse::event(None, &listener.completion_frame())).await;
}
