//! `tools/call`: task mode, input validation, the guarded handler run,
//! output validation, and per-revision rendering.

use mcp_protocol::model::{CallToolParams, CallToolResult};
use mcp_protocol::task_mode::{TaskMode, refusal, task_mode};
use mcp_protocol::{Era, Feature};
use serde_json::{Map, Value};

use super::{Reply, Runtime, parse_params};
use crate::ctx::Ctx;
use crate::guard::Interrupted;
use crate::handler::HandlerError;

/// Whether the caller enabled tasks for this call: a task-augmented request
/// under core tasks (legacy), or the tasks extension declared (modern).
fn tasks_enabled(ctx: &Ctx, p: &CallToolParams) -> bool {
    match ctx.era() {
        Era::Legacy => p.task.is_some() && ctx.revision().is_some_and(|r| r.has(Feature::CoreTasks)),
        Era::Modern => ctx.client_capabilities().tasks_extension(),
    }
}

pub(super) async fn call(rt: &Runtime, ctx: Ctx, params: &Map<String, Value>) -> Reply {
    let p: CallToolParams = match parse_params(params) {
        Ok(p) => p,
        Err(e) => return Reply::Error(e),
    };
    let revision = ctx.revision();
    let render = |r: CallToolResult| Reply::Result(r.render(revision));
    let catalog = rt.registry.snapshot();
    let Some(tool) = catalog.tool(&p.name).cloned() else {
        return render(CallToolResult::error(format!("Unknown tool: {}", p.name)));
    };
    match task_mode(tool.def.task_support, tasks_enabled(&ctx, &p), ctx.era()) {
        TaskMode::Refuse => return Reply::Error(refusal()),
        // Tasks are not offered yet (no `tasks` capability is advertised),
        // so calls that could become tasks run inline.
        TaskMode::Inline | TaskMode::TaskFirst | TaskMode::Escalate => {}
    }
    let args = p.arguments.unwrap_or_default();
    if let Some(schema) = &tool.input
        && let Err(violations) = schema.validate(&Value::Object(args.clone()))
    {
        return render(CallToolResult::error(format!("Invalid tool input: {violations}")));
    }
    let handler = tool.handler.clone();
    let call = move |ctx: Ctx| handler.call(args.clone(), ctx);
    let (outcome, ctx) = match rt.run_rounds(&tool.def.name, ctx, call).await {
        Ok(o) => o,
        Err(Interrupted::Cancelled) => return Reply::Cancelled,
        Err(Interrupted::Panicked) => return render(CallToolResult::error("Internal tool error")),
        Err(Interrupted::TimedOut) => return render(CallToolResult::error("Tool execution timed out")),
    };
    match outcome {
        Ok(result) => {
            if let (Some(schema), Some(structured), false) = (&tool.output, &result.structured_content, result.is_error)
                && let Err(violations) = schema.validate(structured)
            {
                tracing::error!(tool = %tool.def.name, %violations, "structured output does not match outputSchema");
                return render(CallToolResult::error(format!("Invalid tool output: {violations}")));
            }
            render(result)
        }
        Err(HandlerError::Rpc(e)) => Reply::Error(e),
        Err(HandlerError::InputRequired(ir)) => match rt.input_required(&ctx, Some(params), *ir) {
            Ok(v) => Reply::Result(v),
            Err(e) => Reply::Error(e),
        },
        Err(HandlerError::Internal(msg)) => {
            tracing::error!(tool = %tool.def.name, error = %msg, "tool failed");
            render(CallToolResult::error("Internal tool error"))
        }
    }
}
