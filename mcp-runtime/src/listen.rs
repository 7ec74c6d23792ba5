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
//! A subscription's channel is a `mailbox`: a queue that allocates only
//! while notifications wait in it (an idle subscription holds a few dozen
//! bytes for it, where a `tokio::sync::mpsc` channel holds a block of 32
//! slots from the start), since a server may hold thousands of idle
//! subscriptions.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use dashmap::DashMap;
use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::encode_result;
use mcp_protocol::model::{ListenFilter, listen_completion};
use mcp_protocol::notifications::{cancelled, task_status};
use mcp_protocol::{Request, RequestId, RpcError};
use serde_json::{Map, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::Runtime;
use crate::catalog::Change;
use crate::sink::Frame;
use crate::tasks::TaskOwner;

/// How many notifications wait for a slow listener before it misses some.
const LISTENER_BUFFER: usize = 64;

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
    fn take(&mut self, holder: &Holder, config: &crate::ServerConfig) -> Result<(), ListenError> {
        if self.total >= config.max_listeners {
            return Err(ListenError::Full(RpcError::internal_with(
                "Too many open subscriptions",
            )));
        }
        let peer = holder.peer.as_ref().map(|p| self.per_peer.get(p).copied().unwrap_or(0));
        if peer.is_some_and(|n| n >= config.max_listeners_per_peer) {
            return Err(ListenError::Quota(RpcError::internal_with(
                "Too many open subscriptions from this peer",
            )));
        }
        if self.per_principal.get(&holder.principal).copied().unwrap_or(0) >= config.max_listeners_per_principal {
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
    tx: Mailbox,
}

/// Why a frame was not queued.
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// The queue holds [`LISTENER_BUFFER`] frames: this one is missed.
    Full,
    /// The receiving end is gone.
    Closed,
}

/// A bounded queue of frames from the fan-out to one subscription: [`mailbox`].
#[derive(Debug, Default)]
struct Queue {
    frames: Mutex<VecDeque<Frame>>,
    notify: Notify,
    /// The [`Inbox`] was dropped.
    receiver_gone: AtomicBool,
    /// The [`Mailbox`] was dropped.
    sender_gone: AtomicBool,
}

/// The sending end: [`Mailbox::try_send`] never waits.
#[derive(Debug)]
struct Mailbox(Arc<Queue>);

/// The receiving end, held by the [`Listener`].
#[derive(Debug)]
struct Inbox(Arc<Queue>);

/// A queue of at most [`LISTENER_BUFFER`] frames with one sender and one receiver. Unlike
/// `tokio::sync::mpsc`, it allocates nothing beyond its header until frames wait in it.
fn mailbox() -> (Mailbox, Inbox) {
    let queue = Arc::new(Queue::default());
    (Mailbox(queue.clone()), Inbox(queue))
}

impl Mailbox {
    /// Queues `frame`, unless the queue is full or the receiver is gone.
    fn try_send(&self, frame: Frame) -> Result<(), Refused> {
        if self.0.receiver_gone.load(Ordering::Acquire) {
            return Err(Refused::Closed);
        }
        {
            let mut frames = self.0.frames.lock().unwrap_or_else(PoisonError::into_inner);
            if frames.len() >= LISTENER_BUFFER {
                return Err(Refused::Full);
            }
            frames.push_back(frame);
        }
        // A permit is stored when the receiver is not waiting yet: no wake-up is lost.
        self.0.notify.notify_one();
        Ok(())
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        self.0.sender_gone.store(true, Ordering::Release);
        self.0.notify.notify_one();
    }
}

impl Inbox {
    /// The next frame; `None` once the sender is gone and the queue is empty.
    async fn recv(&mut self) -> Option<Frame> {
        loop {
            let next = {
                let mut frames = self.0.frames.lock().unwrap_or_else(PoisonError::into_inner);
                let next = frames.pop_front();
                if frames.is_empty() && frames.capacity() > 0 {
                    // An idle subscription keeps no buffer from a burst.
                    frames.shrink_to_fit();
                }
                next
            };
            if next.is_some() {
                return next;
            }
            if self.0.sender_gone.load(Ordering::Acquire) {
                return None;
            }
            self.0.notify.notified().await;
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.0.receiver_gone.store(true, Ordering::Release);
    }
}

/// The open subscriptions of a server.
#[derive(Debug, Default)]
pub struct Subscriptions {
    next: AtomicU64,
    entries: DashMap<u64, Entry>,
    counts: Mutex<Counts>,
    fanout: OnceLock<()>,
    closing: CancellationToken,
    /// The server's `Implementation` for completion results (`None`: not sent), rendered at the
    /// first subscription: the configuration does not change.
    server_info: OnceLock<Option<Value>>,
}

impl Subscriptions {
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
        tokio::select! {
            biased;
            _ = self.hub.closing.cancelled() => None,
            f = self.rx.recv() => f,
        }
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
        let server_info = self.hub.server_info.get().and_then(Option::as_ref);
        encode_result(&self.id, &listen_completion(&self.id, server_info))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.hub.remove(self.key);
    }
}

impl Runtime {
    /// Opens a `subscriptions/listen` subscription for a routed modern
    /// request. Unknown filter keys are dropped, not refused; `taskIds` from
    /// a client that did not declare the tasks extension is -32021, and only
    /// the caller's own tasks are kept (others are dropped without saying
    /// whether they exist); over a bound the request is refused.
    pub async fn listen(
        &self,
        req: &Request,
        ctx_principal: &Arc<str>,
        tasks_declared: bool,
    ) -> Result<Listener, RpcError> {
        self.listen_as(req, &Holder::principal(ctx_principal.clone()), tasks_declared)
            .await
            .map_err(|e| e.error().clone())
    }

    /// [`Runtime::listen`] for a holder: the subscription counts against the server's total
    /// ([`ServerConfig::max_listeners`](crate::ServerConfig::max_listeners)), the holder's peer
    /// ([`ServerConfig::max_listeners_per_peer`](crate::ServerConfig::max_listeners_per_peer)) and
    /// its principal ([`ServerConfig::max_listeners_per_principal`](crate::ServerConfig::max_listeners_per_principal)),
    /// so that one client cannot lock the others out of subscriptions.
    pub async fn listen_as(
        &self,
        req: &Request,
        holder: &Holder,
        tasks_declared: bool,
    ) -> Result<Listener, ListenError> {
        let hub = self.subscriptions().clone();
        self.start_fanout();
        let mut filter =
            ListenFilter::parse(req.params.as_ref(), &self.features(), tasks_declared).map_err(ListenError::Refused)?;
        if !filter.task_ids.is_empty() {
            let owner = TaskOwner::Principal(holder.principal.to_string());
            let mut owned = std::collections::HashSet::new();
            for id in &filter.task_ids {
                if self.tasks().owns_anywhere(id, &owner).await {
                    owned.insert(id.clone());
                }
            }
            filter.retain_task_ids(|id| owned.contains(id));
        }
        hub.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(holder, self.config())?;
        hub.server_info.get_or_init(|| {
            self.config()
                .send_server_info
                .then(|| self.config().server_info.render(None))
        });
        let (tx, rx) = mailbox();
        let key = hub.next.fetch_add(1, Ordering::Relaxed);
        hub.entries.insert(
            key,
            Entry {
                holder: holder.clone(),
                listen_id: req.id.clone(),
                filter: filter.clone(),
                tx,
            },
        );
        let ack = filter.acknowledgement(&req.id);
        Ok(Listener {
            key,
            id: req.id.clone(),
            hub,
            ack: Some(ack),
            rx,
        })
    }

    /// Starts the task that fans registry changes out to subscriptions
    /// (once, on the first subscription).
    fn start_fanout(&self) {
        let hub = self.subscriptions().clone();
        hub.fanout.get_or_init(|| {
            let mut changes = self.registry().subscribe();
            let hub = hub.clone();
            tokio::spawn(async move {
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

    /// Ends every open subscription (graceful shutdown): listeners see
    /// [`Listener::next`] return `None`.
    pub fn shutdown(&self) {
        self.subscriptions().closing.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ToolEntry;
    use crate::{Registry, ServerConfig, ToolResult};
    use mcp_protocol::meta::{SERVER_INFO, SUBSCRIPTION_ID};
    use mcp_protocol::model::{CallToolResult, ToolDef};
    use serde_json::json;
    use std::time::Duration;

    fn runtime(max: usize) -> Runtime {
        let config = ServerConfig {
            max_listeners_per_principal: max,
            ..Default::default()
        };
        Runtime::new(config, Arc::new(Registry::new()))
    }

    fn listen_req(id: i64, filter: Value) -> Request {
        Request {
            id: id.into(),
            method: "subscriptions/listen".into(),
            params: json!({"notifications": filter}).as_object().cloned(),
        }
    }

    fn frame(f: Frame) -> Value {
        serde_json::from_slice(&f).unwrap()
    }

    async fn noop(_: Map<String, Value>, _: crate::Ctx) -> ToolResult {
        Ok(CallToolResult::text("x"))
    }

    #[tokio::test]
    async fn ack_first_then_filtered_tagged_notifications() {
        let rt = runtime(32);
        let me: Arc<str> = Arc::from("p");
        let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"], "bogus": true});
        let mut l = rt.listen(&listen_req(7, filter), &me, false).await.unwrap();
        let ack = frame(l.take_ack().unwrap());
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7);
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
        );

        rt.registry().notify_resource_updated("test://other");
        rt.registry().add_prompt(crate::catalog::PromptEntry::new(
            mcp_protocol::model::PromptDef::new("p"),
            Arc::new(|_: Map<String, Value>, _: crate::Ctx| async { Ok(Default::default()) }),
        ));
        rt.registry()
            .add_tool(ToolEntry::new(ToolDef::new("t"), Arc::new(noop), true, true).unwrap());
        rt.registry().notify_resource_updated("test://a");
        let n1 = frame(
            tokio::time::timeout(Duration::from_secs(5), l.next())
                .await
                .unwrap()
                .unwrap(),
        );
        assert_eq!(n1["method"], "notifications/tools/list_changed");
        assert_eq!(n1["params"]["_meta"][SUBSCRIPTION_ID], 7);
        let n2 = frame(
            tokio::time::timeout(Duration::from_secs(5), l.next())
                .await
                .unwrap()
                .unwrap(),
        );
        assert_eq!(n2["method"], "notifications/resources/updated");
        assert_eq!(n2["params"]["uri"], "test://a");
    }

    #[tokio::test]
    async fn refusals_and_bounds() {
        let rt = runtime(1);
        let me: Arc<str> = Arc::from("p");
        let e = rt
            .listen(&listen_req(1, json!({"taskIds": ["x"]})), &me, false)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32021);
        let bad = Request {
            id: 1.into(),
            method: "subscriptions/listen".into(),
            params: None,
        };
        assert_eq!(rt.listen(&bad, &me, false).await.unwrap_err().code, -32602);
        let first = rt.listen(&listen_req(1, json!({})), &me, false).await.unwrap();
        assert!(rt.listen(&listen_req(2, json!({})), &me, false).await.is_err());
        let other: Arc<str> = Arc::from("q");
        assert!(rt.listen(&listen_req(2, json!({})), &other, false).await.is_ok());
        drop(first);
        assert!(rt.listen(&listen_req(3, json!({})), &me, false).await.is_ok());
    }

    #[tokio::test]
    async fn shutdown_ends_listeners() {
        let rt = runtime(32);
        let mut l = rt
            .listen(
                &listen_req(9, json!({"toolsListChanged": true})),
                &Arc::from("p"),
                false,
            )
            .await
            .unwrap();
        rt.shutdown();
        assert!(l.next().await.is_none());
        assert_eq!(
            frame(l.server_cancel_frame()),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 9, "reason": "The server is shutting down"}})
        );
        let done = frame(l.completion_frame());
        assert_eq!(done["id"], 9);
        assert_eq!(
            done["result"],
            json!({"_meta": {SUBSCRIPTION_ID: 9, SERVER_INFO: rt.config().server_info.render(None)},
                   "resultType": "complete"})
        );

        // Without `send_server_info` the completion carries only the subscription id.
        let config = ServerConfig {
            send_server_info: false,
            ..Default::default()
        };
        let rt = Runtime::new(config, Arc::new(Registry::new()));
        let l = rt
            .listen(&listen_req(4, json!({})), &Arc::from("p"), false)
            .await
            .unwrap();
        assert_eq!(
            frame(l.completion_frame())["result"],
            json!({"_meta": {SUBSCRIPTION_ID: 4}, "resultType": "complete"})
        );
    }
}
