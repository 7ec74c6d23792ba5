//! Unit tests of the subscription hub, driven through a runtime.
use super::*;
use crate::catalog::ToolEntry;
use crate::runtime::Runtime;
use crate::{Registry, ServerConfig, ToolResult};
use mcp_protocol::Request;
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
        params: mcp_protocol::Params::from_value(json!({"notifications": filter})),
    }
}

/// A subscription for `principal`, as the engine opens one.
async fn listen(rt: &Runtime, req: &Request, principal: &Arc<str>, tasks: bool) -> Result<Listener, RpcError> {
    rt.listen_as(req, &Holder::principal(principal.clone()), tasks)
        .await
        .map_err(|e| e.error().clone())
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
    let mut l = listen(&rt, &listen_req(7, filter), &me, false).await.unwrap();
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
    let e = listen(&rt, &listen_req(1, json!({"taskIds": ["x"]})), &me, false)
        .await
        .unwrap_err();
    assert_eq!(e.code, -32021);
    let bad = Request {
        id: 1.into(),
        method: "subscriptions/listen".into(),
        params: None,
    };
    assert_eq!(listen(&rt, &bad, &me, false).await.unwrap_err().code, -32602);
    let first = listen(&rt, &listen_req(1, json!({})), &me, false).await.unwrap();
    assert!(listen(&rt, &listen_req(2, json!({})), &me, false).await.is_err());
    let other: Arc<str> = Arc::from("q");
    assert!(listen(&rt, &listen_req(2, json!({})), &other, false).await.is_ok());
    drop(first);
    assert!(listen(&rt, &listen_req(3, json!({})), &me, false).await.is_ok());
}

#[tokio::test]
async fn shutdown_ends_listeners() {
    let rt = runtime(32);
    let mut l = listen(
        &rt,
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
    let l = listen(&rt, &listen_req(4, json!({})), &Arc::from("p"), false)
        .await
        .unwrap();
    assert_eq!(
        frame(l.completion_frame())["result"],
        json!({"_meta": {SUBSCRIPTION_ID: 4}, "resultType": "complete"})
    );
}
