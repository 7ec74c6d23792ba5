//! Tools through the facade (`Tool::new`, `Tool::typed`, `Tool::structured`, run-time
//! registration, visibility), in both eras, through `mcp_server::testing`.

use std::time::Duration;

use mcp_server::AuthInfo;
use mcp_server::prelude::*;
use mcp_server::testing::{ClientError, TestClient};

/// One legacy revision of each shape and the modern one.
const REVISIONS: [Revision; 3] = [Revision::V2024_11_05, Revision::V2025_11_25, Revision::V2026_07_28];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Weather {
    city: String,
    celsius: f64,
}

fn server() -> McpServer {
    McpServer::builder()
        .name("tools-test")
        .version("1.2.3")
        .tool(
            Tool::typed("add", "Adds two integers", |i: Add, _ctx| async move {
                (i.a + i.b).to_string()
            })
            .title("Adder"),
        )
        .tool(Tool::structured(
            "weather",
            "The weather in a city",
            |i: City, _ctx| async move {
                Ok(Weather {
                    celsius: if i.city == "Oslo" { -3.5 } else { 21.0 },
                    city: i.city,
                })
            },
        ))
        .tool(Tool::new(
            "whoami",
            "The caller's principal and era",
            |_args, ctx: Ctx| async move { format!("{} {:?}", ctx.principal(), ctx.era()) },
        ))
        .tool(Tool::new("fails", "Always a tool error", |_args, _ctx| async {
            CallToolResult::error("the disk is full")
        }))
        .build()
        .expect("valid server")
}

async fn client(server: &McpServer, revision: Revision) -> TestClient {
    server
        .test_client()
        .revision(revision)
        .connect()
        .await
        .expect("connects")
}

#[tokio::test]
async fn typed_tool_adds_in_every_era() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let r = c.call_tool("add", json!({"a": 40, "b": 2})).await.unwrap();
        assert_eq!(r.content, vec![Content::text("42")], "{revision:?}");
        assert!(!r.is_error);
        assert_eq!(r.structured_content, None);
    }
}

#[tokio::test]
async fn typed_tool_lists_its_derived_schema() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let tools = c.list_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add", "fails", "weather", "whoami"], "{revision:?}");
        let add = &tools[0];
        assert_eq!(add.description.as_deref(), Some("Adds two integers"));
        assert_eq!(add.input_schema["type"], "object");
        assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");
        let mut required: Vec<&str> = add.input_schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["a", "b"]);
        // `title` exists from 2025-06-18 on.
        let title = (revision != Revision::V2024_11_05).then_some("Adder");
        assert_eq!(add.title.as_deref(), title, "{revision:?}");
    }
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_not_a_crash() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let r = c.call_tool("add", json!({"a": "forty", "b": 2})).await;
        match r {
            // Schema validation before the handler: a tool error (SEP-1303) or -32602.
            Ok(r) => {
                assert!(r.is_error, "{revision:?}: {r:?}");
                let Content::Text { text, .. } = &r.content[0] else {
                    panic!("text expected")
                };
                assert!(text.contains('a'), "{text}");
            }
            Err(e) => assert_eq!(e.code(), Some(-32602), "{revision:?}: {e}"),
        }
    }
}

#[tokio::test]
async fn structured_tool_returns_structured_content_and_declares_its_output_schema() {
    let server = server();
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25, Revision::V2026_07_28] {
        let c = client(&server, revision).await;
        let r = c.call_tool("weather", json!({"city": "Oslo"})).await.unwrap();
        assert_eq!(
            r.structured_content,
            Some(json!({"city": "Oslo", "celsius": -3.5})),
            "{revision:?}"
        );
        // The text block carries the same JSON for clients that do not read structuredContent.
        let Content::Text { text, .. } = &r.content[0] else {
            panic!("text expected")
        };
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            json!({"city": "Oslo", "celsius": -3.5})
        );
        let tools = c.list_tools().await.unwrap();
        let weather = tools.iter().find(|t| t.name == "weather").unwrap();
        let schema = weather.output_schema.as_ref().expect("an output schema");
        assert_eq!(schema["properties"]["celsius"]["type"], "number");
    }
}

#[tokio::test]
async fn tool_error_is_a_result_with_is_error() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let r = c.call_tool("fails", json!({})).await.unwrap();
        assert!(r.is_error);
        assert_eq!(r.content, vec![Content::text("the disk is full")]);
    }
}

/// The -32602 "Unknown tool: NAME" of a call, or a panic naming what came instead.
fn unknown_tool_error(answer: Result<CallToolResult, ClientError>) -> (i32, String) {
    match answer {
        Err(ClientError::Rpc(e)) => (e.code, e.message),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// An unknown tool is the JSON-RPC error -32602 naming it in every revision, as the tools page
/// of each says (its own example), not an `isError` result (invariant 25).
#[tokio::test]
async fn unknown_tool_is_invalid_params_naming_it() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let answer = c.call_tool("nope", json!({})).await;
        assert_eq!(
            unknown_tool_error(answer),
            (-32602, "Unknown tool: nope".into()),
            "{revision:?}"
        );
    }
}

#[tokio::test]
async fn handlers_see_the_principal_and_the_era() {
    let server = server();
    let legacy = server
        .test_client()
        .legacy()
        .principal("alice")
        .connect()
        .await
        .unwrap();
    let modern = server.test_client().modern().principal("bob").connect().await.unwrap();
    let r = legacy.call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(r.content, vec![Content::text("alice Legacy")]);
    let r = modern.call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(r.content, vec![Content::text("bob Modern")]);
}

#[tokio::test]
async fn modern_results_carry_result_type_and_server_info() {
    let server = server();
    let c = client(&server, Revision::V2026_07_28).await;
    let raw = c
        .request("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 1}}))
        .await
        .unwrap();
    assert_eq!(raw["resultType"], "complete");
    assert_eq!(raw["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "tools-test");
    assert_eq!(raw["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], "1.2.3");
    let legacy = client(&server, Revision::V2025_11_25).await;
    let raw = legacy
        .request("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 1}}))
        .await
        .unwrap();
    assert_eq!(raw.get("resultType"), None);
}

#[tokio::test]
async fn legacy_handshake_negotiates_the_revision_and_names_the_server() {
    let server = server();
    for revision in [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let c = client(&server, revision).await;
        let init = c.initialize_result().expect("initialized");
        assert_eq!(init["protocolVersion"], revision.as_str());
        assert_eq!(init["serverInfo"]["name"], "tools-test");
        assert!(init["capabilities"]["tools"].is_object());
        assert_eq!(c.session().unwrap().revision(), revision);
        c.ping().await.unwrap();
    }
}

#[tokio::test]
async fn modern_discover_advertises_the_modern_revision() {
    let server = server();
    let c = server.test_client().modern().discover(true).connect().await.unwrap();
    let d = c.discover_result().expect("discovered");
    let versions: Vec<&str> = d["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(versions.contains(&"2026-07-28"), "{d}");
    assert!(d["capabilities"]["tools"].is_object(), "{d}");
    assert!(c.initialize_result().is_none());
    assert!(c.session().is_none());
}

#[tokio::test]
async fn modern_request_with_an_unsupported_version_is_refused() {
    let server = server();
    let c = client(&server, Revision::V2026_07_28).await;
    let e = c
        .request(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(-32022), "{e}");
}

#[tokio::test]
async fn a_second_initialize_on_the_same_client_is_refused() {
    let server = server();
    let c = client(&server, Revision::V2025_11_25).await;
    let e = c
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(-32600), "{e}");
}

#[tokio::test]
async fn several_clients_on_one_server_have_their_own_sessions() {
    let server = server();
    let clients = futures_join(&server).await;
    let ids: std::collections::HashSet<String> =
        clients.iter().map(|c| c.session().unwrap().id().to_string()).collect();
    assert_eq!(ids.len(), clients.len());
    // Concurrent calls on every client, ids reused across clients (each starts at 1).
    let calls = clients.iter().enumerate().map(|(i, c)| {
        let c = c.clone();
        tokio::spawn(async move { c.call_tool("add", json!({"a": i, "b": 1000})).await })
    });
    for (i, call) in calls.enumerate() {
        let r = call.await.unwrap().unwrap();
        assert_eq!(r.content, vec![Content::text((i + 1000).to_string())]);
    }
    // Closing one session leaves the others serving.
    clients[0].close();
    let r = clients[1].call_tool("add", json!({"a": 1, "b": 1})).await.unwrap();
    assert_eq!(r.content, vec![Content::text("2")]);
}

async fn futures_join(server: &McpServer) -> Vec<TestClient> {
    let mut out = Vec::new();
    for _ in 0..4 {
        out.push(client(server, Revision::V2025_11_25).await);
    }
    out
}

#[tokio::test]
async fn a_tool_added_at_run_time_is_announced_to_legacy_sessions_and_listed() {
    let server = server();
    let c = client(&server, Revision::V2025_11_25).await;
    let modern = client(&server, Revision::V2026_07_28).await;
    let mut listen = modern.listen(json!({"toolsListChanged": true})).await.unwrap();
    server
        .add_tool(Tool::new("late", "Added later", |_args, _ctx| async { "late!" }))
        .unwrap();
    let note = c
        .wait_for_notification("notifications/tools/list_changed", Duration::from_secs(5))
        .await
        .expect("list_changed on the legacy session");
    assert_eq!(note.params, Value::Null);
    let note = listen
        .next(Duration::from_secs(5))
        .await
        .expect("list_changed on the listen stream");
    assert_eq!(note.method, "notifications/tools/list_changed");
    assert_eq!(
        note.params["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(listen.id())
    );
    assert!(c.list_tools().await.unwrap().iter().any(|t| t.name == "late"));
    assert_eq!(
        modern.call_tool("late", json!({})).await.unwrap().content,
        vec![Content::text("late!")]
    );
    assert!(server.remove_tool("late"));
    c.wait_for_notification("notifications/tools/list_changed", Duration::from_secs(5))
        .await
        .expect("list_changed after the removal");
    let answer = c.call_tool("late", json!({})).await;
    assert_eq!(unknown_tool_error(answer), (-32602, "Unknown tool: late".into()));
}

#[tokio::test]
async fn visibility_hides_tools_per_principal() {
    let server = McpServer::builder()
        .name("v")
        .version("1")
        .tool(Tool::new("public", "Anyone", |_a, _c| async { "ok" }))
        .tool(Tool::new("admin", "Admins only", |_a, _c| async { "root" }))
        .visibility(|auth, _kind, key| key != "admin" || auth.has_scope("admin"))
        .build()
        .unwrap();
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let user = server
            .test_client()
            .revision(revision)
            .principal("u")
            .connect()
            .await
            .unwrap();
        let admin = server
            .test_client()
            .revision(revision)
            .auth(AuthInfo::new("a").with_scopes(vec!["admin".into()]))
            .connect()
            .await
            .unwrap();
        let names = |tools: Vec<mcp_server::testing::ToolInfo>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(names(user.list_tools().await.unwrap()), ["public"]);
        assert_eq!(names(admin.list_tools().await.unwrap()), ["admin", "public"]);
        // A hidden tool answers like an unknown one.
        let hidden = unknown_tool_error(user.call_tool("admin", json!({})).await);
        let unknown = unknown_tool_error(user.call_tool("no_such_tool", json!({})).await);
        assert_eq!(hidden, (-32602, "Unknown tool: admin".into()), "{revision:?}");
        assert_eq!(unknown, (-32602, "Unknown tool: no_such_tool".into()), "{revision:?}");
        assert_eq!(
            admin.call_tool("admin", json!({})).await.unwrap().content,
            vec![Content::text("root")]
        );
    }
}

#[tokio::test]
async fn a_panicking_tool_is_a_masked_tool_error_and_the_client_keeps_serving() {
    let server = McpServer::builder()
        .name("p")
        .version("1")
        .tool(Tool::new("boom", "Panics", |_a, _c| async {
            if true {
                panic!("boom");
            }
            "unreachable"
        }))
        .tool(Tool::new("ok", "Fine", |_a, _c| async { "fine" }))
        .build()
        .unwrap();
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let c = client(&server, revision).await;
        let r = c.call_tool("boom", json!({})).await.unwrap();
        assert!(r.is_error, "{revision:?}");
        // The panic message stays in the log.
        assert_eq!(r.content, vec![Content::text("Internal tool error")]);
        assert_eq!(
            c.call_tool("ok", json!({})).await.unwrap().content,
            vec![Content::text("fine")]
        );
    }
}

#[tokio::test]
async fn handler_errors_reach_the_model_or_are_masked() {
    let server = McpServer::builder()
        .name("errors")
        .version("1")
        .tool(Tool::new("refuses", "A tool error the model sees", |_a, _c| async {
            Err::<String, _>(HandlerError::tool("the path must stay inside the notes folder"))
        }))
        .tool(Tool::new("io", "An io error through ?", |_a, _c| async {
            let text = std::fs::read_to_string("/definitely/not/here")?;
            Ok(text)
        }))
        .tool(Tool::new("protocol", "A JSON-RPC error as it is", |_a, _c| async {
            Err::<String, _>(HandlerError::Rpc(RpcError::invalid_params("bad cursor")))
        }))
        .build()
        .unwrap();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let r = c.call_tool("refuses", json!({})).await.unwrap();
        assert!(r.is_error, "{revision:?}");
        assert_eq!(
            r.content,
            vec![Content::text("the path must stay inside the notes folder")]
        );
        let r = c.call_tool("io", json!({})).await.unwrap();
        assert!(r.is_error, "{revision:?}");
        // The io error's text (a path of this machine) never reaches the client.
        assert_eq!(r.content, vec![Content::text("Internal tool error")]);
        let e = c.call_tool("protocol", json!({})).await.unwrap_err();
        assert_eq!(e.code(), Some(-32602), "{revision:?}");
        assert_eq!(e.rpc().unwrap().message, "bad cursor");
    }
}

/// A derived schema is compiled at the tool's first call (not at registration), and checks
/// what deserialization alone would let through: the input's and the output's bounds.
#[cfg(feature = "schema-validation")]
#[tokio::test]
async fn derived_schemas_check_what_serde_does_not_from_the_first_call() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Percent {
        #[schemars(range(min = 0, max = 100))]
        value: i64,
    }
    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Small {
        #[schemars(range(max = 10))]
        n: i64,
    }
    let server = McpServer::builder()
        .name("derived")
        .version("1.0.0")
        .tool(Tool::typed(
            "percent",
            "Echoes a percentage",
            |p: Percent, _ctx| async move { p.value.to_string() },
        ))
        .tool(Tool::structured("small", "Returns n", |p: Percent, _ctx| async move {
            Ok(Small { n: p.value })
        }))
        .build()
        .expect("valid server");
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let text = |r: &CallToolResult| match &r.content[0] {
            Content::Text { text, .. } => text.clone(),
            other => panic!("text expected: {other:?}"),
        };
        let r = c.call_tool("percent", json!({"value": 101})).await.expect("a result");
        assert!(
            r.is_error && text(&r).starts_with("Invalid tool input"),
            "{revision:?}: {r:?}"
        );
        let r = c.call_tool("percent", json!({"value": 42})).await.expect("a result");
        assert_eq!((r.is_error, text(&r)), (false, "42".to_owned()), "{revision:?}");
        let r = c.call_tool("small", json!({"value": 7})).await.expect("a result");
        assert!(!r.is_error, "{revision:?}: {r:?}");
        let r = c.call_tool("small", json!({"value": 50})).await.expect("a result");
        assert!(
            r.is_error && text(&r).starts_with("Invalid tool output"),
            "{revision:?}: {r:?}"
        );
    }
}
