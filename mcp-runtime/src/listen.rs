//! `subscriptions/listen` (2026-07-28): the hub of open subscriptions and
//! the fan-out of list changes and resource updates to them.
//!
//! Ordering (behaviour invariant 18): a subscription is registered before its
//! acknowledgement is built, and the transport writes the acknowledgement
//! before anything it receives from the subscription's channel, so the
//! acknowledgement is always the first message. Fan-out reads the table
//! directly and never waits: a subscriber whose channel is full misses the
//! notification (notifications have no reply), and a closed one is removed.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use dashmap::DashMap;
use mcp_protocol::jsonrpc::{encode_notification, encode_result};
use mcp_protocol::meta::SUBSCRIPTION_ID;
use mcp_protocol::task_mode::refusal;
use mcp_protocol::{Request, RequestId, RpcError};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::Runtime;
use crate::registry::Change;
use crate::sink::Frame;
use crate::tasks::TaskOwner;

/// How many notifications wait for a slow listener before it misses some.
const LISTENER_BUFFER: usize = 64;

/// What a subscription asked for and was granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    resource_uris: HashSet<String>,
    /// Tasks whose status changes are announced (`notifications/tasks`).
    task_ids: HashSet<String>,
}

impl Filter {
    fn wants(&self, change: &Change) -> bool {
        match change {
            Change::Tools => self.tools,
            Change::Prompts => self.prompts,
            Change::Resources => self.resources,
            Change::ResourceUpdated(uri) => self.resource_uris.contains(&**uri),
        }
    }
}

#[derive(Debug)]
struct Entry {
    principal: Arc<str>,
    listen_id: RequestId,
    filter: Filter,
    tx: mpsc::Sender<Frame>,
}

/// The open subscriptions of a server.
#[derive(Debug, Default)]
pub struct Subscriptions {
    next: AtomicU64,
    entries: DashMap<u64, Entry>,
    per_principal: Mutex<std::collections::HashMap<Arc<str>, usize>>,
    fanout: OnceLock<()>,
    closing: CancellationToken,
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
            let mut counts = self.per_principal.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(n) = counts.get_mut(&e.principal) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(&e.principal);
                }
            }
        }
    }

    /// Announces a task's new state (its `DetailedTask`) to the
    /// subscriptions that asked for it, with their subscription id.
    pub(crate) fn task_changed(&self, task_id: &str, detailed: Map<String, Value>) {
        let mut gone = Vec::new();
        for e in self.entries.iter() {
            if !e.filter.task_ids.contains(task_id) {
                continue;
            }
            let mut params = detailed.clone();
            params.insert("_meta".into(), json!({ SUBSCRIPTION_ID: e.listen_id }));
            let frame = encode_notification("notifications/tasks", Some(&Value::Object(params)));
            if let Err(mpsc::error::TrySendError::Closed(_)) = e.tx.try_send(frame) {
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
            if let Err(mpsc::error::TrySendError::Closed(_)) = e.tx.try_send(frame) {
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
    rx: mpsc::Receiver<Frame>,
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
        let params = json!({"requestId": self.id, "reason": "The server is shutting down"});
        encode_notification("notifications/cancelled", Some(&params))
    }

    /// The result that completes a subscription the server ends gracefully.
    pub fn completion_frame(&self) -> Frame {
        encode_result(
            &self.id,
            &json!({"resultType": "complete", "_meta": { SUBSCRIPTION_ID: self.id }}),
        )
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
    /// whether they exist); over the per-principal bound the request is
    /// refused.
    pub fn listen(&self, req: &Request, ctx_principal: &Arc<str>, tasks_declared: bool) -> Result<Listener, RpcError> {
        let hub = self.subscriptions().clone();
        self.start_fanout();
        let requested = req
            .params
            .as_ref()
            .and_then(|p| p.get("notifications"))
            .ok_or_else(|| RpcError::invalid_params("notifications must be an object"))?
            .as_object()
            .ok_or_else(|| RpcError::invalid_params("notifications must be an object"))?;
        if requested.contains_key("taskIds") && !tasks_declared {
            return Err(refusal());
        }
        let features = self.features();
        let flag = |k: &str| requested.get(k).and_then(Value::as_bool) == Some(true) && features.list_changed;
        let mut filter = Filter {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            ..Filter::default()
        };
        if features.resource_subscriptions
            && let Some(uris) = requested.get("resourceSubscriptions").and_then(Value::as_array)
        {
            filter.resource_uris = uris.iter().filter_map(Value::as_str).map(str::to_owned).collect();
        }
        if let Some(ids) = requested.get("taskIds").and_then(Value::as_array) {
            let owner = TaskOwner::Principal(ctx_principal.to_string());
            filter.task_ids = ids
                .iter()
                .filter_map(Value::as_str)
                .filter(|id| self.tasks().owns(id, &owner))
                .map(str::to_owned)
                .collect();
        }
        {
            let mut counts = hub.per_principal.lock().unwrap_or_else(PoisonError::into_inner);
            let n = counts.entry(ctx_principal.clone()).or_insert(0);
            if *n >= self.config().max_listeners_per_principal {
                return Err(RpcError::internal_with("Too many open subscriptions"));
            }
            *n += 1;
        }
        let mut honoured = Map::new();
        for (key, on) in [
            ("toolsListChanged", filter.tools),
            ("promptsListChanged", filter.prompts),
            ("resourcesListChanged", filter.resources),
        ] {
            if on {
                honoured.insert(key.into(), Value::Bool(true));
            }
        }
        if !filter.resource_uris.is_empty() {
            let mut uris: Vec<&String> = filter.resource_uris.iter().collect();
            uris.sort();
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        if !filter.task_ids.is_empty() {
            let mut ids: Vec<&String> = filter.task_ids.iter().collect();
            ids.sort();
            honoured.insert("taskIds".into(), json!(ids));
        }
        let (tx, rx) = mpsc::channel(LISTENER_BUFFER);
        let key = hub.next.fetch_add(1, Ordering::Relaxed);
        hub.entries.insert(
            key,
            Entry {
                principal: ctx_principal.clone(),
                listen_id: req.id.clone(),
                filter,
                tx,
            },
        );
        let ack_params = json!({"_meta": { SUBSCRIPTION_ID: req.id }, "notifications": honoured});
        let ack = encode_notification("notifications/subscriptions/acknowledged", Some(&ack_params));
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
    use crate::registry::ToolEntry;
    use crate::{Registry, ServerConfig, ToolResult};
    use mcp_protocol::model::{CallToolResult, ToolDef};
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
        let mut l = rt.listen(&listen_req(7, filter), &me, false).unwrap();
        let ack = frame(l.take_ack().unwrap());
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7);
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
        );

        rt.registry().notify_resource_updated("test://other");
        rt.registry().add_prompt(crate::registry::PromptEntry::new(
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
            .unwrap_err();
        assert_eq!(e.code, -32021);
        let bad = Request {
            id: 1.into(),
            method: "subscriptions/listen".into(),
            params: None,
        };
        assert_eq!(rt.listen(&bad, &me, false).unwrap_err().code, -32602);
        let first = rt.listen(&listen_req(1, json!({})), &me, false).unwrap();
        assert!(rt.listen(&listen_req(2, json!({})), &me, false).is_err());
        let other: Arc<str> = Arc::from("q");
        assert!(rt.listen(&listen_req(2, json!({})), &other, false).is_ok());
        drop(first);
        assert!(rt.listen(&listen_req(3, json!({})), &me, false).is_ok());
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
            .unwrap();
        rt.shutdown();
        assert!(l.next().await.is_none());
        assert_eq!(frame(l.server_cancel_frame())["params"]["requestId"], 9);
        let done = frame(l.completion_frame());
        assert_eq!(
            done["result"],
            json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: 9}})
        );
    }
}
