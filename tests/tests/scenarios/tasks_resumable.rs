//! Tasks that outlive their instance (issue #43), seen from outside: `everything` instances on
//! one Redis run the fixture's resumable tool `test_resumable_count` (a checkpoint per step);
//! the instance running the tasks is killed with `SIGKILL`, or stopped with `SIGTERM`, and
//! another instance runs them again from their last checkpoint. A task that is not resumable
//! fails with the message that its instance stopped.

use std::time::Duration;

use mcp_store_redis::testing::{TestRedis, unique_prefix};
use serde_json::{Value, json};

use crate::support::{Fixture, Legacy, bounded};

const KEY: &str = "0a11ce5a11c0ffee0ddba11defaced0b0bca7c0de5eed5a1ad5c0ffee15900d5";
const EXT: &str = "io.modelcontextprotocol/tasks";

/// A modern request from a client that declared the tasks extension.
async fn modern(f: &Fixture, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}});
    f.modern(id, method, params).await.answer(id).await
}

/// Polls until `get` answers a terminal task (within `secs`): the last answer.
async fn until_ended<F, Fut>(secs: u64, mut get: F) -> Value
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut n = 0;
    loop {
        n += 1;
        let answer = get(1000 + n).await;
        let status = &answer["result"]["status"];
        if status == "completed" || status == "failed" || status == "cancelled" {
            return answer;
        }
        assert!(tokio::time::Instant::now() < deadline, "the task did not end: {answer}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The step a result says the last attempt started from, and how many attempts it took.
fn counted(text: &str, steps: u64) -> (u64, u64) {
    let rest = text
        .strip_prefix(&format!("counted {steps} steps in "))
        .unwrap_or_else(|| panic!("a count of {steps} steps: {text}"));
    let (attempts, from) = rest.split_once(" attempts, from step ").expect("attempts and a step");
    (attempts.parse().expect("attempts"), from.parse().expect("a step"))
}

fn args(redis: &TestRedis, prefix: &str) -> Vec<String> {
    [
        "--redis",
        redis.url(),
        "--redis-prefix",
        prefix,
        "--task-key",
        KEY,
        "--task-lease-ms",
        "1000",
    ]
    .map(str::to_owned)
    .to_vec()
}

async fn start(args: &[String], more: &[&str]) -> Fixture {
    let all: Vec<&str> = args.iter().map(String::as_str).chain(more.iter().copied()).collect();
    Fixture::start_with(&all).await
}

#[tokio::test]
async fn a_killed_instance_s_resumable_tasks_run_again_from_their_checkpoints_elsewhere() {
    bounded(120, async {
        let redis = TestRedis::new();
        let prefix = unique_prefix("tasks-resumable");
        let args = args(&redis, &prefix);
        let mut a = start(&args, &[]).await;
        let b = start(&args, &[]).await;
        let legacy = Legacy::open(&a).await;
        let steps = json!({"steps": 30, "step_ms": 100});
        let old = legacy.task(&a, 1, "test_resumable_count", steps.clone()).await;
        let plain = legacy
            .task(&a, 2, "slow_compute", json!({"seconds": 60, "label": "plain"}))
            .await;
        let created = modern(
            &a,
            3,
            "tools/call",
            json!({"name": "test_resumable_count", "arguments": steps}),
        )
        .await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let new = created["result"]["taskId"].as_str().expect("a task").to_owned();
        // Some steps are done, and checkpointed, when the instance dies.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        a.kill().await;
        let killed = tokio::time::Instant::now();

        // The other instance serves the legacy session, and runs the tasks again.
        let ended = until_ended(60, |n| legacy.call(&b, n, "tasks/get", json!({"taskId": old}))).await;
        assert_eq!(ended["result"]["status"], "completed", "{ended}");
        let result = legacy.call(&b, 10, "tasks/result", json!({"taskId": old})).await;
        let text = result["result"]["content"][0]["text"].as_str().expect("a text result");
        let (attempts, from) = counted(text, 30);
        assert_eq!(attempts, 2, "one run again: {text}");
        assert!(from > 0 && from < 30, "from the checkpoint of the killed run: {text}");

        let ended = until_ended(60, |n| modern(&b, n, "tasks/get", json!({"taskId": new}))).await;
        assert_eq!(ended["result"]["status"], "completed", "{ended}");
        let text = ended["result"]["result"]["content"][0]["text"]
            .as_str()
            .expect("a text result");
        let (attempts, from) = counted(text, 30);
        assert_eq!(attempts, 2, "{text}");
        assert!(from > 0, "{text}");

        // The task that is not resumable failed, saying why, within seconds of the kill.
        let ended = until_ended(20, |n| legacy.call(&b, n, "tasks/get", json!({"taskId": plain}))).await;
        assert_eq!(ended["result"]["status"], "failed", "{ended}");
        assert!(
            ended["result"]["statusMessage"]
                .as_str()
                .unwrap_or_default()
                .contains("stopped"),
            "{ended}"
        );
        assert!(killed.elapsed() < Duration::from_secs(40));
    })
    .await;
}

#[tokio::test]
async fn a_draining_instance_hands_its_resumable_tasks_to_a_worker() {
    bounded(120, async {
        let redis = TestRedis::new();
        let prefix = unique_prefix("tasks-drained");
        let args = args(&redis, &prefix);
        let mut a = start(&args, &[]).await;
        let b = start(&args, &[]).await;
        let legacy = Legacy::open(&a).await;
        // Longer than the drain's grace (10 s): handed back, not finished, on SIGTERM.
        let steps = json!({"steps": 140, "step_ms": 100});
        let task = legacy.task(&a, 1, "test_resumable_count", steps).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let stopping = tokio::time::Instant::now();
        a.terminate().await;
        assert!(
            stopping.elapsed() < Duration::from_secs(20),
            "the drain ended after its grace"
        );
        let ended = until_ended(60, |n| legacy.call(&b, n, "tasks/get", json!({"taskId": task}))).await;
        assert_eq!(ended["result"]["status"], "completed", "{ended}");
        let result = legacy.call(&b, 10, "tasks/result", json!({"taskId": task})).await;
        let text = result["result"]["content"][0]["text"].as_str().expect("a text result");
        let (attempts, from) = counted(text, 140);
        assert_eq!(attempts, 2, "{text}");
        assert!(from >= 90, "from where the drain left it (about 115 steps): {text}");
    })
    .await;
}

#[tokio::test]
async fn a_front_runs_no_task_and_a_worker_runs_what_it_queued() {
    bounded(90, async {
        let redis = TestRedis::new();
        let prefix = unique_prefix("tasks-front");
        let args = args(&redis, &prefix);
        let front = start(&args, &["--role", "front"]).await;
        let legacy = Legacy::open(&front).await;
        let counting = legacy
            .task(&front, 1, "test_resumable_count", json!({"steps": 5, "step_ms": 20}))
            .await;
        let plain = legacy
            .task(&front, 2, "slow_compute", json!({"seconds": 0, "label": "queued"}))
            .await;
        let created = modern(
            &front,
            3,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0}}),
        )
        .await;
        assert_eq!(
            created["result"]["resultType"], "task",
            "a front queues at once: {created}"
        );
        let new = created["result"]["taskId"].as_str().expect("a task").to_owned();
        // Inline calls are the front's own.
        let greeting = legacy
            .call(
                &front,
                4,
                "tools/call",
                json!({"name": "greet", "arguments": {"name": "front"}}),
            )
            .await;
        assert_eq!(greeting["result"]["content"][0]["text"], "Hello, front!", "{greeting}");
        // Nothing runs until a worker is there.
        tokio::time::sleep(Duration::from_millis(800)).await;
        let waiting = legacy.call(&front, 5, "tasks/get", json!({"taskId": plain})).await;
        assert_eq!(waiting["result"]["status"], "working", "{waiting}");
        assert_eq!(waiting["result"]["statusMessage"], "Waiting for a worker", "{waiting}");
        let all: Vec<&str> = args.iter().map(String::as_str).collect();
        let _worker = mcp_tests::fixture::start_worker(&all).await;
        let ended = until_ended(30, |n| legacy.call(&front, n, "tasks/get", json!({"taskId": counting}))).await;
        assert_eq!(ended["result"]["status"], "completed", "{ended}");
        let result = legacy
            .call(&front, 10, "tasks/result", json!({"taskId": counting}))
            .await;
        let text = result["result"]["content"][0]["text"].as_str().expect("a text result");
        assert_eq!(counted(text, 5), (1, 0), "{text}");
        let ended = until_ended(30, |n| legacy.call(&front, n, "tasks/get", json!({"taskId": plain}))).await;
        assert_eq!(ended["result"]["status"], "completed", "{ended}");
        let ended = until_ended(30, |n| modern(&front, n, "tasks/get", json!({"taskId": new}))).await;
        assert_eq!(ended["result"]["status"], "completed", "{ended}");
        assert!(ended.to_string().contains("Computed"), "{ended}");
    })
    .await;
}

/// A 2025-11-25 task a worker runs asks its client for input: the worker loads the task's
/// session from the store, its `elicitation/create` reaches the client on the stream of a
/// `tasks/result` the front serves, and the client's answer, posted to the front, reaches the
/// worker.
#[tokio::test]
async fn a_worker_s_legacy_task_asks_its_client_through_the_front() {
    bounded(90, async {
        let redis = TestRedis::new();
        let prefix = unique_prefix("tasks-worker-asks");
        let args = args(&redis, &prefix);
        let front = start(&args, &["--role", "front"]).await;
        let all: Vec<&str> = args.iter().map(String::as_str).collect();
        let _worker = mcp_tests::fixture::start_worker(&all).await;
        let legacy = Legacy::open_with(&front, json!({"elicitation": {}})).await;
        let task = legacy
            .task(&front, 1, "confirm_delete", json!({"filename": "a.txt"}))
            .await;
        let headers = [
            ("mcp-session-id", legacy.sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": task}});
        let mut waiting = front.post(&body, &headers).await;
        assert!(waiting.is_sse(), "the task's messages come on the tasks/result stream");
        let asked = waiting
            .next_message(Duration::from_secs(20))
            .await
            .expect("the worker's question");
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        assert_eq!(
            asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            task.as_str()
        );
        let answer =
            json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": true}}});
        let posted = front.post(&answer, &headers).await;
        assert_eq!(posted.status, 202, "the answer is taken");
        let result = waiting.answer(2).await;
        assert_eq!(result["result"]["content"][0]["text"], "Deleted a.txt", "{result}");
    })
    .await;
}
