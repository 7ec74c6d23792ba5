//! `subscriptions/listen` (2026-07-28): a long-lived POST answered with an SSE stream.
//!
//! The engine registers the subscription before it builds the acknowledgement; the stream (a
//! [`Feed`] run by the [`pump`](mod@crate::streams::pump)) writes that acknowledgement first,
//! then every notification of the subscription, with keep-alive comments in between. The client
//! ends a subscription by closing the stream (dropping the engine's `Listener` unsubscribes); a
//! server that shuts down writes the completion result, then closes.

use std::net::IpAddr;

use axum::body::Bytes;
use axum::response::Response;
use mcp_runtime::Listening;
use mcp_runtime::listen::Listener;

use crate::state::Shared;
use crate::streams::pump::{self, Feed, Next, PollFeed};
use crate::streams::sse;

/// Serves a subscription the engine opened: its SSE stream, held with a permit of the stream
/// budget taken for the client at `address` (a refusal drops the `Listener`, which
/// unsubscribes, and answers the listen request with the budget's error).
/// The response body is the pump ([`pump::body`]): no task and no channel per stream, since a
/// server may hold thousands of idle subscriptions. The client leaving drops the body, hence
/// the `Listener`, which unsubscribes.
pub(crate) fn serve(shared: &Shared, address: Option<IpAddr>, listening: Listening) -> Response {
    let permit = match shared.stream(address) {
        Ok(p) => p,
        Err(refusal) => return refusal.response(Some(listening.listener.id())),
    };
    let feed = Subscription(listening.listener);
    sse::with_body(pump::body(
        feed,
        shared.config.sse_keep_alive,
        shared.shutdown.clone(),
        permit,
    ))
}

/// The [`Feed`] of a subscription: its acknowledgement, its notifications, then (when the
/// server ends it) the completion result.
struct Subscription(Listener);

impl Drop for Subscription {
    fn drop(&mut self) {
        tracing::debug!(id = %self.0.id(), "subscription stream closed");
    }
}

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
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    fn on_shutdown(&mut self) -> Option<Bytes> {
        Some(self.completion())
    }
}

impl PollFeed for Subscription {
    fn poll_next(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Next> {
        self.0.poll_next(cx).map(|frame| match frame {
            Some(frame) => Next::Write(vec![sse::event(None, &frame)]),
            None => Next::End(vec![self.completion()]),
        })
    }
}
