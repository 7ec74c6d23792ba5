//! [`Inbound`]: a request or notification as a middleware layer sees it.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::{Era, Method, Notification, NotificationMethod, Params, Request, RequestId, Revision};
use serde_json::{Map, Value};

use crate::attachments::Attachments;
use crate::session::Session;

/// The message itself.
#[derive(Debug)]
pub(crate) enum Message {
    Request(Request),
    Notification(Notification),
}

impl Message {
    /// The method, kept to name the message after it has been handed on (a cheap clone).
    pub(crate) fn name(&self) -> MethodName {
        match self {
            Message::Request(r) => MethodName::Request(r.method.clone()),
            Message::Notification(n) => MethodName::Notification(n.method.clone()),
        }
    }
}

/// A message's method, request or notification.
#[derive(Debug, Clone)]
pub(crate) enum MethodName {
    Request(Method),
    Notification(NotificationMethod),
}

impl std::fmt::Display for MethodName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MethodName::Request(m) => f.write_str(m.as_str()),
            MethodName::Notification(n) => f.write_str(n.as_str()),
        }
    }
}

/// A request or notification on its way through the middleware chain.
#[derive(Debug)]
pub struct Inbound {
    pub(crate) message: Message,
    pub(crate) auth: Arc<AuthInfo>,
    pub(crate) era: Era,
    pub(crate) revision: Option<Revision>,
    pub(crate) session: Option<Arc<Session>>,
    pub(crate) remote: Option<IpAddr>,
    pub(crate) attachments: Attachments,
}

impl Inbound {
    /// The method.
    pub fn method(&self) -> &str {
        match &self.message {
            Message::Request(r) => r.method.as_str(),
            Message::Notification(n) => n.method.as_str(),
        }
    }

    /// The method of a request, parsed (`None` for a notification).
    pub(crate) fn request_method(&self) -> Option<&Method> {
        match &self.message {
            Message::Request(r) => Some(&r.method),
            Message::Notification(_) => None,
        }
    }

    /// The request id (`None` for a notification).
    pub fn id(&self) -> Option<&RequestId> {
        match &self.message {
            Message::Request(r) => Some(&r.id),
            Message::Notification(_) => None,
        }
    }

    /// Whether the message is a notification (it gets no answer).
    pub fn is_notification(&self) -> bool {
        matches!(self.message, Message::Notification(_))
    }

    /// The params, as the client sent them (`_meta` included).
    pub fn params(&self) -> Option<&Map<String, Value>> {
        self.raw_params().map(Params::object)
    }

    /// The params as they arrived, members read from their text (cheaper than
    /// [`Inbound::params`], which builds the whole object).
    pub fn raw_params(&self) -> Option<&Params> {
        match &self.message {
            Message::Request(r) => r.params.as_ref(),
            Message::Notification(n) => n.params.as_ref(),
        }
    }

    /// The tool a `tools/call` names (`None` for other methods).
    pub fn tool_name(&self) -> Option<Cow<'_, str>> {
        match &self.message {
            Message::Request(r) if r.method == Method::ToolsCall => r.params.as_ref()?.str("name"),
            _ => None,
        }
    }

    /// The authenticated caller.
    pub fn auth(&self) -> &AuthInfo {
        &self.auth
    }

    /// The caller's stable principal (`anonymous` without authentication).
    pub fn principal(&self) -> &str {
        &self.auth.principal
    }

    /// The era the message was classified in.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The revision: the modern `_meta` one, the legacy session's, or the one the transport
    /// declared (`None` before negotiation).
    pub fn revision(&self) -> Option<Revision> {
        self.revision
    }

    /// The legacy session the message belongs to, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_ref().map(|s| &**s.id())
    }

    /// The client's address, where the transport tells clients apart (HTTP).
    pub fn remote(&self) -> Option<IpAddr> {
        self.remote
    }

    /// Data attached by the transport (over HTTP, the request's extensions, the `http` crate's
    /// `Extensions`, as one attachment) or earlier layers.
    pub fn attachments(&self) -> &Attachments {
        &self.attachments
    }

    /// Data to attach for later layers and the handler (`Ctx::attachments`).
    pub fn attachments_mut(&mut self) -> &mut Attachments {
        &mut self.attachments
    }
}
