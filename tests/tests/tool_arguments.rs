//! How a tool gets its arguments: a typed tool deserializes them from their text as the client
//! sent it when no schema is checked first, with the same answers as from the parsed tree (a
//! name given twice keeps its first occurrence, refusals name no position); a handler that
//! reads text gets it verbatim, unless an input schema is to be checked.

use std::sync::Arc;

use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_runtime::handler::{BoxFuture, ToolHandler};
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::{Ctx, Engine, Registry, ServerConfig, ToolResult};
use mcp_server::Tool;
use mcp_tests::pipe::StdioPipe;
use serde_json::{Map, Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Shout {
    text: String,
}

/// Answers how it was handed its arguments: their text, or `tree`.
struct Reader;

impl ToolHandler for Reader {
    fn call(&self, _arguments: Map<String, Value>, _ctx: Ctx) -> BoxFuture<ToolResult> {
        Box::pin(async { Ok(CallToolResult::text("tree")) })
    }

    fn reads_text(&self) -> bool {
        true
    }

    fn call_text(&self, arguments: &str, _ctx: Ctx) -> BoxFuture<ToolResult> {
        let text = arguments.to_owned();
        Box::pin(async move { Ok(CallToolResult::text(text)) })
    }
}

fn runtime() -> Engine {
    let registry = Arc::new(Registry::new());
    let shout = Tool::typed("shout", "Shouts", |i: Shout, _ctx| async move { i.text.to_uppercase() });
    registry.add_tool(shout.into_entry().expect("valid tool"));
    for (name, checked) in [("reader", false), ("checked_reader", true)] {
        let def = ToolDef::new(name).with_description("Reads its arguments");
        registry.add_tool(ToolEntry::new(def, Arc::new(Reader), checked, true).expect("valid tool"));
    }
    mcp_tests::engine::memory(ServerConfig::default(), registry)
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {answer}"))
}

#[tokio::test]
async fn a_typed_tool_answers_from_the_text_as_from_the_tree() {
    let mut pipe = StdioPipe::start(runtime());
    let call = |arguments: Value| json!({"name": "shout", "arguments": arguments});
    let answer = pipe
        .call(1, "tools/call", call(json!({"text": "caf\u{e9} \"ok\"\n"})))
        .await;
    assert_eq!(text_of(&answer), "CAFÉ \"OK\"\n");

    // A name given twice keeps its first occurrence, as everywhere in a message.
    let line = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shout","arguments":{"text":"first","text":"second"}}}"#;
    pipe.send_line(line).await;
    assert_eq!(text_of(&pipe.answer(2).await), "FIRST");

    // Arguments the type refuses, or none: the tool error, naming no place in the text.
    for (id, params) in [
        (3, call(json!({"txt": "x"}))),
        (4, json!({"name": "shout"})),
        (5, call(json!({"text": 5}))),
    ] {
        let answer = pipe.call(id, "tools/call", params).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let refusal = text_of(&answer);
        assert!(refusal.starts_with("Invalid tool input: "), "{refusal}");
        assert!(!refusal.contains("line"), "{refusal}");
    }
    pipe.finish().await;
}

#[tokio::test]
async fn a_handler_that_reads_text_gets_it_as_sent_unless_a_schema_is_checked() {
    let mut pipe = StdioPipe::start(runtime());
    let line =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"reader","arguments":{ "a" : [1, 2] }}}"#;
    pipe.send_line(line).await;
    assert_eq!(text_of(&pipe.answer(1).await), r#"{ "a" : [1, 2] }"#);

    let answer = pipe.call(2, "tools/call", json!({"name": "reader"})).await;
    assert_eq!(text_of(&answer), "{}");

    // A schema to check reads the tree, and the handler is handed the tree.
    let answer = pipe
        .call(
            3,
            "tools/call",
            json!({"name": "checked_reader", "arguments": {"a": 1}}),
        )
        .await;
    assert_eq!(text_of(&answer), "tree");
    pipe.finish().await;
}
