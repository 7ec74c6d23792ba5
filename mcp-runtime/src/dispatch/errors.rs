//! How a method's failures reach the wire: a handler's error, an interrupted run, params that
//! do not fit.

use mcp_protocol::{Era, RpcError};
use serde_json::{Map, Value};

use crate::api::HandlerError;
use crate::exec::guard::Interrupted;

/// Turns a handler error into the wire error of a non-tool method in a request of `era`: a
/// protocol error as it is (a missing resource with the era's code), a [`HandlerError::Tool`]
/// -32603 with its message; internal failures are logged and answered with a generic -32603.
pub(crate) fn handler_error(method: &str, era: Era, e: HandlerError) -> RpcError {
    let e = match e.into_protocol_error(era) {
        Ok(wire) => return wire,
        Err(e) => e,
    };
    match e {
        HandlerError::InputRequired(_) => {
            tracing::warn!(method, "handler asked for client input; not available for this request");
            RpcError::internal()
        }
        HandlerError::Tool(message) => RpcError::internal_with(message),
        e => {
            tracing::error!(method, error = %e.log_text(), "handler failed");
            RpcError::internal()
        }
    }
}

/// Deserializes params, answering -32602 when they do not fit.
pub(crate) fn parse_params<T: serde::de::DeserializeOwned>(params: &Map<String, Value>) -> Result<T, RpcError> {
    // Borrowed: nothing of the params is copied but what `T` keeps.
    T::deserialize(params).map_err(|e| RpcError::invalid_params(format!("Invalid params: {e}")))
}

/// The wire error of a run that produced no value (timed out; a panic or a cancellation is
/// never answered with its detail).
pub(crate) fn interrupted(method: &str, i: Interrupted) -> RpcError {
    match i {
        Interrupted::TimedOut => RpcError::internal_with("Request timed out"),
        // Cancelled requests get no answer; the value is never sent.
        Interrupted::Panicked | Interrupted::Cancelled => {
            tracing::debug!(method, ?i, "request interrupted");
            RpcError::internal()
        }
    }
}
