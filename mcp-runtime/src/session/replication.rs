//! [`Replication`]: how a session shared by several instances reaches the others. The cluster
//! implements it; a session only sees this port, so that nothing of the session depends on how
//! instances talk.

use std::time::Duration;

use mcp_protocol::{RequestId, RpcError};
use serde_json::Value;

use crate::sink::Frame;
use crate::store::{SessionField, StoreFuture};

/// The instance side of a shared session record.
pub(crate) trait Replication: Send + Sync + std::fmt::Debug {
    /// This instance's id (server-to-client request ids carry it, unique across instances).
    fn instance(&self) -> &str;

    /// A change to the session's record: written through, and announced to the replicas.
    fn changed(&self, session: &str, field: SessionField);

    /// A change to the session's record, written before this returns (not announced).
    fn write<'a>(&'a self, session: &'a str, field: SessionField) -> StoreFuture<'a, ()>;

    /// How often a replica pushes its record's expiry back.
    fn touch_every(&self) -> Duration;

    /// Pushes the record's expiry back.
    fn touched(&self, session: &str);

    /// Appends an event to one of the session's stream logs (`false` when it was dropped).
    fn append(&self, session: &str, stream: u64, frame: Frame) -> bool;

    /// The session's own stream was claimed by a reader here: the other instances end theirs.
    fn claim_stream(&self, session: &str);

    /// A client response this instance does not wait for goes to the instance that does.
    fn forward_response(&self, session: &str, id: &RequestId, outcome: Result<Value, RpcError>) -> bool;

    /// A cancellation of a request this instance does not run goes to the instance that does.
    fn forward_cancel(&self, session: &str, id: &RequestId) -> bool;
}
