//! The visibility hook: per-principal lists, hidden items answering as
//! unknown in both eras, and `private` cache hints.

use std::sync::Arc;

use http::StatusCode;
use mcp_runtime::ServerConfig;
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::fixture::{admin_only, bearer, by, modern_by, rpc, server_with, session};
use crate::support::{Server, bounded};

async fn hooked() -> Server {
    let mut config = ServerConfig::default();
    config.visibility = Some(admin_only());
    server_with(config, HttpConfig::default().auth(Arc::new(bearer(&[])))).await
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|i| i[field].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn hidden_items_are_absent_for_the_legacy_era() {
    bounded(async {
        let s = hooked().await;
        let ask = |who: &'static str, sid: String| {
            let s = &s;
            move |method: &str, params: Value| {
                let r = by(s.post(rpc(1, method, params)), who).header("mcp-session-id", &sid);
                async move { r.send().await.json().await }
            }
        };
        let bob = ask("bob", session(&s, "bob", json!({})).await);
        let root = ask("root", session(&s, "root", json!({})).await);

        let tools = names(&bob("tools/list", json!({})).await, "tools", "name");
        assert!(!tools.contains(&"admin_reset".to_owned()) && tools.contains(&"whoami".to_owned()));
        let all = names(&root("tools/list", json!({})).await, "tools", "name");
        assert!(all.contains(&"admin_reset".to_owned()), "{all:?}");
        assert!(names(&bob("prompts/list", json!({})).await, "prompts", "name").is_empty());
        assert_eq!(
            names(&root("prompts/list", json!({})).await, "prompts", "name"),
            ["admin_prompt"]
        );
        assert!(names(&bob("resources/list", json!({})).await, "resources", "uri").is_empty());

        let hidden = bob("tools/call", json!({"name": "admin_reset", "arguments": {}})).await;
        let unknown = bob("tools/call", json!({"name": "no_such_tool", "arguments": {}})).await;
        assert_eq!(
            hidden["error"],
            json!({"code": -32602, "message": "Unknown tool: admin_reset"}),
            "{hidden}"
        );
        assert_eq!(
            unknown["error"],
            json!({"code": -32602, "message": "Unknown tool: no_such_tool"}),
            "the same shape as an unknown tool"
        );
        let prompt = bob("prompts/get", json!({"name": "admin_prompt"})).await;
        assert_eq!(prompt["error"]["message"], "Unknown prompt: admin_prompt", "{prompt}");
        let read = bob("resources/read", json!({"uri": "test://admin/secret"})).await;
        let missing = bob("resources/read", json!({"uri": "test://admin/none"})).await;
        assert_eq!(read["error"]["code"], missing["error"]["code"], "{read}");
        let allowed = root("tools/call", json!({"name": "admin_reset", "arguments": {}})).await;
        assert_eq!(allowed["result"]["content"][0]["text"], "reset");
    })
    .await;
}

#[tokio::test]
async fn hidden_items_are_absent_for_the_modern_era_and_lists_stay_private() {
    bounded(async {
        let s = hooked().await;
        let caps = json!({});
        let list = modern_by(&s, "bob", 1, "tools/list", json!({}), caps.clone())
            .send()
            .await;
        let list = list.json().await;
        assert!(!names(&list, "tools", "name").contains(&"admin_reset".to_owned()));
        assert_eq!(list["result"]["cacheScope"], "private", "{list}");
        let call = json!({"name": "admin_reset", "arguments": {}});
        let hidden = modern_by(&s, "bob", 2, "tools/call", call, caps.clone()).send().await;
        assert_eq!(
            hidden.status,
            StatusCode::OK,
            "a -32602 raised while dispatching is in-band"
        );
        let hidden = hidden.json().await;
        assert_eq!(
            hidden["error"],
            json!({"code": -32602, "message": "Unknown tool: admin_reset"}),
            "{hidden}"
        );
        let read = json!({"uri": "test://admin/secret"});
        let r = modern_by(&s, "bob", 3, "resources/read", read, caps.clone())
            .send()
            .await;
        let r = r.json().await;
        assert_eq!(r["error"]["code"], -32602, "not found is -32602 in the modern era: {r}");
        let root = modern_by(&s, "root", 4, "tools/list", json!({}), caps)
            .send()
            .await
            .json()
            .await;
        assert!(names(&root, "tools", "name").contains(&"admin_reset".to_owned()));
    })
    .await;
}

#[test]
fn the_default_cache_scope_is_private() {
    let config = ServerConfig::default();
    assert_eq!(config.cache.scope, mcp_protocol::model::CacheScope::Private);
    assert!(config.visibility.is_none());
}
