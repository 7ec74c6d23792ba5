//! `initialize`, `server/discover` and the capabilities they declare, `logging/setLevel` and
//! the legacy resource subscriptions.

use mcp_protocol::bounds::SubscriptionBounds;
use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::model::{InitializeParams, InitializeResult, LoggingLevel, ServerFeatures, server_capabilities};
use mcp_protocol::{Era, Params, Request, Revision, RpcError};
use mcp_protocol::{apps, secure_params};
use serde_json::{Map, Value, json};

use crate::api::Ctx;
use crate::catalog::Catalog;
use crate::config::ServerConfig;
use crate::session::Session;
use crate::session::store::SessionStore;

/// What the server offers: what the catalog holds (tools, resources or templates, prompts,
/// completion handlers, tools that may run as tasks) and logging when configured. A family the
/// catalog holds nothing of is not declared, and its methods answer -32601 (the route).
pub(crate) fn features(logging: bool, catalog: &Catalog) -> ServerFeatures {
    let mut f = ServerFeatures::default();
    f.tools = !catalog.tools().is_empty();
    f.resources = !catalog.resources().is_empty() || !catalog.templates().is_empty();
    f.prompts = !catalog.prompts().is_empty();
    f.completions = catalog.has_completions();
    f.logging = logging;
    f.resource_subscriptions = true;
    f.list_changed = true;
    f.tasks = catalog.offers_tasks();
    f
}

/// The server capabilities for a revision: MCP Apps and Secure Parameters declared (both eras)
/// when the catalog uses them, before the extensions the server declared by hand.
pub(crate) fn capabilities(config: &ServerConfig, catalog: &Catalog, revision: Option<Revision>) -> Value {
    let features = features(config.logging, catalog);
    let declared = config.extensions.declared();
    let builtin = [
        catalog.offers_apps().then(apps::declaration),
        catalog.offers_secure_params().then(secure_params::declaration),
    ];
    if builtin.iter().all(Option::is_none) {
        return server_capabilities(&features, revision, declared);
    }
    let all: Vec<_> = builtin.into_iter().flatten().chain(declared.iter().cloned()).collect();
    server_capabilities(&features, revision, &all)
}

/// Answers a legacy `initialize`: validates the params, negotiates the version (echoed when
/// served, else the newest legacy one) and returns the result with a new session bound to the
/// caller. The transport owns the session.
pub(crate) fn initialize(
    config: &ServerConfig,
    catalog: &Catalog,
    req: &Request,
    auth: &AuthInfo,
) -> Result<(Value, Arc<Session>), RpcError> {
    let params = InitializeParams::parse_within(req.params.as_ref().map(Params::object), config.max_client_data_bytes)?;
    let revision = params.revision();
    let session = Arc::new(Session::new(
        SessionStore::mint_id(),
        auth.principal.clone(),
        revision,
        params.capabilities,
        params.client_info,
    ));
    let capabilities = capabilities(config, catalog, Some(revision));
    let result = InitializeResult {
        revision,
        capabilities: &capabilities,
        server_info: &config.server_info,
        instructions: config.instructions.as_deref(),
    };
    Ok((result.render(), session))
}

/// The `server/discover` result (before era decoration).
pub(crate) fn discover(config: &ServerConfig, catalog: &Catalog) -> Value {
    let versions: Vec<&str> = config.advertise.revisions().iter().map(|r| r.as_str()).collect();
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(versions));
    result.insert(
        "capabilities".into(),
        capabilities(config, catalog, Some(Revision::LATEST_MODERN)),
    );
    if let Some(i) = &config.instructions {
        result.insert("instructions".into(), Value::String(i.clone()));
    }
    Value::Object(result)
}

/// `logging/setLevel`: sets the session's minimum level. Without a session
/// the call is accepted and nothing is stored.
pub(super) fn set_level(ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .and_then(LoggingLevel::parse)
        .ok_or_else(|| RpcError::invalid_params("Invalid log level"))?;
    if let Some(s) = ctx.session() {
        s.set_log_level(level);
    }
    Ok(Value::Object(Map::new()))
}

/// `resources/subscribe` and `resources/unsubscribe` (legacy, session-scoped).
/// A subscription is refused (-32602) over the URI length or the session's count
/// (`ServerConfig::subscription_bounds`); nothing is kept then.
pub(super) fn subscribe(
    ctx: &Ctx,
    params: &Map<String, Value>,
    on: bool,
    bounds: &SubscriptionBounds,
) -> Result<Value, RpcError> {
    debug_assert_eq!(ctx.era(), Era::Legacy);
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("uri must be a string"))?;
    let session = ctx
        .session()
        .ok_or_else(|| RpcError::invalid_params("Resource subscriptions need a session"))?;
    if on {
        bounds.check_uri(uri)?;
        session.subscribe_within(uri, bounds)?;
    } else {
        session.unsubscribe(uri);
    }
    Ok(Value::Object(Map::new()))
}
