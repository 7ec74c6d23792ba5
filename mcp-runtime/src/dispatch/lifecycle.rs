//! `initialize`, `server/discover`, `logging/setLevel` and the legacy
//! resource subscriptions.

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::model::{InitializeParams, InitializeResult, LoggingLevel};
use mcp_protocol::{Era, Request, Revision, RpcError};
use serde_json::{Map, Value, json};

use super::Runtime;
use crate::api::Ctx;
use crate::session::{Session, SessionStore};

impl Runtime {
    /// Answers a legacy `initialize`: validates the params, negotiates the
    /// version (echoed when served, else the newest legacy one) and returns
    /// the result with a new session bound to the caller. The transport owns
    /// the session: HTTP stores it in [`Runtime::sessions`], stdio keeps it
    /// for the process.
    pub fn initialize(&self, req: &Request, auth: &AuthInfo) -> Result<(Value, Arc<Session>), RpcError> {
        let params = InitializeParams::parse_within(req.params.as_ref(), self.config().max_client_data_bytes)?;
        let revision = params.revision();
        let session = Arc::new(Session::new(
            SessionStore::mint_id(),
            auth.principal.clone(),
            revision,
            params.capabilities,
            params.client_info,
        ));
        let capabilities = self.capabilities(Some(revision));
        let result = InitializeResult {
            revision,
            capabilities: &capabilities,
            server_info: &self.config().server_info,
            instructions: self.config().instructions.as_deref(),
        };
        Ok((result.render(), session))
    }

    /// The `server/discover` result (before era decoration).
    pub(crate) fn discover(&self) -> Value {
        let versions: Vec<&str> = self.config.advertise.revisions().iter().map(|r| r.as_str()).collect();
        let mut result = Map::new();
        result.insert("supportedVersions".into(), json!(versions));
        result.insert("capabilities".into(), self.capabilities(Some(Revision::LATEST_MODERN)));
        if let Some(i) = &self.config.instructions {
            result.insert("instructions".into(), Value::String(i.clone()));
        }
        Value::Object(result)
    }
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
pub(super) fn subscribe(ctx: &Ctx, params: &Map<String, Value>, on: bool) -> Result<Value, RpcError> {
    debug_assert_eq!(ctx.era(), Era::Legacy);
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("uri must be a string"))?;
    let session = ctx
        .session()
        .ok_or_else(|| RpcError::invalid_params("Resource subscriptions need a session"))?;
    if on {
        session.subscribe(uri);
    } else {
        session.unsubscribe(uri);
    }
    Ok(Value::Object(Map::new()))
}
