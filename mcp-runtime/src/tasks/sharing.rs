//! [`Sharing`]: how the tasks of one instance reach the other instances of a server sharing a
//! store. The cluster implements it; tasks only see this port.

use serde_json::{Map, Value};

use crate::sink::Sink;
use crate::store::{StoreError, StoreFuture};

/// The other instances, as tasks need them.
pub(crate) trait Sharing: Send + Sync + std::fmt::Debug {
    /// This instance's id (task records name the instance running their worker).
    fn instance(&self) -> &str;

    /// Whether an instance's heartbeat is alive.
    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool>;

    /// Asks `instance`, which runs a task, to cancel it.
    fn forward_cancel(&self, instance: &str, task: &str) -> Result<(), StoreError>;

    /// Brings `tasks/update` input to `instance`, which runs a task.
    fn forward_input(&self, instance: &str, task: &str, responses: &Map<String, Value>) -> Result<(), StoreError>;

    /// A modern task's status changed here: listen streams on other instances hear it.
    fn task_changed(&self, task: &str, params: &Map<String, Value>);

    /// Sends the messages of a task `instance` runs (its server-to-client requests, its
    /// progress) to `sink`, a waiting 2025-11-25 `tasks/result` here, until the guard is dropped.
    fn follow(&self, instance: &str, task: &str, sink: Sink) -> Following;
}

/// While held, a task run elsewhere sends its messages here ([`Sharing::follow`]); dropping it
/// stops that.
pub(crate) struct Following(Option<Box<dyn FnOnce() + Send>>);

impl Following {
    #[cfg(feature = "shared-store")]
    /// A guard that runs `stop` when dropped.
    pub(crate) fn new(stop: impl FnOnce() + Send + 'static) -> Self {
        Following(Some(Box::new(stop)))
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            stop();
        }
    }
}
