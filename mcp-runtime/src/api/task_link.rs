//! [`TaskLink`]: what a handler's context knows of the 2025-11-25 task its call runs as (a port
//! the tasks service implements, so that the handler API does not depend on it).

use std::future::Future;
use std::pin::Pin;

/// The future a [`TaskLink`] method returns.
pub(crate) type LinkFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The task a legacy call runs as: server-to-client requests carry the `related-task` `_meta`,
/// move the task to `input_required` while they wait, and travel on the stream of a waiting
/// `tasks/result` when the call's own stream is gone.
pub(crate) trait TaskLink: Send + Sync + std::fmt::Debug {
    /// The task id.
    fn id(&self) -> &str;

    /// Waits until the task's messages can reach the client.
    fn streaming(&self) -> LinkFuture<'_>;

    /// A server-to-client request starts: the task waits for input.
    fn begin_client_request(&self) -> LinkFuture<'_>;

    /// A server-to-client request ended: back to work when none is left.
    fn end_client_request(&self) -> LinkFuture<'_>;
}
