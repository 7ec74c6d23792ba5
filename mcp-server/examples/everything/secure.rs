//! Secure Parameters (SEP-3221): `query_tenant_db` takes the model's `query` in `arguments` and the
//! host's `tenant` (required) and `region` (optional, mirrored in the `Mcp-Param-Region`
//! header) in `secureArguments`. A client that declared `io.modelcontextprotocol/secure-params`
//! sees the tool with its `secureInputSchema`; another is not shown it, and is answered -32021
//! when it calls it anyway.

use mcp_server::prelude::*;

/// The model's part of the call.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    /// The query to run.
    query: String,
}

/// What the host application binds: the model never sees or writes it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Tenant {
    /// The tenant whose database is queried.
    #[schemars(length(min = 1))]
    tenant: String,
    /// The region the tenant's database lives in.
    // A plain string with a default rather than an `Option`: a header carries a string, and an
    // `Option`'s schema allows `null`.
    #[serde(default)]
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// Registers the fixture's tool with secure parameters.
pub(crate) fn secure_tools(b: mcp_server::McpServerBuilder) -> mcp_server::McpServerBuilder {
    b.tool(
        Tool::typed(
            "query_tenant_db",
            "Runs a query on the tenant's database",
            |q: Query, ctx: Ctx| async move {
                let t: Tenant = ctx.secure_arguments()?;
                let region = if t.region.is_empty() { "default" } else { &t.region };
                Ok(format!("{} on tenant {} ({region})", q.query, t.tenant))
            },
        )
        .secure_input::<Tenant>()
        .read_only(),
    )
}
