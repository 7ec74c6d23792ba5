//! The eras a server serves (`McpServerBuilder::eras`): a modern-only server refuses legacy
//! clients with -32022 naming the revisions it serves (the protocol asks a modern-only server to
//! name them to an `initialize`), mints no session, and answers GET and DELETE 405; its modern
//! clients are served as usual.

#![cfg(feature = "http")]

use mcp_server::Eras;
use mcp_server::prelude::*;
use mcp_server::testing::TestClient;
use support::{Running, init_params, modern_meta};

mod support;

fn server(eras: Eras) -> McpServer {
    McpServer::builder()
        .name("eras")
        .version("1")
        .eras(eras)
        .tool(Tool::new("echo", "Echoes", |_args, _ctx| async { "echo" }))
        .build()
        .expect("server")
}

#[tokio::test]
async fn a_modern_only_server_refuses_legacy_clients_and_names_its_revisions() {
    let http = Running::start(server(Eras::Modern)).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params("2025-11-25")});
    let refused = http.post(&[], &init).await;
    assert_eq!(refused.status, 400);
    assert!(refused.header("mcp-session-id").is_none(), "no session minted");
    let error = &refused.message()["error"];
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(error["data"]["requested"], "2025-11-25");
    assert_eq!(refused.message()["id"], 1);
    // A batch is legacy: refused whole.
    let batch = json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]);
    let refused = http.post(&[("mcp-protocol-version", "2025-03-26")], &batch).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.message()["error"]["code"], -32022, "{:?}", refused.message);
    for verb in ["GET", "DELETE"] {
        let a = http.send(verb, &[("mcp-session-id", "mcp_x")], "").await;
        assert_eq!(a.status, 405, "{verb}");
    }
    // A modern request is served.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo", "arguments": {}, "_meta": modern_meta(json!({}))
    }});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    let served = http.post(&headers, &call).await;
    assert_eq!(served.status, 200);
    assert_eq!(served.message()["result"]["content"][0]["text"], "echo");
    http.stop().await;
}

#[tokio::test]
async fn each_era_alone_refuses_the_other_in_process() {
    let modern_only = server(Eras::Modern);
    let Err(e) = TestClient::legacy(&modern_only).await else {
        panic!("a legacy client is refused");
    };
    assert_eq!(e.code(), Some(-32022), "{e}");
    let c = TestClient::modern(&modern_only).await.expect("modern client");
    assert!(c.list_tools().await.is_ok());

    let legacy_only = server(Eras::Legacy);
    assert!(
        TestClient::legacy(&legacy_only)
            .await
            .expect("legacy client")
            .list_tools()
            .await
            .is_ok()
    );
    let modern = TestClient::modern(&legacy_only)
        .await
        .expect("connects: nothing is sent");
    let e = modern.list_tools().await.unwrap_err();
    assert_eq!(e.code(), Some(-32022), "{e}");
}
