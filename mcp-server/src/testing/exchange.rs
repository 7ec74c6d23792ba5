//! What one request brought back: its result, the notifications that travelled on its stream,
//! the input the server asked for, and how many rounds it took; and why it failed.

use mcp_protocol::RpcError;
use mcp_protocol::client::{LogMessage, Progress, ServerNotification};
use mcp_protocol::model::Content;
use serde_json::Value;

/// A request for client input the server made during a call and the scripted reply: a real
/// server-to-client request in the legacy era, an entry of `inputRequests` in the modern one.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequest {
    /// The method: `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params.
    pub params: Value,
    /// The key of the input request (modern era), `None` for a legacy request.
    pub key: Option<String>,
    /// What the client answered.
    pub reply: Result<Value, RpcError>,
}

/// One request's exchange with the server, up to its final answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange<T> {
    /// The final result.
    pub result: T,
    /// The notifications sent on the request's stream (progress, logs), in order, over every
    /// round.
    pub notifications: Vec<ServerNotification>,
    /// The input the server asked for, in order, with the replies given.
    pub server_requests: Vec<ServerRequest>,
    /// How many times the request was sent: 1, plus one per MRTR retry (modern era; always 1
    /// in the legacy era, where input travels as server-to-client requests inside the call).
    pub rounds: usize,
}

impl<T> Exchange<T> {
    /// The progress notifications, in order.
    pub fn progress(&self) -> Vec<Progress> {
        self.notifications
            .iter()
            .filter_map(ServerNotification::as_progress)
            .collect()
    }

    /// The log messages, in order.
    pub fn logs(&self) -> Vec<LogMessage> {
        self.notifications
            .iter()
            .filter_map(ServerNotification::as_log)
            .collect()
    }

    /// The same exchange with another result.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Exchange<U> {
        Exchange {
            result: f(self.result),
            notifications: self.notifications,
            server_requests: self.server_requests,
            rounds: self.rounds,
        }
    }

    pub(crate) fn try_map<U>(self, f: impl FnOnce(T) -> Result<U, ClientError>) -> Result<Exchange<U>, ClientError> {
        Ok(Exchange {
            result: f(self.result)?,
            notifications: self.notifications,
            server_requests: self.server_requests,
            rounds: self.rounds,
        })
    }
}

/// Why a test client request did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    /// The request got no answer: it was cancelled.
    #[error("the request was cancelled (no answer)")]
    Cancelled,
    /// The server asked for input (modern era) that nothing in the client's script answers.
    #[error("no scripted reply for the server's {0} input request")]
    Unscripted(String),
    /// The server kept answering `input_required` past the client's round limit.
    #[error("still input_required after {0} rounds")]
    TooManyRounds(usize),
    /// The answer is not what the method returns (it could not be decoded).
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

    /// The JSON-RPC error code, when the server answered with an error.
    pub fn code(&self) -> Option<i32> {
        self.rpc().map(|e| e.code)
    }
}

impl From<RpcError> for ClientError {
    fn from(e: RpcError) -> Self {
        ClientError::Rpc(e)
    }
}

/// The text of every text block, joined: what a tool said, for assertions.
///
/// ```
/// use mcp_server::prelude::*;
/// use mcp_server::testing::text_of;
///
/// let result = CallToolResult::new(vec![Content::text("Hello, "), Content::text("Ada")]);
/// assert_eq!(text_of(&result.content), "Hello, Ada");
/// ```
pub fn text_of(content: &[Content]) -> String {
    Content::text_of(content)
}

/// Decodes a result into `T`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(what: &str, v: Value) -> Result<T, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Unexpected(format!("{what}: {e}")))
}
