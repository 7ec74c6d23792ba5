//! What can go wrong between a client and its server.

use std::time::Duration;

use mcp_protocol::RpcError;
use mcp_protocol::client::HandshakeError;

/// An error of a [`Client`](crate::Client) call.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// No answer came within the request's timeout (the request was cancelled).
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The connection to the server is gone: the child process exited, or the client closed.
    #[error("the connection to the server is closed: {0}")]
    Closed(String),
    /// The server could not be reached, or its HTTP answer was not an MCP one.
    #[error("transport: {0}")]
    Transport(String),
    /// The HTTP server answered a status without a JSON-RPC error.
    #[error("the server answered HTTP {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the body, for the log.
        body: String,
    },
    /// The server forgot the session (HTTP 404 on a request that named it): connect again.
    #[error("the server no longer knows this session")]
    SessionExpired,
    /// The handshake could not agree on a revision.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    /// The server speaks no revision this client speaks.
    #[error("no protocol revision in common with the server")]
    NoCommonRevision,
    /// The server asked for input this many rounds without finishing.
    #[error("the server asked for input {0} rounds without finishing")]
    TooManyRounds(usize),
    /// An answer the client could not read.
    #[error("unexpected answer: {0}")]
    Unexpected(String),
}

impl ClientError {
    /// The JSON-RPC error, when the server answered with one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            ClientError::Rpc(e) => Some(e),
            _ => None,
        }
    }
}
