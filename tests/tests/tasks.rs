//! Tasks, driven through the runtime: the 2026-07-28 extension (escalation
//! after the inline window, `tasks/get` inlining, `tasks/update`, listen
//! `taskIds`), 2025-11-25 core tasks (`tasks/legacy.rs`), and the hand-off
//! rules, bounds, TTL and store (`tasks/handoff.rs`).

#[path = "tasks/handoff.rs"]
mod handoff;
#[path = "tasks/legacy.rs"]
mod legacy;
#[path = "tasks/support.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_protocol::auth::ANONYMOUS;
use mcp_runtime::tasks::StoreFuture;
use mcp_runtime::{InMemoryTaskStore, ServerConfig, TaskOwner, TaskRecord, TaskStore};
use serde_json::{Value, json};
use support::{Client, EXT, runtime, task_id};

/// A store whose writes take a while, and which lists the tasks whose write has ended: what it
/// lists when an answer arrives is what was stored before that answer.
#[derive(Default)]
struct SlowStore {
    inner: InMemoryTaskStore,
    stored: Mutex<Vec<String>>,
}

impl TaskStore for SlowStore {
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        self.inner.get(id)
    }
    fn put(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let id = record.task_id.clone();
            self.inner.put(record).await?;
            self.stored.lock().unwrap().push(id);
            Ok(())
        })
    }
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.inner.delete(id)
    }
    fn list<'a>(&'a self, owner: &'a TaskOwner) -> StoreFuture<'a, Vec<TaskRecord>> {
        self.inner.list(owner)
    }
    fn count(&self) -> StoreFuture<'_, usize> {
        self.inner.count()
    }
    fn count_for_client<'a>(&'a self, c: &'a str) -> StoreFuture<'a, usize> {
        self.inner.count_for_client(c)
    }

    fn list_for_client<'a>(&'a self, c: &'a str) -> StoreFuture<'a, Vec<TaskRecord>> {
        self.inner.list_for_client(c)
    }
    fn expired(&self, now_ms: u64) -> StoreFuture<'_, Vec<String>> {
        self.inner.expired(now_ms)
    }
}

#[tokio::test]
async fn escalation_stores_the_task_before_answering() {
    let store = Arc::new(SlowStore::default());
    let (rt, _) = runtime(ServerConfig::default(), Some(store.clone()));
    let c = Client::modern(&rt, "alice", true);
    let created = c.tool("slow", json!({})).await;
    // Read as the answer arrives, with nothing awaited in between: a write still under way (or
    // started after the answer) is not listed.
    let stored_when_answered = store.stored.lock().unwrap().clone();
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert!(created.get("task").is_none() && created.get("content").is_none());
    assert_eq!(created["ttlMs"], 3_600_000);
    assert_eq!(created["pollIntervalMs"], 1000);
    assert!(created.get("ttl").is_none() && created.get("requestState").is_none());
    assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));
    let id = task_id(&created);
    assert_eq!(
        stored_when_answered,
        std::slice::from_ref(&id),
        "the task is stored before it is answered"
    );
    let got = c.get(&id).await;
    assert_eq!(
        (got["taskId"].as_str(), got["status"].as_str()),
        (Some(&*id), Some("working"))
    );
    assert_eq!(got["resultType"], "complete");
    assert!(got.get("result").is_none() && got.get("error").is_none() && got.get("requestState").is_none());
}

#[tokio::test]
async fn an_outcome_inside_the_window_is_answered_in_place() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, "alice", true);
    let r = c.tool("quick", json!({})).await;
    assert_eq!(
        (r["content"][0]["text"].as_str(), r["resultType"].as_str()),
        (Some("quick"), Some("complete"))
    );
    assert!(r.get("taskId").is_none());
    assert_eq!(rt.task_store().count().await.unwrap(), 0);
}

#[tokio::test]
async fn get_inlines_the_result_the_tool_error_and_the_protocol_error() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, "alice", true);

    let id = task_id(&c.tool("slow", json!({"ms": 300})).await);
    let done = c.wait_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slow done");
    assert_eq!(done["result"]["resultType"], "complete");
    assert!(
        done["result"].get("_meta").is_none(),
        "no related-task _meta when inlined"
    );
    assert!(done.get("error").is_none());

    let id = task_id(&c.tool("tool_error", json!({})).await);
    let done = c.wait_until(&id, |t| t["status"] != "working").await;
    assert_eq!(done["status"], "completed", "a tool error completes the task");
    assert_eq!(done["result"]["isError"], true);

    let id = task_id(&c.tool("rpc_error", json!({})).await);
    let done = c.wait_until(&id, |t| t["status"] != "working").await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"], json!({"code": -32602, "message": "bad thing"}));
    assert!(done.get("result").is_none());
}

#[tokio::test]
async fn a_panicking_worker_fails_its_task_without_details() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, "alice", true);
    let id = task_id(&c.tool("panics", json!({})).await);
    let done = c.wait_until(&id, |t| t["status"] != "working").await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"]["code"], -32603);
    assert!(!done.to_string().contains("secret"));
}

#[tokio::test]
async fn cancellation_reaches_the_handler_and_is_acknowledged() {
    let (rt, probe) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, "alice", true);
    let id = task_id(&c.tool("slow", json!({})).await);
    let token = probe.token(0);
    assert!(!token.is_cancelled());
    let ack = c.ok("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack["resultType"], "complete");
    for k in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack.get(k).is_none(), "{k} on the ack");
    }
    assert!(token.is_cancelled(), "the handler's token is cancelled");
    assert_eq!(c.get(&id).await["status"], "cancelled");
    // Cancelling an ended task is the same acknowledgement, and changes nothing.
    assert_eq!(
        c.ok("tasks/cancel", json!({"taskId": id})).await["resultType"],
        "complete"
    );
    let done_id = task_id(&c.tool("slow", json!({"ms": 300})).await);
    c.wait_status(&done_id, "completed").await;
    c.ok("tasks/cancel", json!({"taskId": done_id})).await;
    assert_eq!(
        c.get(&done_id).await["status"],
        "completed",
        "the first terminal outcome wins"
    );
}

#[tokio::test]
async fn input_required_then_update_then_completion() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, "alice", true);
    let id = task_id(&c.tool("asks", json!({})).await);
    let parked = c.wait_status(&id, "input_required").await;
    let mut keys: Vec<&String> = parked["inputRequests"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(parked["inputRequests"]["a"]["method"], "elicitation/create");

    let answer = |k: &str, v: &str| json!({"action": "accept", "content": { k: v }});
    let ack = c
        .ok(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"a": answer("a", "A"), "zzz": {"ignored": true}}}),
        )
        .await;
    assert_eq!(ack, json!({"resultType": "complete", "_meta": ack["_meta"].clone()}));
    let partial = c.get(&id).await;
    assert_eq!(partial["status"], "input_required");
    assert_eq!(
        partial["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["b"]
    );

    c.ok(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"b": answer("b", "B")}}),
    )
    .await;
    let done = c.wait_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], r#"a="A" b="B""#);
    // Malformed responses are refused.
    assert_eq!(
        c.err("tasks/update", json!({"taskId": id, "inputResponses": {"a": 1}}))
            .await
            .code,
        -32602
    );
    assert_eq!(c.err("tasks/update", json!({"taskId": id})).await.code, -32602);
}

#[tokio::test]
async fn mrtr_is_resolved_before_a_task_is_created() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, "alice", true);
    let r1 = c.tool("mrtr_first", json!({})).await;
    assert_eq!(r1["resultType"], "input_required");
    assert!(r1.get("taskId").is_none());
    assert_eq!(rt.task_store().count().await.unwrap(), 0);
    let mut retry = json!({"name": "mrtr_first", "arguments": {},
        "inputResponses": {"name": {"action": "accept", "content": {"name": "Alice"}}}});
    if let Some(state) = r1.get("requestState") {
        retry["requestState"] = state.clone();
    }
    let r2 = c.ok("tools/call", retry).await;
    assert_eq!(r2["resultType"], "task");
    assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
    let done = c.wait_status(&task_id(&r2), "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], r#"Hello "Alice""#);
}

#[tokio::test]
async fn a_client_without_the_extension_never_gets_a_task() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, "alice", false);
    let r = c.tool("slow", json!({"ms": 300})).await;
    assert_eq!(r["content"][0]["text"], "slow done");
    assert!(r.get("taskId").is_none());
    let e = c.err("tools/call", json!({"name": "required", "arguments": {}})).await;
    assert_eq!(e.code, -32021);
    assert_eq!(
        e.data.unwrap()["requiredCapabilities"],
        json!({"extensions": { EXT: {} }})
    );
    for (m, p) in [
        ("tasks/get", json!({"taskId": "x"})),
        ("tasks/update", json!({"taskId": "x", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "x"})),
    ] {
        assert_eq!(c.err(m, p).await.code, -32021, "{m}");
    }
    // A legacy `task` param is ignored, with or without the extension.
    let r = c
        .ok("tools/call", json!({"name": "quick", "task": {"ttl": 1000}}))
        .await;
    assert_eq!(r["content"][0]["text"], "quick");
    let d = Client::modern(&rt, "alice", true);
    let r = d
        .ok("tools/call", json!({"name": "plain", "task": {"ttl": 1000}}))
        .await;
    assert_eq!(r["content"][0]["text"], "plain");
    // Removed in the extension: -32601 before any handler.
    for m in ["tasks/result", "tasks/list"] {
        assert_eq!(d.err(m, json!({"taskId": "x"})).await.code, -32601, "{m}");
    }
    assert_eq!(d.err("tasks/get", json!({"taskId": "nope"})).await.code, -32602);
}

#[tokio::test]
async fn ownership_answers_like_absence() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let alice = Client::modern(&rt, "alice", true);
    let bob = Client::modern(&rt, "bob", true);
    let id = task_id(&alice.tool("slow", json!({})).await);
    for (m, p) in [
        ("tasks/get", json!({"taskId": id})),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": id})),
    ] {
        let e = bob.err(m, p).await;
        assert_eq!((e.code, e.message.as_str()), (-32602, "Task not found"), "{m}");
    }
    assert_eq!(alice.get(&id).await["status"], "working");
    // A legacy session of the same principal does not see it either.
    let legacy = Client::legacy(&rt, "alice").await;
    assert_eq!(legacy.err("tasks/get", json!({"taskId": id})).await.code, -32602);
}

#[tokio::test]
async fn listen_task_ids_keeps_own_tasks_and_announces_changes() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let alice = Client::modern(&rt, "alice", true);
    let bob = Client::modern(&rt, "bob", true);
    let mine = task_id(&alice.tool("asks", json!({})).await);
    let theirs = task_id(&bob.tool("slow", json!({})).await);
    let wanted = json!({"taskIds": [mine, theirs, "unknown"]});
    let mut l = alice.listen(42, wanted.clone()).await.expect("listens");
    let ack: Value = serde_json::from_slice(&l.take_ack().unwrap()).unwrap();
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [mine]}));
    // Task notifications are the extension's: a client that did not declare it is refused.
    let without = Client::modern(&rt, "alice", false);
    assert_eq!(without.listen(43, wanted).await.unwrap_err()["code"], -32021);

    let next = async {
        let f = tokio::time::timeout(std::time::Duration::from_secs(5), l.next()).await;
        serde_json::from_slice::<Value>(&f.unwrap().unwrap()).unwrap()
    };
    let n = next.await;
    assert_eq!(n["method"], "notifications/tasks");
    assert_eq!(n["params"]["taskId"], mine.as_str());
    assert_eq!(n["params"]["status"], "input_required");
    assert_eq!(n["params"]["inputRequests"]["a"]["method"], "elicitation/create");
    assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42);
    alice.ok("tasks/cancel", json!({"taskId": mine})).await;
    let n = serde_json::from_slice::<Value>(&l.next().await.unwrap()).unwrap();
    assert_eq!(n["params"]["status"], "cancelled");
}

#[tokio::test]
async fn the_capability_is_advertised_per_revision() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::modern(&rt, ANONYMOUS, false);
    let d = c.ok("server/discover", json!({})).await;
    assert_eq!(d["capabilities"]["extensions"], json!({ EXT: {} }));
    assert!(d["capabilities"].get("tasks").is_none());
    let legacy = Client::legacy(&rt, ANONYMOUS).await;
    let tools = legacy.ok("tools/list", json!({})).await;
    let slow = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "slow")
        .unwrap();
    assert_eq!(slow["execution"], json!({"taskSupport": "optional"}));
    // Without any task-capable tool nothing is advertised.
    let bare = mcp_tests::engine::memory(ServerConfig::default(), Arc::new(mcp_runtime::Registry::new()));
    assert!(
        bare.capabilities(Some(mcp_protocol::Revision::V2026_07_28))
            .get("extensions")
            .is_none()
    );
    assert!(
        rt.capabilities(Some(mcp_protocol::Revision::V2025_11_25))["tasks"]["requests"]["tools"]["call"].is_object()
    );
}
