//! The runtime's dispatcher, driven directly: routing and pre-dispatch
//! rejections per era, tool-call error paths, result decoration, pagination,
//! resources, prompts, completions, and request-scoped notifications.

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::model::{
    CacheHint, CacheScope, CallToolResult, Completion, GetPromptResult, PromptArgument, PromptDef, ReadResourceResult,
    ResourceContents, ResourceDef, ToolDef,
};
use mcp_protocol::{Request, RequestId};
use mcp_runtime::registry::{CompletionKey, PromptEntry, ResourceEntry, ToolEntry};
use mcp_runtime::{Ctx, Engine, HandlerError, Peer, Registry, Reply, ServerConfig, Sessions, Sink, ToolResult};
use mcp_tests::drive;
use serde_json::{Map, Value, json};

const MODERN: &str = "2026-07-28";

fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(m), Some(e)) = (meta.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    meta
}

fn tool<F, Fut>(name: &str, schema: Value, f: F) -> ToolEntry
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolResult> + Send + 'static,
{
    let def = ToolDef::new(name)
        .with_description(format!("the {name} tool"))
        .with_input_schema(schema);
    ToolEntry::new(def, Arc::new(f), true, true).expect("valid tool")
}

fn runtime() -> Engine {
    let registry = Registry::new();
    registry.add_tool(tool(
        "echo",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args, _| async move { Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default())) },
    ));
    registry.add_tool(tool("boom", json!({"type": "object"}), |_, _| async move {
        if true {
            panic!("secret internal detail");
        }
        Ok(CallToolResult::text("unreachable"))
    }));
    registry.add_tool(tool("fails", json!({"type": "object"}), |_, _| async move {
        Err(HandlerError::internal("database password is hunter2"))
    }));
    registry.add_tool(tool("io_fails", json!({"type": "object"}), |_, _| async move {
        std::fs::read("/nonexistent/secret/hunter2")?;
        Ok(CallToolResult::text("unreachable"))
    }));
    registry.add_tool(tool("refuses", json!({"type": "object"}), |_, _| async move {
        Err(HandlerError::tool("the note does not exist"))
    }));
    registry.add_tool(tool("needs_sampling", json!({"type": "object"}), |_, _| async move {
        Err(HandlerError::Rpc(mcp_protocol::RpcError::missing_capability(
            json!({"sampling": {}}),
        )))
    }));
    registry.add_tool(tool("logs", json!({"type": "object"}), |_, ctx| async move {
        ctx.log(mcp_protocol::model::LoggingLevel::Info, None, json!("hello"))
            .await;
        ctx.progress(1.0, Some(2.0), Some("half")).await;
        Ok(CallToolResult::text("logged"))
    }));
    let out_def = ToolDef::new("structured")
        .with_description("structured output")
        .with_output_schema(json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}));
    registry.add_tool(
        ToolEntry::new(
            out_def,
            Arc::new(|args: Map<String, Value>, _: Ctx| async move {
                Ok(CallToolResult::structured(
                    args.get("value").cloned().unwrap_or(json!({"n": 1})),
                ))
            }),
            true,
            true,
        )
        .unwrap(),
    );
    for i in 0..120 {
        registry.add_tool(tool(
            &format!("bulk_{i:03}"),
            json!({"type": "object"}),
            |_, _| async move { Ok(CallToolResult::text("bulk")) },
        ));
    }
    let mut a = ResourceEntry::new(
        ResourceDef::new("test://a", "a"),
        Arc::new(|uri: String, _: Map<String, Value>, _: Ctx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri,
                "text/plain",
                "A",
            )]))
        }),
    );
    a.cache = Some(CacheHint::new(5_000, CacheScope::Public));
    registry.add_resource(a);
    registry.add_prompt(PromptEntry::new(
        PromptDef::new("greet")
            .with_description("greets")
            .with_argument(PromptArgument::new("who", "whom", true)),
        Arc::new(|args: Map<String, Value>, _: Ctx| async move {
            let who = args["who"].as_str().unwrap_or_default().to_owned();
            Ok(GetPromptResult::new(vec![mcp_protocol::model::PromptMessage::user(
                mcp_protocol::model::Content::text(format!("Hello {who}")),
            )]))
        }),
    ));
    registry.add_completion(
        CompletionKey::Prompt {
            name: "greet".into(),
            argument: "who".into(),
        },
        Arc::new(|_, _| async move { Ok(Completion::from_values(vec!["world".into()])) }),
    );
    let mut config = ServerConfig::default();
    config.logging = true;
    mcp_tests::engine::memory(config, Arc::new(registry))
}

fn request(id: i64, method: &str, params: Value) -> Request {
    Request {
        id: RequestId::Number(id),
        method: method.into(),
        params: mcp_protocol::Params::from_value(params),
    }
}

/// Routes and dispatches a request without a session; returns the reply and
/// every frame the handler emitted.
async fn run(rt: &Engine, req: Request) -> (Reply, Vec<Value>) {
    let (sink, mut rx) = Sink::channel(64);
    let peer = Peer::new(Arc::new(AuthInfo::anonymous()), Sessions::None);
    let reply = drive::request(rt, &peer, req, sink).await.reply;
    let mut frames = Vec::new();
    while let Ok(f) = rx.try_recv() {
        frames.push(serde_json::from_slice(&f).unwrap());
    }
    (reply, frames)
}

fn result(reply: Reply) -> Value {
    match reply {
        Reply::Result(v) => v,
        Reply::Encoded(e) => e.to_value(),
        other => panic!("expected a result, got {other:?}"),
    }
}

fn error_code(reply: Reply) -> i32 {
    match reply {
        Reply::Error(e) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn pre_dispatch_rejections_per_era() {
    let rt = runtime();
    // (method, params, expected code, expected HTTP status)
    let table = [
        ("ping", json!({"_meta": modern_meta(json!({}))}), -32601, 404),
        (
            "logging/setLevel",
            json!({"_meta": modern_meta(json!({})), "level": "info"}),
            -32601,
            404,
        ),
        ("initialize", json!({"_meta": modern_meta(json!({}))}), -32601, 404),
        (
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01"}}),
            -32022,
            400,
        ),
        (
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
            -32602,
            400,
        ),
        ("subscriptions/listen", json!({}), -32601, 200),
        ("nonsense", json!({}), -32601, 200),
    ];
    let peer = Peer::new(Arc::new(AuthInfo::anonymous()), Sessions::None);
    for (method, params, code, status) in table {
        let req = request(1, method, params);
        let (sink, _rx) = Sink::channel(4);
        let driven = drive::request(&rt, &peer, req, sink).await;
        assert_eq!(error_code(driven.reply), code, "{method}");
        assert_eq!(driven.status, status, "{method}");
    }
}

#[tokio::test]
async fn tool_error_paths_never_leak_details() {
    let rt = runtime();
    let cases = [
        (json!({"name": "echo", "arguments": {"text": 5}}), "Invalid tool input"),
        (json!({"name": "echo"}), "Invalid tool input"),
        (json!({"name": "boom"}), "Internal tool error"),
        (json!({"name": "fails"}), "Internal tool error"),
        (json!({"name": "io_fails"}), "Internal tool error"),
        (json!({"name": "refuses"}), "the note does not exist"),
        (
            json!({"name": "structured", "arguments": {"value": {"n": "x"}}}),
            "Invalid tool output",
        ),
    ];
    for (params, want) in cases {
        let v = result(run(&rt, request(1, "tools/call", params.clone())).await.0);
        assert_eq!(v["isError"], true, "{params}");
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with(want), "{params}: {text}");
        assert!(!text.contains("secret") && !text.contains("hunter2"), "{text}");
    }
    // An unknown tool is a protocol error naming it, not a tool execution error.
    match run(&rt, request(1, "tools/call", json!({"name": "nope"}))).await.0 {
        Reply::Error(e) => assert_eq!((e.code, e.message.as_str()), (-32602, "Unknown tool: nope")),
        other => panic!("expected -32602, got {other:?}"),
    }
    let code = error_code(
        run(&rt, request(1, "tools/call", json!({"name": "needs_sampling"})))
            .await
            .0,
    );
    assert_eq!(code, -32021);
    assert_eq!(
        error_code(run(&rt, request(1, "tools/call", json!({"arguments": {}}))).await.0),
        -32602
    );
}

#[tokio::test]
async fn results_are_decorated_only_in_the_modern_era() {
    let rt = runtime();
    let legacy = result(run(&rt, request(1, "tools/list", json!({}))).await.0);
    assert!(legacy.get("resultType").is_none() && legacy.get("_meta").is_none() && legacy.get("ttlMs").is_none());

    let modern = result(
        run(&rt, request(2, "tools/list", json!({"_meta": modern_meta(json!({}))})))
            .await
            .0,
    );
    assert_eq!(modern["resultType"], "complete");
    assert_eq!(modern["cacheScope"], "private");
    assert_eq!(modern["ttlMs"], 60000);
    assert!(modern["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());

    let call = json!({"_meta": modern_meta(json!({})), "name": "echo", "arguments": {"text": "hi"}});
    let v = result(run(&rt, request(3, "tools/call", call)).await.0);
    assert_eq!(v["resultType"], "complete");
    assert!(v.get("ttlMs").is_none(), "tool results are not cacheable");

    let discover = result(
        run(
            &rt,
            request(4, "server/discover", json!({"_meta": modern_meta(json!({}))})),
        )
        .await
        .0,
    );
    assert_eq!(discover["supportedVersions"], json!([MODERN]));
    assert_eq!(discover["cacheScope"], "public");
    assert!(discover["capabilities"]["tools"].is_object());
}

#[tokio::test]
async fn pagination_and_cursors() {
    let rt = runtime();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let v = result(run(&rt, request(1, "tools/list", params)).await.0);
        pages += 1;
        names.extend(
            v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned()),
        );
        match v.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names.len(), 128);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let bad = run(&rt, request(1, "tools/list", json!({"cursor": "not-a-cursor"})))
        .await
        .0;
    assert_eq!(error_code(bad), -32602);
}

#[tokio::test]
async fn list_pages_are_cached_per_snapshot_revision_and_era() {
    let rt = runtime();
    let modern = || request(1, "tools/list", json!({"_meta": modern_meta(json!({}))}));
    let (a, b) = (run(&rt, modern()).await.0, run(&rt, modern()).await.0);
    assert!(matches!(a, Reply::Encoded(_)), "{a:?}");
    assert_eq!(a, b, "the same page, served from the cache");
    let legacy = result(run(&rt, request(1, "tools/list", json!({}))).await.0);
    assert!(legacy.get("resultType").is_none(), "one page per era");
    let before = result(a).get("tools").and_then(Value::as_array).map(Vec::len);
    // A registry change publishes a new snapshot: no stale page.
    rt.registry().remove_tool("bulk_000");
    let after = result(run(&rt, modern()).await.0);
    assert_eq!(after["tools"].as_array().map(Vec::len), before);
    assert!(
        after["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "bulk_000")
    );
}

#[tokio::test]
async fn resources_prompts_and_completions() {
    let rt = runtime();
    let v = result(
        run(&rt, request(1, "resources/read", json!({"uri": "test://a"})))
            .await
            .0,
    );
    assert_eq!(v["contents"][0]["text"], "A");
    assert!(v.get("ttlMs").is_none(), "no cache hints for legacy clients");
    let modern_read = json!({"_meta": modern_meta(json!({})), "uri": "test://a"});
    let v = result(run(&rt, request(1, "resources/read", modern_read)).await.0);
    assert_eq!(v["ttlMs"], 5000, "the resource's own hint");
    assert_eq!(v["cacheScope"], "public", "the resource's own hint");
    let legacy_missing = run(&rt, request(1, "resources/read", json!({"uri": "test://none"})))
        .await
        .0;
    assert_eq!(error_code(legacy_missing), -32002);
    let modern = json!({"_meta": modern_meta(json!({})), "uri": "test://none"});
    assert_eq!(
        error_code(run(&rt, request(1, "resources/read", modern)).await.0),
        -32602
    );

    let v = result(
        run(
            &rt,
            request(1, "prompts/get", json!({"name": "greet", "arguments": {"who": "x"}})),
        )
        .await
        .0,
    );
    assert_eq!(v["messages"][0]["content"]["text"], "Hello x");
    assert_eq!(
        error_code(run(&rt, request(1, "prompts/get", json!({"name": "greet"}))).await.0),
        -32602
    );
    assert_eq!(
        error_code(run(&rt, request(1, "prompts/get", json!({"name": "nope"}))).await.0),
        -32602
    );

    let complete = |name: &str, arg: &str| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": arg, "value": ""}});
    let v = result(
        run(&rt, request(1, "completion/complete", complete("greet", "who")))
            .await
            .0,
    );
    assert_eq!(v["completion"]["values"], json!(["world"]));
    let v = result(
        run(&rt, request(1, "completion/complete", complete("other", "x")))
            .await
            .0,
    );
    assert_eq!(v["completion"]["values"], json!([]));
}

#[tokio::test]
async fn request_scoped_notifications_follow_the_era() {
    let rt = runtime();
    // Modern without a log level: progress (asked for) but no log message.
    let params = json!({"_meta": modern_meta(json!({"progressToken": "p1"})), "name": "logs"});
    let (reply, frames) = run(&rt, request(1, "tools/call", params)).await;
    assert_eq!(result(reply)["content"][0]["text"], "logged");
    let methods: Vec<&str> = frames.iter().map(|f| f["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["notifications/progress"]);
    assert_eq!(frames[0]["params"]["progressToken"], "p1");

    // Modern with a log level: both.
    let meta = modern_meta(json!({"progressToken": 7, "io.modelcontextprotocol/logLevel": "debug"}));
    let (_, frames) = run(&rt, request(2, "tools/call", json!({"_meta": meta, "name": "logs"}))).await;
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0]["method"], "notifications/message");

    // Legacy without a progress token: logs at the default level only.
    let (_, frames) = run(&rt, request(3, "tools/call", json!({"name": "logs"}))).await;
    let methods: Vec<&str> = frames.iter().map(|f| f["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["notifications/message"]);
}

#[tokio::test]
async fn initialize_negotiates_and_binds_the_session() {
    let rt = runtime();
    let auth = Arc::new(AuthInfo::new("alice"));
    let init = |v: &str| {
        request(
            1,
            "initialize",
            json!({"protocolVersion": v, "capabilities": {"sampling": {}}, "clientInfo": {"name": "c", "version": "1"}}),
        )
    };
    // Where sessions are kept, the one `initialize` minted comes with the answer.
    let initialize = |req: Request| {
        let (rt, auth) = (rt.clone(), auth.clone());
        async move {
            let peer = Peer::new(auth, Sessions::Store(None));
            let (sink, _rx) = Sink::channel(4);
            let driven = drive::request(&rt, &peer, req, sink).await;
            (driven.reply, driven.session)
        }
    };
    for (asked, got) in [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2030-01-01", "2025-11-25"),
    ] {
        let (v, session) = initialize(init(asked)).await;
        let (v, session) = (result(v), session.expect("a session"));
        assert_eq!(v["protocolVersion"], got);
        // Held for its principal only.
        let session = rt.held_session(session.id(), "alice").expect("alice's session");
        assert!(session.client_capabilities().sampling());
        assert!(v["serverInfo"]["name"].is_string());
    }
    let v = result(initialize(init("2025-11-25")).await.0);
    assert_eq!(v["capabilities"]["completions"], json!({}));
    let v = result(initialize(init("2024-11-05")).await.0);
    assert!(v["capabilities"].get("completions").is_none());
    let bad = request(1, "initialize", json!({"protocolVersion": "2025-11-25"}));
    let (reply, session) = initialize(bad).await;
    assert_eq!(error_code(reply), -32602);
    assert!(session.is_none(), "a refused initialize keeps no session");
}
