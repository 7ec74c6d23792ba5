//! The cluster's side of addressed delivery ([`crate::mailbox`]): the mailboxes this instance
//! holds (their inboxes and the refresh of their records), the mail forwarded from here waiting
//! for its holder's outcome, and the notes that carry both.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::asks::Asks;
use super::{Cluster, Note};
use crate::mailbox::{MAILBOX_INBOX, MAILBOX_TTL, Mail, MailOutcome, MailReceipt};
use crate::remote::Remote;
use crate::store::{MailboxRecord, StoreError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where the outcome of forwarded mail goes.
enum MailReply {
    /// Back over the bus to instance `to`, which numbered the mail `n`.
    Bus { cluster: Weak<Cluster>, to: String, n: u64 },
    /// To a caller on this instance (a mailbox held here, reached without the bus).
    Local(oneshot::Sender<MailOutcome>),
}

impl std::fmt::Debug for MailReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MailReply::Bus { to, n, .. } => write!(f, "Bus({to}, {n})"),
            MailReply::Local(_) => f.write_str("Local"),
        }
    }
}

impl MailReply {
    fn send(self, outcome: MailOutcome) {
        match self {
            MailReply::Bus { cluster, to, n } => {
                if let Some(c) = cluster.upgrade() {
                    let _ = c.publish_to(&to, Note::MailReceipt { n, outcome });
                }
            }
            MailReply::Local(tx) => {
                let _ = tx.send(outcome);
            }
        }
    }
}

/// A mailbox held here: who opened it, and where its mail goes.
struct Held {
    principal: String,
    inbox: mpsc::Sender<Mail>,
}

/// The mailboxes held here and the mail forwarded from here waiting for an outcome.
#[derive(Default)]
pub(super) struct Delivery {
    held: Mutex<HashMap<String, Held>>,
    /// Mail forwarded from here, waiting for its holder's outcome.
    forwarded: Asks<MailOutcome>,
}

impl Cluster {
    /// Holds a mailbox: its record written, its inbox registered, its record refreshed until
    /// `ended`, then removed.
    pub(crate) async fn hold_mailbox(
        &self,
        id: &str,
        principal: &str,
        ended: CancellationToken,
    ) -> Result<mpsc::Receiver<Mail>, StoreError> {
        let record = MailboxRecord::new(id, principal, &*self.instance);
        self.store.mailboxes.open(&record, MAILBOX_TTL).await?;
        let (inbox, rx) = mpsc::channel(MAILBOX_INBOX);
        lock(&self.delivery.held).insert(
            id.to_owned(),
            Held {
                principal: principal.to_owned(),
                inbox,
            },
        );
        let me = self.me.get().cloned().unwrap_or_default();
        crate::background::spawn(keep(me, record, ended));
        Ok(rx)
    }

    /// Forwards mail to its mailbox's holder and waits (at most `wait`) for the outcome.
    pub(crate) async fn forward_mail(
        &self,
        mailbox: &MailboxRecord,
        auth: &AuthInfo,
        client: Option<Remote>,
        payload: Value,
        wait: Duration,
    ) -> Result<MailOutcome, StoreError> {
        if mailbox.holder == *self.instance {
            let (tx, rx) = oneshot::channel();
            // Held here (or it was: the record outlived the mailbox by a moment).
            let mail = Mail {
                mailbox: mailbox.id.clone(),
                auth: auth.clone(),
                client,
                payload,
                receipt: MailReceipt::new(move |o| MailReply::Local(tx).send(o)),
            };
            self.deliver(mail);
            return Ok(tokio::time::timeout(wait, rx)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(MailOutcome::Busy));
        }
        let (n, rx) = self.delivery.forwarded.open();
        let published = self.publish_to(
            &mailbox.holder,
            Note::Mail {
                n,
                mailbox: mailbox.id.clone(),
                principal: auth.principal.to_string(),
                scopes: auth.scopes.clone(),
                claims: auth.claims.clone(),
                client,
                payload,
            },
        );
        if let Err(e) = published {
            self.delivery.forwarded.close(n);
            return Err(e);
        }
        if let Ok(Ok(outcome)) = tokio::time::timeout(wait, rx).await {
            return Ok(outcome);
        }
        self.delivery.forwarded.close(n);
        if !self.store.members.alive(&mailbox.holder).await? {
            tracing::info!(mailbox = %mailbox.id, holder = %mailbox.holder, "the instance holding the mailbox is gone: mailbox removed");
            self.store.mailboxes.close(&mailbox.id).await?;
            return Ok(MailOutcome::Gone);
        }
        Err(StoreError::Unavailable(format!(
            "the instance holding the mailbox did not answer within {wait:?}"
        )))
    }

    /// Mail for `mailbox` forwarded to this instance by `from`, its `n`th, sent as `auth` (in
    /// the bus listener: in bus order).
    pub(super) fn mail(
        &self,
        from: &str,
        n: u64,
        mailbox: String,
        auth: AuthInfo,
        client: Option<Remote>,
        payload: Value,
    ) {
        let reply = MailReply::Bus {
            cluster: self.me.get().cloned().unwrap_or_default(),
            to: from.to_owned(),
            n,
        };
        self.deliver(Mail {
            mailbox,
            auth,
            client,
            payload,
            receipt: MailReceipt::new(move |o| reply.send(o)),
        });
    }

    /// The outcome of mail this instance forwarded.
    pub(super) fn mail_receipt(&self, n: u64, outcome: MailOutcome) {
        self.delivery.forwarded.answer(n, outcome);
    }

    /// Hands mail to the inbox of its mailbox held here (`Gone` when it is not held here or is
    /// another principal's, `Busy` when its inbox is full).
    fn deliver(&self, mail: Mail) {
        let inbox = {
            let held = lock(&self.delivery.held);
            match held.get(&mail.mailbox) {
                Some(h) if *h.principal == *mail.auth.principal => Some(h.inbox.clone()),
                _ => None,
            }
        };
        let Some(inbox) = inbox else {
            mail.receipt.answer(MailOutcome::Gone);
            return;
        };
        match inbox.try_send(mail) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(m)) => {
                tracing::warn!(mailbox = %m.mailbox, "mailbox inbox full: forwarded mail refused");
                m.receipt.answer(MailOutcome::Busy);
            }
            Err(mpsc::error::TrySendError::Closed(m)) => m.receipt.answer(MailOutcome::Gone),
        }
    }
}

/// Refreshes a held mailbox's record until `ended`, then forgets the mailbox and removes its
/// record. A record the store lost while the mailbox is held is written again: the mailbox is
/// still here.
async fn keep(cluster: Weak<Cluster>, record: MailboxRecord, ended: CancellationToken) {
    let mut tick = tokio::time::interval(MAILBOX_TTL / 3);
    tick.tick().await;
    loop {
        tokio::select! {
            () = ended.cancelled() => break,
            _ = tick.tick() => {
                let Some(c) = cluster.upgrade() else { return };
                let mailboxes = &c.store.mailboxes;
                let refreshed = match mailboxes.refresh(&record.id, MAILBOX_TTL).await {
                    Ok(false) => mailboxes.open(&record, MAILBOX_TTL).await,
                    other => other.map(|_| ()),
                };
                if let Err(e) = refreshed {
                    tracing::warn!(mailbox = %record.id, error = %e, "mailbox record not refreshed");
                }
            }
        }
    }
    let Some(c) = cluster.upgrade() else { return };
    lock(&c.delivery.held).remove(&record.id);
    if let Err(e) = c.store.mailboxes.close(&record.id).await {
        tracing::warn!(mailbox = %record.id, error = %e, "mailbox record not removed (it expires)");
    }
}
