//! What the engine makes of a request: an [`Answer`] known at once, a [`Call`] to run, or a
//! [`Listening`] stream.

use mcp_protocol::error::{Stage, status_at};
use mcp_protocol::jsonrpc::encode_error;
use mcp_protocol::{Era, RequestId, RpcError};

use super::call::Call;
use crate::listen::Listener;
use crate::middleware::Headers;
use crate::session::{InFlightGuard, SessionHandle};
use crate::sink::Frame;

/// An answer known without running a handler (a refusal, or `initialize`'s result).
#[derive(Debug)]
pub struct Answer {
    /// The encoded JSON-RPC response.
    pub frame: Frame,
    /// HTTP headers middleware layers added to the answer.
    pub headers: Headers,
    /// The HTTP status it is answered with.
    pub status: u16,
    /// The legacy session `initialize` minted and the transport now serves (HTTP sends its id
    /// in `Mcp-Session-Id`; a transport with a session slot connects its outlet).
    pub session: Option<SessionHandle>,
    /// When the caller lacks scopes the operation needs: every scope it needs (HTTP answers 403
    /// with the authentication provider's `insufficient_scope` challenge naming them).
    pub required_scopes: Option<Vec<String>>,
}

impl Answer {
    pub(crate) fn error(stage: Stage, era: Era, id: Option<&RequestId>, error: &RpcError) -> Self {
        Answer {
            frame: encode_error(id, error),
            headers: Headers::new(),
            status: status_at(stage, era, error.code),
            session: None,
            required_scopes: error.required_scopes(),
        }
    }
}

/// An open `subscriptions/listen` stream, for the transport to write.
#[derive(Debug)]
pub struct Listening {
    /// The subscription: its acknowledgement first, then its notifications.
    pub listener: Listener,
    /// Where the transport tracks requests in flight (stdio), the listen request's
    /// registration: `notifications/cancelled` naming it cancels its token.
    pub guard: Option<InFlightGuard>,
}

/// What the engine made of a request.
// A `Call` is the common case and is run at once: boxing it would cost every request an
// allocation to spare the rarer answers a few hundred bytes on the stack.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Step {
    /// Answered at once.
    Answer(Answer),
    /// Ready to run: the transport gives it a sink and writes what it returns.
    Call(Call),
    /// A subscription stream.
    Listen(Listening),
}
