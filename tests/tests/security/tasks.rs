//! Tasks across two bearer principals, over HTTP: the 2025-11-25 core tasks
//! methods and the 2026-07-28 extension's answer "not found" (-32602) for
//! another principal's task, exactly as for an unknown id; a
//! `subscriptions/listen` keeps only the caller's own task ids.

use http::StatusCode;
use serde_json::{Value, json};

use crate::fixture::{bearer_server, by, modern_by, rpc, session, tasks_caps};
use crate::support::{Server, bounded};

/// A legacy request on a session; the JSON answer.
async fn legacy(s: &Server, who: &str, sid: &str, method: &str, params: Value) -> Value {
    let r = by(s.post(rpc(9, method, params)), who)
        .header("mcp-session-id", sid)
        .send()
        .await;
    assert_eq!(r.status, StatusCode::OK, "{method}");
    r.json().await
}

#[tokio::test]
async fn legacy_tasks_of_another_principal_are_not_found() {
    bounded(async {
        let s = bearer_server().await;
        let alice = session(&s, "alice", json!({})).await;
        let bob = session(&s, "bob", json!({})).await;
        let created = legacy(
            &s,
            "alice",
            &alice,
            "tools/call",
            json!({"name": "slow", "arguments": {}, "task": {"ttl": 60000}}),
        )
        .await;
        let id = created["result"]["task"]["taskId"]
            .as_str()
            .expect("task id")
            .to_owned();
        let unknown = legacy(&s, "bob", &bob, "tasks/get", json!({"taskId": "0".repeat(32)})).await;
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let e = legacy(&s, "bob", &bob, method, json!({"taskId": id})).await;
            assert_eq!(
                e["error"], unknown["error"],
                "{method}: the same answer as an unknown id"
            );
            assert_eq!(e["error"]["code"], -32602, "{method}");
        }
        let listed = legacy(&s, "bob", &bob, "tasks/list", json!({})).await;
        assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
        // Still the owner's, and still running.
        let mine = legacy(&s, "alice", &alice, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(mine["result"]["status"], "working", "{mine}");
        let listed = legacy(&s, "alice", &alice, "tasks/list", json!({})).await;
        assert_eq!(listed["result"]["tasks"][0]["taskId"], id.as_str());
        let cancelled = legacy(&s, "alice", &alice, "tasks/cancel", json!({"taskId": id})).await;
        assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    })
    .await;
}

#[tokio::test]
async fn modern_tasks_of_another_principal_are_not_found() {
    bounded(async {
        let s = bearer_server().await;
        let call = json!({"name": "slow", "arguments": {}});
        let created = modern_by(&s, "alice", 1, "tools/call", call, tasks_caps()).send().await;
        assert_eq!(created.status, StatusCode::OK);
        let created = created.json().await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let id = created["result"]["taskId"].as_str().expect("task id").to_owned();
        let unknown = "f".repeat(32);
        for (method, params) in [
            ("tasks/get", json!({"taskId": id})),
            ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
            ("tasks/cancel", json!({"taskId": id})),
        ] {
            let theirs = modern_by(&s, "bob", 2, method, params.clone(), tasks_caps())
                .send()
                .await;
            let mut nowhere = params;
            nowhere["taskId"] = json!(unknown);
            let absent = modern_by(&s, "bob", 2, method, nowhere, tasks_caps()).send().await;
            assert_eq!(theirs.status, absent.status, "{method}");
            let (theirs, absent) = (theirs.json().await, absent.json().await);
            assert_eq!(theirs["error"]["code"], -32602, "{method}");
            assert_eq!(
                theirs["error"], absent["error"],
                "{method}: the same answer as an unknown id"
            );
        }
        let mine = modern_by(&s, "alice", 3, "tasks/get", json!({"taskId": id}), tasks_caps())
            .send()
            .await;
        assert_eq!(mine.json().await["result"]["status"], "working");

        // listen: bob's taskIds naming alice's task are dropped; alice keeps hers.
        let listen = |who: &str| {
            let params = json!({"notifications": {"taskIds": [id, unknown]}});
            modern_by(&s, who, 4, "subscriptions/listen", params, tasks_caps()).send()
        };
        let mut theirs = listen("bob").await.sse();
        let ack = theirs.message().await.expect("ack");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");
        let mut mine = listen("alice").await.sse();
        let ack = mine.message().await.expect("ack");
        assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}), "{ack}");

        let cancel = modern_by(&s, "alice", 5, "tasks/cancel", json!({"taskId": id}), tasks_caps())
            .send()
            .await;
        assert_eq!(cancel.status, StatusCode::OK);
        let note = mine.message().await.expect("status change");
        assert_eq!(
            (note["method"].as_str(), note["params"]["status"].as_str()),
            (Some("notifications/tasks"), Some("cancelled"))
        );
    })
    .await;
}
