//! The hand-off rules that need a controlled clock or store: the outcome
//! that arrives while escalating, the bounds, the TTL sweep, and a durable
//! store across a restart (which also proves the `TaskStore` trait is
//! enough to run tasks).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::tasks::{INTERRUPTED, StoreFuture};
use mcp_runtime::{InMemoryTaskStore, ServerConfig, TaskOwner, TaskRecord, TaskStore};
use serde_json::json;

use crate::support::{Client, Probe, eventually, runtime, task_id};

/// An in-memory store whose first write of a new task releases the `gated`
/// tool and then takes a while: the tool's outcome arrives exactly while
/// the call is being handed off.
struct GateStore {
    inner: InMemoryTaskStore,
    probe: Mutex<Option<Arc<Probe>>>,
}

impl TaskStore for GateStore {
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        self.inner.get(id)
    }
    fn put(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        let probe = self.probe.lock().unwrap().clone();
        Box::pin(async move {
            if let Some(p) = probe {
                p.gate.notify_one();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            self.inner.put(record).await
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

#[tokio::test(start_paused = true)]
async fn an_outcome_during_the_hand_off_is_answered_in_place() {
    let store = Arc::new(GateStore {
        inner: InMemoryTaskStore::new(),
        probe: Mutex::new(None),
    });
    let (rt, probe) = runtime(ServerConfig::default(), Some(store.clone()));
    *store.probe.lock().unwrap() = Some(probe);
    let c = Client::modern(&rt, "alice", true);
    let r = c.tool("gated", json!({})).await;
    assert_eq!(r["content"][0]["text"], "gated done");
    assert_eq!(r["resultType"], "complete");
    assert!(r.get("taskId").is_none());
    assert_eq!(store.count().await.unwrap(), 0, "the task nobody saw is discarded");
}

#[tokio::test]
async fn over_the_bounds_the_call_is_refused_and_its_work_stopped() {
    let mut config = ServerConfig::default();
    config.max_tasks_total = 2;
    config.max_tasks_per_principal = 1;
    let (rt, probe) = runtime(config, None);
    let alice = Client::modern(&rt, "alice", true);
    task_id(&alice.tool("slow", json!({})).await);
    let e = alice.err("tools/call", json!({"name": "slow"})).await;
    assert_eq!(
        (e.code, e.message.as_str()),
        (-32603, "Too many running tasks for this client")
    );
    eventually("the refused call's work stops", || probe.token(1).is_cancelled()).await;
    // No task needed: still answered.
    assert_eq!(alice.tool("quick", json!({})).await["content"][0]["text"], "quick");
    // The legacy session of the same principal counts against the same bound.
    let legacy = Client::legacy(&rt, "alice").await;
    let e = legacy.err("tools/call", json!({"name": "slow", "task": {}})).await;
    assert_eq!(e.code, -32603);
    task_id(&Client::modern(&rt, "bob", true).tool("slow", json!({})).await);
    let e = Client::modern(&rt, "carol", true)
        .err("tools/call", json!({"name": "slow"}))
        .await;
    assert_eq!(
        (e.code, e.message.as_str()),
        (-32603, "Too many running tasks"),
        "over the total"
    );
    assert!(!probe.token(0).is_cancelled() && !probe.token(2).is_cancelled());
}

#[tokio::test]
async fn finished_tasks_do_not_block_new_ones_and_the_oldest_makes_room() {
    let mut config = ServerConfig::default();
    config.max_tasks_total = 2;
    config.max_tasks_per_principal = 1;
    config.max_stored_tasks_per_principal = 3;
    let (rt, _) = runtime(config, None);
    let alice = Client::modern(&rt, "alice", true);
    // The finding: tasks that finish at once still counted until they expired (1 h).
    let mut ids = Vec::new();
    for _ in 0..6 {
        let id = task_id(&alice.tool("slow", json!({"ms": 150})).await);
        alice.wait_status(&id, "completed").await;
        ids.push(id);
    }
    assert_eq!(rt.task_store().count().await.unwrap(), 3, "the stored bound holds");
    // The newest results are readable; the oldest made room.
    for id in &ids[3..] {
        alice.ok("tasks/get", json!({"taskId": id})).await;
    }
    let e = alice.err("tasks/get", json!({"taskId": ids[0]})).await;
    assert_eq!(e.code, -32602);
    // Another principal was never affected.
    let bob = Client::modern(&rt, "bob", true);
    let id = task_id(&bob.tool("slow", json!({"ms": 150})).await);
    bob.wait_status(&id, "completed").await;
}

#[tokio::test]
async fn an_ended_session_takes_its_tasks_with_it() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let legacy = Client::legacy(&rt, "alice").await;
    // One running, two finished.
    legacy.ok("tools/call", json!({"name": "slow", "task": {}})).await;
    for _ in 0..2 {
        legacy
            .ok(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 1}, "task": {}}),
            )
            .await;
    }
    assert_eq!(rt.task_store().count().await.unwrap(), 3);
    let sid = legacy.session.as_ref().expect("a session").id().clone();
    assert!(rt.end_session(&sid, "alice").await.unwrap());
    assert_eq!(rt.task_store().count().await.unwrap(), 0, "nothing left behind");
}

#[tokio::test(start_paused = true)]
async fn expired_tasks_read_as_absent_and_are_swept() {
    let mut config = ServerConfig::default();
    config.task_ttl = Duration::from_secs(1);
    config.task_sweep_interval = Duration::from_secs(3600);
    let (rt, probe) = runtime(config, None);
    let c = Client::modern(&rt, "alice", true);
    let created = c.tool("slow", json!({})).await;
    assert_eq!(created["ttlMs"], 1000);
    let id = task_id(&created);
    let ended = task_id(&c.tool("slow", json!({"ms": 200})).await);
    c.wait_status(&ended, "completed").await;
    tokio::time::advance(Duration::from_millis(500)).await;
    assert_eq!(c.get(&id).await["status"], "working", "kept for its whole TTL");
    tokio::time::advance(Duration::from_millis(600)).await;
    assert_eq!(c.err("tasks/get", json!({"taskId": id})).await.code, -32602);
    assert_eq!(rt.sweep_tasks().await, 2, "working and ended tasks alike");
    assert!(probe.token(0).is_cancelled(), "the expired task's work stops");
    assert_eq!(rt.task_store().count().await.unwrap(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_sweep_runs_periodically() {
    let mut config = ServerConfig::default();
    config.task_ttl = Duration::from_secs(2);
    config.task_sweep_interval = Duration::from_secs(1);
    let (rt, probe) = runtime(config, None);
    let c = Client::modern(&rt, "alice", true);
    task_id(&c.tool("slow", json!({})).await);
    tokio::time::advance(Duration::from_secs(3)).await;
    eventually("the sweep cancels the expired task", || probe.token(0).is_cancelled()).await;
    assert_eq!(rt.task_store().count().await.unwrap(), 0);
}

/// A durable store, as a database would be: it outlives the runtime and
/// knows which records a previous run of the server wrote.
#[derive(Default)]
struct DurableStore {
    records: Mutex<HashMap<String, TaskRecord>>,
    previous_run: HashSet<String>,
}

impl TaskStore for DurableStore {
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let r = self.records.lock().unwrap().get(id).cloned();
        Box::pin(async move { Ok(r) })
    }
    fn put(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        self.records.lock().unwrap().insert(record.task_id.clone(), record);
        Box::pin(async { Ok(()) })
    }
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.records.lock().unwrap().remove(id);
        Box::pin(async { Ok(()) })
    }
    fn list<'a>(&'a self, owner: &'a TaskOwner) -> StoreFuture<'a, Vec<TaskRecord>> {
        let v = self
            .records
            .lock()
            .unwrap()
            .values()
            .filter(|r| r.owner == *owner)
            .cloned()
            .collect();
        Box::pin(async move { Ok(v) })
    }
    fn count(&self) -> StoreFuture<'_, usize> {
        let n = self.records.lock().unwrap().len();
        Box::pin(async move { Ok(n) })
    }
    fn count_for_client<'a>(&'a self, c: &'a str) -> StoreFuture<'a, usize> {
        let n = self
            .records
            .lock()
            .unwrap()
            .values()
            .filter(|r| r.counted_as() == c)
            .count();
        Box::pin(async move { Ok(n) })
    }
    fn list_for_client<'a>(&'a self, c: &'a str) -> StoreFuture<'a, Vec<TaskRecord>> {
        let v = self
            .records
            .lock()
            .unwrap()
            .values()
            .filter(|r| r.counted_as() == c)
            .cloned()
            .collect();
        Box::pin(async move { Ok(v) })
    }
    fn expired(&self, now_ms: u64) -> StoreFuture<'_, Vec<String>> {
        let records = self.records.lock().unwrap();
        let v = records
            .values()
            .filter(|r| r.expires_at_ms().is_some_and(|e| e <= now_ms))
            .map(|r| r.task_id.clone())
            .collect();
        Box::pin(async move { Ok(v) })
    }
    fn recover(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        let records = self.records.lock().unwrap();
        let v = records
            .values()
            .filter(|r| self.previous_run.contains(&r.task_id) && !r.status.is_terminal())
            .cloned()
            .collect();
        Box::pin(async move { Ok(v) })
    }
}

#[tokio::test]
async fn a_restart_fails_the_tasks_left_working() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let owner = TaskOwner::Principal("alice".into());
    let store = DurableStore {
        previous_run: HashSet::from(["old".to_owned()]),
        ..DurableStore::default()
    };
    let left = TaskRecord::new("old", owner, now, Some(3_600_000), Some(1000));
    store.put(left).await.unwrap();
    let (rt, _) = runtime(ServerConfig::default(), Some(Arc::new(store)));
    let c = Client::modern(&rt, "alice", true);
    let old = c.get("old").await;
    assert_eq!(old["status"], "failed");
    assert_eq!(old["statusMessage"], INTERRUPTED);
    assert_eq!(
        old["error"],
        json!({"code": -32603, "message": "Task interrupted by a restart"})
    );
    // The same store runs new tasks from start to end.
    let id = task_id(&c.tool("slow", json!({"ms": 300})).await);
    let done = c.wait_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slow done");
    let legacy = Client::legacy(&rt, "alice").await;
    let lid = task_id(
        &legacy
            .ok(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 10}, "task": {}}),
            )
            .await,
    );
    assert_eq!(
        legacy.ok("tasks/list", json!({})).await["tasks"][0]["taskId"],
        lid.as_str()
    );
    legacy.ok("tasks/result", json!({"taskId": lid})).await;
}
