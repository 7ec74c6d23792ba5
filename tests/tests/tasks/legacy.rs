//! 2025-11-25 core tasks: task-first creation, `tasks/result` blocking (and
//! carrying the task's server-to-client requests), `tasks/list`,
//! `tasks/cancel`, and the mode table in the legacy era.

use std::sync::Arc;

use mcp_protocol::RequestId;
use mcp_protocol::auth::AuthInfo;
use mcp_runtime::{Peer, Reply, ServerConfig, Sessions, Sink};
use mcp_tests::drive;
use serde_json::{Value, json};

use crate::support::{Client, request, runtime, task_id};

const RELATED: &str = "io.modelcontextprotocol/related-task";

#[tokio::test]
async fn task_first_answers_the_nested_create_result_and_result_blocks() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::legacy(&rt, "alice").await;
    let created = c
        .ok(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 300}, "task": {"ttl": 60000}}),
        )
        .await;
    let task = &created["task"];
    assert_eq!(
        (task["status"].as_str(), task["ttl"].as_u64()),
        (Some("working"), Some(60000))
    );
    assert_eq!(task["pollInterval"], 1000);
    assert!(created.get("resultType").is_none() && task.get("ttlMs").is_none());
    let id = task_id(&created);
    let got = c.get(&id).await;
    assert_eq!(
        (got["taskId"].as_str(), got["status"].as_str()),
        (Some(&*id), Some("working"))
    );

    let result = c.ok("tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["content"][0]["text"], "slow done");
    assert_eq!(result["_meta"][RELATED], json!({"taskId": id}));
    assert_eq!(c.get(&id).await["status"], "completed");
    // A task that ended cannot be cancelled.
    assert_eq!(c.err("tasks/cancel", json!({"taskId": id})).await.code, -32602);
    // A longer TTL than the server keeps is capped.
    let capped = c
        .ok(
            "tools/call",
            json!({"name": "slow", "task": {"ttl": 999_999_999_999u64}}),
        )
        .await;
    assert_eq!(capped["task"]["ttl"], 3_600_000);
}

#[tokio::test]
async fn result_returns_what_the_call_would_have() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::legacy(&rt, "alice").await;
    let id = task_id(&c.ok("tools/call", json!({"name": "tool_error", "task": {}})).await);
    let r = c.ok("tasks/result", json!({"taskId": id})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(r["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(
        c.get(&id).await["status"],
        "failed",
        "2025-11-25: isError fails the task"
    );

    let id = task_id(&c.ok("tools/call", json!({"name": "rpc_error", "task": {}})).await);
    let e = c.err("tasks/result", json!({"taskId": id})).await;
    assert_eq!((e.code, e.message.as_str()), (-32602, "bad thing"));
}

#[tokio::test]
async fn cancel_transitions_before_answering() {
    let (rt, probe) = runtime(ServerConfig::default(), None);
    let c = Client::legacy(&rt, "alice").await;
    let id = task_id(&c.ok("tools/call", json!({"name": "slow", "task": {}})).await);
    crate::support::eventually("the handler runs", || !probe.tokens.lock().unwrap().is_empty()).await;
    let cancelled = c.ok("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(
        (cancelled["taskId"].as_str(), cancelled["status"].as_str()),
        (Some(&*id), Some("cancelled"))
    );
    assert!(probe.token(0).is_cancelled());
    assert_eq!(c.get(&id).await["status"], "cancelled");
    assert_eq!(c.err("tasks/result", json!({"taskId": id})).await.code, -32603);
}

#[tokio::test]
async fn list_is_paginated_and_per_session() {
    let mut config = ServerConfig::default();
    config.page_size = 2;
    let (rt, _) = runtime(config, None);
    let a = Client::legacy(&rt, "alice").await;
    let b = Client::legacy(&rt, "alice").await;
    let mut mine = Vec::new();
    for _ in 0..3 {
        mine.push(task_id(&a.ok("tools/call", json!({"name": "slow", "task": {}})).await));
    }
    let theirs = task_id(&b.ok("tools/call", json!({"name": "slow", "task": {}})).await);
    let p1 = a.ok("tasks/list", json!({})).await;
    assert_eq!(p1["tasks"].as_array().unwrap().len(), 2);
    let p2 = a.ok("tasks/list", json!({"cursor": p1["nextCursor"]})).await;
    assert!(p2.get("nextCursor").is_none());
    let mut listed: Vec<String> = p1["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(p2["tasks"].as_array().unwrap())
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    mine.sort();
    assert_eq!(listed, mine);
    let theirs_list = b.ok("tasks/list", json!({})).await;
    assert_eq!(theirs_list["tasks"][0]["taskId"], theirs.as_str());
    // Another session of the same principal reads as absence.
    assert_eq!(b.err("tasks/get", json!({"taskId": mine[0]})).await.code, -32602);
    assert_eq!(a.err("tasks/list", json!({"cursor": "bogus"})).await.code, -32602);
}

#[tokio::test]
async fn the_mode_table_in_the_legacy_era() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Client::legacy(&rt, "alice").await;
    assert_eq!(c.err("tools/call", json!({"name": "required"})).await.code, -32021);
    let r = c.ok("tools/call", json!({"name": "plain", "task": {}})).await;
    assert_eq!(r["content"][0]["text"], "plain");
    let r = c.ok("tools/call", json!({"name": "quick"})).await;
    assert_eq!(r["content"][0]["text"], "quick");

    // 2025-06-18 has no core tasks: the `task` param is ignored, the methods unknown.
    let old = Client::legacy_at(&rt, "alice", "2025-06-18").await;
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let initialize = |req| {
        let rt = rt.clone();
        async move {
            let peer = Peer::new(Arc::new(AuthInfo::new("alice")), Sessions::None);
            let (sink, _rx) = Sink::channel(4);
            match drive::request(&rt, &peer, req, sink).await.reply {
                Reply::Result(v) => v,
                other => panic!("initialize answered {other:?}"),
            }
        }
    };
    let init_result = initialize(init).await;
    assert!(init_result["capabilities"].get("tasks").is_none());
    let v25 = initialize(request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}),
    ))
    .await;
    assert_eq!(
        v25["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    let r = old.ok("tools/call", json!({"name": "quick", "task": {}})).await;
    assert_eq!(r["content"][0]["text"], "quick");
    assert_eq!(old.err("tasks/get", json!({"taskId": "x"})).await.code, -32601);
}

#[tokio::test]
async fn input_required_travels_on_the_tasks_result_stream() {
    let (rt, _) = runtime(ServerConfig::default(), None);
    let c = Arc::new(Client::legacy(&rt, "alice").await);
    // The creating call's stream closes with its answer (as on HTTP).
    let id = task_id(&c.ok("tools/call", json!({"name": "asks", "task": {}})).await);
    let parked = c.wait_status(&id, "input_required").await;
    assert!(parked.get("inputRequests").is_none(), "2025-11-25 shape");

    let (sink, mut rx) = Sink::channel(64);
    let waiting = {
        let c = c.clone();
        let req = c.request("tasks/result", json!({"taskId": id}));
        tokio::spawn(async move { c.send_with(req, sink).await })
    };
    let handle = c.session.clone().unwrap();
    let session = c.rt.held_session(handle.id(), &c.auth.principal).expect("the session");
    let mut answered = 0;
    while answered < 2 {
        let frame: Value = serde_json::from_slice(&rx.recv().await.expect("a frame")).unwrap();
        if frame["method"] != "elicitation/create" {
            assert_eq!(frame["method"], "notifications/tasks/status");
            continue;
        }
        assert_eq!(frame["params"]["_meta"][RELATED]["taskId"], id.as_str());
        let field = frame["params"]["requestedSchema"]["required"][0]
            .as_str()
            .unwrap()
            .to_owned();
        let rid: RequestId = serde_json::from_value(frame["id"].clone()).unwrap();
        let answer = json!({"action": "accept", "content": { field.clone(): field.to_uppercase() }});
        assert!(session.deliver(&rid, Ok(answer)));
        answered += 1;
    }
    let reply = waiting.await.unwrap();
    let Reply::Result(r) = reply else {
        panic!("expected the result, got {reply:?}")
    };
    assert_eq!(r["content"][0]["text"], r#"a="A" b="B""#);
    assert_eq!(c.get(&id).await["status"], "completed");
}
