//! Tasks across instances: a task created on one instance is read, listed, awaited and
//! cancelled through the other (2025-11-25 core tasks, and the modern extension with
//! `tasks/update` bringing input to the instance running the worker).

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use super::{Cluster, LEGACY, WAIT, assert_ends, eventually, next_message, request};

const RELATED: &str = "io.modelcontextprotocol/related-task";

/// The JSON-RPC response of an answer: its JSON body, or on an SSE stream the message with an
/// id (the task's status notifications before it are what a waiting `tasks/result` carries, in
/// one process as across instances).
async fn response_of(resp: crate::support::Resp, what: &str) -> Value {
    let status = resp.status;
    assert_eq!(status, StatusCode::OK, "{what}");
    if !resp
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"))
    {
        return resp.json().await;
    }
    let mut sse = resp.sse();
    loop {
        let (_, m) = next_message(&mut sse, what).await;
        if m.get("id").is_some() {
            return m;
        }
        assert_eq!(m["method"], "notifications/tasks/status", "{what}: {m}");
    }
}

/// The result of an answer, after checking it is one.
async fn result_of(resp: crate::support::Resp, what: &str) -> Value {
    let body = response_of(resp, what).await;
    assert!(body.get("error").is_none(), "{what}: {body}");
    body["result"].clone()
}

/// Polls `tasks/get` (legacy when `sid` is given, else modern), each poll served by the next
/// instance, until `done` holds.
async fn poll(c: &Cluster, sid: Option<&str>, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut last = Value::Null;
    while tokio::time::Instant::now() < deadline {
        let params = json!({"taskId": task});
        let req = match sid {
            Some(sid) => c.legacy(sid, LEGACY, request(90, "tasks/get", params)),
            None => c.modern(90, "tasks/get", Some(task), params, true),
        };
        let (resp, _) = c.send(req).await;
        last = result_of(resp, "tasks/get").await;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {task} never reached the expected state; last: {last}");
}

/// Scenario 7 (2025-11-25): `tasks/get`, `tasks/list`, `tasks/cancel` and `tasks/result` of a
/// task running on one instance, served by the other.
async fn legacy_tasks_across_instances(c: Cluster) {
    let sid = c.initialize_on(0, LEGACY).await;
    for runner in [0, 1] {
        let other = 1 - runner;
        let r = c.instance(runner);
        let tag = format!("L{runner}");
        let call = request(
            1,
            "tools/call",
            json!({"name": "work", "arguments": {"tag": tag}, "task": {"ttl": 60000}}),
        );
        let created = result_of(c.send_to(runner, c.legacy(&sid, LEGACY, call)).await, "create").await;
        assert_eq!(created["task"]["status"], "working", "{created}");
        assert_eq!(created["task"]["ttl"], 60000, "{created}");
        let id = created["task"]["taskId"].as_str().expect("a task id").to_owned();
        eventually("the worker runs", || r.probe.saw(&format!("work:start:{tag}"))).await;

        let get = c.legacy(&sid, LEGACY, request(2, "tasks/get", json!({"taskId": id})));
        let got = result_of(c.send_to(other, get).await, "tasks/get").await;
        assert_eq!(
            (got["taskId"].as_str(), got["status"].as_str()),
            (Some(&*id), Some("working")),
            "{got}"
        );

        let list = c.legacy(&sid, LEGACY, request(3, "tasks/list", json!({})));
        let listed = result_of(c.send_to(other, list).await, "tasks/list").await;
        let ids: Vec<&str> = listed["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .filter_map(|t| t["taskId"].as_str())
            .collect();
        assert!(ids.contains(&id.as_str()), "{listed}");

        let cancel = c.legacy(&sid, LEGACY, request(4, "tasks/cancel", json!({"taskId": id})));
        let cancelled = result_of(c.send_to(other, cancel).await, "tasks/cancel").await;
        assert_eq!(
            (cancelled["taskId"].as_str(), cancelled["status"].as_str()),
            (Some(&*id), Some("cancelled")),
            "{cancelled}"
        );
        eventually("the worker observes its token", || {
            r.probe.cancelled(&format!("work:{tag}"))
        })
        .await;
        for at in [runner, other] {
            let get = c.legacy(&sid, LEGACY, request(5, "tasks/get", json!({"taskId": id})));
            let got = result_of(c.send_to(at, get).await, "tasks/get").await;
            assert_eq!(got["status"], "cancelled", "on instance {at}: {got}");
        }
        let result = c.legacy(&sid, LEGACY, request(6, "tasks/result", json!({"taskId": id})));
        let body = response_of(c.send_to(other, result).await, "a cancelled task's result").await;
        assert_eq!(body["error"]["code"], -32603, "a cancelled task's result: {body}");

        // `tasks/result` on the other instance waits for the end of a task running here.
        let call = request(7, "tools/call", json!({"name": "brief", "arguments": {}, "task": {}}));
        let created = result_of(c.send_to(runner, c.legacy(&sid, LEGACY, call)).await, "create").await;
        let id = created["task"]["taskId"].as_str().expect("a task id").to_owned();
        let result = c.legacy(&sid, LEGACY, request(8, "tasks/result", json!({"taskId": id})));
        let done = result_of(c.send_to(other, result).await, "tasks/result").await;
        assert_eq!(
            done["content"],
            json!([{"type": "text", "text": "brief done"}]),
            "{done}"
        );
        assert_eq!(done["_meta"][RELATED], json!({"taskId": id}), "{done}");
        let get = c.legacy(&sid, LEGACY, request(9, "tasks/get", json!({"taskId": id})));
        let got = result_of(c.send_to(runner, get).await, "tasks/get").await;
        assert_eq!(got["status"], "completed", "{got}");
    }
    c.assert_both_used();
}
both_stores!(legacy_tasks_across_instances);

/// Scenario 7 (the modern extension): a task parked in `input_required` on one instance is
/// resumed by `tasks/update` served by the other; `tasks/cancel` served by the other stops the
/// worker.
async fn modern_tasks_across_instances(c: Cluster) {
    for runner in [0, 1] {
        let other = 1 - runner;
        let r = c.instance(runner);
        let call = json!({"name": "asks", "arguments": {}});
        let created = result_of(
            c.send_to(runner, c.modern(1, "tools/call", Some("asks"), call, true))
                .await,
            "tools/call",
        )
        .await;
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].as_str().expect("a task id").to_owned();
        let parked = poll(&c, None, &id, |t| t["status"] == "input_required").await;
        assert_eq!(
            parked["inputRequests"]["name"]["method"], "elicitation/create",
            "{parked}"
        );

        let update =
            json!({"taskId": id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Ann"}}}});
        let ack = result_of(
            c.send_to(other, c.modern(2, "tasks/update", Some(&id), update, true))
                .await,
            "tasks/update",
        )
        .await;
        assert_eq!(ack["resultType"], "complete", "{ack}");
        let done = poll(&c, None, &id, |t| {
            t["status"] != "input_required" && t["status"] != "working"
        })
        .await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": "hello Ann"}]),
            "{done}"
        );

        let tag = format!("M{runner}");
        let call = json!({"name": "work", "arguments": {"tag": tag}});
        let created = result_of(
            c.send_to(runner, c.modern(3, "tools/call", Some("work"), call, true))
                .await,
            "tools/call",
        )
        .await;
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].as_str().expect("a task id").to_owned();
        eventually("the worker runs", || r.probe.saw(&format!("work:start:{tag}"))).await;
        let ack = result_of(
            c.send_to(
                other,
                c.modern(4, "tasks/cancel", Some(&id), json!({"taskId": id}), true),
            )
            .await,
            "tasks/cancel",
        )
        .await;
        assert_eq!(ack["resultType"], "complete", "{ack}");
        eventually("the worker observes its token", || {
            r.probe.cancelled(&format!("work:{tag}"))
        })
        .await;
        let got = poll(&c, None, &id, |t| t["status"] != "working").await;
        assert_eq!(got["status"], "cancelled", "{got}");
    }
    c.assert_both_used();
}
both_stores!(modern_tasks_across_instances);

/// 2025-11-25: a task that asks the client (`elicitation/create`) while a `tasks/result` waits
/// for it on the other instance: the request travels on that `tasks/result`'s stream (relayed
/// by the instance running the task), the client's answer reaches the runner, and the waiting
/// `tasks/result` answers what the task returned.
async fn legacy_task_result_relays_the_task_requests(c: Cluster) {
    let sid = c.initialize_on(0, LEGACY).await;
    for runner in [0, 1] {
        let other = 1 - runner;
        let call = request(
            10 + runner as i64,
            "tools/call",
            json!({"name": "asks", "arguments": {}, "task": {"ttl": 60000}}),
        );
        let created = result_of(c.send_to(runner, c.legacy(&sid, LEGACY, call)).await, "create").await;
        let id = created["task"]["taskId"].as_str().expect("a task id").to_owned();

        let result = c.legacy(&sid, LEGACY, request(20, "tasks/result", json!({"taskId": id})));
        let resp = c.send_to(other, result).await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut sse = resp.sse();
        let ask = loop {
            let (_, m) = next_message(&mut sse, "the task's request, on the other instance").await;
            if m["method"] != "notifications/tasks/status" {
                break m;
            }
            assert_eq!(m["params"]["status"], "input_required", "{m}");
        };
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert_eq!(ask["params"]["_meta"][RELATED], json!({"taskId": id}), "{ask}");
        let s2c = ask["id"].as_str().expect("a string id").to_owned();
        assert!(
            s2c.starts_with(&format!("s2c-{}-", c.instance(runner).id)),
            "the runner asks: {s2c}"
        );

        let answer = json!({"jsonrpc": "2.0", "id": s2c, "result": {"action": "accept", "content": {"name": "Ann"}}});
        let posted = c.send_to(other, c.legacy(&sid, LEGACY, answer)).await;
        assert_eq!(posted.status, StatusCode::ACCEPTED);

        let done = loop {
            let (_, m) = next_message(&mut sse, "the task's result").await;
            if m.get("id").is_some() {
                break m;
            }
            assert_eq!(m["method"], "notifications/tasks/status", "{m}");
        };
        assert_eq!(done["id"], 20, "{done}");
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": "hello Ann"}]),
            "{done}"
        );
        assert_eq!(done["result"]["_meta"][RELATED], json!({"taskId": id}), "{done}");
        assert_ends(&mut sse, Duration::from_secs(2), "the result's stream ends").await;
    }
}
both_stores!(legacy_task_result_relays_the_task_requests);

/// 2025-11-25: a session deleted on one instance takes the tasks another instance created in it
/// (their records deleted, their workers cancelled), as in one process.
async fn a_deleted_session_takes_its_tasks_everywhere(c: Cluster) {
    for runner in [0, 1] {
        let other = 1 - runner;
        let sid = c.initialize_on(runner, LEGACY).await;
        let tag = format!("D{runner}");
        let call = request(
            1,
            "tools/call",
            json!({"name": "work", "arguments": {"tag": tag}, "task": {"ttl": 60000}}),
        );
        let created = result_of(c.send_to(runner, c.legacy(&sid, LEGACY, call)).await, "create").await;
        let id = created["task"]["taskId"].as_str().expect("a task id").to_owned();
        eventually("the worker runs", || {
            c.instance(runner).probe.saw(&format!("work:start:{tag}"))
        })
        .await;
        let del = c
            .send_to(other, c.client.req(http::Method::DELETE).header("mcp-session-id", &sid))
            .await;
        assert_eq!(del.status, StatusCode::NO_CONTENT);
        assert_eq!(
            c.store.tasks.get(&id).await.expect("the store answers"),
            None,
            "the record is gone"
        );
        eventually("the worker observes its token", || {
            c.instance(runner).probe.cancelled(&format!("work:{tag}"))
        })
        .await;
    }
}
both_stores!(a_deleted_session_takes_its_tasks_everywhere);
