//! The cluster's side of the HTTP+SSE pair across instances ([`crate::relay`]): the pairs this
//! instance holds (their inboxes and the refresh of their records), the forwarded messages
//! waiting for their holder's outcome, and the notes that carry both.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::asks::Asks;
use super::{Cluster, Note};
use crate::relay::{PAIR_INBOX, PAIR_TTL, PairMessage, PairOutcome, PairReceipt};
use crate::remote::Remote;
use crate::store::{PairRecord, StoreError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where the outcome of a forwarded message goes.
enum PairReply {
    /// Back over the bus to instance `to`, which numbered the message `n`.
    Bus { cluster: Weak<Cluster>, to: String, n: u64 },
    /// To a caller on this instance (a pair held here, reached without the bus).
    Local(oneshot::Sender<PairOutcome>),
}

impl std::fmt::Debug for PairReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PairReply::Bus { to, n, .. } => write!(f, "Bus({to}, {n})"),
            PairReply::Local(_) => f.write_str("Local"),
        }
    }
}

impl PairReply {
    fn send(self, outcome: PairOutcome) {
        match self {
            PairReply::Bus { cluster, to, n } => {
                if let Some(c) = cluster.upgrade() {
                    let _ = c.publish_to(&to, Note::PairReceipt { n, outcome });
                }
            }
            PairReply::Local(tx) => {
                let _ = tx.send(outcome);
            }
        }
    }
}

/// A pair held here: who opened it, and where its forwarded messages go.
struct Held {
    principal: String,
    inbox: mpsc::Sender<PairMessage>,
}

/// The pairs held here and the forwarded messages waiting for an outcome.
#[derive(Default)]
pub(super) struct Relay {
    held: Mutex<HashMap<String, Held>>,
    /// Messages forwarded from here, waiting for their holder's outcome.
    forwarded: Asks<PairOutcome>,
}

impl Cluster {
    /// Holds a pair: its record written, its inbox registered, its record refreshed until
    /// `ended`, then removed.
    pub(crate) async fn hold_pair(
        &self,
        id: &str,
        principal: &str,
        ended: CancellationToken,
    ) -> Result<mpsc::Receiver<PairMessage>, StoreError> {
        let record = PairRecord::new(id, principal, &*self.instance);
        self.store.pairs.open(&record, PAIR_TTL).await?;
        let (inbox, rx) = mpsc::channel(PAIR_INBOX);
        lock(&self.relay.held).insert(
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

    /// Forwards a pair's message to its holder and waits (at most `wait`) for the outcome.
    pub(crate) async fn forward_pair(
        &self,
        pair: &PairRecord,
        auth: &AuthInfo,
        client: Option<Remote>,
        body: &str,
        wait: Duration,
    ) -> Result<PairOutcome, StoreError> {
        if pair.holder == *self.instance {
            let (tx, rx) = oneshot::channel();
            // Held here (or it was: the record outlived the stream by a moment).
            let message = PairMessage {
                auth: auth.clone(),
                client,
                body: body.to_owned(),
                receipt: PairReceipt::new(move |o| PairReply::Local(tx).send(o)),
            };
            self.deliver_pair(&pair.id, message);
            return Ok(tokio::time::timeout(wait, rx)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(PairOutcome::Busy));
        }
        let (n, rx) = self.relay.forwarded.open();
        let published = self.publish_to(
            &pair.holder,
            Note::PairMessage {
                n,
                pair: pair.id.clone(),
                principal: auth.principal.to_string(),
                scopes: auth.scopes.clone(),
                claims: auth.claims.clone(),
                client,
                body: body.to_owned(),
            },
        );
        if let Err(e) = published {
            self.relay.forwarded.close(n);
            return Err(e);
        }
        if let Ok(Ok(outcome)) = tokio::time::timeout(wait, rx).await {
            return Ok(outcome);
        }
        self.relay.forwarded.close(n);
        if !self.store.members.alive(&pair.holder).await? {
            tracing::info!(pair = %pair.id, holder = %pair.holder, "the instance holding the pair is gone: pair removed");
            self.store.pairs.close(&pair.id).await?;
            return Ok(PairOutcome::Gone);
        }
        Err(StoreError::Unavailable(format!(
            "the instance holding the pair did not answer within {wait:?}"
        )))
    }

    /// A message forwarded to this instance by `from`, its `n`th, posted as `auth` (in the bus
    /// listener: in bus order).
    pub(super) fn pair_message(
        &self,
        from: &str,
        n: u64,
        pair: &str,
        auth: AuthInfo,
        client: Option<Remote>,
        body: String,
    ) {
        let reply = PairReply::Bus {
            cluster: self.me.get().cloned().unwrap_or_default(),
            to: from.to_owned(),
            n,
        };
        let message = PairMessage {
            auth,
            client,
            body,
            receipt: PairReceipt::new(move |o| reply.send(o)),
        };
        self.deliver_pair(pair, message);
    }

    /// The outcome of a message this instance forwarded.
    pub(super) fn pair_receipt(&self, n: u64, outcome: PairOutcome) {
        self.relay.forwarded.answer(n, outcome);
    }

    /// Hands a message to the inbox of the pair held here (`Gone` when it is not held here or
    /// is another principal's, `Busy` when its inbox is full).
    fn deliver_pair(&self, pair: &str, message: PairMessage) {
        let inbox = {
            let held = lock(&self.relay.held);
            match held.get(pair) {
                Some(h) if *h.principal == *message.auth.principal => Some(h.inbox.clone()),
                _ => None,
            }
        };
        let Some(inbox) = inbox else {
            message.receipt.answer(PairOutcome::Gone);
            return;
        };
        match inbox.try_send(message) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(m)) => {
                tracing::warn!(pair, "HTTP+SSE pair inbox full: forwarded message refused");
                m.receipt.answer(PairOutcome::Busy);
            }
            Err(mpsc::error::TrySendError::Closed(m)) => m.receipt.answer(PairOutcome::Gone),
        }
    }
}

/// Refreshes a held pair's record until `ended`, then forgets the pair and removes its record.
/// A record the store lost while the stream is open is written again: the pair is still here.
async fn keep(cluster: Weak<Cluster>, record: PairRecord, ended: CancellationToken) {
    let mut tick = tokio::time::interval(PAIR_TTL / 3);
    tick.tick().await;
    loop {
        tokio::select! {
            () = ended.cancelled() => break,
            _ = tick.tick() => {
                let Some(c) = cluster.upgrade() else { return };
                let pairs = &c.store.pairs;
                let refreshed = match pairs.refresh(&record.id, PAIR_TTL).await {
                    Ok(false) => pairs.open(&record, PAIR_TTL).await,
                    other => other.map(|_| ()),
                };
                if let Err(e) = refreshed {
                    tracing::warn!(pair = %record.id, error = %e, "HTTP+SSE pair record not refreshed");
                }
            }
        }
    }
    let Some(c) = cluster.upgrade() else { return };
    lock(&c.relay.held).remove(&record.id);
    if let Err(e) = c.store.pairs.close(&record.id).await {
        tracing::warn!(pair = %record.id, error = %e, "HTTP+SSE pair record not removed (it expires)");
    }
}
