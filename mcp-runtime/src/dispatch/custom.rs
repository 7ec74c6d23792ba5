//! A custom method (a vendor method, or an extension's): its handler run like every other
//! handler (deadline, cancellation grace, panic guard, legacy client input), its params
//! without `_meta` (which the handler's context holds).

use mcp_protocol::RpcError;
use serde_json::{Map, Value};

use super::errors::{handler_error, interrupted};
use super::parts::Parts;
use crate::api::Ctx;
use crate::exec::run_rounds;
use crate::extension::MethodEntry;

/// Runs a routed custom method.
pub(super) async fn call(
    parts: &Parts<'_>,
    ctx: Ctx,
    params: &Map<String, Value>,
    entry: &MethodEntry,
) -> Result<Value, RpcError> {
    let name = entry.method.name();
    let mut own = params.clone();
    own.remove("_meta");
    let handler = entry.method.handler().clone();
    let call = move |ctx: Ctx| handler.call(own.clone(), ctx);
    let (outcome, ctx) = run_rounds(parts.limits(), name, ctx, call)
        .await
        .map_err(|i| interrupted(name, i))?;
    outcome.map_err(|e| handler_error(name, ctx.era(), e))
}
