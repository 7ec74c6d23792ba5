//! The runtime's entry points of addressed delivery (see [`super`]).

use mcp_protocol::auth::AuthInfo;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{FORWARD_WAIT, Mail, MailOutcome};
use crate::remote::Remote;
use crate::runtime::Runtime;
use crate::store::{MailboxRecord, StoreError};

impl Runtime {
    /// Holds a mailbox this instance opens for `principal`, until `ended` is cancelled. Without
    /// a shared store, `Ok(None)` (every message for the mailbox must reach this instance). With
    /// one, the mailbox's record is written before this answers (so that the transport may name
    /// the mailbox to its client), refreshed every third of [`MAILBOX_TTL`](super::MAILBOX_TTL)
    /// and deleted once `ended` is cancelled; the receiver yields the mail other instances
    /// forward, in the order the bus brought it, until `ended`.
    pub(crate) async fn hold_mailbox(
        &self,
        id: &str,
        principal: &str,
        ended: CancellationToken,
    ) -> Result<Option<mpsc::Receiver<Mail>>, StoreError> {
        let Some(cluster) = self.cluster() else {
            return Ok(None);
        };
        cluster.hold_mailbox(id, principal, ended).await.map(Some)
    }

    /// The record of an open mailbox, held here or on another instance, if `principal` opened
    /// it: an unknown mailbox, an expired one and another principal's are all `Ok(None)`. Always
    /// `Ok(None)` without a shared store.
    pub(crate) async fn find_mailbox(&self, id: &str, principal: &str) -> Result<Option<MailboxRecord>, StoreError> {
        let Some(cluster) = self.cluster() else {
            return Ok(None);
        };
        Ok(cluster
            .store()
            .mailboxes
            .load(id)
            .await?
            .filter(|r| r.principal == principal))
    }

    /// Forwards mail for `mailbox` to its holder and waits (at most [`FORWARD_WAIT`]) for what
    /// it made of it. A holder that does not answer in time and is known dead has its mailbox's
    /// record removed: [`MailOutcome::Gone`]. `Err` when the bus cannot take the mail, or a live
    /// holder did not answer in time (the mail may still be handled).
    pub(crate) async fn forward_mail(
        &self,
        mailbox: &MailboxRecord,
        auth: &AuthInfo,
        client: Option<Remote>,
        payload: Value,
    ) -> Result<MailOutcome, StoreError> {
        let Some(cluster) = self.cluster() else {
            return Ok(MailOutcome::Gone);
        };
        cluster.forward_mail(mailbox, auth, client, payload, FORWARD_WAIT).await
    }
}
