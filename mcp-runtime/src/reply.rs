//! [`Reply`]: how a request ended (a result, its encoded bytes, an error, or nothing when it was
//! cancelled), and how it is encoded for the wire.

use std::sync::Arc;

use mcp_protocol::jsonrpc::{encode_error, encode_raw_result, encode_result};
use mcp_protocol::{RequestId, RpcError};
use serde_json::Value;
use serde_json::value::RawValue;

/// A finalized result already serialized (a cached catalog page, or a modern
/// result decorated as it was serialized): written as it is, never
/// re-serialized.
#[derive(Debug, Clone)]
pub struct EncodedResult {
    bytes: Encoded,
    /// A tool result with `isError` (for the request's `error.type`).
    tool_error: bool,
}

/// Where the bytes of an [`EncodedResult`] live.
#[derive(Debug, Clone)]
enum Encoded {
    /// Shared with a cache (a catalog page).
    Shared(Arc<RawValue>),
    /// This reply's own.
    Owned(Box<RawValue>),
    /// This reply's own, as our serializer wrote it (a tool's result: not shrunk to a
    /// `RawValue`, only copied once into the response).
    Text(String),
}

impl EncodedResult {
    /// Bytes shared with a cache.
    pub(crate) fn shared(raw: Arc<RawValue>) -> Self {
        EncodedResult {
            bytes: Encoded::Shared(raw),
            tool_error: false,
        }
    }

    /// Bytes of this reply's own.
    pub(crate) fn owned(raw: Box<RawValue>) -> Self {
        EncodedResult {
            bytes: Encoded::Owned(raw),
            tool_error: false,
        }
    }

    /// Text our serializer wrote (valid JSON by construction).
    pub(crate) fn text(json: String) -> Self {
        EncodedResult {
            bytes: Encoded::Text(json),
            tool_error: false,
        }
    }

    /// Marks the bytes as a tool result with `isError` (or not).
    pub(crate) fn with_tool_error(mut self, tool_error: bool) -> Self {
        self.tool_error = tool_error;
        self
    }

    /// Whether this is a tool result with `isError`.
    pub fn is_tool_error(&self) -> bool {
        self.tool_error
    }

    /// The serialized result: its JSON text.
    pub fn json(&self) -> &str {
        match &self.bytes {
            Encoded::Shared(raw) => raw.get(),
            Encoded::Owned(raw) => raw.get(),
            Encoded::Text(text) => text,
        }
    }

    /// The result as a JSON value (a parse: for the rare paths that need one).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.json()).unwrap_or(Value::Null)
    }

    /// The bytes, to share (with a cache).
    pub(crate) fn into_shared(self) -> Arc<RawValue> {
        match self.bytes {
            Encoded::Shared(raw) => raw,
            Encoded::Owned(raw) => Arc::from(raw),
            // Our serializer's text is JSON: the check cannot fail.
            Encoded::Text(text) => {
                RawValue::from_string(text).map_or_else(|_| Arc::from(RawValue::NULL.to_owned()), Arc::from)
            }
        }
    }
}

impl PartialEq for EncodedResult {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json()
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A result, finalized for the era.
    Result(Value),
    /// A result, finalized and serialized.
    Encoded(EncodedResult),
    /// An error response.
    Error(RpcError),
    /// Cancelled: nothing is answered.
    Cancelled,
}

impl Reply {
    /// The reply as a response outcome (`None` when cancelled).
    pub fn into_outcome(self) -> Option<Result<Value, RpcError>> {
        match self {
            Reply::Result(v) => Some(Ok(v)),
            Reply::Encoded(e) => Some(Ok(e.to_value())),
            Reply::Error(e) => Some(Err(e)),
            Reply::Cancelled => None,
        }
    }

    /// The encoded response to request `id` (`None` when cancelled).
    pub fn encode(&self, id: &RequestId) -> Option<Vec<u8>> {
        match self {
            Reply::Result(v) => Some(encode_result(id, v)),
            Reply::Encoded(e) => Some(encode_raw_result(id, e.json())),
            Reply::Error(e) => Some(encode_error(Some(id), e)),
            Reply::Cancelled => None,
        }
    }
}
