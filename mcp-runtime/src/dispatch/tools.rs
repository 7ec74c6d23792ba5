//! `tools/call`: the task-mode decision (behaviour invariant 8), then the call inline or as a
//! task. The route read the params and looked the tool up once ([`ToolCall`]); the run itself
//! (validation, the guarded handler, rendering) is `exec::tool`'s, shared with the tasks.

use mcp_protocol::task_mode::{TaskMode, refusal, task_mode};
use mcp_protocol::{Era, Feature, Params, RpcError};
use serde_json::{Map, Value};

use super::parts::Parts;
use super::route::ToolCall;
use crate::api::Ctx;
use crate::exec::tool::{Arguments, Settled, execute, in_place};
use crate::reply::Reply;

/// Whether the caller enabled tasks for this call: a task-augmented request
/// under core tasks (legacy), or the tasks extension declared (modern; a
/// legacy `task` param is ignored there).
fn tasks_enabled(ctx: &Ctx, task: Option<&str>) -> bool {
    match ctx.era() {
        Era::Legacy => task.is_some() && ctx.revision().is_some_and(|r| r.has(Feature::CoreTasks)),
        Era::Modern => ctx.client_capabilities().tasks_extension(),
    }
}

/// Runs a routed `tools/call` (its params as the route checked them).
pub(super) async fn call(parts: &Parts<'_>, ctx: Ctx, params: &Params, call: &ToolCall) -> Reply {
    if let Some(e) = &call.invalid {
        return Reply::Error(RpcError::clone(e));
    }
    let revision = ctx.revision();
    // A tool hidden from the caller answers exactly as an unknown one: -32602.
    let Some(tool) = call.tool.clone() else {
        return Reply::Error(RpcError::unknown_tool(&params.str("name").unwrap_or_default()));
    };
    let task_text = params.raw("task").filter(|t| *t != "null");
    let enabled = tasks_enabled(&ctx, task_text);
    // The arguments are parsed where they are needed, once (the route checked they are an
    // object or absent); a handler that reads their text may get that instead.
    let read = || match params.value("arguments") {
        Some(Value::Object(args)) => args,
        _ => Map::new(),
    };
    match task_mode(tool.def.task_support, enabled, ctx.era()) {
        TaskMode::Refuse => Reply::Error(refusal()),
        TaskMode::Inline => {
            let era = ctx.era();
            let text = match params.raw("arguments") {
                Some(text) if text != "null" => text,
                _ => "{}",
            };
            let args = Arguments {
                text: Some(text),
                read: &read,
            };
            match execute(parts.limits(), &tool, args, ctx).await {
                // Written straight to JSON, decorated for the era on the way.
                Settled::Done(Ok(out)) => out.answer(era, parts.server_info),
                settled => in_place(parts.rounds, params, revision, settled),
            }
        }
        TaskMode::TaskFirst => {
            let task = params.value("task").filter(|t| !t.is_null());
            // Boxed, as the escalation below: a task's start would size every inline call.
            Box::pin(parts.tasks.task_first(ctx, tool, read(), task.as_ref())).await
        }
        TaskMode::Escalate => Box::pin(parts.tasks.escalate(parts.rounds, ctx, tool, read(), params)).await,
    }
}
