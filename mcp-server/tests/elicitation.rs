//! Client input through the facade: `ctx.input` (MRTR in the modern era, server-to-client
//! requests in the legacy one), `ctx.elicit`, sampling and roots, answered by the test
//! client's scripted replies.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_server::prelude::*;
use mcp_server::testing::{ClientError, TestClient, accept, decline, sampled_text};

/// The legacy revisions with elicitation, and the modern one.
const REVISIONS: [Revision; 3] = [Revision::V2025_06_18, Revision::V2025_11_25, Revision::V2026_07_28];

fn form(message: &str, field: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]},
    })
}

fn text(r: &CallToolResult) -> &str {
    match &r.content[..] {
        [Content::Text { text, .. }] => text,
        other => panic!("one text block expected, got {other:?}"),
    }
}

fn server() -> McpServer {
    McpServer::builder()
        .name("input-test")
        .version("1")
        .tool(Tool::new("greet", "Asks for a name", |_args, ctx: Ctx| async move {
            let got = ctx
                .input(InputRequired::new().request("who", "elicitation/create", form("Your name?", "name")))
                .await?;
            let answer = &got["who"];
            Ok(match answer["action"].as_str() {
                Some("accept") => format!("Hello, {}!", answer["content"]["name"].as_str().unwrap_or("?")),
                other => format!("no name ({})", other.unwrap_or("none")),
            })
        }))
        .tool(Tool::new(
            "survey",
            "Asks twice, keeping state",
            |_args, ctx: Ctx| async move {
                let first = InputRequired::new()
                    .request("name", "elicitation/create", form("Name?", "name"))
                    .with_state(json!({"step": 1}));
                let name = ctx.input(first).await?["name"]["content"]["name"].clone();
                let second = InputRequired::new()
                    .request("city", "elicitation/create", form("City?", "city"))
                    .with_state(json!({"step": 2}));
                let city = ctx.input(second).await?["city"]["content"]["city"].clone();
                let state = ctx.request_state().cloned().unwrap_or(Value::Null);
                Ok(CallToolResult::structured(
                    json!({"name": name, "city": city, "state": state}),
                ))
            },
        ))
        .tool(Tool::new(
            "ask_model",
            "Samples the client's model",
            |_args, ctx: Ctx| async move {
                let params = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
                    "maxTokens": 20,
                });
                let got = ctx
                    .input(InputRequired::new().request("llm", "sampling/createMessage", params))
                    .await?;
                Ok(format!(
                    "model said {}",
                    got["llm"]["content"]["text"].as_str().unwrap_or("?")
                ))
            },
        ))
        .tool(Tool::new(
            "roots",
            "Lists the client's roots",
            |_args, ctx: Ctx| async move {
                let got = ctx
                    .input(InputRequired::new().request("roots", "roots/list", json!({})))
                    .await?;
                let uris: Vec<&str> = got["roots"]["roots"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["uri"].as_str())
                    .collect();
                Ok(uris.join(","))
            },
        ))
        .tool(Tool::new(
            "legacy_elicit",
            "Ctx::elicit_raw (legacy only)",
            |_args, ctx: Ctx| async move {
                match ctx.elicit_raw(form("Colour?", "colour")).await {
                    Ok(v) => Ok(format!(
                        "{}:{}",
                        v["action"].as_str().unwrap_or("?"),
                        v["content"]["colour"]
                    )),
                    Err(e) => Ok(format!("failed: {e}")),
                }
            },
        ))
        .tool(Tool::new(
            "contact",
            "Typed elicitation",
            |_args, ctx: Ctx| async move {
                Ok(match ctx.elicit::<Contact>("Who are you?").await? {
                    Elicitation::Accept(c) => format!("{} is {}", c.name, c.age),
                    Elicitation::Decline => "declined".to_owned(),
                    Elicitation::Cancel => "cancelled".to_owned(),
                })
            },
        ))
        .tool(Tool::new(
            "typed_model",
            "Typed sampling and roots",
            |_args, ctx: Ctx| async move {
                let reply = ctx
                    .sample(Sampling::new().user("Capital of France?").max_tokens(10))
                    .await?;
                let roots = ctx.roots().await?;
                let names: Vec<String> = roots.into_iter().filter_map(|r| r.name).collect();
                Ok(format!("{} from {} in {}", reply.text(), reply.model, names.join("+")))
            },
        ))
        .build()
        .expect("valid server")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Contact {
    /// Your name
    name: String,
    /// Your age
    age: u32,
}

async fn client_with(server: &McpServer, revision: Revision, name: &'static str) -> TestClient {
    server
        .test_client()
        .revision(revision)
        .on_elicit(move |params| {
            let field = params["requestedSchema"]["required"][0].as_str().unwrap_or("name");
            let value = if field == "city" { "Paris" } else { name };
            accept(json!({ field: value }))
        })
        .connect()
        .await
        .expect("connects")
}

#[tokio::test]
async fn input_elicits_in_both_eras_and_the_test_sees_the_final_result() {
    let server = server();
    for revision in REVISIONS {
        let c = client_with(&server, revision, "Ada").await;
        let call = c.call_tool_exchange("greet", json!({})).await.unwrap();
        assert_eq!(text(&call.result), "Hello, Ada!", "{revision:?}");
        assert_eq!(call.server_requests.len(), 1);
        let asked = &call.server_requests[0];
        assert_eq!(asked.method, "elicitation/create");
        assert_eq!(asked.params["message"], "Your name?");
        assert_eq!(asked.reply, Ok(accept(json!({"name": "Ada"}))));
        match revision.era() {
            // One MRTR retry, keyed input.
            Era::Modern => {
                assert_eq!(call.rounds, 2);
                assert_eq!(asked.key.as_deref(), Some("who"));
            }
            // A real server-to-client request inside the one call.
            Era::Legacy => {
                assert_eq!(call.rounds, 1);
                assert_eq!(asked.key, None);
            }
        }
    }
}

#[tokio::test]
async fn a_declined_elicitation_reaches_the_handler() {
    let server = server();
    for revision in REVISIONS {
        let c = server
            .test_client()
            .revision(revision)
            .on_elicit(|_| decline())
            .connect()
            .await
            .unwrap();
        let r = c.call_tool("greet", json!({})).await.unwrap();
        assert_eq!(text(&r), "no name (decline)", "{revision:?}");
    }
}

#[tokio::test]
async fn two_inputs_in_a_row_take_three_modern_rounds_and_keep_the_state() {
    let server = server();
    for revision in REVISIONS {
        let c = client_with(&server, revision, "Grace").await;
        let call = c.call_tool_exchange("survey", json!({})).await.unwrap();
        let out = call.result.structured_content.clone().expect("structured");
        assert_eq!(out["name"], "Grace", "{revision:?}");
        assert_eq!(out["city"], "Paris", "{revision:?}");
        let methods: Vec<&str> = call
            .server_requests
            .iter()
            .map(|r| r.params["message"].as_str().unwrap())
            .collect();
        assert_eq!(methods, ["Name?", "City?"]);
        match revision.era() {
            Era::Modern => {
                assert_eq!(call.rounds, 3);
                // The last round opened the state the second `input` sealed.
                assert_eq!(out["state"], json!({"step": 2}));
            }
            Era::Legacy => {
                assert_eq!(call.rounds, 1);
                assert_eq!(out["state"], Value::Null);
            }
        }
    }
}

#[tokio::test]
async fn queued_replies_are_used_in_order_before_the_handler() {
    let server = server();
    for revision in REVISIONS {
        let c = server
            .test_client()
            .revision(revision)
            .elicit_reply(accept(json!({"name": "first"})))
            .elicit_reply(decline())
            .on_elicit(|_| accept(json!({"name": "fallback"})))
            .connect()
            .await
            .unwrap();
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(text(&c.call_tool("greet", json!({})).await.unwrap()).to_owned());
        }
        assert_eq!(
            got,
            ["Hello, first!", "no name (decline)", "Hello, fallback!"],
            "{revision:?}"
        );
    }
}

#[tokio::test]
async fn sampling_and_roots_are_answered_from_the_script() {
    let server = server();
    for revision in REVISIONS {
        let c = server
            .test_client()
            .revision(revision)
            .on_sampling(|params| {
                assert_eq!(params["maxTokens"], 20);
                sampled_text("test-model", "Paris")
            })
            .roots(vec![
                json!({"uri": "file:///projects/demo", "name": "demo"}),
                json!({"uri": "file:///srv/data", "name": "data"}),
            ])
            .connect()
            .await
            .unwrap();
        let r = c.call_tool("ask_model", json!({})).await.unwrap();
        assert_eq!(text(&r), "model said Paris", "{revision:?}");
        let r = c.call_tool("roots", json!({})).await.unwrap();
        assert_eq!(text(&r), "file:///projects/demo,file:///srv/data", "{revision:?}");
    }
}

#[tokio::test]
async fn input_without_the_client_capability_is_missing_capability() {
    let server = server();
    for revision in REVISIONS {
        // Declares nothing: no elicitation capability.
        let c = TestClient::builder(&server).revision(revision).connect().await.unwrap();
        let e = c.call_tool("greet", json!({})).await.unwrap_err();
        assert_eq!(e.code(), Some(-32021), "{revision:?}: {e}");
        let data = e.rpc().unwrap().data.clone().unwrap();
        assert!(data["requiredCapabilities"]["elicitation"].is_object(), "{data}");
    }
}

#[tokio::test]
async fn modern_input_with_nothing_scripted_is_reported_as_unscripted() {
    let server = server();
    let c = server
        .test_client()
        .modern()
        .capability("elicitation", json!({}))
        .connect()
        .await
        .unwrap();
    let e = c.call_tool("greet", json!({})).await.unwrap_err();
    assert_eq!(e, ClientError::Unscripted("elicitation/create".into()));
}

#[tokio::test]
async fn legacy_input_with_nothing_scripted_is_refused_by_the_client() {
    let server = server();
    let c = server
        .test_client()
        .legacy()
        .capability("elicitation", json!({}))
        .connect()
        .await
        .unwrap();
    let call = c.call_tool_exchange("legacy_elicit", json!({})).await.unwrap();
    assert!(
        text(&call.result).starts_with("failed: client error"),
        "{}",
        text(&call.result)
    );
    assert_eq!(call.server_requests[0].reply.as_ref().unwrap_err().code, -32601);
}

#[tokio::test]
async fn ctx_elicit_raw_is_a_legacy_request_and_not_in_the_modern_era() {
    let server = server();
    let legacy = server
        .test_client()
        .revision(Revision::V2025_11_25)
        .on_elicit(|p| {
            assert_eq!(p["message"], "Colour?");
            accept(json!({"colour": "teal"}))
        })
        .connect()
        .await
        .unwrap();
    let r = legacy.call_tool("legacy_elicit", json!({})).await.unwrap();
    assert_eq!(text(&r), "accept:\"teal\"");
    let modern = server
        .test_client()
        .modern()
        .on_elicit(|_| accept(json!({})))
        .connect()
        .await
        .unwrap();
    let r = modern.call_tool("legacy_elicit", json!({})).await.unwrap();
    assert_eq!(
        text(&r),
        "failed: server-to-client requests are not available in the modern era"
    );
}

#[tokio::test]
async fn request_once_shows_the_input_required_result_and_a_tampered_state_is_refused() {
    let server = server();
    let c = client_with(&server, Revision::V2026_07_28, "Ada").await;
    let first = c
        .request_once("tools/call", json!({"name": "survey", "arguments": {}}))
        .await
        .unwrap();
    assert_eq!(first.result["resultType"], "input_required");
    assert_eq!(first.result["inputRequests"]["name"]["method"], "elicitation/create");
    let state = first.result["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();
    // Retried with the state as sealed: the next round.
    let params = |state: &str| {
        json!({
            "name": "survey",
            "arguments": {},
            "inputResponses": {"name": accept(json!({"name": "Ada"}))},
            "requestState": state,
        })
    };
    let second = c.request_once("tools/call", params(&state)).await.unwrap();
    assert_eq!(second.result["resultType"], "input_required");
    assert!(second.result["inputRequests"]["city"].is_object());
    // One character changed: refused, never re-prompted.
    let mut tampered = state.into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let e = c.request_once("tools/call", params(&tampered)).await.unwrap_err();
    assert_eq!(e.code(), Some(-32602), "{e}");
}

#[tokio::test]
async fn an_empty_request_state_is_answered_as_no_state() {
    let server = server();
    let c = client_with(&server, Revision::V2026_07_28, "Ada").await;
    let first = c
        .request_once("tools/call", json!({"name": "greet", "arguments": {}}))
        .await
        .unwrap();
    assert_eq!(first.result["resultType"], "input_required");
    // A client that always echoes the member, empty when it had nothing to echo: the retry is
    // read as one without state, and the answer reaches the handler.
    let retry = json!({
        "name": "greet",
        "arguments": {},
        "inputResponses": {"who": accept(json!({"name": "Ada"}))},
        "requestState": "",
    });
    let done = c.request_once("tools/call", retry).await.unwrap();
    assert_eq!(done.result["content"][0]["text"], "Hello, Ada!", "{}", done.result);
    // A state that is not a string is still refused.
    let bad = json!({"name": "greet", "arguments": {}, "requestState": 7});
    let e = c.request_once("tools/call", bad).await.unwrap_err();
    assert_eq!(e.code(), Some(-32602), "{e}");
}

#[tokio::test]
async fn a_server_that_keeps_asking_hits_the_round_limit() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let server = McpServer::builder()
        .name("greedy")
        .version("1")
        .tool(Tool::new("greedy", "Always wants more", move |_args, ctx: Ctx| {
            let counter = counter.clone();
            async move {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                ctx.input(InputRequired::new().request(format!("q{n}"), "elicitation/create", form("More?", "x")))
                    .await?;
                Ok("never")
            }
        }))
        .build()
        .unwrap();
    let c = server
        .test_client()
        .modern()
        .max_rounds(3)
        .on_elicit(|_| accept(json!({"x": "y"})))
        .connect()
        .await
        .unwrap();
    let e = c.call_tool("greedy", json!({})).await.unwrap_err();
    assert_eq!(e, ClientError::TooManyRounds(3));
    assert_eq!(asked.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn typed_elicitation_derives_the_form_and_decodes_the_answer() {
    let server = server();
    for revision in REVISIONS {
        let c = server
            .test_client()
            .revision(revision)
            .on_elicit(|_| accept(json!({"name": "Ada", "age": 36})))
            .connect()
            .await
            .unwrap();
        let call = c.call_tool_exchange("contact", json!({})).await.unwrap();
        assert_eq!(text(&call.result), "Ada is 36", "{revision:?}");
        let asked = &call.server_requests[0];
        assert_eq!(asked.params["message"], "Who are you?");
        let schema = &asked.params["requestedSchema"];
        assert_eq!(schema["properties"]["age"]["type"], "integer", "{schema}");
        assert_eq!(schema["properties"]["name"]["type"], "string", "{schema}");
        if revision.era() == Era::Modern {
            assert_eq!(asked.key.as_deref(), Some("elicit-1"));
            assert_eq!(call.rounds, 2);
        }
    }
}

#[tokio::test]
async fn typed_elicitation_declined_cancelled_or_misfit() {
    let server = server();
    for revision in REVISIONS {
        let c = server
            .test_client()
            .revision(revision)
            .elicit_reply(decline())
            .elicit_reply(mcp_server::testing::cancel())
            .elicit_reply(accept(json!({"name": "Ada", "age": "old"})))
            .connect()
            .await
            .unwrap();
        assert_eq!(
            text(&c.call_tool("contact", json!({})).await.unwrap()),
            "declined",
            "{revision:?}"
        );
        assert_eq!(
            text(&c.call_tool("contact", json!({})).await.unwrap()),
            "cancelled",
            "{revision:?}"
        );
        // Content that does not fit the type is a tool error, not a crash.
        let misfit = c.call_tool("contact", json!({})).await.unwrap();
        assert!(misfit.is_error, "{revision:?}: {misfit:?}");
    }
}

#[tokio::test]
async fn typed_sampling_and_roots_in_both_eras() {
    let server = server();
    for revision in REVISIONS {
        let c = server
            .test_client()
            .revision(revision)
            .on_sampling(|p| {
                assert_eq!(p["maxTokens"], 10);
                sampled_text("m-1", "Paris")
            })
            .roots(vec![
                json!({"uri": "file:///a", "name": "a"}),
                json!({"uri": "file:///b", "name": "b"}),
            ])
            .connect()
            .await
            .unwrap();
        let call = c.call_tool_exchange("typed_model", json!({})).await.unwrap();
        assert_eq!(text(&call.result), "Paris from m-1 in a+b", "{revision:?}");
        let methods: Vec<&str> = call.server_requests.iter().map(|r| r.method.as_str()).collect();
        assert_eq!(methods, ["sampling/createMessage", "roots/list"]);
        // Modern: one round per ask (the handler re-runs from the top).
        assert_eq!(call.rounds, if revision.era() == Era::Modern { 3 } else { 1 });
    }
}

#[tokio::test]
async fn url_elicitation_completes_on_the_session_that_elicited() {
    let server = McpServer::builder()
        .name("url")
        .version("1")
        .tool(Tool::new(
            "sign_in",
            "URL-mode elicitation",
            |_a, ctx: Ctx| async move {
                let done = ctx.elicit_url("Sign in, please", "https://example.com/login").await?;
                Ok(format!(
                    "{} {}",
                    done.elicitation_id,
                    done.response["action"].as_str().unwrap_or("?")
                ))
            },
        ))
        .build()
        .unwrap();
    let c = server
        .test_client()
        .revision(Revision::V2025_11_25)
        .principal("carol")
        .capability("elicitation", json!({"url": {}}))
        .on_elicit(|p| {
            assert_eq!(p["mode"], "url");
            assert_eq!(p["url"], "https://example.com/login");
            accept(Value::Null)
        })
        .connect()
        .await
        .unwrap();
    let bystander = server
        .test_client()
        .revision(Revision::V2025_11_25)
        .principal("carol")
        .connect()
        .await
        .unwrap();
    let call = c.call_tool_exchange("sign_in", json!({})).await.unwrap();
    let out = text(&call.result).to_owned();
    let (id, action) = out.split_once(' ').unwrap();
    assert_eq!(action, "accept");
    assert_eq!(call.server_requests[0].params["elicitationId"], id);
    // Only the owner may complete it; the notification reaches the eliciting session only.
    assert!(server.complete_elicitation(id, "mallory").await.is_err());
    server.complete_elicitation(id, "carol").await.unwrap();
    let note = c
        .wait_for_notification("notifications/elicitation/complete", Duration::from_secs(5))
        .await
        .expect("the completion");
    assert_eq!(note.params["elicitationId"], id);
    let none = bystander
        .wait_for_notification("notifications/elicitation/complete", Duration::from_millis(100))
        .await;
    assert_eq!(none, None);
    assert!(
        server.complete_elicitation(id, "carol").await.is_err(),
        "completed once"
    );
}

#[tokio::test]
async fn answers_nobody_asked_for_never_reach_the_handler() {
    let server = server();
    let c = client_with(&server, Revision::V2026_07_28, "Ada").await;
    let first = c
        .request_once("tools/call", json!({"name": "survey", "arguments": {}}))
        .await
        .unwrap();
    assert_eq!(first.result["resultType"], "input_required", "{:?}", first.result);
    assert!(first.result["inputRequests"]["name"].is_object());
    let state = first.result["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();
    // The retry answers the question asked and slips in the answer to the next one: only the
    // asked answer is kept, so the handler still asks for the city.
    let second = c
        .request_once(
            "tools/call",
            json!({"name": "survey", "arguments": {}, "requestState": state,
                   "inputResponses": {"name": accept(json!({"name": "Ada"})),
                                      "city": accept(json!({"city": "Nowhere"}))}}),
        )
        .await
        .unwrap();
    assert_eq!(second.result["resultType"], "input_required", "{:?}", second.result);
    assert!(second.result["inputRequests"]["city"].is_object());
}

#[tokio::test]
async fn an_oversize_answer_is_invalid_params_naming_the_limit() {
    let server = server();
    let c = client_with(&server, Revision::V2026_07_28, "Ada").await;
    let first = c
        .request_once("tools/call", json!({"name": "survey", "arguments": {}}))
        .await
        .unwrap();
    let state = first.result["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();
    let huge = "x".repeat(60 * 1024);
    let e = c
        .request_once(
            "tools/call",
            json!({"name": "survey", "arguments": {}, "requestState": state,
                   "inputResponses": {"name": accept(json!({"name": huge}))}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(-32602), "{e}");
    assert!(e.to_string().contains("65536 bytes"), "{e}");
    // The server still serves the caller.
    let call = c.call_tool_exchange("survey", json!({})).await.unwrap();
    assert_eq!(call.result.structured_content.expect("structured")["name"], "Ada");
}

#[tokio::test]
async fn a_url_elicitation_may_carry_an_id_the_handler_chose() {
    let server = McpServer::builder()
        .name("url")
        .version("1")
        .tool(Tool::new(
            "sign_in",
            "URL-mode elicitation under the sign-in flow's own id",
            |args, ctx: Ctx| async move {
                let id = args.get("flow").and_then(Value::as_str).map(str::to_owned);
                match ctx
                    .elicit_url_as("Sign in, please", "https://example.com/login", id.as_deref())
                    .await
                {
                    Ok(done) => Ok(done.elicitation_id),
                    Err(e) => Ok(format!("refused: {e}")),
                }
            },
        ))
        .build()
        .unwrap();
    let c = server
        .test_client()
        .revision(Revision::V2025_11_25)
        .principal("carol")
        .capability("elicitation", json!({"url": {}}))
        .on_elicit(|_| accept(Value::Null))
        .connect()
        .await
        .unwrap();
    let call = c
        .call_tool_exchange("sign_in", json!({"flow": "flow-42"}))
        .await
        .unwrap();
    assert_eq!(text(&call.result), "flow-42");
    assert_eq!(call.server_requests[0].params["elicitationId"], "flow-42");
    // Live until completed: the same id is refused, a bad one too, and none is sent.
    let again = c
        .call_tool_exchange("sign_in", json!({"flow": "flow-42"}))
        .await
        .unwrap();
    assert!(text(&again.result).starts_with("refused: "), "{}", text(&again.result));
    let bad = c
        .call_tool_exchange("sign_in", json!({"flow": "with space"}))
        .await
        .unwrap();
    assert!(text(&bad.result).starts_with("refused: "), "{}", text(&bad.result));
    assert!(again.server_requests.is_empty() && bad.server_requests.is_empty());
    server.complete_elicitation("flow-42", "carol").await.unwrap();
    let note = c
        .wait_for_notification("notifications/elicitation/complete", Duration::from_secs(5))
        .await
        .expect("the completion");
    assert_eq!(note.params["elicitationId"], "flow-42");
    // Completed: the id may be used again; without one, the runtime mints one.
    let reused = c
        .call_tool_exchange("sign_in", json!({"flow": "flow-42"}))
        .await
        .unwrap();
    assert_eq!(text(&reused.result), "flow-42");
    let minted = c.call_tool_exchange("sign_in", json!({})).await.unwrap();
    assert_ne!(text(&minted.result), "flow-42");
}

#[tokio::test]
async fn sampling_asks_for_context_where_the_client_welcomes_it() {
    let server = McpServer::builder()
        .name("context")
        .version("1")
        .tool(Tool::new(
            "ask",
            "Samples with this server's context",
            |_a, ctx: Ctx| async move {
                let ask = Sampling::new()
                    .user("Summarise")
                    .include_context(mcp_server::IncludeContext::ThisServer);
                Ok(ctx.sample(ask).await?.text())
            },
        ))
        .build()
        .unwrap();
    // (revision, sampling capability, includeContext the client is sent)
    let cases = [
        (Revision::V2025_06_18, json!({}), "thisServer"),
        (Revision::V2025_11_25, json!({}), "none"),
        (Revision::V2025_11_25, json!({"context": {}}), "thisServer"),
        (Revision::V2026_07_28, json!({}), "none"),
        (Revision::V2026_07_28, json!({"context": {}}), "thisServer"),
    ];
    for (revision, sampling, sent) in cases {
        let c = server
            .test_client()
            .revision(revision)
            .capability("sampling", sampling.clone())
            .on_sampling(|_| sampled_text("m", "ok"))
            .connect()
            .await
            .unwrap();
        let call = c.call_tool_exchange("ask", json!({})).await.unwrap();
        assert_eq!(text(&call.result), "ok");
        let asked = &call.server_requests[0].params;
        assert_eq!(asked["includeContext"], sent, "{revision:?} {sampling}");
    }
}
