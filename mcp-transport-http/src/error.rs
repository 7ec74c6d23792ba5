//! Why the transport could not be built or could not serve: [`HttpError`], returned by the
//! configuration's TLS setup, by [`endpoint`](crate::endpoint()) and by [`serve`](crate::serve).

use std::net::SocketAddr;

/// Why the transport could not be built or could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A non-loopback bind needs an explicit `allowed_origins` list.
    #[error("binding {addr} (not a loopback address) requires allowed_origins")]
    AllowedOriginsRequired {
        /// The address bound.
        addr: SocketAddr,
    },
    /// An `allowed_origins` entry does not parse.
    #[error("invalid allowed origin {0:?}: expected scheme://host[:port|:*], * or null")]
    InvalidOrigin(String),
    /// An `allowed_hosts` entry does not parse.
    #[error("invalid allowed host {0:?}: expected name[:port] or *")]
    InvalidHost(String),
    /// A path (the endpoint's or the SSE pair's) does not start with `/`, or two paths clash.
    #[error("invalid path {0:?}: paths must start with / and be distinct")]
    InvalidPath(String),
    /// The TLS certificate chain or key could not be used.
    #[error("invalid TLS configuration: {0}")]
    Tls(String),
    /// The listener failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
