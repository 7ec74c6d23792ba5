//! `subscriptions/listen` (2026-07-28): a long-lived POST answered with an SSE stream.
//!
//! The runtime registers the subscription before it builds the acknowledgement; the stream (a
//! [`Feed`] run by the [`pump`](mod@crate::pump)) writes that acknowledgement first, then every
//! notification of the subscription, with keep-alive comments in between. The client ends a
//! subscription by closing the stream (dropping the runtime's `Listener` unsubscribes); a server
//! that shuts down writes the completion result, then closes.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::response::Response;
use mcp_runtime::Listening;
use mcp_runtime::listen::Listener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::pump::{self, Feed, Next, Outcome};
use crate::sse;
use crate::state::{Permit, Shared};

/// Serves a subscription the engine opened: its SSE stream, held with the request's permit.
pub(crate) fn serve(shared: &Shared, permit: Arc<Permit>, listening: Listening) -> Response {
    let (tx, rx) = sse::channel(shared.config.sse_buffer_size);
    let keep_alive = shared.config.sse_keep_alive;
    let shutdown = shared.shutdown.clone();
    shared
        .tracker
        .spawn(pump(listening.listener, tx, keep_alive, shutdown, permit));
    sse::response(rx)
}

/// Runs one subscription's stream; the permit is held until it ends.
async fn pump(
    listener: Listener,
    tx: mpsc::Sender<Bytes>,
    keep_alive: Duration,
    shutdown: CancellationToken,
    _permit: Arc<Permit>,
) {
    let id = listener.id().clone();
    if pump::run(Subscription(listener), tx, keep_alive, shutdown).await == Outcome::ClientGone {
        tracing::debug!(%id, "subscription closed by the client");
    }
}

/// The [`Feed`] of a subscription: its acknowledgement, its notifications, then (when the
/// server ends it) the completion result.
struct Subscription(Listener);

impl Subscription {
    /// The completion result's event.
    fn completion(&self) -> Bytes {
        sse::event(None, &self.0.completion_frame())
    }
}

impl Feed for Subscription {
    fn open(&mut self) -> Next {
        Next::Write(
            self.0
                .take_ack()
                .map(|ack| sse::event(None, &ack))
                .into_iter()
                .collect(),
        )
    }

    async fn next(&mut self) -> Next {
        match self.0.next().await {
            Some(frame) => Next::Write(vec![sse::event(None, &frame)]),
            None => Next::End(vec![self.completion()]),
        }
    }

    fn on_shutdown(&mut self) -> Option<Bytes> {
        Some(self.completion())
    }
}
