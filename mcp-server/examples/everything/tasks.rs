//! The tools of the tasks scenarios (`tasks-*` of the conformance runner):
//! 2026-07-28 clients that declare `io.modelcontextprotocol/tasks` get a task
//! for the long ones (after the inline window), 2025-11-25 clients when
//! they send `params.task`.

use std::time::Duration;

use mcp_server::prelude::*;
use serde_json::Map;

use super::{ask, empty_schema, string_arg};

/// Longer than the inline window: a call that sleeps this long first is
/// handed to a task when the client allows it.
const PAST_THE_WINDOW: Duration = Duration::from_millis(300);

fn confirm_request(filename: &str) -> Value {
    json!({
        "message": format!("Delete {filename}?"),
        "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
    })
}

fn name_request(message: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    })
}

/// Whether this round of the call already has client input (a retry, or a
/// task resumed by `tasks/update`): then it does not wait again.
fn resumed(ctx: &Ctx) -> bool {
    ctx.input_responses().is_some_and(|r| !r.is_empty())
}

/// `test_resumable_count`: counts `steps` steps of `step_ms` each, saving a checkpoint after
/// every step; a run again after its worker stopped starts from the last one. Its result says
/// how many attempts it took and from which step the last one started.
fn resumable_count() -> Tool {
    Tool::new(
        "test_resumable_count",
        "Counts `steps` steps of `step_ms` ms, checkpointing each; resumes after its worker stops",
        |args: Map<String, Value>, ctx: Ctx| async move {
            let arg = |name: &str| args.get(name).and_then(Value::as_u64).unwrap_or(0);
            let (steps, step_ms) = (arg("steps").min(100_000), arg("step_ms").min(60_000));
            let from = ctx.resumed_from::<u64>()?.unwrap_or(0).min(steps);
            for done in from..steps {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(step_ms)) => {}
                    () = ctx.cancellation().cancelled() => return Err(HandlerError::tool("Cancelled")),
                }
                ctx.checkpoint(&(done + 1)).await?;
            }
            Ok(format!(
                "counted {steps} steps in {} attempts, from step {from}",
                ctx.attempt()
            ))
        },
    )
    .input_schema(json!({
        "type": "object",
        "properties": {
            "steps": {"type": "integer", "minimum": 0},
            "step_ms": {"type": "integer", "minimum": 0}
        },
        "required": ["steps"]
    }))
    .task_support(TaskSupport::Optional)
    .resumable()
}

pub(super) fn task_tools(b: mcp_server::McpServerBuilder) -> mcp_server::McpServerBuilder {
    b.tool(resumable_count())
        .tool(
            Tool::new(
                "greet",
                "Greets synchronously (never a task)",
                |args: Map<String, Value>, _| async move { format!("Hello, {}!", string_arg(&args, "name")) },
            )
            .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})),
        )
        .tool(
            Tool::new(
                "slow_compute",
                "Sleeps `seconds`, then answers (a task when allowed)",
                |args: Map<String, Value>, _| async move {
                    let seconds = args
                        .get("seconds")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0)
                        .clamp(0.0, 600.0);
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    format!("Computed {} after {seconds}s", string_arg(&args, "label"))
                },
            )
            .input_schema(json!({
                "type": "object",
                "properties": {"seconds": {"type": "number", "minimum": 0}, "label": {"type": "string"}}
            }))
            .task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new(
                "failing_job",
                "Fails with a tool error after a second (tasks only)",
                |_, _| async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    CallToolResult::error("The job failed")
                },
            )
            .input_schema(empty_schema())
            .task_support(TaskSupport::Required),
        )
        .tool(
            Tool::new(
                "protocol_error_job",
                "Ends with a protocol error (its task fails)",
                |_, _| async {
                    tokio::time::sleep(PAST_THE_WINDOW).await;
                    let failed: Result<CallToolResult> =
                        Err(RpcError::internal_with("The job hit a protocol error").into());
                    failed
                },
            )
            .input_schema(empty_schema())
            .task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new(
                "confirm_delete",
                "Asks for a confirmation, then deletes (a task when allowed)",
                |args: Map<String, Value>, ctx: Ctx| async move {
                    let filename = string_arg(&args, "filename");
                    if !resumed(&ctx) {
                        tokio::time::sleep(PAST_THE_WINDOW).await;
                    }
                    let reply = ask(&ctx, "confirm", "elicitation/create", confirm_request(&filename)).await?;
                    let confirmed = reply["action"] == "accept" && reply["content"]["confirm"] == true;
                    Ok(if confirmed {
                        format!("Deleted {filename}")
                    } else {
                        format!("Kept {filename}")
                    })
                },
            )
            .input_schema(
                json!({"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}),
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new(
                "multi_input",
                "Asks two questions at once (a task when allowed)",
                |_, ctx: Ctx| async move {
                    if !resumed(&ctx) {
                        tokio::time::sleep(PAST_THE_WINDOW).await;
                    }
                    let both = InputRequired::new()
                        .request("first", "elicitation/create", name_request("First name?"))
                        .request("second", "elicitation/create", name_request("Second name?"));
                    let answers = ctx.input(both).await?;
                    Ok(format!(
                        "Received: first={}, second={}",
                        answers["first"]["content"]["name"], answers["second"]["content"]["name"]
                    ))
                },
            )
            .input_schema(empty_schema())
            .task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new(
                "test_tool_with_task",
                "Asks for a name (MRTR), then finishes as a task",
                |_, ctx: Ctx| async move {
                    let reply = ask(
                        &ctx,
                        "user_name",
                        "elicitation/create",
                        name_request("What is your name?"),
                    )
                    .await?;
                    let name = reply["content"]["name"].as_str().unwrap_or("stranger").to_owned();
                    tokio::time::sleep(PAST_THE_WINDOW).await;
                    Ok(format!("Hello, {name}! The task is done."))
                },
            )
            .input_schema(empty_schema())
            .task_support(TaskSupport::Required),
        )
}
