//! The fixture of the conformance suite's newer server scenarios (modelcontextprotocol/conformance,
//! `src/scenarios/server/`; each file and commit is named beside what it needs):
//!
//! - `http-stream-cancellation.ts` (4d824f7ce2d5): `test_tool_slow` runs `durationMs` (default
//!   5 s) unless cancelled, `test_tool_fast` answers at once. The scenario wants a `data:` line
//!   within 3 s of a slow call that sends no notification: the fixture opens a silent modern
//!   call's stream after 1 s (`HttpConfig::open_stream_after`, in `main`).
//! - `per-request-loglevel.ts` (4d824f7ce2d5): `test_logging_tool` (beside the other tools) and
//!   `test_tool_fast`, the concurrent call that asks for no log.
//! - `sep-2106.ts` (d4192ef186f4) and `sep-2106-structured-content.ts` (cf8ac79d9aa8): tools whose
//!   output schema's root is an array or a number, and one whose input schema is a `oneOf`. A
//!   2026-07-28 client gets the array and the number in `structuredContent`; a legacy client gets
//!   their JSON as text (its revision's schema allows an object only).
//! - `legacy-extensions.ts` (415be5264f44): the `com.example/conformance` (nested settings) and
//!   `com.example/empty` extensions, declared in the legacy era only (the scenario's settings
//!   hold a `null`, which no 2026-07-28 declaration may), and `test_legacy_extension_capabilities`, which reports the
//!   extensions the client declared as the server read them.

use mcp_server::prelude::*;
use mcp_server::{Eras, Extension, ExtensionError};

use super::empty_schema;

/// The forecast the array-output tool returns.
fn forecast() -> Value {
    json!([
        {"hour": "09:00", "temp": 14.5, "conditions": "cloudy"},
        {"hour": "12:00", "temp": 18.0, "conditions": "sunny"},
        {"hour": "15:00", "temp": 17.5, "conditions": "windy"}
    ])
}

/// The tools and extensions of the newer scenarios.
pub(crate) fn scenario_tools(b: mcp_server::McpServerBuilder) -> Result<mcp_server::McpServerBuilder, ExtensionError> {
    // Legacy only: the scenario is pinned to 2025-11-25, and a `null` in settings is not a
    // 2026-07-28 JSONObject (the runtime refuses to declare it there).
    let conformance = Extension::new("com.example/conformance")?
        .settings(json!({"nested": {"enabled": true, "limit": 3}, "values": [null, "b", 4]}))?
        .eras(Eras::Legacy);
    let b = b
        .extension(conformance)
        .extension(Extension::new("com.example/empty")?.eras(Eras::Legacy))
        .tool(
            Tool::new("test_tool_slow", "Runs for durationMs (default 5000) unless cancelled", |args, ctx: Ctx| async move {
                let ms = args.get("durationMs").and_then(Value::as_u64).unwrap_or(5000).min(60_000);
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                    () = ctx.cancellation().cancelled() => return Err(HandlerError::tool("cancelled")),
                }
                Ok(format!("Slept for {ms}ms"))
            })
            .input_schema(json!({
                "type": "object",
                "properties": {"durationMs": {"type": "integer", "minimum": 0, "maximum": 60000, "default": 5000}}
            })),
        )
        .tool(Tool::new("test_tool_fast", "Answers at once", |_, _| async { "Fast response" }).input_schema(empty_schema()))
        .tool(
            Tool::new("sep_2106_array_output_tool", "An hourly forecast: structured output that is an array", |_, _| async {
                CallToolResult::structured(forecast())
            })
            .input_schema(empty_schema())
            .output_schema(json!({
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"hour": {"type": "string"}, "temp": {"type": "number"}, "conditions": {"type": "string"}},
                    "required": ["hour", "temp", "conditions"]
                }
            })),
        )
        .tool(
            Tool::new("sep_2106_primitive_output_tool", "A count: structured output that is a number", |_, _| async {
                CallToolResult::structured(json!(42))
            })
            .input_schema(empty_schema())
            .output_schema(json!({"type": "number"})),
        )
        .tool(
            Tool::new("sep_2106_oneof_input_tool", "Finds an item by id or by name (a oneOf input)", |args, _| async move {
                match (args.get("id"), args.get("name")) {
                    (Some(id), _) => format!("Found by id: {id}"),
                    (_, Some(name)) => format!("Found by name: {name}"),
                    _ => "Nothing to find".to_owned(),
                }
            })
            .input_schema(json!({
                "type": "object",
                "oneOf": [
                    {"properties": {"id": {"type": "string", "format": "uuid"}}, "required": ["id"]},
                    {"properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}
                ]
            })),
        )
        .tool(
            Tool::new(
                "test_legacy_extension_capabilities",
                "Reports the extensions the client declared, as the server read them",
                |_, ctx: Ctx| async move {
                    let declared = ctx.client_capabilities().raw().get("extensions").cloned();
                    json!({"extensions": declared.unwrap_or_else(|| json!({}))}).to_string()
                },
            )
            .input_schema(empty_schema()),
        );
    Ok(b)
}
