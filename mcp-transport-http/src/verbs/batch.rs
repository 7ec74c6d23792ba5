//! JSON-RPC batches on the Streamable endpoint. The decoder stops at
//! [`HttpConfig::max_batch`](crate::HttpConfig::max_batch) messages; the engine checks the batch
//! (revision, session) and prepares its elements; each request takes a slot of the in-flight cap
//! (503 when they do not all fit); they run concurrently in one tracked task, and the answer is
//! one JSON array (nothing streams: the elements get a detached sink), or 202 when
//! nothing in the batch expects an answer.

use axum::response::Response;
use mcp_protocol::RpcError;
use mcp_runtime::Sink;
use mcp_runtime::engine::BatchStep;

use crate::response::{answer, empty, json, rpc_error};
use crate::state::{Permit, Shared};
use crate::status;

/// Answers a batch the engine checked.
pub(crate) async fn run(shared: &Shared, permit: Permit, step: BatchStep) -> Response {
    let batch = match step {
        BatchStep::Answer(a) => return answer(&shared.config, a),
        BatchStep::Run(b) => b,
    };
    // Every request of the batch counts against the in-flight cap (the POST holds one slot).
    let more = match shared.permits(batch.calls().saturating_sub(1), permit.address()) {
        Ok(p) => p,
        Err(b) => {
            tracing::warn!(requests = batch.calls(), "batch refused: too many requests in flight");
            return b.response();
        }
    };
    let job = shared.tracker.spawn(async move {
        let _permits = (permit, more);
        batch.run(Sink::detached()).await
    });
    match job.await {
        Ok(done) => match done.frame {
            Some(frame) => json(status::BATCH_ANSWERED, frame),
            None => empty(status::NOTHING_TO_ANSWER),
        },
        Err(e) => {
            tracing::error!(error = %e, "batch task failed");
            rpc_error(status::TASK_FAILED, None, &RpcError::internal())
        }
    }
}
