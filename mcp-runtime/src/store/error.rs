//! How a store seam fails ([`StoreError`]) and the future its methods return ([`StoreFuture`]).

use std::future::Future;
use std::pin::Pin;

/// The future a store method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store operation failed. Requests that needed the store are answered with a clear error
/// (HTTP 503 or JSON-RPC -32603 "Store unavailable"); the detail goes to the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backend failed (I/O, encoding, a script error).
    #[error("store backend failed: {0}")]
    Backend(String),
    /// The backend cannot be reached right now (connection refused or lost); retry later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// The wire error of a store failure met while serving a request (logged here): -32603
    /// "Store unavailable", HTTP 503.
    pub(crate) fn unavailable(&self) -> mcp_protocol::RpcError {
        tracing::warn!(error = %self, "shared store unavailable");
        mcp_protocol::RpcError::store_unavailable()
    }
}
