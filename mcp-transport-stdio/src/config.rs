//! The bounds of one stdio server, with the reference implementation's
//! defaults.

use std::time::Duration;

/// Configuration of the stdio transport.
///
/// Every field has a documented default (those of the reference
/// implementation); set them with the `with_*` builder methods:
///
/// ```
/// use std::time::Duration;
/// use mcp_transport_stdio::StdioConfig;
///
/// let config = StdioConfig::default()
///     .with_max_workers(4)
///     .with_drain_timeout(Duration::from_secs(5));
/// assert_eq!(config.max_workers, 4);
/// assert_eq!(config.max_queue, 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioConfig {
    /// Largest accepted frame (one line, without its newline) in bytes
    /// (default 16 MiB). A longer line is discarded up to its newline and
    /// answered with a -32600 error whose id is `null`; serving continues.
    pub max_frame_bytes: usize,
    /// Deepest accepted JSON nesting of a frame (default 64).
    pub max_depth: usize,
    /// Most messages in one JSON-RPC batch (default 128): a longer batch is
    /// answered with -32600 before it is decoded whole. A batch runs as one
    /// job of the pool.
    pub max_batch: usize,
    /// Requests (or batches) running at once (default 8; at least 1).
    pub max_workers: usize,
    /// Admitted requests waiting for a worker (default 64). Past
    /// `max_workers + max_queue`, a request is answered at once with -32603
    /// "Server is overloaded".
    pub max_queue: usize,
    /// Client notifications waiting to be handled (default 256; at least 1).
    /// Past it, notifications are dropped: they have no reply.
    /// `notifications/cancelled` never waits here.
    pub max_notifications: usize,
    /// How long admitted work may still run after stdin closes or a graceful
    /// shutdown begins ([`serve_until`](crate::serve_until)) (default 10 s).
    /// Past it, the remaining requests are cancelled and get no answer; each
    /// handler then has the engine's `cancel_grace` to clean up.
    pub drain_timeout: Duration,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            max_frame_bytes: mcp_protocol::jsonrpc::DEFAULT_MAX_BYTES,
            max_depth: mcp_protocol::jsonrpc::DEFAULT_MAX_DEPTH,
            max_batch: mcp_protocol::jsonrpc::DEFAULT_MAX_BATCH,
            max_workers: 8,
            max_queue: 64,
            max_notifications: 256,
            drain_timeout: Duration::from_secs(10),
        }
    }
}

impl StdioConfig {
    /// Sets [`StdioConfig::max_frame_bytes`].
    pub fn with_max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// Sets [`StdioConfig::max_depth`].
    pub fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Sets [`StdioConfig::max_batch`].
    pub fn with_max_batch(mut self, n: usize) -> Self {
        self.max_batch = n;
        self
    }

    /// Sets [`StdioConfig::max_workers`] (0 counts as 1).
    pub fn with_max_workers(mut self, workers: usize) -> Self {
        self.max_workers = workers;
        self
    }

    /// Sets [`StdioConfig::max_queue`].
    pub fn with_max_queue(mut self, queue: usize) -> Self {
        self.max_queue = queue;
        self
    }

    /// Sets [`StdioConfig::max_notifications`] (0 counts as 1).
    pub fn with_max_notifications(mut self, notifications: usize) -> Self {
        self.max_notifications = notifications;
        self
    }

    /// Sets [`StdioConfig::drain_timeout`].
    pub fn with_drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// The worker count actually used (at least one).
    pub(crate) fn workers(&self) -> usize {
        self.max_workers.max(1)
    }

    /// The notification queue length actually used (at least one).
    pub(crate) fn notifications(&self) -> usize {
        self.max_notifications.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = StdioConfig::default();
        assert_eq!(c.max_frame_bytes, 16 * 1024 * 1024);
        assert_eq!(c.max_depth, 64);
        assert_eq!(c.max_workers, 8);
        assert_eq!(c.max_queue, 64);
        assert_eq!(c.max_notifications, 256);
        assert_eq!(c.drain_timeout, Duration::from_secs(10));
    }

    #[test]
    fn zero_bounds_are_clamped() {
        let c = StdioConfig::default().with_max_workers(0).with_max_notifications(0);
        assert_eq!(c.workers(), 1);
        assert_eq!(c.notifications(), 1);
    }
}
