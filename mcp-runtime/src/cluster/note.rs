//! What instances tell each other on the bus: [`Note`]s in an [`Envelope`] naming the sender.

use std::sync::Arc;

use mcp_protocol::{RequestId, RpcError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::Change;
use crate::relay::PairOutcome;
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
    /// A GET stream of the session opened on the sender.
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
    /// An application message ([`crate::Runtime::broadcast`]).
    User { topic: String, payload: Value },
    /// A message POSTed to the sender for a 2024-11-05 pair the receiver holds, the sender's
    /// `n`th forwarded, with the identity it authenticated as.
    PairMessage {
        n: u64,
        pair: String,
        principal: String,
        scopes: Vec<String>,
        claims: serde_json::Map<String, Value>,
        body: String,
    },
    /// What the holder of a pair made of the receiver's `n`th forwarded message.
    PairReceipt { n: u64, outcome: PairOutcome },
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

/// A bus message: who sent it, to whom, its place among the sender's messages, and what it
/// says.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Envelope {
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
