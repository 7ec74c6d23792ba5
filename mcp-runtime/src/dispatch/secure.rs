//! The secure parameters of a `tools/call` (SEP-3221; the rules are
//! [`mcp_protocol::secure_params`]'s), admitted by the route, once per request: a call refused
//! here creates no task and reaches no handler, and a 2026-07-28 client gets its refusal with
//! HTTP 400 (the SEP's table). The handler reads them with
//! [`Ctx::secure_arguments`](crate::Ctx::secure_arguments).

use mcp_protocol::model::ClientCapabilities;
use mcp_protocol::secure_params::{self, ARGUMENTS_FIELD, Listed, invalid, smuggled, undeclared};
use mcp_protocol::{Params, RpcError};
use serde_json::Value;

use crate::catalog::ToolEntry;
use crate::catalog::validator::Uncompiled;

/// Admits the call's secure parameters for `tool`: -32021 when the tool requires some and the
/// client did not declare the extension; -32602 when they are not an object, are sent to a
/// tool without a secure schema, miss a required one or fail the schema, or when `arguments`
/// names one (each message names parameters and keywords, never a value).
pub(super) fn admit(tool: &ToolEntry, caps: &ClientCapabilities, params: &Params) -> Result<(), RpcError> {
    let secure = tool.def.secure_input_schema.as_ref();
    // Most tools have none and most calls send none: nothing is parsed for them.
    if secure.is_none() && params.raw(ARGUMENTS_FIELD).is_none_or(|raw| raw == "null") {
        return Ok(());
    }
    let declared = caps.extension(secure_params::EXTENSION);
    if tool.listed(declared) == Listed::Hidden {
        return Err(undeclared());
    }
    let given = secure_params::admit(params.value(ARGUMENTS_FIELD), secure, &tool.def.name)?;
    let Some(schema) = secure else {
        return Ok(());
    };
    if let Some(Value::Object(arguments)) = params.value("arguments") {
        smuggled(&arguments, schema)?;
    }
    match tool.secure.get(schema, &tool.def.name) {
        Ok(Some(compiled)) => compiled.validate_redacted(&Value::Object(given)).map_err(invalid),
        Ok(None) => Ok(()),
        Err(Uncompiled) => Err(RpcError::internal()),
    }
}
