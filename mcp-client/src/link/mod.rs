//! The transports: how a message reaches the server and how what it sends comes back.
//!
//! A transport takes [`Outbound`] messages and posts what the server sends to the connection's
//! inbox ([`Event`]); it knows nothing of requests waiting or of the
//! handshake, only what it must put beside a message on its wire (HTTP headers).

use mcp_protocol::{RequestId, Revision};

use crate::error::ClientError;

mod frames;
pub(crate) mod http;
mod sse;
pub(crate) mod stdio;

pub(crate) use frames::{Event, INBOX, Kind, Outbound};

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
