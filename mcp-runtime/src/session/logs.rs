//! What a session's logs in the shared store tell the transport that serves it: the seam
//! between the runtime, which stores a session's messages where every instance reads them, and
//! the transport, which turns them into resumable streams.
//!
//! A transport that resumes streams from any instance (HTTP's event ids) keeps, per
//! session, whatever wakes its streams; it installs that once as the session's [`LogWatcher`]
//! ([`SessionHandle::watch_logs`](crate::SessionHandle::watch_logs)). The runtime tells the
//! watcher of every message appended to one of the session's logs, here or on another instance,
//! and of a stream of the session claimed elsewhere. It knows nothing of what a stream is to the
//! transport: log `0` is the session's own stream (messages meant for the session alone), other
//! numbers are the logs the transport appends to itself
//! ([`SessionHandle::log_event`](crate::SessionHandle::log_event)).

use std::any::Any;

/// News of a session's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogNews {
    /// A message was appended to log `stream` with event id `id` (on this instance or another).
    Appended {
        /// The log: `0` for the session's own stream.
        stream: u64,
        /// The id the store gave the message.
        id: u64,
    },
    /// The session's own stream was claimed on another instance
    /// ([`SessionHandle::claim_stream`](crate::SessionHandle::claim_stream) there): one reader
    /// at a time, so the reader here ends.
    Claimed,
}

/// What a transport installs on a session to hear [`LogNews`]. It is called on the runtime's
/// bus task: it must not block (wake a task, bump a counter).
pub trait LogWatcher: Any + Send + Sync + std::fmt::Debug {
    /// One piece of news.
    fn news(&self, news: LogNews);
}
