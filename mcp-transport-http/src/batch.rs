//! JSON-RPC batches on the Streamable endpoint. The engine checks the batch (revision, session)
//! and prepares its elements; their requests run concurrently in one tracked task, and the
//! answer is one JSON array (nothing streams: the elements get a detached sink), or 202 when
//! nothing in the batch expects an answer.

use std::sync::Arc;

use axum::response::Response;
use http::StatusCode;
use mcp_protocol::RpcError;
use mcp_runtime::Sink;
use mcp_runtime::engine::BatchStep;

use crate::post::answer;
use crate::state::{Permit, Shared, empty, json, rpc_error};

/// Answers a batch the engine checked.
pub(crate) async fn run(shared: &Shared, permit: Arc<Permit>, step: BatchStep) -> Response {
    let batch = match step {
        BatchStep::Answer(a) => return answer(a),
        BatchStep::Run(b) => b,
    };
    let job = shared.tracker.spawn(async move {
        let _permit = permit;
        batch.run(Sink::detached()).await
    });
    match job.await {
        Ok(done) => match done.frame {
            Some(frame) => json(StatusCode::OK, frame),
            None => empty(StatusCode::ACCEPTED),
        },
        Err(e) => {
            tracing::error!(error = %e, "batch task failed");
            rpc_error(500, None, &RpcError::internal())
        }
    }
}
