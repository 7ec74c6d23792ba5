//! [`ResumeLink`]: what a handler's context knows of the resumable task its call runs as (a port
//! the tasks service implements, so that the handler API does not depend on it).

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::error::HandlerError;

/// The future [`ResumeLink::save`] returns.
pub(crate) type SaveFuture<'a> = Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send + 'a>>;

/// The task a resumable tool's call runs as: its id once it is a task, the attempt this run is,
/// the checkpoint it started from, and where a new checkpoint is saved.
pub(crate) trait ResumeLink: Send + Sync + std::fmt::Debug {
    /// The task id (`None` while a modern call still runs inline, before it is handed off).
    fn task_id(&self) -> Option<String>;

    /// The attempt this run is (1 for the first).
    fn attempt(&self) -> u32;

    /// The last checkpoint saved (by this run or an earlier attempt).
    fn last(&self) -> Option<Value>;

    /// Saves `checkpoint` with the task: the next attempt starts from it.
    fn save(&self, checkpoint: Value) -> SaveFuture<'_>;
}
