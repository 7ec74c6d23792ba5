//! What instances tell each other on the bus: [`Note`]s in an [`Envelope`] naming the sender.

use std::sync::Arc;

use mcp_protocol::{RequestId, RpcError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::Change;
use crate::mailbox::MailOutcome;
use crate::remote::Remote;
use crate::store::SessionField;

/// A change as it travels on the bus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum WireChange {
    Tools,
    Resources,
    Prompts,
    ResourceUpdated(String),
}

impl From<&Change> for WireChange {
    fn from(c: &Change) -> Self {
        match c {
            Change::Tools => WireChange::Tools,
            Change::Resources => WireChange::Resources,
            Change::Prompts => WireChange::Prompts,
            Change::ResourceUpdated(uri) => WireChange::ResourceUpdated(uri.to_string()),
        }
    }
}

impl From<WireChange> for Change {
    fn from(c: WireChange) -> Self {
        match c {
            WireChange::Tools => Change::Tools,
            WireChange::Resources => Change::Resources,
            WireChange::Prompts => Change::Prompts,
            WireChange::ResourceUpdated(uri) => Change::ResourceUpdated(Arc::from(uri)),
        }
    }
}

/// What instances tell each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub(crate) enum Note {
    /// A registry change on the sender.
    Change { change: WireChange },
    /// A session was deleted: every replica ends.
    SessionEnded { session: String },
    /// The sender ended its replica of a deleted session (the DELETE waits for these).
    Ended { session: String },
    /// A session's record changed.
    SessionChanged { session: String, field: SessionField },
    /// A client's response to a server-to-client request the sender does not hold.
    Response {
        session: String,
        id: RequestId,
        outcome: Result<Value, RpcError>,
    },
    /// A `notifications/cancelled` for a request the sender does not hold.
    Cancel { session: String, id: RequestId },
    /// An event was appended to a session's stream log.
    Event { session: String, stream: u64, id: u64 },
    /// The session's own stream was claimed by a reader on the sender.
    StreamOpened { session: String },
    /// `tasks/cancel` reached the sender for a task another instance runs.
    TaskCancel { task: String },
    /// `tasks/update` brought input for a task another instance runs.
    TaskInput {
        task: String,
        responses: serde_json::Map<String, Value>,
    },
    /// A modern task's status changed on the sender: listen streams asking for it hear it.
    TaskChanged {
        task: String,
        params: serde_json::Map<String, Value>,
    },
    /// An application message ([`crate::Engine::broadcast`]).
    User { topic: String, payload: Value },
    /// Mail sent to the sender for a mailbox the receiver holds, the sender's `n`th forwarded,
    /// with the identity it authenticated as.
    Mail {
        n: u64,
        mailbox: String,
        principal: String,
        scopes: Vec<String>,
        claims: serde_json::Map<String, Value>,
        /// Who sent it, as the forwarding instance's transport knew it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<Remote>,
        /// The transport's payload, as it sent it.
        payload: Value,
    },
    /// What the holder of a mailbox made of the receiver's `n`th forwarded mail.
    MailReceipt { n: u64, outcome: MailOutcome },
    /// The sessions the sender started, and the clients holding many of them (by store key).
    Load {
        sessions: usize,
        heavy: Vec<(String, usize)>,
    },
    /// Completes a URL-mode elicitation the sender does not hold; the holder answers `ask`.
    CompleteElicitation { id: String, principal: String, ask: u64 },
    /// The receiver's question `ask` was done.
    Answer { ask: u64 },
    /// A 2025-11-25 `tasks/result` on the sender waits for a task another instance runs: its
    /// messages (server-to-client requests, progress) go to the sender from now on.
    TaskFollow { task: String },
    /// One message of a task, for the receiver, whose `tasks/result` follows it.
    TaskFrame { task: String, frame: String },
    /// The sender's `tasks/result` stopped following the task.
    TaskUnfollow { task: String },
}

/// The version of the bus messages' format. Instances sharing a store read each other's
/// messages only if they write the same version: raised whenever a build writes or reads them
/// differently (a message without one is of a build from before versions, 0).
pub(super) const BUS_VERSION: u64 = 2;

/// A bus message: who sent it, to whom, its place among the sender's messages, and what it
/// says.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Envelope {
    /// Its format's version ([`BUS_VERSION`] when this build wrote it).
    #[serde(default)]
    pub(super) v: u64,
    pub(super) from: String,
    /// The one instance it is for (`None`: every instance). Other instances ignore it: a bus
    /// without addresses hands it to them too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) to: Option<String>,
    /// Counts the sender's messages from 1, those it could not send included, to every
    /// instance in one count and to each one instance in a count of its own (see
    /// [`numbers`](super::numbers)): a receiver that sees a number skipped knows a message was
    /// lost (0: a sender that does not count).
    #[serde(default)]
    pub(super) seq: u64,
    #[serde(flatten)]
    pub(super) note: Note,
}

/// What a message heard on the bus turned out to be.
// Matched as soon as read: boxing the envelope would cost every message an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(super) enum Heard {
    /// A message of this build's format.
    Envelope(Envelope),
    /// A message of another version, from instance `from`.
    Foreign { from: String, version: u64 },
    /// Nothing this build can read.
    Unreadable(serde_json::Error),
}

impl Heard {
    /// Reads a message. One that does not read as this build's but names its sender and another
    /// version is known as such, even when its notes are not this build's.
    pub(super) fn read(bytes: &[u8]) -> Heard {
        let error = match serde_json::from_slice::<Envelope>(bytes) {
            Ok(e) if e.v == BUS_VERSION => return Heard::Envelope(e),
            Ok(e) => {
                return Heard::Foreign {
                    from: e.from,
                    version: e.v,
                };
            }
            Err(error) => error,
        };
        let head = serde_json::from_slice::<Value>(bytes).ok();
        let head = head.as_ref().and_then(Value::as_object);
        let from = head.and_then(|h| h.get("from")).and_then(Value::as_str);
        let version = head.map(|h| h.get("v").and_then(Value::as_u64).unwrap_or(0));
        match (from, version) {
            (Some(from), Some(version)) if version != BUS_VERSION => Heard::Foreign {
                from: from.to_owned(),
                version,
            },
            _ => Heard::Unreadable(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(v: u64) -> Vec<u8> {
        let envelope = Envelope {
            v,
            from: "a.i1".into(),
            to: None,
            seq: 1,
            note: Note::User {
                topic: "t".into(),
                payload: Value::Null,
            },
        };
        serde_json::to_vec(&envelope).unwrap()
    }

    #[test]
    fn this_builds_messages_are_read() {
        let heard = Heard::read(&written(BUS_VERSION));
        assert!(
            matches!(&heard, Heard::Envelope(e) if e.from == "a.i1" && e.seq == 1),
            "{heard:?}"
        );
    }

    #[test]
    fn another_versions_messages_are_known_as_such() {
        // One from before versions, whose notes this build reads.
        let before = String::from_utf8(written(BUS_VERSION))
            .unwrap()
            .replace(&format!(r#""v":{BUS_VERSION},"#), "");
        assert!(!before.contains(r#""v""#), "{before}");
        let heard = Heard::read(before.as_bytes());
        assert!(
            matches!(&heard, Heard::Foreign { from, version: 0 } if from == "a.i1"),
            "{heard:?}"
        );
        // One from a later build, with a note this build does not know.
        let later = br#"{"v":9,"from":"b.i2","seq":3,"t":"somethingNew","x":1}"#;
        let heard = Heard::read(later);
        assert!(
            matches!(&heard, Heard::Foreign { from, version: 9 } if from == "b.i2"),
            "{heard:?}"
        );
    }

    #[test]
    fn what_is_not_a_bus_message_is_unreadable() {
        // This build's version, with a note this build does not know.
        let unknown = format!(r#"{{"v":{BUS_VERSION},"from":"a.i1","t":"somethingNew"}}"#);
        for bytes in [&b"\x00\x01\xff"[..], unknown.as_bytes(), b"[]"] {
            let heard = Heard::read(bytes);
            assert!(matches!(&heard, Heard::Unreadable(_)), "{heard:?}");
        }
    }
}
