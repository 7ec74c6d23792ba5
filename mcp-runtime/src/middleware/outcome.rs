//! [`Outcome`]: how a request or notification ended, as a middleware layer sees it and as a
//! layer answers one itself.

use std::borrow::Cow;

use mcp_protocol::RpcError;
use serde_json::Value;

use super::headers::Headers;
use crate::listen::Listener;
use crate::reply::Reply;

/// What a message came to.
#[derive(Debug)]
pub(crate) enum Body {
    /// A reply (a result, an error, or nothing when cancelled).
    Reply(Reply),
    /// A `subscriptions/listen` stream, open.
    Stream(Listener),
    /// A notification, admitted.
    Accepted,
}

/// How a request or notification ended: a reply, an opened stream, or an admitted notification,
/// with the HTTP status and headers a layer chose for it.
#[derive(Debug)]
pub struct Outcome {
    pub(crate) body: Body,
    pub(crate) status: Option<u16>,
    pub(crate) headers: Headers,
}

impl Outcome {
    fn of(body: Body) -> Self {
        Outcome {
            body,
            status: None,
            headers: Headers::new(),
        }
    }

    /// A refusal with a JSON-RPC error (a notification refused this way is dropped).
    pub fn error(error: RpcError) -> Self {
        Self::of(Body::Reply(Reply::Error(error)))
    }

    /// An answer given in place: the result, decorated for the era like any other (the result
    /// of a `tools/call` should be a `CallToolResult`).
    pub fn result(result: Value) -> Self {
        Self::of(Body::Reply(Reply::Result(result)))
    }

    /// The HTTP status of the answer, where the transport is HTTP (default: the one the
    /// protocol gives the reply; a batch answers 200 whatever its items say).
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// An HTTP header of the answer, where the transport is HTTP (`Retry-After`, for one):
    /// `.with_header("retry-after", "1")`; setting a name again replaces its value. The HTTP
    /// transport leaves out (and logs) a name or value that is not valid HTTP.
    pub fn with_header(mut self, name: impl Into<Cow<'static, str>>, value: impl Into<String>) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// The reply (`None` for a stream or an admitted notification).
    pub fn reply(&self) -> Option<&Reply> {
        match &self.body {
            Body::Reply(r) => Some(r),
            _ => None,
        }
    }

    /// The JSON-RPC error it ended with, if any.
    pub fn rpc_error(&self) -> Option<&RpcError> {
        match &self.body {
            Body::Reply(Reply::Error(e)) => Some(e),
            _ => None,
        }
    }

    /// Whether it ended with a JSON-RPC error.
    pub fn is_error(&self) -> bool {
        self.rpc_error().is_some()
    }

    /// Whether the request was cancelled (nothing is answered).
    pub fn is_cancelled(&self) -> bool {
        matches!(self.body, Body::Reply(Reply::Cancelled))
    }

    /// Whether a `subscriptions/listen` stream was opened.
    pub fn is_stream(&self) -> bool {
        matches!(self.body, Body::Stream(_))
    }

    /// Whether a notification was admitted.
    pub fn is_accepted(&self) -> bool {
        matches!(self.body, Body::Accepted)
    }

    /// The HTTP status a layer chose.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The HTTP headers layers added.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    pub(crate) fn reply_of(reply: Reply) -> Self {
        Self::of(Body::Reply(reply))
    }

    pub(crate) fn stream(listener: Listener) -> Self {
        Self::of(Body::Stream(listener))
    }

    pub(crate) fn accepted() -> Self {
        Self::of(Body::Accepted)
    }
}
