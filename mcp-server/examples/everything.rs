//! `everything`: the conformance fixture, for both protocol eras.
//!
//! Exposes every tool, resource, template, prompt and completion the official
//! conformance runner and the SDK interop clients expect, with the exact
//! outputs they check; the tools of the tasks scenarios are in
//! `everything/tasks.rs`, those of the suite's newer scenarios (stream cancellation,
//! per-request log level, SEP-2106, legacy extensions) in `everything/scenarios.rs`.
//!
//! ```text
//! cargo run --release --example everything -- --stdio
//! cargo run --release --example everything -- --host 127.0.0.1 --port 3000   # http://127.0.0.1:3000/mcp
//! cargo run --release --example everything -- --port 3000 --sse-pair   # also GET /sse, POST /messages
//! cargo run --release --example everything -- --bearer-secret <32+ bytes> --audience mcp-test
//! ```
//!
//! The authentication flags (`--bearer-secret`, `--api-key`, `--basic`,
//! `--require-scope`, `--resource-url`) are in `everything/auth.rs`; the
//! soak flags (`--soak` for the fault tools, `--max-listeners-per-peer` and
//! the other bounds) in `everything/soak.rs`; the flags that make several processes one
//! server behind a load balancer (`--redis`, `--state-key`) in `everything/shared.rs`; the
//! rate limit of `tools/call` (`--rate-limit RATE[:BURST]`) in `everything/ratelimit.rs`; the
//! Prometheus endpoint (`--metrics HOST:PORT`) in `everything/metrics.rs`; the Events
//! extension's fixture (`--events-fixture`) in `everything/events.rs`; the tool with secure
//! parameters (SEP-3221) in `everything/secure.rs`. The skills it serves
//! (SEP-2640) are the tree `everything/skills/`.

use scope_fixture::ScopeFixture;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clap::Parser;
use mcp_server::catalog::Registry;
use mcp_server::prelude::*;
use mcp_server::protocol::model::{CompleteParams, CompleteReference};
use mcp_server::server_card::{CatalogEntry, catalog};
use mcp_server::server_json::RegistryEntry;
use mcp_server::skills::Skills;
use serde_json::Map;
use tokio_util::sync::CancellationToken;

#[path = "everything/apps.rs"]
mod apps;
#[path = "everything/auth.rs"]
mod auth;
#[path = "everything/events.rs"]
mod events;
#[path = "everything/metrics.rs"]
mod metrics;
#[path = "everything/ratelimit.rs"]
mod ratelimit;
#[path = "everything/scenarios.rs"]
mod scenarios;
#[path = "everything/scope_fixture.rs"]
mod scope_fixture;
#[path = "everything/secure.rs"]
mod secure;
#[path = "everything/shared.rs"]
mod shared;
#[path = "everything/soak.rs"]
mod soak;
#[path = "everything/tasks.rs"]
mod tasks;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[derive(Parser, Debug)]
#[command(about = "The MCP conformance fixture server (both eras)")]
struct Args {
    /// Serve newline-delimited JSON-RPC on stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Address to serve Streamable HTTP on (without `--stdio`).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to serve Streamable HTTP on; 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Also serve the 2024-11-05 HTTP+SSE transport: `GET /sse` opens the stream, whose
    /// `endpoint` event names `/messages?sessionId=<id>`, where the messages are POSTed.
    #[arg(long)]
    sse_pair: bool,
    /// On Ctrl-C or SIGTERM, how long the calls in flight and the tasks running here get to
    /// finish before they are cancelled (resumable tasks handed back to the queue).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    shutdown_grace_ms: u64,
    #[command(flatten)]
    auth: auth::AuthArgs,
    #[command(flatten)]
    soak: soak::SoakArgs,
    #[command(flatten)]
    shared: shared::SharedArgs,
    #[command(flatten)]
    rate_limit: ratelimit::RateLimitArgs,
    #[command(flatten)]
    metrics: metrics::MetricsArgs,
    #[command(flatten)]
    events: events::EventsArgs,
}

/// A short WAV file (8 kHz, 8-bit mono, 0.01 s of silence), base64.
fn wav() -> String {
    let samples = [128u8; 80];
    let mut w = Vec::with_capacity(44 + samples.len());
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    w.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    w.extend_from_slice(&1u16.to_le_bytes()); // block align
    w.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    w.extend_from_slice(b"data");
    w.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    w.extend_from_slice(&samples);
    STANDARD.encode(w)
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Asks the client for one input: a real server-to-client request for a
/// legacy client, an MRTR round for a modern one.
async fn ask(ctx: &Ctx, key: &str, method: &str, params: Value) -> Result<Value, HandlerError> {
    let mut answers = ctx.input(InputRequired::new().request(key, method, params)).await?;
    Ok(answers.remove(key).unwrap_or_default())
}

fn elicit_one(message: &str, field: &str, ty: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": ty}}, "required": [field]}
    })
}

fn string_arg(args: &Map<String, Value>, key: &str) -> String {
    args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn content_tools(b: mcp_server::McpServerBuilder, scopes: ScopeFixture) -> mcp_server::McpServerBuilder {
    b.tool(
        scopes.tool(
            Tool::new("test_simple_text", "Returns a simple text response", |_, _| async {
                "This is a simple text response for testing."
            })
            .input_schema(empty_schema()),
        ),
    )
    .tool(
        Tool::new("test_image_content", "Returns an image", |_, _| async {
            Content::image(PNG, "image/png")
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_audio_content", "Returns audio", |_, _| async {
            Content::audio(wav(), "audio/wav")
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_embedded_resource", "Returns an embedded resource", |_, _| async {
            Content::resource(ResourceContents::text(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            ))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            |_, _| async {
                vec![
                    Content::text("Multiple content types test:"),
                    Content::image(PNG, "image/png"),
                    Content::resource(ResourceContents::text(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    )),
                ]
            },
        )
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_error_handling", "Always returns a tool error", |_, _| async {
            CallToolResult::error("This tool intentionally returns an error for testing")
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new(
            "json_schema_2020_12_tool",
            "A tool whose input schema uses JSON Schema 2020-12 keywords",
            |args, _| async move { format!("Received: {}", Value::Object(args)) },
        )
        .input_schema(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })),
    )
}

fn streaming_tools(b: mcp_server::McpServerBuilder) -> mcp_server::McpServerBuilder {
    b.tool(
        Tool::new(
            "test_tool_with_logging",
            "Sends three log messages while it runs",
            |_, ctx: Ctx| async move {
                let steps = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, step) in steps.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.log(LoggingLevel::Info, Some("everything"), json!(step)).await;
                }
                "Tool with logging executed successfully"
            },
        )
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100",
            |_, ctx: Ctx| async move {
                for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(p, Some(100.0), Some(&format!("Completed step {}", i + 1)))
                        .await;
                }
                "Tool with progress completed"
            },
        )
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new(
            "test_reconnection",
            "Takes a moment, for SSE reconnection tests",
            |_, _| async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                "Reconnection test completed"
            },
        )
        .input_schema(empty_schema()),
    )
}

fn client_request_tools(b: mcp_server::McpServerBuilder) -> mcp_server::McpServerBuilder {
    b.tool(
        Tool::new("test_sampling", "Asks the client's model to answer a prompt", |args, ctx: Ctx| async move {
            let prompt = string_arg(&args, "prompt");
            let params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 100
            });
            let reply = ask(&ctx, "sampling", "sampling/createMessage", params).await?;
            let text = reply["content"]["text"].as_str().unwrap_or_default().to_owned();
            Ok(format!("LLM response: {text}"))
        })
        .input_schema(json!({
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send"}},
            "required": ["prompt"]
        })),
    )
    .tool(
        Tool::new("test_elicitation", "Asks the user for a username and an email", |args, ctx: Ctx| async move {
            let reply = ask(
                &ctx,
                "elicitation",
                "elicitation/create",
                json!({
                    "message": string_arg(&args, "message"),
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "username": {"type": "string", "description": "User's response"},
                            "email": {"type": "string", "description": "User's email address"}
                        },
                        "required": ["username", "email"]
                    }
                }),
            )
            .await?;
            Ok(format!("User response: action={}, content={}", reply["action"], reply["content"]))
        })
        .input_schema(json!({
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"]
        })),
    )
    .tool(
        Tool::new("test_elicitation_sep1034_defaults", "Elicits fields that have defaults", |_, ctx: Ctx| async move {
            let reply = ask(
                &ctx,
                "elicitation",
                "elicitation/create",
                json!({
                    "message": "Please review and update the form fields with defaults",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "User name", "default": "John Doe"},
                            "age": {"type": "integer", "description": "User age", "default": 30},
                            "score": {"type": "number", "description": "User score", "default": 95.5},
                            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                            "verified": {"type": "boolean", "description": "Verification status", "default": true}
                        }
                    }
                }),
            )
            .await?;
            Ok(format!(
                "Elicitation completed: action={}, content={}",
                reply["action"], reply["content"]
            ))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_elicitation_sep1330_enums", "Elicits the enum shapes of SEP-1330", |_, ctx: Ctx| async move {
            let reply = ask(
                &ctx,
                "elicitation",
                "elicitation/create",
                json!({
                    "message": "Please select options from the enum fields",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                            "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}
                            ]},
                            "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"]},
                            "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                            "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
                                "items": {"anyOf": [
                                    {"const": "value1", "title": "First Choice"},
                                    {"const": "value2", "title": "Second Choice"},
                                    {"const": "value3", "title": "Third Choice"}
                                ]}}
                        },
                        "required": []
                    }
                }),
            )
            .await?;
            Ok(format!(
                "Elicitation completed: action={}, content={}",
                reply["action"], reply["content"]
            ))
        })
        .input_schema(empty_schema()),
    )
}

fn modern_tools(b: mcp_server::McpServerBuilder) -> mcp_server::McpServerBuilder {
    b.tool(
        Tool::new(
            "test_missing_capability",
            "Needs the client's sampling capability",
            |_, ctx: Ctx| async move {
                if !ctx.client_capabilities().sampling() {
                    return Err(HandlerError::Rpc(RpcError::missing_capability(json!({"sampling": {}}))));
                }
                Ok("Client declared the sampling capability")
            },
        )
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new(
            "test_x_mcp_header",
            "Echoes a region that travels in the Mcp-Param-Region header",
            |args, _| async move { format!("Region: {}", string_arg(&args, "region")) },
        )
        .input_schema(json!({
            "type": "object",
            "properties": {"region": {"type": "string", "description": "A region", "x-mcp-header": "Region"}},
            "required": ["region"]
        })),
    )
}

fn mrtr_tools(b: mcp_server::McpServerBuilder) -> mcp_server::McpServerBuilder {
    let name_request = || elicit_one("What is your name?", "name", "string");
    b.tool(
        Tool::new("test_input_required_result_elicitation", "Asks for the user's name, then greets", move |_, ctx: Ctx| async move {
            let reply = ask(&ctx, "user_name", "elicitation/create", name_request()).await?;
            Ok(format!("Hello, {}!", reply["content"]["name"].as_str().unwrap_or("stranger")))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_input_required_result_sampling", "Asks the client's model a question", |_, ctx: Ctx| async move {
            let params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
                "maxTokens": 100
            });
            let reply = ask(&ctx, "capital_question", "sampling/createMessage", params).await?;
            Ok(format!("Sampling response: {}", reply["content"]["text"].as_str().unwrap_or_default()))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_input_required_result_list_roots", "Asks the client for its roots", |_, ctx: Ctx| async move {
            let reply = ask(&ctx, "client_roots", "roots/list", json!({})).await?;
            let uris: Vec<&str> = reply["roots"].as_array().into_iter().flatten().filter_map(|r| r["uri"].as_str()).collect();
            Ok(format!("Client roots: {}", uris.join(", ")))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_input_required_result_request_state", "Round-trips a sealed requestState", |_, ctx: Ctx| async move {
            let confirm = elicit_one("Please confirm", "ok", "boolean");
            let ask_it = InputRequired::new().request("confirm", "elicitation/create", confirm).with_state(json!({"checkpoint": "confirm"}));
            let answers = ctx.input(ask_it).await?;
            // A modern retry only reaches here with a verified, unexpired state.
            let verified = ctx.era() == Era::Legacy || ctx.request_state() == Some(&json!({"checkpoint": "confirm"}));
            if !verified {
                return Err(HandlerError::Rpc(RpcError::invalid_params("Invalid requestState")));
            }
            Ok(format!("state-ok: confirmed={}", answers["confirm"]["content"]["ok"]))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_input_required_result_tampered_state", "Rejects an altered requestState", |_, ctx: Ctx| async move {
            let confirm = elicit_one("Please confirm", "ok", "boolean");
            let ask_it = InputRequired::new().request("confirm", "elicitation/create", confirm).with_state(json!({"nonce": "integrity"}));
            ctx.input(ask_it).await?;
            Ok("state verified")
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_input_required_result_multiple_inputs", "Asks for a name, a greeting and the roots at once", move |_, ctx: Ctx| async move {
            let greeting = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                "maxTokens": 50
            });
            let ask_all = InputRequired::new()
                .request("user_name", "elicitation/create", name_request())
                .request("greeting", "sampling/createMessage", greeting)
                .request("client_roots", "roots/list", json!({}))
                .with_state(json!({"round": 1}));
            let a = ctx.input(ask_all).await?;
            Ok(format!(
                "name={}, greeting={}, roots={}",
                a["user_name"]["content"]["name"], a["greeting"]["content"]["text"], a["client_roots"]["roots"]
            ))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_input_required_result_multi_round", "Asks two questions in two rounds", |_, ctx: Ctx| async move {
            let step1 = elicit_one("Step 1: What is your name?", "name", "string");
            let a = ctx.input(InputRequired::new().request("step1", "elicitation/create", step1).with_state(json!({"step": 1}))).await?;
            let name = a["step1"]["content"]["name"].as_str().unwrap_or_default().to_owned();
            let step2 = elicit_one("Step 2: What is your favorite color?", "color", "string");
            let b = ctx.input(InputRequired::new().request("step2", "elicitation/create", step2).with_state(json!({"step": 2}))).await?;
            let color = b["step2"]["content"]["color"].as_str().unwrap_or_default().to_owned();
            Ok(format!("Hello {name}, your favorite color is {color}"))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_input_required_result_capabilities", "Asks only for what the client declared", |_, ctx: Ctx| async move {
            let caps = ctx.client_capabilities();
            let mut ask_what = InputRequired::new();
            if caps.sampling() {
                let p = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}], "maxTokens": 20});
                ask_what = ask_what.request("sample", "sampling/createMessage", p);
            }
            if caps.elicitation_form() {
                ask_what = ask_what.request("user_name", "elicitation/create", elicit_one("What is your name?", "name", "string"));
            }
            if caps.roots() {
                ask_what = ask_what.request("client_roots", "roots/list", json!({}));
            }
            if ask_what.requests.is_empty() {
                return Ok("The client declared no input capability".to_owned());
            }
            let answers = ctx.input(ask_what).await?;
            Ok(format!("Received {} input(s)", answers.len()))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_streaming_elicitation", "Needs the user's input through elicitation", move |_, ctx: Ctx| async move {
            let reply = ask(&ctx, "user_name", "elicitation/create", name_request()).await?;
            Ok(format!("Elicited: {}", reply["content"]))
        })
        .input_schema(empty_schema()),
    )
    .tool(
        Tool::new("test_logging_tool", "Logs at info and debug (modern: only with a _meta log level)", |_, ctx: Ctx| async move {
            ctx.log(LoggingLevel::Info, Some("everything"), json!("test_logging_tool: info")).await;
            ctx.log(LoggingLevel::Debug, Some("everything"), json!("test_logging_tool: debug")).await;
            "Logging tool completed"
        })
        .input_schema(empty_schema()),
    )
    .prompt(Prompt::new("test_input_required_result_prompt", "A prompt that needs context from the user", |_, ctx: Ctx| async move {
        let request = elicit_one("What context should the prompt use?", "context", "string");
        let reply = ask(&ctx, "user_context", "elicitation/create", request).await?;
        let context = reply["content"]["context"].as_str().unwrap_or_default().to_owned();
        Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!(
            "Use this context: {context}"
        )))]))
    }))
}

fn resources(b: mcp_server::McpServerBuilder, scopes: ScopeFixture) -> mcp_server::McpServerBuilder {
    b.resource(
        scopes.resource(
            Resource::text(
                "test://static-text",
                "static-text",
                "text/plain",
                "This is the content of the static text resource.",
            )
            .description("A static text resource"),
        ),
    )
    .resource(
        Resource::new("test://static-binary", "static-binary", |uri, _, _| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::blob(
                uri,
                "image/png",
                PNG,
            )]))
        })
        .mime_type("image/png")
        .description("A static binary resource (a PNG image)"),
    )
    .resource(
        Resource::text(
            "test://watched-resource",
            "watched-resource",
            "text/plain",
            "Watched resource content",
        )
        .description("A resource clients may subscribe to"),
    )
    .resource_template(
        scopes.template(
            ResourceTemplate::new("test://template/{id}/data", "template", |uri, vars, _| async move {
                let id = vars.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    uri,
                    "application/json",
                    text,
                )]))
            })
            .mime_type("application/json")
            .description("A resource template with an id variable"),
        ),
    )
}

fn prompts(b: mcp_server::McpServerBuilder, scopes: ScopeFixture) -> mcp_server::McpServerBuilder {
    let user_text = |t: String| PromptMessage::user(Content::text(t));
    b.prompt(scopes.prompt(Prompt::new(
        "test_simple_prompt",
        "A simple prompt without arguments",
        move |_, _| async move {
            Ok(GetPromptResult::new(vec![user_text(
                "This is a simple prompt for testing.".into(),
            )]))
        },
    )))
    .prompt(
        Prompt::new(
            "test_prompt_with_arguments",
            "A prompt with two arguments",
            move |args, _| async move {
                let text = format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    string_arg(&args, "arg1"),
                    string_arg(&args, "arg2")
                );
                Ok(GetPromptResult::new(vec![user_text(text)]))
            },
        )
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true),
    )
    .prompt(
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt with an embedded resource",
            move |args, _| async move {
                let resource = ResourceContents::text(
                    string_arg(&args, "resourceUri"),
                    "text/plain",
                    "Embedded resource content for testing.",
                );
                Ok(GetPromptResult::new(vec![
                    PromptMessage::user(Content::resource(resource)),
                    user_text("Please process the embedded resource above.".into()),
                ]))
            },
        )
        .argument("resourceUri", "URI of the resource to embed", true),
    )
    .prompt(Prompt::new(
        "test_prompt_with_image",
        "A prompt with an image",
        move |_, _| async move {
            Ok(GetPromptResult::new(vec![
                PromptMessage::user(Content::image(PNG, "image/png")),
                user_text("Please analyze the image above.".into()),
            ]))
        },
    ))
    .prompt_completion(
        "test_prompt_with_arguments",
        "arg1",
        complete_from(&["paris", "park", "party"]),
    )
    .prompt_completion(
        "test_prompt_with_arguments",
        "arg2",
        complete_from(&["red", "green", "blue"]),
    )
    .template_completion(
        "test://template/{id}/data",
        "id",
        complete_from(&["1", "2", "3", "123"]),
    )
}

/// A completion handler suggesting the candidates that start with the typed prefix.
fn complete_from(
    candidates: &'static [&'static str],
) -> impl Fn(CompleteParams, Ctx) -> std::future::Ready<Result<Completion, HandlerError>> + Send + Sync + 'static {
    move |p: CompleteParams, _| {
        let _ = matches!(p.reference, CompleteReference::Prompt { .. });
        let values = candidates
            .iter()
            .filter(|c| c.starts_with(&p.argument.value))
            .map(|c| (*c).to_owned())
            .collect();
        std::future::ready(Ok(Completion::from_values(values)))
    }
}

/// The broadcast topics that keep the dynamic tool and prompt equal on every instance sharing a
/// store (`--redis`): the catalog is code, so each instance applies the change itself.
const DYNAMIC_TOOL_TOPIC: &str = "everything/test_dynamic_tool";
const DYNAMIC_PROMPT_TOPIC: &str = "everything/test_dynamic_prompt";
/// How long a trigger waits for its broadcast to reach every instance.
const BROADCAST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Adds or removes `test_dynamic_tool` (nothing when it already is as asked).
fn set_dynamic_tool(registry: &Registry, present: bool, announce: bool) -> Result<(), HandlerError> {
    match (present, registry.snapshot().tool("test_dynamic_tool").is_some()) {
        (true, false) => {
            let tool = Tool::new("test_dynamic_tool", "A tool added at run time", |_, _| async {
                "dynamic"
            });
            let entry = tool.into_entry().map_err(|e| HandlerError::internal(e.to_string()))?;
            match announce {
                true => registry.add_tool(entry),
                false => registry.unannounced().add_tool(entry),
            }
        }
        (false, true) => {
            match announce {
                true => registry.remove_tool("test_dynamic_tool"),
                false => registry.unannounced().remove_tool("test_dynamic_tool"),
            };
        }
        _ => {}
    }
    Ok(())
}

/// Adds or removes `test_dynamic_prompt` (nothing when it already is as asked).
fn set_dynamic_prompt(registry: &Registry, present: bool, announce: bool) {
    match (present, registry.snapshot().prompt("test_dynamic_prompt").is_some()) {
        (true, false) => {
            let prompt = Prompt::new("test_dynamic_prompt", "A prompt added at run time", |_, _| async {
                Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(
                    "dynamic",
                ))]))
            });
            // A prompt without scopes always makes an entry.
            let Ok(entry) = prompt.into_entry() else { return };
            match announce {
                true => registry.add_prompt(entry),
                false => registry.unannounced().add_prompt(entry),
            }
        }
        (false, true) => {
            match announce {
                true => registry.remove_prompt("test_dynamic_prompt"),
                false => registry.unannounced().remove_prompt("test_dynamic_prompt"),
            };
        }
        _ => {}
    }
}

/// `test_trigger_tool_change` and `test_trigger_prompt_change`: each call adds or removes a
/// dynamic tool (prompt), so that list-changed notifications reach `subscriptions/listen` streams
/// and legacy sessions. With a shared store the change is broadcast first, and the call answers
/// once the bus has handed it to every instance, so that every instance lists the same catalog
/// by the time a client hears of the change or of the call's result.
fn add_triggers(server: &McpServer) -> Result<(), ServerError> {
    let registry = Arc::downgrade(server.registry());
    server.on_broadcast(DYNAMIC_TOOL_TOPIC, move |v| {
        if let Some(registry) = registry.upgrade()
            && let Err(e) = set_dynamic_tool(&registry, v["present"] == true, false)
        {
            tracing::warn!(error = %e, "dynamic tool not applied");
        }
    });
    let registry = Arc::downgrade(server.registry());
    server.on_broadcast(DYNAMIC_PROMPT_TOPIC, move |v| {
        if let Some(registry) = registry.upgrade() {
            set_dynamic_prompt(&registry, v["present"] == true, false);
        }
    });
    let (registry, engine) = (Arc::downgrade(server.registry()), server.engine().downgrade());
    server.add_tool(
        Tool::new(
            "test_trigger_tool_change",
            "Adds or removes test_dynamic_tool",
            move |_, _| {
                let (registry, engine) = (registry.clone(), engine.clone());
                async move {
                    let (Some(registry), Some(engine)) = (registry.upgrade(), engine.upgrade()) else {
                        return Err(HandlerError::internal("the server is gone"));
                    };
                    let present = registry.snapshot().tool("test_dynamic_tool").is_none();
                    // Every instance has the change before the caller hears of it.
                    engine
                        .broadcast_everywhere(DYNAMIC_TOOL_TOPIC, json!({ "present": present }), BROADCAST_WAIT)
                        .await
                        .map_err(|e| HandlerError::internal(e.to_string()))?;
                    set_dynamic_tool(&registry, present, true)?;
                    Ok(if present {
                        "test_dynamic_tool added"
                    } else {
                        "test_dynamic_tool removed"
                    })
                }
            },
        )
        .input_schema(empty_schema()),
    )?;
    let (registry, engine) = (Arc::downgrade(server.registry()), server.engine().downgrade());
    server.add_tool(
        Tool::new(
            "test_trigger_prompt_change",
            "Adds or removes test_dynamic_prompt",
            move |_, _| {
                let (registry, engine) = (registry.clone(), engine.clone());
                async move {
                    let (Some(registry), Some(engine)) = (registry.upgrade(), engine.upgrade()) else {
                        return Err(HandlerError::internal("the server is gone"));
                    };
                    let present = registry.snapshot().prompt("test_dynamic_prompt").is_none();
                    // Every instance has the change before the caller hears of it.
                    engine
                        .broadcast_everywhere(DYNAMIC_PROMPT_TOPIC, json!({ "present": present }), BROADCAST_WAIT)
                        .await
                        .map_err(|e| HandlerError::internal(e.to_string()))?;
                    set_dynamic_prompt(&registry, present, true);
                    Ok(if present {
                        "test_dynamic_prompt added"
                    } else {
                        "test_dynamic_prompt removed"
                    })
                }
            },
        )
        .input_schema(empty_schema()),
    )?;
    Ok(())
}

/// What builds one generation of the server (a restart builds the next from the same).
struct Build<'a> {
    soak: &'a soak::SoakArgs,
    shared: &'a shared::SharedArgs,
    rate_limit: &'a ratelimit::RateLimitArgs,
    events: &'a events::EventsArgs,
    scopes: ScopeFixture,
    durable: events::Durable,
}

async fn server(
    build: &Build<'_>,
    generation: &CancellationToken,
) -> Result<(McpServer, Option<mcp_store_redis::RedisReplayCache>), Box<dyn std::error::Error>> {
    let Build {
        soak,
        shared,
        rate_limit,
        events,
        scopes,
        ..
    } = *build;
    let b = McpServer::builder()
        .name("mcp-rs-everything")
        .version(env!("CARGO_PKG_VERSION"))
        .logging(true)
        .instructions("The conformance fixture of the mcp-rs library: every tool, resource and prompt the official conformance runner checks.");
    let b = scopes.methods(content_tools(b, scopes));
    let b = streaming_tools(b);
    let b = client_request_tools(b);
    let b = modern_tools(b);
    let b = mrtr_tools(b);
    let b = tasks::task_tools(b);
    let b = scenarios::scenario_tools(b)?;
    let b = secure::secure_tools(b);
    let b = soak.apply(b);
    let (b, seams) = shared.apply(b).await?;
    let b = rate_limit.apply(b);
    let b = events.apply(b, seams.as_ref(), &build.durable, generation)?;
    let replay = seams.map(|s| s.replay);
    let b = resources(b, scopes);
    // SEP-2640: the skills tree beside this example (a nested skill path, subfolders).
    let skills = Skills::from_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/everything/skills"))?;
    let b = b.skills(skills);
    let b = apps::app_tools(b)?;
    let server = prompts(b, scopes).build()?;
    add_triggers(&server)?;
    Ok((server, replay))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let args = Args::parse();
    // Every provider is built before the port is bound: a bad set-up binds nothing.
    let scopes = args.auth.scope_fixture();
    let auth = args.auth.plan(args.stdio).unwrap_or_else(|e| auth::exit(&e));
    let metrics = args.metrics.serve().await?;
    let build = Build {
        soak: &args.soak,
        shared: &args.shared,
        rate_limit: &args.rate_limit,
        events: &args.events,
        scopes,
        durable: events::Durable::new(),
    };
    let shutdown = CancellationToken::new();
    let generation = shutdown.child_token();
    let (server, replay) = server(&build, &generation).await?;
    if args.stdio {
        if let Some(addr) = metrics {
            eprintln!("metrics on http://{addr}/metrics");
        }
        server.serve_stdio().await?;
        return Ok(());
    }
    if args.shared.role == mcp_server::tasks::Role::Worker {
        // No listener: this instance runs the tasks of the shared queue until told to stop.
        println!("worker running");
        server
            .serve_workers(
                Duration::from_millis(args.shutdown_grace_ms),
                mcp_server::shutdown_signal(),
            )
            .await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await?;
    let local = listener.local_addr()?;
    let endpoint = format!("http://{local}/mcp");
    let stop = shutdown.clone();
    // Ctrl-C or SIGTERM: drain the calls in flight, then exit.
    let signal = mcp_server::shutdown_signal();
    tokio::spawn(async move {
        signal.await;
        stop.cancel();
    });
    // SEP-1699: the reconnection tool's POST stream is closed at once, and
    // the client resumes it with GET and Last-Event-ID.
    // A modern call silent for a second opens its stream (the suite's http-stream-cancellation
    // scenario reads a `data:` line of a slow call within 3 s).
    let config = HttpConfig::default()
        .poll_after(Duration::ZERO)
        .poll_tools(["test_reconnection"])
        .open_stream_after(Duration::from_secs(1))
        .shutdown_grace(Duration::from_millis(args.shutdown_grace_ms));
    let config = if args.sse_pair {
        config.sse_pair("/sse", "/messages")
    } else {
        config
    };
    // SEP-2127: its card at /mcp/server-card and the host's AI Catalog, made from the server.
    let entry = RegistryEntry::new(
        "io.github.mcp-rs/everything",
        "The conformance fixture of the mcp-rs library: every tool, resource and prompt checked",
    )
    .remote(endpoint.as_str());
    let card = server.server_card(&entry)?;
    let listed: Vec<CatalogEntry> = CatalogEntry::of_card(&card, format!("{endpoint}/server-card"))
        .into_iter()
        .collect();
    let config = config.with_server_card(card).with_catalog(catalog(&listed));
    let config = args.soak.http(config);
    let config = auth
        .apply(config, &endpoint, local.ip().is_loopback(), replay)
        .unwrap_or_else(|e| auth::exit(&e));
    // The first stdout line tells the harness (`cargo xtask conformance`) where to connect.
    println!("listening on {endpoint}");
    if let Some(addr) = metrics {
        println!("metrics on http://{addr}/metrics");
    }
    // Generations: the events fixture's restart control ends one (its sessions and streams)
    // and the next is built over the same log and subscriptions, served on the same socket
    // (connections arriving meanwhile wait in its backlog).
    let socket = listener.into_std()?;
    let (mut server, mut generation) = (server, generation);
    loop {
        let restart = {
            let (durable, ended) = (build.durable.clone(), generation.clone());
            tokio::spawn(async move {
                durable.restart_asked().await;
                ended.cancel();
            })
        };
        let listener = tokio::net::TcpListener::from_std(socket.try_clone()?)?;
        server.serve_http_on(listener, config.clone(), generation).await?;
        restart.abort();
        if shutdown.is_cancelled() {
            return Ok(());
        }
        build.durable.next_generation();
        generation = shutdown.child_token();
        server = self::server(&build, &generation).await?.0;
        tracing::info!("restarted: a new server over the same log and subscriptions");
    }
}
