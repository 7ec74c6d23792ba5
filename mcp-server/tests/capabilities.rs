//! Capabilities follow what is registered: a server declares `tools`, `resources`, `prompts` and
//! `completions` only when it has one, and `logging` only when it offers it; a method of an
//! undeclared capability is -32601 in both eras, like a method the server does not know.

use mcp_server::prelude::*;
use mcp_server::testing::TestClient;
use serde_json::Map;

fn tools_only() -> McpServer {
    McpServer::builder()
        .name("tools-only")
        .version("1")
        .tool(Tool::new("echo", "Echoes", |_args, _ctx| async { "echo" }))
        .build()
        .expect("server")
}

/// The capability names of a capabilities object.
fn names(caps: &Value) -> Vec<String> {
    caps.as_object().map(Map::keys).into_iter().flatten().cloned().collect()
}

/// The methods of the capabilities a tools-only server lacks, with params that would be valid.
fn undeclared() -> Vec<(&'static str, Value)> {
    vec![
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://a"})),
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "greet"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "a", "value": ""}}),
        ),
    ]
}

#[tokio::test]
async fn a_tools_only_server_declares_only_tools_in_both_eras() {
    let server = tools_only();
    let legacy = TestClient::legacy(&server).await.expect("legacy client");
    let init = legacy.initialize_result().expect("initialize result");
    assert_eq!(init["capabilities"], json!({"tools": {"listChanged": true}}));
    let modern = TestClient::modern(&server).await.expect("modern client");
    let discovered = modern.request("server/discover", json!({})).await.expect("discover");
    assert_eq!(names(&discovered["capabilities"]), ["tools"], "{discovered}");

    let mut methods = undeclared();
    for (client, era) in [(&legacy, "legacy"), (&modern, "modern")] {
        if era == "legacy" {
            methods.push(("logging/setLevel", json!({"level": "debug"})));
            methods.push(("resources/subscribe", json!({"uri": "test://a"})));
        }
        for (method, params) in &methods {
            let e = client.request(method, params.clone()).await.unwrap_err();
            assert_eq!(e.code(), Some(-32601), "{era} {method}: {e}");
        }
        assert!(client.list_tools().await.is_ok(), "{era}: tools are served");
    }
}

#[tokio::test]
async fn registering_an_item_or_offering_logging_declares_its_capability() {
    let server = McpServer::builder()
        .name("full")
        .version("1")
        .logging(true)
        .prompt(Prompt::new("greet", "Greets", |_args, _ctx| async {
            Ok(GetPromptResult::new(vec![PromptMessage::assistant_text("hello")]))
        }))
        .resource(Resource::new("test://a", "a", |uri, _vars, _ctx| async move {
            ResourceContents::text(uri, "text/plain", "A")
        }))
        .build()
        .expect("server");
    let legacy = TestClient::legacy(&server).await.expect("legacy client");
    let init = legacy.initialize_result().expect("initialize result");
    let mut caps = names(&init["capabilities"]);
    caps.sort();
    assert_eq!(caps, ["logging", "prompts", "resources"], "no tool, no tools: {init}");
    assert!(legacy.list_prompts().await.is_ok());
    assert!(
        legacy
            .request("logging/setLevel", json!({"level": "debug"}))
            .await
            .is_ok()
    );
    let e = legacy.request("tools/list", json!({})).await.unwrap_err();
    assert_eq!(e.code(), Some(-32601));
}
