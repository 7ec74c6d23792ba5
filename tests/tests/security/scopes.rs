//! Per-operation scopes with the real bearer provider: a caller short of a scope an operation
//! needs is refused before anything runs, with one challenge naming every scope the operation
//! needs (403 `insufficient_scope` with `resource_metadata` over HTTP, in both eras), a
//! JSON-RPC error inside a batch; a template's scope names the variable read; lists can show
//! only what is in scope; the metadata document lists the scopes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::StatusCode;
use mcp_protocol::model::{GetPromptResult, PromptMessage, ResourceContents};
use mcp_server::{McpServer, Prompt, Resource, ResourceTemplate, Tool};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::fixture::{PRM, bearer, claims, mint, modern_with, rpc};
use crate::support::{Req, Server, bounded};

/// A server whose operations need scopes, and how many times the guarded tool ran.
async fn scoped(lists_in_scope: bool) -> (Server, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let guarded = Tool::new("guarded", "Needs its own scope", move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { "ran" }
    })
    .scopes(["t:guarded"]);
    let server = McpServer::builder()
        .method_scopes("tools/call", ["t:call"])
        .method_scopes("resources/read", ["r:read"])
        .method_scopes("prompts/get", ["p:get"])
        .lists_in_scope(lists_in_scope)
        .tool(guarded)
        .tool(Tool::new("open", "Needs only tools/call's scope", |_, _| async {
            "open"
        }))
        .resource(
            Resource::new("test://static", "static", |uri, _, _| async move {
                ResourceContents::text(uri, "text/plain", "static")
            })
            .scopes(["r:static"]),
        )
        .resource_template(
            ResourceTemplate::new("test://t/{id}/data", "by id", |uri, vars, _| async move {
                let id = vars["id"].as_str().unwrap_or_default().to_owned();
                ResourceContents::text(uri, "text/plain", format!("item {id}"))
            })
            .scopes(["r:t:{id}"]),
        )
        .prompt(
            Prompt::new("p", "A guarded prompt", |_, _| async {
                Ok(GetPromptResult::new(vec![PromptMessage::user_text("hi")]))
            })
            .scopes(["p:p"]),
        )
        .build()
        .expect("a valid server");
    let http = HttpConfig::default()
        .auth(Arc::new(bearer(&[])))
        .with_resource_metadata(json!({"resource": "http://127.0.0.1/mcp", "scopes_supported": ["baseline"]}));
    (Server::serve_engine(server.engine().clone(), http).await, runs)
}

/// A token of alice granting `scope` (space-separated).
fn with_scope(r: Req, scope: &str) -> Req {
    let mut c = claims("alice");
    c["scope"] = json!(scope);
    r.header("authorization", &format!("Bearer {}", mint(&c)))
}

/// A modern request with its headers, by alice holding `scope`.
fn modern(s: &Server, scope: &str, method: &str, params: Value) -> Req {
    let name = mcp_protocol::Method::parse(method)
        .name_field()
        .and_then(|f| params.get(f))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut r = with_scope(s.post(modern_with(1, method, params, json!({}))), scope)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        r = r.header("mcp-name", &n);
    }
    r
}

/// Checks a 403 whose one challenge names exactly `needed`, and its JSON-RPC error.
async fn assert_refused(resp: crate::support::Resp, needed: &str) {
    assert_eq!(resp.status, StatusCode::FORBIDDEN);
    let challenge = resp.header("www-authenticate").expect("a challenge").to_owned();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");
    assert!(challenge.contains(&format!(r#"scope="{needed}""#)), "{challenge}");
    assert!(
        challenge.contains(&format!(r#"resource_metadata="{PRM}""#)),
        "{challenge}"
    );
    let body = resp.json().await;
    assert_eq!(body["error"]["code"], 403, "{body}");
    let named: Vec<&str> = needed.split(' ').collect();
    assert_eq!(body["error"]["data"]["requiredScopes"], json!(named), "{body}");
}

#[tokio::test]
async fn a_modern_call_short_of_a_scope_is_refused_before_its_handler_runs() {
    bounded(async {
        let (s, runs) = scoped(false).await;
        let call = json!({"name": "guarded", "arguments": {}});
        // Holding one of the two scopes is not enough: both are named in the one challenge.
        for held in ["baseline", "t:call", "t:guarded"] {
            let resp = modern(&s, held, "tools/call", call.clone()).send().await;
            assert_refused(resp, "t:call t:guarded").await;
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler never ran");
        let resp = modern(&s, "t:call t:guarded", "tools/call", call).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        assert_eq!(resp.json().await["result"]["content"][0]["text"], "ran");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // A tool without scopes of its own needs only the method's.
        let open = json!({"name": "open", "arguments": {}});
        assert_refused(
            modern(&s, "baseline", "tools/call", open.clone()).send().await,
            "t:call",
        )
        .await;
        assert_eq!(
            modern(&s, "t:call", "tools/call", open).send().await.status,
            StatusCode::OK
        );
    })
    .await;
}

#[tokio::test]
async fn resources_and_templates_name_what_is_read() {
    bounded(async {
        let (s, _) = scoped(false).await;
        let read = |uri: &str| json!({"uri": uri});
        assert_refused(
            modern(&s, "r:read", "resources/read", read("test://static"))
                .send()
                .await,
            "r:read r:static",
        )
        .await;
        let ok = modern(&s, "r:read r:static", "resources/read", read("test://static"))
            .send()
            .await;
        assert_eq!(ok.status, StatusCode::OK);
        // The template's scope names the variable of the URI read: 124's scope does not read 123.
        let item = read("test://t/123/data");
        assert_refused(
            modern(&s, "r:read r:t:124", "resources/read", item.clone())
                .send()
                .await,
            "r:read r:t:123",
        )
        .await;
        let ok = modern(&s, "r:read r:t:123", "resources/read", item).send().await;
        assert_eq!(ok.status, StatusCode::OK);
        let body = ok.json().await;
        assert_eq!(body["result"]["contents"][0]["text"], "item 123", "{body}");
        // A read of a scoped resource is for its holders only: never a shared cache.
        assert_eq!(body["result"]["cacheScope"], "private", "{body}");
        // An unknown resource needs only the method's scopes, then answers as unknown.
        let unknown = modern(&s, "r:read", "resources/read", read("test://nothing"))
            .send()
            .await;
        assert_eq!(unknown.status, StatusCode::OK);
        assert_eq!(unknown.json().await["error"]["code"], -32602);
    })
    .await;
}

#[tokio::test]
async fn prompts_need_their_scopes() {
    bounded(async {
        let (s, _) = scoped(false).await;
        let get = json!({"name": "p"});
        assert_refused(modern(&s, "p:p", "prompts/get", get.clone()).send().await, "p:get p:p").await;
        assert_eq!(
            modern(&s, "p:get p:p", "prompts/get", get).send().await.status,
            StatusCode::OK
        );
    })
    .await;
}

#[tokio::test]
async fn a_legacy_request_short_of_a_scope_gets_the_same_challenge() {
    bounded(async {
        let (s, runs) = scoped(false).await;
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "scopes", "version": "1"}
        }});
        let resp = with_scope(s.post(init), "baseline").send().await;
        assert_eq!(resp.status, StatusCode::OK);
        let sid = resp.header("mcp-session-id").expect("a session").to_owned();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = with_scope(s.post(note), "baseline")
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        let call = rpc(2, "tools/call", json!({"name": "guarded", "arguments": {}}));
        let refused = with_scope(s.post(call.clone()), "baseline")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await;
        assert_refused(refused, "t:call t:guarded").await;
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        // The same principal stepped up: the session serves the call.
        let served = with_scope(s.post(call), "t:call t:guarded")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await;
        assert_eq!(served.status, StatusCode::OK);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    })
    .await;
}

#[tokio::test]
async fn inside_a_batch_a_refusal_is_a_json_rpc_error() {
    bounded(async {
        let (s, runs) = scoped(false).await;
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "scopes", "version": "1"}
        }});
        let resp = with_scope(s.post(init), "t:call").send().await;
        let sid = resp.header("mcp-session-id").expect("a session").to_owned();
        let batch = json!([
            rpc(1, "tools/call", json!({"name": "guarded", "arguments": {}})),
            rpc(2, "tools/call", json!({"name": "open", "arguments": {}})),
        ]);
        let resp = with_scope(s.post(batch), "t:call")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-03-26")
            .send()
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        let body = resp.json().await;
        let items = body.as_array().unwrap_or_else(|| panic!("{body}"));
        let by_id = |id: i64| items.iter().find(|i| i["id"] == id).unwrap_or_else(|| panic!("{body}"));
        assert_eq!(by_id(1)["error"]["code"], 403, "{body}");
        assert_eq!(
            by_id(1)["error"]["data"]["requiredScopes"],
            json!(["t:call", "t:guarded"])
        );
        assert_eq!(by_id(2)["result"]["content"][0]["text"], "open", "{body}");
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    })
    .await;
}

fn tool_names(body: &Value) -> Vec<&str> {
    body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

#[tokio::test]
async fn lists_can_show_only_what_is_in_scope() {
    bounded(async {
        let (all, _) = scoped(false).await;
        let listed = modern(&all, "baseline", "tools/list", json!({}))
            .send()
            .await
            .json()
            .await;
        assert_eq!(tool_names(&listed), ["guarded", "open"]);
        let (s, _) = scoped(true).await;
        let low = modern(&s, "baseline", "tools/list", json!({}))
            .send()
            .await
            .json()
            .await;
        assert_eq!(tool_names(&low), ["open"]);
        assert_eq!(low["result"]["cacheScope"], "private", "{low}");
        let full = modern(&s, "t:guarded", "tools/list", json!({}))
            .send()
            .await
            .json()
            .await;
        assert_eq!(tool_names(&full), ["guarded", "open"]);
        // What a list leaves out still answers with the scopes it needs.
        let call = json!({"name": "guarded", "arguments": {}});
        assert_refused(
            modern(&s, "baseline", "tools/call", call).send().await,
            "t:call t:guarded",
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn the_metadata_document_lists_every_scope() {
    bounded(async {
        let (s, _) = scoped(false).await;
        let resp = s
            .req(http::Method::GET)
            .at("/.well-known/oauth-protected-resource/mcp")
            .send()
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        let doc = resp.json().await;
        assert_eq!(
            doc["scopes_supported"],
            json!(["baseline", "p:get", "p:p", "r:read", "r:static", "t:call", "t:guarded"]),
            "{doc}"
        );
    })
    .await;
}
