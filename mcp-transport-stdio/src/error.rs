//! Why serving ended with an error.

/// A failure of the stdio transport itself. Protocol errors never end up
/// here: they are answered on the wire and serving continues.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// Reading the input failed (other than by reaching its end). Admitted
    /// work was drained as on end of input.
    #[error("reading stdin failed: {0}")]
    Read(#[source] std::io::Error),
    /// Writing or flushing the output failed: the client can no longer be
    /// answered, so reading stopped and work in flight was cancelled.
    #[error("writing stdout failed: {0}")]
    Write(#[source] std::io::Error),
}
