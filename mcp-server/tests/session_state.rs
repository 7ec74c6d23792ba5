//! Per-session state (`Ctx::session_state`): each legacy session has its own value of a type,
//! made on first use; a modern request, which has no session, has none.

use std::sync::atomic::{AtomicU64, Ordering};

use mcp_server::prelude::*;
use mcp_server::testing::{TestClient, text_of};

fn counter() -> McpServer {
    McpServer::builder()
        .name("counter")
        .version("1")
        .tool(Tool::new(
            "increment",
            "Counts this session's calls",
            |_args, ctx: Ctx| async move {
                match ctx.session_state::<AtomicU64>() {
                    Some(n) => (n.fetch_add(1, Ordering::Relaxed) + 1).to_string(),
                    None => "no session".to_owned(),
                }
            },
        ))
        .build()
        .expect("server")
}

#[tokio::test]
async fn each_legacy_session_counts_on_its_own() {
    let server = counter();
    let (a, b) = (
        TestClient::legacy(&server).await.expect("a"),
        TestClient::legacy(&server).await.expect("b"),
    );
    let call = |c: &TestClient| {
        let c = c.clone();
        async move { text_of(&c.call_tool("increment", json!({})).await.expect("call").content) }
    };
    assert_eq!(call(&a).await, "1");
    assert_eq!(call(&a).await, "2");
    assert_eq!(call(&b).await, "1", "another session starts at its own zero");
    assert_eq!(call(&a).await, "3");
    let modern = TestClient::modern(&server).await.expect("modern");
    assert_eq!(
        call(&modern).await,
        "no session",
        "a stateless request has no session state"
    );
}
