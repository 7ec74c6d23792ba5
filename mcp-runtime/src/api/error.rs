//! [`HandlerError`]: the one error type every handler returns.
//!
//! It converts from any `std::error::Error + Send + Sync + 'static` (so `?` works on I/O,
//! `serde_json` and the user's own errors) and says how the failure reaches the client:
//!
//! | variant | a tool call answers | another method answers |
//! |---|---|---|
//! | [`Tool`](HandlerError::Tool) | `isError: true` with the message | -32603 with the message |
//! | [`Internal`](HandlerError::Internal) | `isError: true`, "Internal tool error" (logged) | -32603 "Internal error" (logged) |
//! | [`Rpc`](HandlerError::Rpc) | the JSON-RPC error as it is | the JSON-RPC error as it is |
//! | [`ResourceNotFound`](HandlerError::ResourceNotFound) | the era's "resource not found" error | the same |
//! | [`InputRequired`](HandlerError::InputRequired) | client input first (MRTR or legacy requests) | the same, where the method allows it |
//!
//! Like `anyhow::Error`, it does not implement `std::error::Error` itself: that is what lets
//! the blanket `From` exist. An [`RpcError`] or a [`ClientRequestError`](crate::ClientRequestError)
//! given to `?` keeps its meaning (it is recognised, not masked).

use std::fmt;
use std::time::Duration;

use mcp_protocol::{Era, RpcError};

use serde_json::json;

use super::input_required::InputRequired;
use crate::elicitation::ElicitationError;

/// Why a server-to-client request did not get an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientRequestError {
    /// The modern era has no server-to-client requests (use MRTR input).
    #[error("server-to-client requests are not available in the modern era")]
    NotInEra,
    /// The client did not declare the capability the request needs.
    #[error("the client did not declare the {0} capability")]
    CapabilityMissing(&'static str),
    /// There is no session, or no stream to carry the request.
    #[error("no stream to the client")]
    NoStream,
    /// The client did not answer in time.
    #[error("the client did not answer within {0:?}")]
    Timeout(Duration),
    /// The request (or its session) was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The client answered with an error.
    #[error("client error: {0}")]
    Client(RpcError),
    /// A URL-mode elicitation could not get its `elicitationId` (too many
    /// pending for the principal).
    #[error(transparent)]
    Elicitation(ElicitationError),
}

impl ClientRequestError {
    /// The handler error `?` makes of it: a missing capability is -32021 and too many URL
    /// elicitations a -32603 that says so; the rest is internal.
    pub(crate) fn into_handler_error(self) -> HandlerError {
        match self {
            ClientRequestError::CapabilityMissing(cap) => {
                HandlerError::Rpc(RpcError::missing_capability(json!({ cap: {} })))
            }
            ClientRequestError::Elicitation(ElicitationError::TooMany) => {
                HandlerError::Rpc(RpcError::internal_with("Too many pending URL elicitations"))
            }
            other => HandlerError::Internal(Box::new(other)),
        }
    }
}

/// A boxed error as kept by [`HandlerError::Internal`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a handler did not produce a result.
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::HandlerError;
///
/// fn read_note(path: &str) -> Result<String, HandlerError> {
///     if path.contains("..") {
///         // The model sees this message (a tool error).
///         return Err(HandlerError::tool("the path must stay inside the notes folder"));
///     }
///     // An I/O failure is internal: logged, and answered without its detail.
///     Ok(std::fs::read_to_string(path)?)
/// }
/// # assert!(read_note("../x").is_err());
/// ```
#[non_exhaustive]
pub enum HandlerError {
    /// A protocol error to answer with as it is (e.g. -32602, or -32021 when a client
    /// capability the call needs was not declared).
    Rpc(RpcError),
    /// The resource with this URI does not exist: answered with the code of the request's era
    /// (-32002 in the legacy era, -32602 in the modern one, `data.uri` in both; see
    /// [`RpcError::resource_not_found`]). Made by [`HandlerError::resource_not_found`].
    ResourceNotFound(String),
    /// The handler needs input from the client first (MRTR in the modern era; real
    /// server-to-client requests for legacy clients).
    InputRequired(Box<InputRequired>),
    /// A failure the client (the model, for a tool) should see: a tool call answers a result
    /// with `isError: true` and this text; other methods a -32603 error with it.
    Tool(String),
    /// An internal failure: logged with its source chain, answered without detail.
    Internal(BoxError),
}

impl HandlerError {
    /// An internal failure with a message for the logs only.
    pub fn internal(message: impl fmt::Display) -> Self {
        HandlerError::Internal(message.to_string().into())
    }

    /// A failure the client sees, with this message (for a tool: `isError: true`). Works as
    /// `.map_err(HandlerError::tool)` on any error whose text is fit to show.
    pub fn tool(message: impl fmt::Display) -> Self {
        HandlerError::Tool(message.to_string())
    }

    /// Invalid arguments (-32602) with a message; for a tool, prefer [`tool`](Self::tool) so
    /// that the model can correct itself.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        HandlerError::Rpc(RpcError::invalid_params(message))
    }

    /// The resource `uri` does not exist (a resource template's handler reading an id it does
    /// not know). The runtime answers with the code of the request's era, which the handler
    /// need not know:
    ///
    /// ```
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::HandlerError;
    ///
    /// fn note(id: u64) -> Result<String, HandlerError> {
    ///     match id {
    ///         1 => Ok("the first note".into()),
    ///         _ => Err(HandlerError::resource_not_found(format!("notes://{id}"))),
    ///     }
    /// }
    /// # assert!(matches!(note(2), Err(HandlerError::ResourceNotFound(u)) if u == "notes://2"));
    /// ```
    pub fn resource_not_found(uri: impl Into<String>) -> Self {
        HandlerError::ResourceNotFound(uri.into())
    }

    /// The wire error of a failure answered as a protocol error in every method, for a request
    /// of `era`: [`Rpc`](Self::Rpc) as it is, [`ResourceNotFound`](Self::ResourceNotFound) with
    /// the era's code. The other variants are given back.
    pub(crate) fn into_protocol_error(self, era: Era) -> Result<RpcError, Self> {
        match self {
            HandlerError::Rpc(e) => Ok(e),
            HandlerError::ResourceNotFound(uri) => Ok(RpcError::resource_not_found(era, &uri)),
            other => Err(other),
        }
    }

    /// The failure as the logs write it: the message and every source.
    pub(crate) fn log_text(&self) -> String {
        match self {
            HandlerError::Internal(e) => {
                let mut text = e.to_string();
                let mut source = e.source();
                while let Some(s) = source {
                    text.push_str(": ");
                    text.push_str(&s.to_string());
                    source = s.source();
                }
                text
            }
            other => other.to_string(),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(e: E) -> Self {
        let boxed: BoxError = Box::new(e);
        let boxed = match boxed.downcast::<RpcError>() {
            Ok(rpc) => return HandlerError::Rpc(*rpc),
            Err(other) => other,
        };
        match boxed.downcast::<ClientRequestError>() {
            Ok(client) => client.into_handler_error(),
            Err(other) => HandlerError::Internal(other),
        }
    }
}

impl From<InputRequired> for HandlerError {
    fn from(ir: InputRequired) -> Self {
        HandlerError::InputRequired(Box::new(ir))
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Rpc(e) => fmt::Display::fmt(e, f),
            HandlerError::ResourceNotFound(uri) => write!(f, "Resource not found: {uri}"),
            HandlerError::InputRequired(_) => f.write_str("input required"),
            HandlerError::Tool(m) => f.write_str(m),
            HandlerError::Internal(e) => write!(f, "internal error: {e}"),
        }
    }
}

impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Rpc(e) => f.debug_tuple("Rpc").field(e).finish(),
            HandlerError::ResourceNotFound(uri) => f.debug_tuple("ResourceNotFound").field(uri).finish(),
            HandlerError::InputRequired(ir) => f.debug_tuple("InputRequired").field(ir).finish(),
            HandlerError::Tool(m) => f.debug_tuple("Tool").field(m).finish(),
            HandlerError::Internal(e) => f.debug_tuple("Internal").field(e).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("disk on fire")]
    struct Mine(#[source] std::io::Error);

    #[test]
    fn any_error_is_internal_with_its_chain() {
        let e: HandlerError = Mine(std::io::Error::other("sector 7")).into();
        assert!(matches!(e, HandlerError::Internal(_)));
        assert_eq!(e.log_text(), "disk on fire: sector 7");
    }

    #[test]
    fn rpc_and_client_errors_keep_their_meaning() {
        let e: HandlerError = RpcError::invalid_params("bad").into();
        assert!(matches!(e, HandlerError::Rpc(r) if r.code == -32602));
        let e: HandlerError = ClientRequestError::CapabilityMissing("sampling").into();
        assert!(matches!(e, HandlerError::Rpc(r) if r.code == -32021));
        let e: HandlerError = ClientRequestError::NoStream.into();
        assert!(matches!(e, HandlerError::Internal(_)));
    }

    #[test]
    fn resource_not_found_takes_the_code_of_the_era() {
        let legacy = HandlerError::resource_not_found("notes://9").into_protocol_error(Era::Legacy);
        assert!(matches!(&legacy, Ok(e) if e.code == -32002 && e.data == Some(json!({"uri": "notes://9"}))));
        let modern = HandlerError::resource_not_found("notes://9").into_protocol_error(Era::Modern);
        assert!(matches!(&modern, Ok(e) if e.code == -32602 && e.message == "Resource not found: notes://9"));
        let tool = HandlerError::tool("no").into_protocol_error(Era::Modern);
        assert!(matches!(tool, Err(HandlerError::Tool(_))));
    }

    #[test]
    fn question_mark_works_on_foreign_errors() {
        fn parse(s: &str) -> Result<i64, HandlerError> {
            Ok(s.parse::<i64>()?)
        }
        assert_eq!(parse("4").ok(), Some(4));
        assert!(matches!(parse("x"), Err(HandlerError::Internal(_))));
        let tool = HandlerError::tool("no such note");
        assert_eq!(tool.to_string(), "no such note");
    }
}
