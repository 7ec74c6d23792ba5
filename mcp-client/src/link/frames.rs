//! What crosses between the connection and its transport: the messages the connection sends
//! ([`Outbound`], with what the transport must know of each) and what the transport reports
//! ([`Event`]). Imports nothing of the crate but its error, so that every transport and the
//! connection read it without reading each other.

use bytes::Bytes;
use mcp_protocol::{RequestId, Revision};

use crate::error::ClientError;

/// What a transport tells the connection.
#[derive(Debug)]
pub(crate) enum Event {
    /// One JSON-RPC message (or batch) from the server, and the request whose stream carried
    /// it (HTTP), if any.
    Frame(Bytes, Option<RequestId>),
    /// A request's answer will not come: its stream ended and could not be resumed.
    Lost(RequestId, ClientError),
    /// The connection went down (the child exited): every waiting request fails; `for_good`
    /// when nothing will bring it back (no restart, or the client closed).
    Down {
        /// Why, for the errors.
        why: String,
        /// Whether later requests fail at once too.
        for_good: bool,
    },
    /// The child process was started again: the handshake runs again.
    Restarted,
}

/// The capacity of the inbox between the transport and the dispatcher.
pub(crate) const INBOX: usize = 256;

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
