//! The bucket a request counts against: its caller (the principal, or the client's address for
//! anonymous callers), and the tool or method when the limit is per tool or per method.
//!
//! A key is a value, hashed as it is: the in-process buckets look it up without formatting it.
//! Its text form (`Display`) names the bucket in a shared store.

use std::fmt;

use mcp_protocol::{Method, NotificationMethod};

use crate::middleware::Inbound;
use crate::middleware::inbound::Message;
use crate::quota::ClientKey;

/// How a caller's requests are split into buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bucketing {
    /// One bucket per caller for every counted request.
    #[default]
    PerCaller,
    /// One bucket per caller and method.
    PerMethod,
    /// One bucket per caller and tool for `tools/call` (per caller and method for other
    /// counted methods).
    PerTool,
}

/// The bucket of one request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BucketKey {
    client: ClientKey,
    split: Split,
}

/// What splits a caller's bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Split {
    /// Nothing: one bucket per caller.
    Whole,
    /// A request method.
    Method(Method),
    /// A notification method.
    Notification(NotificationMethod),
    /// A tool.
    Tool(Box<str>),
}

/// The bucket of `request` under `bucketing`.
pub(crate) fn bucket_key(request: &Inbound, bucketing: Bucketing) -> BucketKey {
    let client = ClientKey::of(&request.auth.principal, request.remote());
    let by_method = || match &request.message {
        Message::Request(r) => Split::Method(r.method.clone()),
        Message::Notification(n) => Split::Notification(n.method.clone()),
    };
    let split = match bucketing {
        Bucketing::PerCaller => Split::Whole,
        Bucketing::PerMethod => by_method(),
        Bucketing::PerTool => match request.tool_name() {
            Some(tool) => Split::Tool(tool.into()),
            None => by_method(),
        },
    };
    BucketKey { client, split }
}

/// The store key: the client (`p<len>:<principal>`, or `a:<address>` for an anonymous caller
/// with an address), then `|m:<method>` or `|t:<tool>` when split.
impl fmt::Display for BucketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.client)?;
        match &self.split {
            Split::Whole => Ok(()),
            Split::Method(m) => write!(f, "|m:{}", m.as_str()),
            Split::Notification(n) => write!(f, "|m:{}", n.as_str()),
            Split::Tool(t) => write!(f, "|t:{t}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::sync::Arc;

    use mcp_protocol::auth::AuthInfo;
    use mcp_protocol::{Era, Notification, Params, Request, RequestId};
    use serde_json::json;

    use super::*;

    fn inbound(message: Message, principal: Option<&str>) -> Inbound {
        let auth = match principal {
            Some(p) => AuthInfo::new(p),
            None => AuthInfo::anonymous(),
        };
        Inbound {
            message,
            auth: Arc::new(auth),
            era: Era::Modern,
            revision: None,
            session: None,
            remote: Some(IpAddr::from([127, 0, 0, 2])),
            attachments: crate::Attachments::new(),
        }
    }

    fn call(tool: &str) -> Message {
        Message::Request(Request {
            id: RequestId::Number(1),
            method: Method::ToolsCall,
            params: Params::from_value(json!({"name": tool, "arguments": {}})),
        })
    }

    fn key(message: Message, principal: Option<&str>, bucketing: Bucketing) -> BucketKey {
        bucket_key(&inbound(message, principal), bucketing)
    }

    #[test]
    fn the_store_key_names_the_client_then_the_split() {
        assert_eq!(key(call("echo"), None, Bucketing::PerCaller).to_string(), "a:127.0.0.2");
        assert_eq!(
            key(call("echo"), Some("alice"), Bucketing::PerCaller).to_string(),
            "p5:alice"
        );
        assert_eq!(
            key(call("echo"), Some("alice"), Bucketing::PerTool).to_string(),
            "p5:alice|t:echo"
        );
        assert_eq!(
            key(call("echo"), Some("alice"), Bucketing::PerMethod).to_string(),
            "p5:alice|m:tools/call"
        );
        let note = Message::Notification(Notification {
            method: NotificationMethod::parse("notifications/roots/list_changed"),
            params: None,
        });
        assert_eq!(
            key(note, Some("bob"), Bucketing::PerTool).to_string(),
            "p3:bob|m:notifications/roots/list_changed"
        );
    }

    #[test]
    fn keys_split_as_their_bucketing_says() {
        let per_tool = |tool| key(call(tool), Some("alice"), Bucketing::PerTool);
        assert_ne!(per_tool("echo"), per_tool("add"));
        assert_eq!(per_tool("echo"), per_tool("echo"));
        let per_caller = |tool| key(call(tool), Some("alice"), Bucketing::PerCaller);
        assert_eq!(per_caller("echo"), per_caller("add"));
        let list = Message::Request(Request {
            id: RequestId::Number(2),
            method: Method::ToolsList,
            params: None,
        });
        assert_ne!(
            key(list, Some("alice"), Bucketing::PerMethod),
            key(call("echo"), Some("alice"), Bucketing::PerMethod)
        );
        // A principal and an anonymous address never share a bucket.
        assert_ne!(
            key(call("echo"), Some("a:127.0.0.2"), Bucketing::PerCaller),
            key(call("echo"), None, Bucketing::PerCaller)
        );
    }
}
