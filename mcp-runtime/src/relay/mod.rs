//! The 2024-11-05 HTTP+SSE pair across instances: the runtime's entry points that let a POST of
//! a pair reach whichever instance holds the pair's stream.
//!
//! The instance answering a pair's GET holds it ([`Engine::hold_pair`](crate::Engine::hold_pair)): with a shared
//! [`Store`](crate::Store) it writes the pair's [`PairRecord`](crate::store::PairRecord) (id, principal, holder) before the
//! stream names its message path, refreshes it while the stream is open, and deletes it when the
//! stream ends; the record expires by itself ([`PAIR_TTL`]) when the holder dies. An instance a
//! POST of a pair it does not hold reaches reads the record ([`Engine::find_pair`](crate::Engine::find_pair): an unknown
//! pair and another principal's are the same `None`) and forwards the message to the holder over
//! the bus ([`Engine::forward_pair_message`](crate::Engine::forward_pair_message)), then waits for the holder's [`PairOutcome`]. The
//! holder hands each forwarded message (a [`PairMessage`]) to the transport through the inbox
//! `hold_pair` returned, in the order its bus brought them, and answers with
//! [`PairReceipt::answer`] once the message is in its engine, as for a local POST.
//!
//! **Ordering.** A forwarding instance answers the client only after the holder has handed the
//! message to its engine, so a message the client posts after the previous POST was answered
//! reaches the engine after it, whichever instances the two reached. Messages posted at the same
//! time are handed over in the order the holder's bus subscription delivers them (one publisher's
//! messages keep their order; several publishers' interleave as the bus backend orders them).
//!
//! **Size.** A forwarded message travels whole on the bus (to the holder's address when the bus
//! has addresses, else to every instance), bounded by the transport's body limit.

use std::time::Duration;

use mcp_protocol::auth::AuthInfo;

use crate::remote::Remote;
use serde::{Deserialize, Serialize};

mod entry;

/// How long a pair's record lives without a refresh (its holder refreshes it every third of
/// this while the stream is open): the longest a dead holder's pair can still be found. A
/// forwarding instance that finds the holder dead removes the record sooner.
pub const PAIR_TTL: Duration = Duration::from_secs(30);

/// How long a forwarding instance waits for the holder's [`PairOutcome`].
pub const FORWARD_WAIT: Duration = Duration::from_secs(5);

/// How many forwarded messages of one pair may wait for the transport; past it the holder
/// answers [`PairOutcome::Busy`].
pub const PAIR_INBOX: usize = 64;

/// What the holder of a pair made of a message forwarded to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "camelCase")]
#[non_exhaustive]
pub enum PairOutcome {
    /// Handed to the holder's engine; the answer travels on the pair's stream (`202`).
    Accepted,
    /// Answered on the POST itself (a refused batch): the HTTP status and the JSON body.
    Answered {
        /// The HTTP status.
        status: u16,
        /// The JSON body.
        body: String,
    },
    /// The holder has no such pair for this principal (its stream ended): `404`.
    Gone,
    /// The holder cannot take more of this pair's messages right now: `503`.
    Busy,
}

/// A message of a pair this instance holds, POSTed to another instance and forwarded here.
#[derive(Debug)]
pub struct PairMessage {
    /// The identity the POST authenticated as (its principal is the pair's).
    pub auth: AuthInfo,
    /// Who POSTed it, as the forwarding instance's transport knew it.
    pub client: Option<Remote>,
    /// The JSON-RPC message, as POSTed (checked by the forwarding instance: it decodes).
    pub body: String,
    /// Where the outcome goes.
    pub receipt: PairReceipt,
}

/// Where a forwarded message's outcome goes (back over the bus, or to a caller here).
type Reply = Box<dyn FnOnce(PairOutcome) + Send>;

/// The way back to the instance waiting for a forwarded message's outcome. Dropped without an
/// answer, it answers [`PairOutcome::Gone`] (the pair ended before the message was handled).
pub struct PairReceipt {
    reply: Option<Reply>,
}

impl std::fmt::Debug for PairReceipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairReceipt")
            .field("answered", &self.reply.is_none())
            .finish()
    }
}

impl PairReceipt {
    #[cfg(feature = "shared-store")]
    pub(crate) fn new(reply: impl FnOnce(PairOutcome) + Send + 'static) -> Self {
        PairReceipt {
            reply: Some(Box::new(reply)),
        }
    }

    /// Sends the outcome to the forwarding instance.
    pub fn answer(mut self, outcome: PairOutcome) {
        if let Some(r) = self.reply.take() {
            r(outcome);
        }
    }
}

impl Drop for PairReceipt {
    fn drop(&mut self) {
        if let Some(r) = self.reply.take() {
            r(PairOutcome::Gone);
        }
    }
}
