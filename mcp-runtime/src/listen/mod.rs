//! `subscriptions/listen` (2026-07-28): the hub of open subscriptions and
//! the fan-out of list changes and resource updates to them.
//!
//! Ordering (behaviour invariant 18): a subscription is registered before its
//! acknowledgement is built, and the transport writes the acknowledgement
//! before anything it receives from the subscription's channel, so the
//! acknowledgement is always the first message. Fan-out reads the table
//! directly and never waits: a subscriber whose channel is full misses the
//! notification (notifications have no reply), and a closed one is removed.
//!
//! A subscription's channel is a `queue`: one that allocates only
//! while notifications wait in it (an idle subscription holds a few dozen
//! bytes for it, where a `tokio::sync::mpsc` channel holds a block of 32
//! slots from the start), since a server may hold thousands of idle
//! subscriptions.

mod queue;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use dashmap::DashMap;
use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::encode_result;
use mcp_protocol::model::{ListenFilter, listen_completion};
use mcp_protocol::notifications::{cancelled, task_status};
use mcp_protocol::{RequestId, RpcError};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Change, Registry};
use crate::sink::Frame;
use queue::{Inbox, Outbox, Refused, queue};

/// Who holds a subscription: its principal, and the peer it came from (the client's address
/// on HTTP; `None` where the transport has one peer, as on stdio).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The authenticated principal.
    pub principal: Arc<str>,
    /// The peer, when the transport tells peers apart.
    pub peer: Option<Arc<str>>,
}

impl Holder {
    /// A holder known by its principal only.
    pub fn principal(principal: Arc<str>) -> Self {
        Holder { principal, peer: None }
    }
}

/// A refused `subscriptions/listen`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ListenError {
    /// The request is invalid (its filter), or asks for what the client did not declare.
    #[error("{0}")]
    Refused(RpcError),
    /// The server holds its most subscriptions ([`ServerConfig::max_listeners`](crate::ServerConfig::max_listeners)).
    #[error("{0}")]
    Full(RpcError),
    /// The caller's peer or principal holds its most subscriptions.
    #[error("{0}")]
    Quota(RpcError),
}

impl ListenError {
    /// The JSON-RPC error to answer with.
    pub fn error(&self) -> &RpcError {
        match self {
            ListenError::Refused(e) | ListenError::Full(e) | ListenError::Quota(e) => e,
        }
    }

    /// Where in the pipeline the refusal belongs (for its HTTP status).
    pub fn stage(&self) -> Stage {
        match self {
            ListenError::Refused(_) => Stage::Route,
            ListenError::Full(_) => Stage::Overload,
            ListenError::Quota(_) => Stage::Quota,
        }
    }
}

/// Open subscriptions in total, per principal and per peer.
#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_principal: HashMap<Arc<str>, usize>,
    per_peer: HashMap<Arc<str>, usize>,
}

impl Counts {
    /// Counts one more subscription for `holder`, unless a bound is reached.
    fn take(&mut self, holder: &Holder, limits: &Limits) -> Result<(), ListenError> {
        if self.total >= limits.total {
            return Err(ListenError::Full(RpcError::internal_with(
                "Too many open subscriptions",
            )));
        }
        let peer = holder.peer.as_ref().map(|p| self.per_peer.get(p).copied().unwrap_or(0));
        if peer.is_some_and(|n| n >= limits.per_peer) {
            return Err(ListenError::Quota(RpcError::internal_with(
                "Too many open subscriptions from this peer",
            )));
        }
        if self.per_principal.get(&holder.principal).copied().unwrap_or(0) >= limits.per_principal {
            return Err(ListenError::Quota(RpcError::internal_with(
                "Too many open subscriptions for this principal",
            )));
        }
        self.total += 1;
        *self.per_principal.entry(holder.principal.clone()).or_insert(0) += 1;
        if let Some(p) = &holder.peer {
            *self.per_peer.entry(p.clone()).or_insert(0) += 1;
        }
        Ok(())
    }

    fn release(&mut self, holder: &Holder) {
        self.total = self.total.saturating_sub(1);
        let dec = |map: &mut HashMap<Arc<str>, usize>, k: &Arc<str>| {
            if let Some(n) = map.get_mut(k) {
                *n -= 1;
                if *n == 0 {
                    map.remove(k);
                }
            }
        };
        dec(&mut self.per_principal, &holder.principal);
        if let Some(p) = &holder.peer {
            dec(&mut self.per_peer, p);
        }
    }
}

/// Why a server ends a subscription (the `reason` of its `notifications/cancelled`).
const SHUTDOWN_REASON: &str = "The server is shutting down";

#[derive(Debug)]
struct Entry {
    holder: Holder,
    listen_id: RequestId,
    filter: ListenFilter,
    tx: Outbox,
}

/// The bounds on open subscriptions (`ServerConfig::max_listeners`,
/// `max_listeners_per_peer`, `max_listeners_per_principal`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Every holder together.
    pub(crate) total: usize,
    /// One peer (a client's address).
    pub(crate) per_peer: usize,
    /// One principal, all its peers together.
    pub(crate) per_principal: usize,
}

impl Limits {
    /// No bound (for tests of what does not count subscriptions).
    #[cfg(test)]
    pub(crate) fn unbounded() -> Self {
        Limits {
            total: usize::MAX,
            per_peer: usize::MAX,
            per_principal: usize::MAX,
        }
    }
}

/// The open subscriptions of a server.
#[derive(Debug)]
pub struct Subscriptions {
    next: AtomicU64,
    entries: DashMap<u64, Entry>,
    counts: Mutex<Counts>,
    limits: Limits,
    fanout: OnceLock<()>,
    closing: CancellationToken,
    /// The server's `Implementation` for completion results (`None`: not sent).
    server_info: Option<Value>,
}

impl Subscriptions {
    /// The hub of a server: its bounds, and the `serverInfo` its completion results carry
    /// (`None`: not sent).
    pub(crate) fn new(limits: Limits, server_info: Option<Value>) -> Self {
        Subscriptions {
            next: AtomicU64::new(0),
            entries: DashMap::new(),
            counts: Mutex::new(Counts::default()),
            limits,
            fanout: OnceLock::new(),
            closing: CancellationToken::new(),
            server_info,
        }
    }

    /// Opens a subscription for `holder` with its parsed `filter` (a listen request's, whose
    /// `taskIds` the caller already narrowed to the holder's own tasks): counted against the
    /// server's total, the holder's peer and its principal, so that one client cannot lock the
    /// others out; registered before its acknowledgement is built (behaviour invariant 18).
    pub(crate) fn open(
        self: &Arc<Self>,
        registry: &Registry,
        listen_id: &RequestId,
        holder: &Holder,
        filter: ListenFilter,
    ) -> Result<Listener, ListenError> {
        self.start_fanout(registry);
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(holder, &self.limits)?;
        let (tx, rx) = queue();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.entries.insert(
            key,
            Entry {
                holder: holder.clone(),
                listen_id: listen_id.clone(),
                filter: filter.clone(),
                tx,
            },
        );
        let ack = filter.acknowledgement(listen_id);
        Ok(Listener {
            key,
            id: listen_id.clone(),
            hub: self.clone(),
            ack: Some(ack),
            rx,
        })
    }

    /// Starts the task that fans registry changes out to subscriptions (once, on the first
    /// subscription).
    fn start_fanout(self: &Arc<Self>, registry: &Registry) {
        self.fanout.get_or_init(|| {
            let mut changes = registry.subscribe();
            let hub = self.clone();
            crate::background::spawn(async move {
                loop {
                    tokio::select! {
                        _ = hub.closing.cancelled() => break,
                        c = changes.next() => match c {
                            Some(batch) => batch.iter().for_each(|change| hub.fan_out(change)),
                            None => break,
                        },
                    }
                }
            });
        });
    }

    /// Ends every open subscription (graceful shutdown): listeners see [`Listener::next`]
    /// return `None`.
    pub(crate) fn shutdown(&self) {
        self.closing.cancel();
        // Each waiting listener wakes and sees the end (one opened after this sees it at its
        // first poll).
        for entry in &self.entries {
            entry.tx.close();
        }
    }

    /// How many subscriptions are open.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn remove(&self, key: u64) {
        if let Some((_, e)) = self.entries.remove(&key) {
            self.counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .release(&e.holder);
        }
    }

    /// Announces a task's new state (its `DetailedTask`) to the
    /// subscriptions that asked for it, with their subscription id.
    pub(crate) fn task_changed(&self, task_id: &str, detailed: Map<String, Value>) {
        let mut gone = Vec::new();
        for e in self.entries.iter() {
            if !e.filter.wants_task(task_id) {
                continue;
            }
            let frame = task_status(&detailed, &e.listen_id);
            if let Err(Refused::Closed) = e.tx.try_send(frame) {
                gone.push(*e.key());
            }
        }
        for key in gone {
            self.remove(key);
        }
    }

    fn fan_out(&self, change: &Change) {
        let mut gone = Vec::new();
        for e in self.entries.iter() {
            if !e.filter.wants(change) {
                continue;
            }
            let frame = change.frame(Some(&e.listen_id));
            if let Err(Refused::Closed) = e.tx.try_send(frame) {
                gone.push(*e.key());
            }
        }
        for key in gone {
            self.remove(key);
        }
    }
}

/// One open subscription, held by the transport that serves its stream.
/// Dropping it unsubscribes.
#[derive(Debug)]
pub struct Listener {
    key: u64,
    id: RequestId,
    hub: Arc<Subscriptions>,
    ack: Option<Frame>,
    rx: Inbox,
}

impl Listener {
    /// The id of the listen request (the subscription id).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The acknowledgement: the first message to write (taken once).
    pub fn take_ack(&mut self) -> Option<Frame> {
        self.ack.take()
    }

    /// The next notification; `None` when the server shuts the subscription
    /// down (write [`Listener::server_cancel_frame`] on stdio, then
    /// [`Listener::completion_frame`]).
    pub async fn next(&mut self) -> Option<Frame> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// [`Listener::next`], polled: a stream that waits for its subscription's next
    /// notification holds no future for it.
    pub fn poll_next(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Frame>> {
        if self.hub.closing.is_cancelled() {
            return std::task::Poll::Ready(None);
        }
        self.rx.poll_recv(cx)
    }

    /// `notifications/cancelled` naming the listen request: how a stdio
    /// server ends a subscription (its only allowed use).
    pub fn server_cancel_frame(&self) -> Frame {
        cancelled(&self.id, Some(SHUTDOWN_REASON))
    }

    /// The result that completes a subscription the server ends gracefully
    /// (decorated like every modern result; rendered when asked, so that an
    /// open subscription does not hold it).
    pub fn completion_frame(&self) -> Frame {
        let server_info = self.hub.server_info.as_ref();
        encode_result(&self.id, &listen_completion(&self.id, server_info))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.hub.remove(self.key);
    }
}

#[cfg(test)]
mod tests;
