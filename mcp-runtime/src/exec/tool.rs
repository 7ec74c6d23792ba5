//! One run of a tool call: the arguments validated, the handler run through its rounds
//! (guarded), structured output validated, the result rendered for the caller's revision; and
//! how an outcome is answered in place (not as a task).

use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::model::CallToolResult;
use mcp_protocol::model::render::encode_call_result;
use mcp_protocol::{Era, Params, Revision, RpcError};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::guard::Interrupted;
use super::rounds::Rounds;
use super::{RoundLimits, run_rounds};
use crate::api::{Ctx, HandlerError, InputRequired};
use crate::catalog::ToolEntry;
use crate::catalog::validator::{Uncompiled, Validator};
use crate::reply::{EncodedResult, Reply};

/// How one run of a tool call ended.
pub(crate) enum Settled {
    /// The result (a tool error included), or a protocol error.
    Done(Result<Output, RpcError>),
    /// The handler needs client input (modern era), in the context of the
    /// round that asked.
    Input(Box<InputRequired>, Ctx),
    /// The handler panicked (details in the log).
    Panicked,
    /// The call was cancelled.
    Cancelled,
}

/// A tool's result and the revision it is rendered for.
pub(crate) struct Output {
    result: CallToolResult,
    revision: Option<Revision>,
}

impl Output {
    /// The result rendered for its revision, as a value (a task keeps it so).
    pub(crate) fn render(&self) -> Value {
        self.result.render(self.revision)
    }

    /// The answer to an inline call: rendered and decorated for `era` as it is serialized.
    pub(crate) fn answer(&self, era: Era, server_info: Option<&RawValue>) -> Reply {
        match encode_call_result(&self.result, era, self.revision, server_info) {
            Ok(json) => Reply::Encoded(EncodedResult::text(json).with_tool_error(self.result.is_error)),
            Err(e) => {
                tracing::error!(error = %e, "a tool result could not be serialized");
                Reply::Error(RpcError::internal())
            }
        }
    }
}

/// A call's arguments, as [`execute`] gets them.
#[derive(Clone, Copy)]
pub(crate) struct Arguments<'a> {
    /// Their JSON text as the client sent it (an object), when the call has it: handed to a
    /// handler that reads text when no input schema is to be checked.
    pub(crate) text: Option<&'a str>,
    /// Them parsed, for each round that needs the tree (a check, a handler of maps).
    pub(crate) read: &'a (dyn Fn() -> Map<String, Value> + Sync),
}

/// Runs one round of a tool call: validates the arguments, runs the
/// handler (guarded; legacy input rounds included), validates structured
/// output, and renders the result for the caller's revision. The arguments are parsed once
/// and validated, then handed to the first round (a later round, legacy client input, parses
/// them again), unless the handler reads their text and nothing is to be checked: then every
/// round gets the text and no tree is built.
pub(crate) async fn execute(limits: RoundLimits, tool: &Arc<ToolEntry>, args: Arguments<'_>, ctx: Ctx) -> Settled {
    let revision = ctx.revision();
    let render = |result: CallToolResult| Settled::Done(Ok(Output { result, revision }));
    let text = args
        .text
        .filter(|_| tool.handler.reads_text() && matches!(tool.input, Validator::Off));
    let first = match text {
        Some(_) => Mutex::new(None),
        None => {
            let parsed = Value::Object((args.read)());
            if let Err(refusal) = check(tool, &tool.input, &tool.def.input_schema, &parsed, Side::Input) {
                return render(CallToolResult::error(refusal));
            }
            Mutex::new(match parsed {
                Value::Object(o) => Some(o),
                _ => None,
            })
        }
    };
    let call = |ctx: Ctx| match text {
        Some(text) => tool.handler.call_text(text, ctx),
        None => {
            let parsed = first.lock().unwrap_or_else(PoisonError::into_inner).take();
            tool.handler.call(parsed.unwrap_or_else(args.read), ctx)
        }
    };
    let (outcome, ctx) = match run_rounds(limits.for_tool(tool), &tool.def.name, ctx, call).await {
        Ok(o) => o,
        Err(Interrupted::Cancelled) => return Settled::Cancelled,
        Err(Interrupted::Panicked) => return Settled::Panicked,
        Err(Interrupted::TimedOut) => return render(CallToolResult::error("Tool execution timed out")),
    };
    let e = match outcome {
        Ok(result) => {
            if let (Some(structured), Some(schema), false) =
                (&result.structured_content, &tool.def.output_schema, result.is_error)
                && let Err(refusal) = check(tool, &tool.output, schema, structured, Side::Output)
            {
                return render(CallToolResult::error(refusal));
            }
            return render(result);
        }
        // A protocol error is answered as it is (a missing resource with the era's code).
        Err(e) => match e.into_protocol_error(ctx.era()) {
            Ok(wire) => return Settled::Done(Err(wire)),
            Err(e) => e,
        },
    };
    match e {
        HandlerError::InputRequired(ir) => Settled::Input(ir, ctx),
        // A handler that gave up because its call was cancelled is not a failure.
        _ if ctx.is_cancelled() => {
            tracing::debug!(tool = %tool.def.name, "tool call cancelled");
            Settled::Cancelled
        }
        HandlerError::Tool(message) => render(CallToolResult::error(message)),
        e => {
            tracing::error!(tool = %tool.def.name, error = %e.log_text(), "tool failed");
            render(CallToolResult::error("Internal tool error"))
        }
    }
}

/// Which side of a call a schema checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The arguments, against `inputSchema`: a mismatch is the client's.
    Input,
    /// The structured result, against `outputSchema`: a mismatch is the tool's own fault,
    /// logged as an error.
    Output,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Side::Input => "input",
            Side::Output => "output",
        }
    }
}

/// Checks `instance` against `schema` (the tool's schema of `side`) with its `validator`: the
/// message of the tool error to answer instead when it does not match, or when the schema did
/// not compile.
fn check(tool: &ToolEntry, validator: &Validator, schema: &Value, instance: &Value, side: Side) -> Result<(), String> {
    match validator.get(schema, &tool.def.name) {
        Ok(Some(compiled)) => compiled.validate(instance).map_err(|violations| {
            if side == Side::Output {
                tracing::error!(tool = %tool.def.name, %violations, "structured output does not match outputSchema");
            }
            format!("Invalid tool {}: {violations}", side.as_str())
        }),
        Ok(None) => Ok(()),
        Err(Uncompiled) => Err("Internal tool error".to_owned()),
    }
}

/// Answers a call's outcome in place (not as a task): an input request
/// becomes the modern `input_required` result (sealed `requestState`), a
/// panic a tool error without detail.
pub(crate) fn in_place(rounds: &Rounds, params: &Params, revision: Option<Revision>, settled: Settled) -> Reply {
    match settled {
        Settled::Done(Ok(out)) => Reply::Result(out.render()),
        Settled::Done(Err(e)) => Reply::Error(e),
        Settled::Input(ir, ctx) => match rounds.input_required(&ctx, Some(params.object()), *ir) {
            Ok(v) => Reply::Result(v),
            Err(e) => Reply::Error(e),
        },
        Settled::Panicked => Reply::Result(CallToolResult::error("Internal tool error").render(revision)),
        Settled::Cancelled => Reply::Cancelled,
    }
}
