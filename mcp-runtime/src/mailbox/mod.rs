//! Addressed delivery over the bus: mail for a mailbox one instance holds, sent from any
//! instance.
//!
//! A transport may hold a stream of messages for one client on one instance while the client's
//! other messages reach any instance behind the load balancer. It opens a mailbox where the
//! stream is ([`Engine::hold_mailbox`](crate::Engine::hold_mailbox)): with a shared
//! [`Store`](crate::Store) the runtime writes the mailbox's
//! [`MailboxRecord`](crate::store::MailboxRecord) (id, principal, holder) before the call
//! returns, so that the transport may name the mailbox to its client only once any instance can
//! find it; refreshes it while the mailbox is held, and deletes it when it is closed; the record
//! expires by itself ([`MAILBOX_TTL`]) when the holder dies. An instance that a message for a
//! mailbox it does not hold reaches reads the record
//! ([`Engine::find_mailbox`](crate::Engine::find_mailbox): an unknown mailbox and another
//! principal's are the same `None`) and sends the message to the holder over the bus
//! ([`Engine::forward_mail`](crate::Engine::forward_mail)), then waits for the holder's
//! [`MailOutcome`]. The holder hands each piece of [`Mail`] to its transport through the inbox
//! `hold_mailbox` returned, in the order its bus brought them, and the transport answers with
//! [`MailReceipt::answer`] once it has handed the mail to its engine, as for a message it
//! received itself.
//!
//! The runtime does not read what travels: the payload is the transport's JSON, and so is the
//! answer a [`MailOutcome::Handled`] carries. Only [`MailOutcome::Gone`] (no such mailbox of
//! this principal on the holder) and [`MailOutcome::Busy`] (its inbox is full, or the holder on
//! this instance did not answer in time) are the runtime's own.
//!
//! **Ordering.** A forwarding instance returns the outcome only after the holder's transport has
//! answered, which it does once the mail is in its engine; so mail the client sends after its
//! previous message was answered reaches the holder's engine after it, whichever instances the
//! two reached. Mail sent at the same time is handed over in the order the holder's bus
//! subscription delivers it (one publisher's messages keep their order; several publishers'
//! interleave as the bus backend orders them).
//!
//! **Size.** Mail travels whole on the bus (to the holder's address when the bus has addresses,
//! else to every instance): its payload is bounded by what the transport accepts from its
//! client.

use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::remote::Remote;

/// How long a mailbox's record lives without a refresh (its holder refreshes it every third of
/// this while it holds the mailbox): the longest a dead holder's mailbox can still be found. A
/// forwarding instance that finds the holder dead removes the record sooner.
pub const MAILBOX_TTL: Duration = Duration::from_secs(30);

/// How long a forwarding instance waits for the holder's [`MailOutcome`].
pub const FORWARD_WAIT: Duration = Duration::from_secs(5);

/// How much mail for one mailbox may wait for the holder's transport; past it the holder
/// answers [`MailOutcome::Busy`].
pub const MAILBOX_INBOX: usize = 64;

/// What the holder of a mailbox made of mail forwarded to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k", content = "v", rename_all = "camelCase")]
#[non_exhaustive]
pub enum MailOutcome {
    /// The holder's transport handled it, and answered this (its own JSON, which the forwarding
    /// instance's transport reads).
    Handled(Value),
    /// The holder has no such mailbox for this principal (it was closed, or its holder died).
    Gone,
    /// The holder cannot take more of this mailbox's mail right now.
    Busy,
}

/// Mail for a mailbox this instance holds, sent from another instance.
#[derive(Debug)]
pub struct Mail {
    /// The mailbox it is for.
    pub mailbox: String,
    /// The identity the sender authenticated as (its principal is the mailbox's).
    pub auth: AuthInfo,
    /// Who sent it, as the forwarding instance's transport knew it.
    pub client: Option<Remote>,
    /// What the forwarding instance's transport sent, as it sent it.
    pub payload: Value,
    /// Where the outcome goes.
    pub receipt: MailReceipt,
}

/// Where mail's outcome goes (back over the bus, or to a caller here).
type Reply = Box<dyn FnOnce(MailOutcome) + Send>;

/// The way back to the instance waiting for mail's outcome, answered once. Dropped without an
/// answer, it answers [`MailOutcome::Gone`] (the mailbox was closed before the mail was handled).
pub struct MailReceipt {
    reply: Option<Reply>,
}

impl std::fmt::Debug for MailReceipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailReceipt")
            .field("answered", &self.reply.is_none())
            .finish()
    }
}

impl MailReceipt {
    #[cfg(feature = "shared-store")]
    pub(crate) fn new(reply: impl FnOnce(MailOutcome) + Send + 'static) -> Self {
        MailReceipt {
            reply: Some(Box::new(reply)),
        }
    }

    /// Sends the outcome to the forwarding instance.
    pub fn answer(mut self, outcome: MailOutcome) {
        if let Some(r) = self.reply.take() {
            r(outcome);
        }
    }
}

impl Drop for MailReceipt {
    fn drop(&mut self) {
        if let Some(r) = self.reply.take() {
            r(MailOutcome::Gone);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_travels_whatever_the_transport_answered() {
        for outcome in [
            MailOutcome::Handled(Value::Null),
            MailOutcome::Handled(Value::String("s".into())),
            MailOutcome::Handled(serde_json::json!({"k": "x", "n": [1, 2]})),
            MailOutcome::Gone,
            MailOutcome::Busy,
        ] {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(serde_json::from_str::<MailOutcome>(&json).unwrap(), outcome, "{json}");
        }
    }
}
