//! Running admitted work on a worker: one call, or the calls of one batch,
//! with their answer written when they end. The engine runs them (sink,
//! cancellation, panics, "cancel wins"); a cancelled call is not answered.

use std::sync::Arc;

use mcp_runtime::Call;
use mcp_runtime::engine::Batch;

use crate::pool::Job;
use crate::state::Shared;

/// The job of one call: run it, then write its answer (if any). The id
/// stays in flight until the answer is written.
pub(crate) fn single(shared: Arc<Shared>, call: Call) -> Job {
    Box::pin(async move {
        let mut done = call.run(shared.out.sink()).await;
        if let Some(frame) = done.frame() {
            shared.out.respond(frame, done.guard.take().into_iter().collect()).await;
        }
    })
}

/// The job of one batch: run its calls concurrently, then write one array
/// (nothing when nothing is answered, e.g. every call cancelled).
pub(crate) fn batch(shared: Arc<Shared>, batch: Batch) -> Job {
    Box::pin(async move {
        let done = batch.run(shared.out.sink()).await;
        if let Some(frame) = done.frame {
            shared.out.respond(frame, done.guards).await;
        }
    })
}
