//! Resources, resource templates, prompts and completions through the facade, in both eras,
//! through `mcp_server::testing`.

use std::time::Duration;

use mcp_server::prelude::*;
use mcp_server::testing::{CompleteReference, TestClient};

const REVISIONS: [Revision; 3] = [Revision::V2025_03_26, Revision::V2025_11_25, Revision::V2026_07_28];

const CITIES: [&str; 4] = ["Berlin", "Bern", "Bergen", "Oslo"];

fn server() -> McpServer {
    McpServer::builder()
        .name("rp-test")
        .version("1")
        .resource(Resource::text("memo://readme", "readme", "text/markdown", "# Read me").description("The readme"))
        .resource_template(
            ResourceTemplate::new("weather://{city}/today", "weather", |uri, vars, _ctx| async move {
                let city = vars["city"].as_str().unwrap_or_default().to_owned();
                let text = format!("Sunny in {city}");
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    uri,
                    "text/plain",
                    text,
                )]))
            })
            .mime_type("text/plain"),
        )
        .prompt(
            Prompt::new("greet", "Greets someone", |args, _ctx| async move {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                let style = args.get("style").and_then(Value::as_str).unwrap_or("plain").to_owned();
                Ok(
                    GetPromptResult::new(vec![PromptMessage::user_text(format!("Say hello to {name} ({style})"))])
                        .with_description("A greeting"),
                )
            })
            .argument("name", "Who to greet", true)
            .argument("style", "How", false)
            .meta(json!({"com.example/audience": "everyone"})),
        )
        .prompt_completion("greet", "name", |p, _ctx| async move {
            let prefix = p.argument.value.to_lowercase();
            let names = ["Ada", "Alan", "Grace"];
            let values = names
                .iter()
                .filter(|n| n.to_lowercase().starts_with(&prefix))
                .map(|n| n.to_string());
            Ok(Completion::from_values(values.collect()))
        })
        .template_completion("weather://{city}/today", "city", |p, _ctx| async move {
            let values = CITIES
                .iter()
                .filter(|c| c.starts_with(&p.argument.value))
                .map(|c| c.to_string());
            Ok(Completion::from_values(values.collect()))
        })
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

fn text_of(contents: &ResourceContents) -> &str {
    match contents {
        ResourceContents::Text { text, .. } => text,
        other => panic!("text contents expected, got {other:?}"),
    }
}

#[tokio::test]
async fn a_text_resource_is_listed_and_read() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let listed = c.list_resources().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].uri, "memo://readme");
        assert_eq!(listed[0].name, "readme");
        assert_eq!(listed[0].mime_type.as_deref(), Some("text/markdown"));
        assert_eq!(listed[0].description.as_deref(), Some("The readme"));
        let read = c.read_resource("memo://readme").await.unwrap();
        assert_eq!(read.contents.len(), 1, "{revision:?}");
        assert_eq!(read.contents[0].uri(), "memo://readme");
        assert_eq!(text_of(&read.contents[0]), "# Read me");
    }
}

#[tokio::test]
async fn a_template_reads_with_its_variables() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let templates = c.list_resource_templates().await.unwrap();
        assert_eq!(templates.len(), 1);
        assert_eq!(templates[0].uri_template, "weather://{city}/today");
        let read = c.read_resource("weather://Oslo/today").await.unwrap();
        assert_eq!(read.contents[0].uri(), "weather://Oslo/today", "{revision:?}");
        assert_eq!(text_of(&read.contents[0]), "Sunny in Oslo");
    }
}

#[tokio::test]
async fn an_unknown_resource_is_not_found_with_the_era_s_code() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let e = c.read_resource("memo://missing").await.unwrap_err();
        // -32002 in the legacy era, -32602 in 2026-07-28 (SEP-2164), with the URI in data.
        let code = if revision.era() == Era::Modern { -32602 } else { -32002 };
        assert_eq!(e.code(), Some(code), "{revision:?}: {e}");
        assert_eq!(e.rpc().unwrap().data.as_ref().unwrap()["uri"], "memo://missing");
    }
}

#[tokio::test]
async fn modern_reads_and_lists_carry_cache_hints() {
    let server = server();
    let c = client(&server, Revision::V2026_07_28).await;
    for (method, params) in [
        ("resources/read", json!({"uri": "memo://readme"})),
        ("resources/list", json!({})),
        ("prompts/list", json!({})),
    ] {
        let raw = c.request(method, params).await.unwrap();
        assert_eq!(raw["resultType"], "complete", "{method}");
        assert!(raw["ttlMs"].as_u64().is_some(), "{method}: {raw}");
        assert!(raw["cacheScope"].is_string(), "{method}: {raw}");
    }
}

#[tokio::test]
async fn a_prompt_renders_its_arguments() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let prompts = c.list_prompts().await.unwrap();
        assert_eq!(prompts.len(), 1);
        assert_eq!(prompts[0].name, "greet");
        assert_eq!(prompts[0].arguments.len(), 2);
        assert_eq!(prompts[0].arguments[0]["name"], "name");
        assert_eq!(prompts[0].arguments[0]["required"], true);
        let listed = c.request("prompts/list", json!({})).await.unwrap();
        assert_eq!(
            listed["prompts"][0]["_meta"],
            json!({"com.example/audience": "everyone"}),
            "{revision:?}: the prompt's _meta is listed"
        );
        let got = c
            .get_prompt("greet", json!({"name": "Ada", "style": "warm"}))
            .await
            .unwrap();
        assert_eq!(got.description.as_deref(), Some("A greeting"));
        assert_eq!(
            got.messages,
            vec![PromptMessage::user_text("Say hello to Ada (warm)")],
            "{revision:?}"
        );
    }
}

#[tokio::test]
async fn a_prompt_without_a_required_argument_or_unknown_is_invalid_params() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let e = c.get_prompt("greet", json!({"style": "warm"})).await.unwrap_err();
        assert_eq!(e.code(), Some(-32602), "{revision:?}: {e}");
        let e = c.get_prompt("nope", Value::Null).await.unwrap_err();
        assert_eq!(e.code(), Some(-32602), "{revision:?}: {e}");
    }
}

#[tokio::test]
async fn completions_of_a_prompt_argument_and_a_template_variable() {
    let server = server();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let prompt = CompleteReference::Prompt { name: "greet".into() };
        let done = c.complete(prompt, "name", "a").await.unwrap();
        assert_eq!(done.values, ["Ada", "Alan"], "{revision:?}");
        assert_eq!(done.total, Some(2));
        let template = CompleteReference::Resource {
            uri: "weather://{city}/today".into(),
        };
        let done = c.complete(template, "city", "Ber").await.unwrap();
        assert_eq!(done.values, ["Berlin", "Bern", "Bergen"], "{revision:?}");
        if revision.era() == Era::Legacy {
            let caps = c.initialize_result().unwrap()["capabilities"].clone();
            assert!(caps["completions"].is_object(), "{caps}");
        }
    }
}

#[tokio::test]
async fn legacy_subscribers_hear_of_updates_and_modern_listeners_too() {
    let server = server();
    let subscribed = client(&server, Revision::V2025_11_25).await;
    let other = client(&server, Revision::V2025_11_25).await;
    subscribed.subscribe_resource("memo://readme").await.unwrap();
    let modern = client(&server, Revision::V2026_07_28).await;
    let mut listen = modern
        .listen(json!({"resourceSubscriptions": ["memo://readme"]}))
        .await
        .unwrap();
    server.notify_resource_updated("memo://readme");
    let note = subscribed
        .wait_for_notification("notifications/resources/updated", Duration::from_secs(5))
        .await
        .expect("an update for the subscriber");
    assert_eq!(note.params["uri"], "memo://readme");
    let note = listen
        .next(Duration::from_secs(5))
        .await
        .expect("an update on the listen stream");
    assert_eq!(note.method, "notifications/resources/updated");
    assert_eq!(note.params["uri"], "memo://readme");
    // A session that did not subscribe hears nothing.
    let none = other
        .wait_for_notification("notifications/resources/updated", Duration::from_millis(100))
        .await;
    assert_eq!(none, None);
    // Unsubscribed: no more updates.
    subscribed.unsubscribe_resource("memo://readme").await.unwrap();
    server.notify_resource_updated("memo://readme");
    let none = subscribed
        .wait_for_notification("notifications/resources/updated", Duration::from_millis(100))
        .await;
    assert_eq!(none, None);
}

#[tokio::test]
async fn resources_and_prompts_added_at_run_time_are_announced() {
    let server = server();
    let c = client(&server, Revision::V2025_06_18).await;
    server
        .add_resource(Resource::text("memo://new", "new", "text/plain", "fresh"))
        .expect("a valid resource");
    c.wait_for_notification("notifications/resources/list_changed", Duration::from_secs(5))
        .await
        .expect("resources list_changed");
    assert_eq!(
        text_of(&c.read_resource("memo://new").await.unwrap().contents[0]),
        "fresh"
    );
    server
        .add_prompt(Prompt::new("bye", "Says bye", |_a, _c| async {
            Ok(GetPromptResult::new(vec![PromptMessage::assistant_text("Bye")]))
        }))
        .unwrap();
    c.wait_for_notification("notifications/prompts/list_changed", Duration::from_secs(5))
        .await
        .expect("prompts list_changed");
    let names: Vec<String> = c.list_prompts().await.unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["bye", "greet"]);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    /// The code to review.
    code: String,
    /// What to focus on.
    focus: Option<String>,
}

/// Template variables arrive as strings (a `u32` field is refused with -32602).
#[derive(serde::Deserialize)]
struct NoteVars {
    id: String,
}

/// The notes every handler shares through `ctx.state`.
struct Notes(std::sync::Mutex<Vec<String>>);

#[tokio::test]
async fn typed_prompts_and_templates_with_shared_state() {
    let server = McpServer::builder()
        .name("typed")
        .version("1")
        .state(Notes(std::sync::Mutex::new(vec!["first".into(), "second".into()])))
        .prompt(Prompt::typed(
            "review",
            "Asks for a review",
            |a: Review, _ctx| async move {
                let focus = a.focus.unwrap_or_else(|| "correctness".into());
                GetPromptResult::default().user(format!("Review for {focus}: {}", a.code))
            },
        ))
        .resource_template(ResourceTemplate::typed(
            "notes://{id}",
            "note",
            |uri, v: NoteVars, ctx: Ctx| async move {
                let notes = ctx.state::<Notes>()?;
                let index: usize = v.id.parse().map_err(|_| HandlerError::tool("the id is a number"))?;
                let text = notes.0.lock().unwrap().get(index).cloned();
                let text = text.ok_or_else(|| HandlerError::tool(format!("no note {}", v.id)))?;
                Ok(ResourceContents::text(uri, "text/plain", text))
            },
        ))
        .tool(Tool::new("add_note", "Adds a note", |args, ctx: Ctx| async move {
            let notes = ctx.state::<Notes>()?;
            let mut notes = notes.0.lock().unwrap();
            notes.push(args["text"].as_str().unwrap_or_default().to_owned());
            Ok(format!("{} notes", notes.len()))
        }))
        .build()
        .unwrap();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let prompts = c.list_prompts().await.unwrap();
        let args: Vec<(&str, bool)> = prompts[0]
            .arguments
            .iter()
            .map(|a| (a["name"].as_str().unwrap(), a["required"].as_bool().unwrap_or(false)))
            .collect();
        assert_eq!(args, [("code", true), ("focus", false)], "{revision:?}");
        let got = c.get_prompt("review", json!({"code": "x = 1"})).await.unwrap();
        assert_eq!(
            got.messages,
            vec![PromptMessage::user_text("Review for correctness: x = 1")]
        );
        let e = c.get_prompt("review", json!({"focus": "style"})).await.unwrap_err();
        assert_eq!(e.code(), Some(-32602), "{revision:?}");
        let read = c.read_resource("notes://1").await.unwrap();
        assert_eq!(text_of(&read.contents[0]), "second", "{revision:?}");
    }
    // One state for every client and era.
    let legacy = client(&server, Revision::V2025_11_25).await;
    let modern = client(&server, Revision::V2026_07_28).await;
    let r = legacy.call_tool("add_note", json!({"text": "third"})).await.unwrap();
    assert_eq!(r.content, vec![Content::text("3 notes")]);
    let read = modern.read_resource("notes://2").await.unwrap();
    assert_eq!(text_of(&read.contents[0]), "third");
}

#[derive(serde::Deserialize)]
struct PageVars {
    book: u64,
    page: u16,
    draft: Option<bool>,
}

/// A store the application already holds in an `Arc`, shared with the server as it is.
struct Library {
    pages_per_book: u16,
}

#[tokio::test]
async fn typed_template_variables_parse_as_numbers_and_a_missing_one_is_not_found() {
    let library = std::sync::Arc::new(Library { pages_per_book: 10 });
    let server = McpServer::builder()
        .name("books")
        .version("1")
        .state_arc(library.clone())
        .resource_template(ResourceTemplate::typed(
            "books://{book}/pages/{page}",
            "page",
            |uri, v: PageVars, ctx: Ctx| async move {
                let library = ctx.state::<Library>()?;
                if v.book != 7 || v.page > library.pages_per_book {
                    return Err(HandlerError::resource_not_found(uri));
                }
                let text = format!("book {} page {} draft {:?}", v.book, v.page, v.draft);
                Ok(ResourceContents::text(uri, "text/plain", text))
            },
        ))
        .build()
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&server.state::<Library>().unwrap(), &library));
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let read = c.read_resource("books://7/pages/3").await.unwrap();
        assert_eq!(text_of(&read.contents[0]), "book 7 page 3 draft None", "{revision:?}");
        // Not a number: -32602 naming the variable, in both eras.
        let e = c.read_resource("books://seven/pages/3").await.unwrap_err();
        assert_eq!(e.code(), Some(-32602), "{revision:?}");
        assert_eq!(
            e.rpc().unwrap().message,
            r#"invalid value for template variable "book": expected u64, got "seven""#
        );
        let e = c.read_resource("books://7/pages/70000").await.unwrap_err();
        assert!(e.to_string().contains(r#""page": expected u16, got "70000""#), "{e}");
        // The handler's "not found": the era's code, with the URI in data, as the runtime's own.
        let e = c.read_resource("books://8/pages/1").await.unwrap_err();
        let code = if revision.era() == Era::Modern { -32602 } else { -32002 };
        assert_eq!(e.code(), Some(code), "{revision:?}: {e}");
        assert_eq!(e.rpc().unwrap().message, "Resource not found: books://8/pages/1");
        assert_eq!(e.rpc().unwrap().data.as_ref().unwrap()["uri"], "books://8/pages/1");
    }
}

#[tokio::test]
async fn a_tool_that_finds_no_resource_answers_the_era_s_error() {
    let server = McpServer::builder()
        .name("summaries")
        .version("1")
        .tool(Tool::new(
            "summarize",
            "Summarizes a resource",
            |args, _ctx| async move {
                let uri = args["uri"].as_str().unwrap_or_default().to_owned();
                Err::<String, _>(HandlerError::resource_not_found(uri))
            },
        ))
        .build()
        .unwrap();
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let e = c
            .call_tool("summarize", json!({"uri": "memo://gone"}))
            .await
            .unwrap_err();
        let code = if revision.era() == Era::Modern { -32602 } else { -32002 };
        assert_eq!(e.code(), Some(code), "{revision:?}: {e}");
        assert_eq!(e.rpc().unwrap().data.as_ref().unwrap()["uri"], "memo://gone");
    }
}
