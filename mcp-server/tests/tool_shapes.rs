//! What a tool looks like to a client, in every revision: typed annotations and icons, derived
//! schemas without `$ref` (recursion aside) and with an object root, raw schemas left as given,
//! and structured output that is not an object sent as `{"result": …}`.

use mcp_server::catalog::RegistryError;
use mcp_server::prelude::*;
use mcp_server::testing::{TestClient, ToolInfo};
use mcp_server::{IconTheme, SchemaStyle};

const ALL: [Revision; 5] = [
    Revision::V2024_11_05,
    Revision::V2025_03_26,
    Revision::V2025_06_18,
    Revision::V2025_11_25,
    Revision::V2026_07_28,
];

#[derive(Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Note {
    id: u32,
    title: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Order {
    Newest,
    Oldest,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Filter {
    /// Only notes whose title has this word.
    word: Option<String>,
    order: Option<Order>,
    /// At most this many.
    limit: Option<Limit>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Limit {
    max: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Id {
    id: u32,
}

/// A recursive input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

impl Tree {
    fn size(&self) -> usize {
        1 + self.children.iter().map(Tree::size).sum::<usize>()
    }
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Op {
    Add { a: i64, b: i64 },
    Neg { a: i64 },
}

/// Recursive and not an object.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Nested {
    Num(i64),
    List(Vec<Nested>),
}

fn notes() -> Vec<Note> {
    vec![
        Note {
            id: 1,
            title: "milk".into(),
        },
        Note {
            id: 2,
            title: "bread".into(),
        },
    ]
}

fn logo() -> Icon {
    Icon::new("https://example.com/logo.png")
        .with_mime_type("image/png")
        .with_sizes(["48x48"])
        .with_theme(IconTheme::Light)
}

const RAW_SCHEMA: &str = r##"{"type": "object", "$defs": {"t": {"type": "string"}},
    "properties": {"text": {"$ref": "#/$defs/t"}}, "required": ["text"]}"##;

fn server() -> McpServer {
    McpServer::builder()
        .server_info(mcp_server::protocol::model::Implementation::new("shapes", "1").with_icon(logo()))
        .tool(Tool::structured("list_notes", "Notes, filtered", |f: Filter, _ctx| async move {
            let limit = f.limit.map_or(usize::MAX, |l| l.max as usize);
            let word = f.word.unwrap_or_default();
            let mut found: Vec<Note> = notes().into_iter().filter(|n| n.title.contains(&word)).collect();
            if matches!(f.order, Some(Order::Newest)) {
                found.reverse();
            }
            found.truncate(limit);
            Ok(found)
        }))
        .tool(Tool::structured("count", "How many notes", |_: Nothing, _ctx| async move {
            Ok(notes().len())
        }))
        .tool(Tool::structured("find", "One note, if any", |i: Id, _ctx| async move {
            Ok(notes().into_iter().find(|n| n.id == i.id))
        }))
        .tool(Tool::structured("note", "One note", |i: Id, _ctx| async move {
            notes()
                .into_iter()
                .find(|n| n.id == i.id)
                .ok_or_else(|| HandlerError::tool("no such note"))
        }))
        .tool(Tool::structured("calc", "Applies an operation", |o: Op, _ctx| async move {
            Ok(match o {
                Op::Add { a, b } => Op::Neg { a: -(a + b) },
                Op::Neg { a } => Op::Neg { a: -a },
            })
        }))
        .tool(Tool::structured("nested", "Nested lists", |_: Nothing, _ctx| async move {
            Ok(Nested::List(vec![Nested::Num(1), Nested::List(vec![Nested::Num(2)])]))
        }))
        .tool(Tool::typed("plant", "Counts a tree's nodes", |t: Tree, _ctx| async move {
            format!("{}: {}", t.label, t.size())
        }))
        .tool(
            Tool::typed("verbatim", "Its schema as schemars generates it", |f: Filter, _ctx| async move {
                f.word.unwrap_or_default()
            })
            .schema_style(SchemaStyle::Verbatim),
        )
        .tool(
            Tool::new("raw", "A schema given as JSON", |args, _ctx| async move {
                args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()
            })
            .input_schema(serde_json::from_str(RAW_SCHEMA).unwrap()),
        )
        .tool(
            Tool::new("rm", "Deletes a note", |_args, _ctx| async { "deleted" })
                .annotations(ToolAnnotations::new().with_title("Delete"))
                .destructive(true)
                .idempotent()
                .open_world(false)
                .icon(logo()),
        )
        .tool(Tool::new("look", "Reads", |_args, _ctx| async { "seen" }).read_only())
        .resource(Resource::text("notes://all", "all", "text/plain", "milk, bread").icon(logo()))
        .prompt(Prompt::new("summarize", "Summarizes", |_args, _ctx| async { PromptMessage::user_text("summary") }).icons([logo()]))
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

async fn tool(c: &TestClient, name: &str) -> ToolInfo {
    let tools = c.list_tools().await.unwrap();
    tools.into_iter().find(|t| t.name == name).expect("listed")
}

/// Every `$ref` of a schema.
fn refs(schema: &Value) -> Vec<String> {
    match schema {
        Value::Object(m) => {
            let own = m.get("$ref").and_then(Value::as_str).map(str::to_owned);
            own.into_iter().chain(m.values().flat_map(refs)).collect()
        }
        Value::Array(items) => items.iter().flat_map(refs).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn annotations_are_typed_and_listed_from_2025_03_26() {
    let server = server();
    for revision in ALL {
        let c = client(&server, revision).await;
        let rm = tool(&c, "rm").await;
        let look = tool(&c, "look").await;
        if revision == Revision::V2024_11_05 {
            assert_eq!(rm.annotations, None, "2024-11-05 has no tool annotations");
            assert!(rm.raw.get("annotations").is_none());
            continue;
        }
        assert_eq!(
            rm.raw["annotations"],
            json!({"title": "Delete", "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
            "{revision:?}"
        );
        let hints = rm.annotations.expect("annotations");
        assert_eq!(hints.destructive_hint, Some(true));
        assert_eq!(hints.read_only_hint, None);
        assert_eq!(look.raw["annotations"], json!({"readOnlyHint": true}), "{revision:?}");
        // A tool without hints lists none.
        assert!(tool(&c, "count").await.raw.get("annotations").is_none());
    }
}

#[tokio::test]
async fn icons_are_listed_from_2025_11_25_everywhere() {
    let server = server();
    let wire = json!([{"src": "https://example.com/logo.png", "mimeType": "image/png", "sizes": ["48x48"],
                       "theme": "light"}]);
    for revision in ALL {
        let c = client(&server, revision).await;
        let has = revision >= Revision::V2025_11_25;
        let rm = tool(&c, "rm").await;
        assert_eq!(rm.icons, if has { vec![logo()] } else { vec![] }, "{revision:?}");
        let resources = c.list_resources().await.unwrap();
        let prompts = c.list_prompts().await.unwrap();
        let listed = [&rm.raw, &resources[0].raw, &prompts[0].raw];
        for raw in listed {
            match has {
                true => assert_eq!(raw["icons"], wire, "{revision:?}"),
                false => assert!(raw.get("icons").is_none(), "{revision:?}: {raw}"),
            }
        }
        let info = match c.era() {
            Era::Legacy => c.initialize_result().expect("initialized")["serverInfo"].clone(),
            Era::Modern => {
                let discovered = c.request("server/discover", json!({})).await.unwrap();
                discovered["_meta"]["io.modelcontextprotocol/serverInfo"].clone()
            }
        };
        match has {
            true => assert_eq!(info["icons"], wire, "{revision:?}"),
            false => assert!(info.get("icons").is_none(), "{revision:?}: {info}"),
        }
    }
}

#[tokio::test]
async fn derived_schemas_have_no_ref_and_an_object_root_in_every_era() {
    let server = server();
    for revision in ALL {
        let c = client(&server, revision).await;
        for t in c.list_tools().await.unwrap() {
            assert_eq!(t.input_schema["type"], "object", "{revision:?} {}", t.name);
            if let Some(out) = &t.output_schema {
                assert_eq!(out["type"], "object", "{revision:?} {}", t.name);
            }
            let allowed: &[&str] = match t.name.as_str() {
                "plant" => &["#/$defs/Tree"],
                "nested" => &["#/$defs/Nested"],
                "raw" => &["#/$defs/t"],
                "verbatim" => &["#/$defs/Limit", "#/$defs/Order"],
                _ => &[],
            };
            for r in refs(&t.raw) {
                assert!(allowed.contains(&r.as_str()), "{revision:?} {}: {r}", t.name);
            }
        }
        let list = tool(&c, "list_notes").await;
        let limit = &list.input_schema["properties"]["limit"];
        assert_eq!(limit["type"], json!(["object", "null"]), "{revision:?}");
        assert_eq!(limit["properties"]["max"]["type"], "integer");
        assert_eq!(
            list.input_schema["properties"]["order"]["enum"],
            json!(["newest", "oldest", null])
        );
        // The raw schema is exactly as given; the verbatim one keeps schemars' `$defs`.
        assert_eq!(
            tool(&c, "raw").await.input_schema,
            serde_json::from_str::<Value>(RAW_SCHEMA).unwrap()
        );
        let verbatim = tool(&c, "verbatim").await;
        assert!(verbatim.input_schema["$defs"]["Limit"].is_object());
        // A recursive type keeps `$defs` for its recursion.
        let plant = tool(&c, "plant").await;
        assert_eq!(
            plant.input_schema["properties"]["children"]["items"]["$ref"],
            "#/$defs/Tree"
        );
    }
}

#[tokio::test]
async fn calls_through_reshaped_schemas_validate_as_before() {
    let server = server();
    for revision in ALL {
        let c = client(&server, revision).await;
        let tree = json!({"label": "a", "children": [{"label": "b", "children": [{"label": "c", "children": []}]}]});
        let r = c.call_tool("plant", tree).await.unwrap();
        assert_eq!(r.content, vec![Content::text("a: 3")], "{revision:?}");
        let bad = c
            .call_tool("plant", json!({"label": "a", "children": [{"label": 1}]}))
            .await;
        assert!(bad.is_err() || bad.unwrap().is_error, "{revision:?}");
        let r = c.call_tool("raw", json!({"text": "hi"})).await.unwrap();
        assert_eq!(r.content, vec![Content::text("hi")]);
        let refused = c.call_tool("raw", json!({"text": 1})).await;
        assert!(refused.is_err() || refused.unwrap().is_error, "{revision:?}");
        let r = c
            .call_tool("verbatim", json!({"word": "w", "order": "oldest"}))
            .await
            .unwrap();
        assert_eq!(r.content, vec![Content::text("w")], "{revision:?}");
    }
}

#[tokio::test]
async fn non_object_output_is_wrapped_in_both_eras() {
    let server = server();
    let listed = json!([{"id": 2, "title": "bread"}, {"id": 1, "title": "milk"}]);
    for revision in ALL {
        let c = client(&server, revision).await;
        let r = c.call_tool("list_notes", json!({"order": "newest"})).await.unwrap();
        assert!(!r.is_error, "{revision:?}: {r:?}");
        // The text block is the JSON of the value itself.
        let Content::Text { text, .. } = &r.content[0] else {
            panic!("text expected")
        };
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), listed, "{revision:?}");
        let structured = revision >= Revision::V2025_06_18;
        let expected = structured.then(|| json!({"result": listed}));
        assert_eq!(r.structured_content, expected, "{revision:?}");
        let t = tool(&c, "list_notes").await;
        match structured {
            true => {
                let out = t.output_schema.expect("an output schema");
                assert_eq!(out["required"], json!(["result"]));
                assert_eq!(out["properties"]["result"]["type"], "array");
                assert_eq!(
                    out["properties"]["result"]["items"]["properties"]["title"]["type"],
                    "string"
                );
            }
            false => assert_eq!(t.output_schema, None),
        }
        if !structured {
            continue;
        }
        let count = c.call_tool("count", json!({})).await.unwrap();
        assert_eq!(count.structured_content, Some(json!({"result": 2})));
        assert_eq!(count.content, vec![Content::text("2")]);
        let none = c.call_tool("find", json!({"id": 9})).await.unwrap();
        assert!(!none.is_error, "{revision:?}: {none:?}");
        assert_eq!(none.structured_content, Some(json!({"result": null})));
        assert_eq!(none.content, vec![Content::text("null")]);
        let some = c.call_tool("find", json!({"id": 1})).await.unwrap();
        assert_eq!(
            some.structured_content,
            Some(json!({"result": {"id": 1, "title": "milk"}}))
        );
        let nested = c.call_tool("nested", json!({})).await.unwrap();
        assert!(!nested.is_error, "{revision:?}: {nested:?}");
        assert_eq!(nested.structured_content, Some(json!({"result": [1, [2]]})));
    }
}

#[tokio::test]
async fn object_output_is_not_wrapped() {
    let server = server();
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25, Revision::V2026_07_28] {
        let c = client(&server, revision).await;
        let note = c.call_tool("note", json!({"id": 1})).await.unwrap();
        assert_eq!(
            note.structured_content,
            Some(json!({"id": 1, "title": "milk"})),
            "{revision:?}"
        );
        // An enum of object variants is an object: its schema gets an object root.
        let calc = c.call_tool("calc", json!({"op": "add", "a": 1, "b": 2})).await.unwrap();
        assert!(!calc.is_error, "{revision:?}: {calc:?}");
        assert_eq!(calc.structured_content, Some(json!({"op": "neg", "a": -3})));
        let t = tool(&c, "calc").await;
        assert_eq!(t.input_schema["type"], "object");
        let out = t.output_schema.expect("an output schema");
        assert_eq!(out["type"], "object");
        assert!(out.get("oneOf").is_some() && out["properties"].get("result").is_none());
    }
}

#[tokio::test]
async fn an_unwrappable_verbatim_output_schema_is_refused_naming_the_tool() {
    let tool = Tool::structured("nested", "Nested lists", |_: Nothing, _ctx| async move {
        Ok(Nested::Num(1))
    })
    .schema_style(SchemaStyle::Verbatim);
    let err = McpServer::builder().tool(tool).build().expect_err("refused");
    let ServerError::Registry(RegistryError::OutputSchemaNotWrappable { tool, reason }) = &err else {
        panic!("unexpected error: {err}")
    };
    assert_eq!(tool, "nested");
    assert!(reason.contains("\"#\""), "{reason}");
    assert!(err.to_string().contains("tool nested"), "{err}");
    // The default style wraps it.
    let tool = Tool::structured("nested", "Nested lists", |_: Nothing, _ctx| async move {
        Ok(Nested::Num(1))
    });
    assert!(McpServer::builder().tool(tool).build().is_ok());
}
