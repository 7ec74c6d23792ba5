//! The transports: how a message reaches the server and how what it sends comes back.
//!
//! A transport takes [`Outbound`] messages and posts what the server sends to the connection's
//! inbox ([`Event`](crate::conn::Event)); it knows nothing of requests waiting or of the
//! handshake, only what it must put beside a message on its wire (HTTP headers).

use mcp_protocol::{RequestId, Revision};

use crate::error::ClientError;

pub(crate) mod http;
mod sse;
pub(crate) mod stdio;

/// One message to send, and what its transport needs to know of it.
#[derive(Debug)]
pub(crate) struct Outbound {
    /// The encoded JSON-RPC message.
    pub(crate) bytes: Vec<u8>,
    /// What it is.
    pub(crate) kind: Kind,
}

/// What an outbound message is.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// A request: its answer comes back on the inbox.
    Request {
        /// Its id.
        id: RequestId,
        /// Its method.
        method: String,
        /// The value its `Mcp-Name` header mirrors (modern HTTP), if its method has one.
        name: Option<String>,
        /// The revision it speaks (`None` for `initialize`: the handshake picks one).
        revision: Option<Revision>,
    },
    /// A notification (no answer).
    Notification,
    /// The client's answer to a request of the server.
    Reply,
}

impl Outbound {
    /// The client's answer to a request of the server.
    pub(crate) fn reply(bytes: Vec<u8>) -> Self {
        Outbound {
            bytes,
            kind: Kind::Reply,
        }
    }
}

/// The transport of one connection.
#[derive(Debug)]
pub(crate) enum Link {
    /// A child process over stdio.
    Stdio(stdio::Stdio),
    /// A server over Streamable HTTP.
    Http(http::Http),
}

impl Link {
    /// Sends one message.
    pub(crate) async fn send(&self, out: Outbound) -> Result<(), ClientError> {
        match self {
            Link::Stdio(s) => s.send(out).await,
            Link::Http(h) => h.send(out).await,
        }
    }

    /// The revision the handshake settled (HTTP sends it in `MCP-Protocol-Version`).
    pub(crate) fn set_revision(&self, revision: Revision) {
        if let Link::Http(h) = self {
            h.set_revision(revision);
        }
    }

    /// Ends the stream a request's answer travels on, when the transport has one per request
    /// (modern HTTP: closing it is the cancellation). Returns whether it did.
    pub(crate) fn end_stream(&self, id: &RequestId) -> bool {
        match self {
            Link::Stdio(_) => false,
            Link::Http(h) => h.end_stream(id),
        }
    }

    /// The legacy handshake is done: HTTP opens the session's GET stream.
    pub(crate) fn greeted(&self) {
        if let Link::Http(h) = self {
            h.open_session_stream();
        }
    }

    /// Closes the transport: the child is stopped, the HTTP session deleted.
    pub(crate) async fn close(&self) {
        match self {
            Link::Stdio(s) => s.close().await,
            Link::Http(h) => h.close().await,
        }
    }
}
