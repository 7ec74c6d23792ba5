//! `tools/call`: task mode, input validation, the guarded handler run,
//! output validation, and per-revision rendering.

use std::sync::Arc;

use mcp_protocol::model::{CallToolParamsRef, CallToolResult};
use mcp_protocol::task_mode::{TaskMode, refusal, task_mode};
use mcp_protocol::{Era, Feature, Revision};
use serde_json::{Map, Value};

use super::{Reply, Runtime};
use crate::api::Ctx;
use crate::api::HandlerError;
use crate::catalog::ToolEntry;
use crate::guard::Interrupted;
use crate::mrtr::{RoundLimits, run_rounds};
use crate::tasks::Settled;

/// Whether the caller enabled tasks for this call: a task-augmented request
/// under core tasks (legacy), or the tasks extension declared (modern; a
/// legacy `task` param is ignored there).
fn tasks_enabled(ctx: &Ctx, task: Option<&Value>) -> bool {
    match ctx.era() {
        Era::Legacy => task.is_some() && ctx.revision().is_some_and(|r| r.has(Feature::CoreTasks)),
        Era::Modern => ctx.client_capabilities().tasks_extension(),
    }
}

pub(super) async fn call(rt: &Runtime, ctx: Ctx, params: &Map<String, Value>) -> Reply {
    let p = match CallToolParamsRef::parse(params) {
        Ok(p) => p,
        Err(e) => return Reply::Error(e),
    };
    let revision = ctx.revision();
    // A tool hidden from the caller answers exactly as an unknown one.
    let Some(tool) = rt.tool_for(ctx.auth(), p.name) else {
        return Reply::Result(CallToolResult::error(format!("Unknown tool: {}", p.name)).render(revision));
    };
    let enabled = tasks_enabled(&ctx, p.task);
    let no_args = Value::Object(Map::new());
    let args = p.arguments.unwrap_or(&no_args);
    let owned = || args.as_object().cloned().unwrap_or_default();
    match task_mode(tool.def.task_support, enabled, ctx.era()) {
        TaskMode::Refuse => Reply::Error(refusal()),
        TaskMode::Inline => {
            let settled = execute(RoundLimits::of(rt.config()), &tool, args, ctx).await;
            in_place(rt, params, revision, settled)
        }
        TaskMode::TaskFirst => rt.task_first(ctx, tool, owned(), p.task).await,
        TaskMode::Escalate => rt.escalate(ctx, tool, owned(), params).await,
    }
}

/// Runs one round of a tool call: validates the arguments, runs the
/// handler (guarded; legacy input rounds included), validates structured
/// output, and renders the result for the caller's revision. `args` is the
/// arguments object (a `Value`, so that it is validated without a copy).
pub(crate) async fn execute(limits: RoundLimits, tool: &Arc<ToolEntry>, args: &Value, ctx: Ctx) -> Settled {
    let revision = ctx.revision();
    let render = |r: CallToolResult| Settled::Done(Ok(r.render(revision)));
    if let Some(schema) = &tool.input
        && let Err(violations) = schema.validate(args)
    {
        return render(CallToolResult::error(format!("Invalid tool input: {violations}")));
    }
    // Each round gets its own copy of the arguments (the handler owns them).
    let call = |ctx: Ctx| tool.handler.call(args.as_object().cloned().unwrap_or_default(), ctx);
    let (outcome, ctx) = match run_rounds(limits.for_tool(tool), &tool.def.name, ctx, call).await {
        Ok(o) => o,
        Err(Interrupted::Cancelled) => return Settled::Cancelled,
        Err(Interrupted::Panicked) => return Settled::Panicked,
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
        Err(HandlerError::Rpc(e)) => Settled::Done(Err(e)),
        Err(HandlerError::InputRequired(ir)) => Settled::Input(ir, ctx),
        // A handler that gave up because its call was cancelled is not a failure.
        Err(_) if ctx.is_cancelled() => {
            tracing::debug!(tool = %tool.def.name, "tool call cancelled");
            Settled::Cancelled
        }
        Err(HandlerError::Tool(message)) => render(CallToolResult::error(message)),
        Err(e) => {
            tracing::error!(tool = %tool.def.name, error = %e.log_text(), "tool failed");
            render(CallToolResult::error("Internal tool error"))
        }
    }
}

/// Answers a call's outcome in place (not as a task): an input request
/// becomes the modern `input_required` result (sealed `requestState`), a
/// panic a tool error without detail.
pub(crate) fn in_place(
    rt: &Runtime,
    params: &Map<String, Value>,
    revision: Option<Revision>,
    settled: Settled,
) -> Reply {
    match settled {
        Settled::Done(Ok(v)) => Reply::Result(v),
        Settled::Done(Err(e)) => Reply::Error(e),
        Settled::Input(ir, ctx) => match rt.input_required(&ctx, Some(params), *ir) {
            Ok(v) => Reply::Result(v),
            Err(e) => Reply::Error(e),
        },
        Settled::Panicked => Reply::Result(CallToolResult::error("Internal tool error").render(revision)),
        Settled::Cancelled => Reply::Cancelled,
    }
}
