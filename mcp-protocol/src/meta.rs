//! The per-request `_meta` envelope of the modern era, and the `_meta` keys of
//! both eras.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::error::RpcError;
use crate::model::{ClientCapabilities, LoggingLevel};
use crate::params::Params;
use crate::revision::{Era, Revision};

/// `_meta` key: the protocol version of a modern request (required).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client capabilities of a modern request (required).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client implementation of a modern request (optional).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level of a modern request (optional).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: the server implementation.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key on a listen stream: the listen request's id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key of 2025-11-25 task-related messages.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key: the progress token of a request (both eras).
pub const PROGRESS_TOKEN: &str = "progressToken";

/// The `_meta` object of request params, if any (the params' whole object is built: for
/// handlers and tracing, not the request path).
pub fn meta_of(params: Option<&Params>) -> Option<&Map<String, Value>> {
    params?.object().get("_meta")?.as_object()
}

/// The protocol version a modern request's `_meta` names, when it is a string (unvalidated: see
/// [`parse_modern_meta`]).
pub fn meta_version(params: Option<&Params>) -> Option<Cow<'_, str>> {
    params?.meta()?.str(PROTOCOL_VERSION)
}

/// Whether the params claim the modern era (`_meta` names a protocol version).
pub fn claims_modern(params: Option<&Params>) -> bool {
    params
        .and_then(Params::meta)
        .is_some_and(|m| m.contains(PROTOCOL_VERSION))
}

/// The progress token of a request, in either era.
pub fn progress_token(params: Option<&Params>) -> Option<Value> {
    let raw = params?.meta()?.raw(PROGRESS_TOKEN)?;
    let token: Value = serde_json::from_str(raw).ok()?;
    (token.is_string() || token.is_number()).then_some(token)
}

/// The validated `_meta` of a modern request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModernMeta {
    /// The request's revision (a modern one the server serves).
    pub revision: Revision,
    /// The client capabilities declared for this request.
    pub client_capabilities: ClientCapabilities,
    /// The log level: without one, no `notifications/message` is sent.
    pub log_level: Option<LoggingLevel>,
    /// The params the `_meta` was read from (shared), for what is read on demand.
    params: Params,
    /// The client implementation, parsed on first use.
    client_info: OnceLock<Option<Value>>,
}

impl ModernMeta {
    /// The client implementation, when sent (an object: validated with the rest).
    pub fn client_info(&self) -> Option<&Value> {
        self.client_info
            .get_or_init(|| self.params.meta().and_then(|m| m.value(CLIENT_INFO)))
            .as_ref()
    }
}

/// Parses and validates the `_meta` of a modern request.
///
/// Order (behaviour invariant 3): the version's shape (-32602), whether the
/// version is served (-32022 with `data.supported`, listing `advertised`),
/// then the other required keys (-32602).
pub fn parse_modern_meta(params: Option<&Params>, advertised: &[Revision]) -> Result<ModernMeta, RpcError> {
    let Some(meta) = params.and_then(Params::meta) else {
        return Err(RpcError::invalid_params("Missing required _meta"));
    };
    let version = match meta.raw(PROTOCOL_VERSION) {
        Some(_) => meta
            .str(PROTOCOL_VERSION)
            .ok_or_else(|| RpcError::invalid_params(format!("_meta[\"{PROTOCOL_VERSION}\"] must be a string")))?,
        None => {
            return Err(RpcError::invalid_params(format!(
                "Missing required _meta[\"{PROTOCOL_VERSION}\"]"
            )));
        }
    };
    let revision = match Revision::parse(&version) {
        Some(r) if r.era() == Era::Modern => r,
        _ => return Err(RpcError::unsupported_version(advertised, &version)),
    };
    let client_capabilities = match meta.value(CLIENT_CAPABILITIES) {
        Some(Value::Object(c)) => ClientCapabilities::new(c),
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "_meta[\"{CLIENT_CAPABILITIES}\"] must be an object"
            )));
        }
        None => {
            return Err(RpcError::invalid_params(format!(
                "Missing required _meta[\"{CLIENT_CAPABILITIES}\"]"
            )));
        }
    };
    if meta.raw(CLIENT_INFO).is_some_and(|raw| !raw.starts_with('{')) {
        return Err(RpcError::invalid_params(format!(
            "_meta[\"{CLIENT_INFO}\"] must be an object"
        )));
    }
    let log_level = match meta.raw(LOG_LEVEL) {
        None => None,
        Some(_) => Some(
            meta.str(LOG_LEVEL)
                .as_deref()
                .and_then(LoggingLevel::parse)
                .ok_or_else(|| RpcError::invalid_params("Invalid log level"))?,
        ),
    };
    Ok(ModernMeta {
        revision,
        client_capabilities,
        log_level,
        params: params.cloned().unwrap_or_default(),
        client_info: OnceLock::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        Params::from_value(v).unwrap()
    }

    const ADV: &[Revision] = &[Revision::V2026_07_28];

    #[test]
    fn accepts_a_full_envelope() {
        let p = params(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/logLevel": "debug",
            "progressToken": 7
        }}));
        let m = parse_modern_meta(Some(&p), ADV).unwrap();
        assert_eq!(m.revision, Revision::V2026_07_28);
        assert!(m.client_capabilities.sampling());
        assert_eq!(m.log_level, Some(LoggingLevel::Debug));
        assert_eq!(m.client_info(), Some(&json!({"name": "c", "version": "1"})));
        assert_eq!(progress_token(Some(&p)), Some(json!(7)));
        assert!(claims_modern(Some(&p)));
    }

    #[test]
    fn rejection_table() {
        let pv = "io.modelcontextprotocol/protocolVersion";
        let cc = "io.modelcontextprotocol/clientCapabilities";
        let table = [
            (json!({}), -32602),
            (json!({"_meta": {}}), -32602),
            (json!({"_meta": {pv: 5, cc: {}}}), -32602),
            (json!({"_meta": {pv: "1900-01-01", cc: {}}}), -32022),
            (json!({"_meta": {pv: "2025-11-25", cc: {}}}), -32022),
            (json!({"_meta": {pv: "2026-07-28"}}), -32602),
            (json!({"_meta": {pv: "2026-07-28", cc: []}}), -32602),
            (
                json!({"_meta": {pv: "2026-07-28", cc: {}, "io.modelcontextprotocol/clientInfo": "x"}}),
                -32602,
            ),
            (
                json!({"_meta": {pv: "2026-07-28", cc: {}, "io.modelcontextprotocol/logLevel": "loud"}}),
                -32602,
            ),
            // Version is checked before the other keys.
            (json!({"_meta": {pv: "1900-01-01"}}), -32022),
        ];
        for (p, code) in table {
            let p = params(p);
            assert_eq!(parse_modern_meta(Some(&p), ADV).unwrap_err().code, code, "{p:?}");
        }
    }

    #[test]
    fn unsupported_version_names_what_is_supported() {
        let p = params(json!({"_meta": {PROTOCOL_VERSION: "1900-01-01", CLIENT_CAPABILITIES: {}}}));
        let e = parse_modern_meta(Some(&p), ADV).unwrap_err();
        assert_eq!(
            e.data.unwrap(),
            json!({"supported": ["2026-07-28"], "requested": "1900-01-01"})
        );
    }

    #[test]
    fn modern_claim() {
        assert!(!claims_modern(None));
        assert!(!claims_modern(Some(&params(json!({"_meta": {"progressToken": 1}})))));
        assert!(claims_modern(Some(&params(json!({"_meta": {PROTOCOL_VERSION: "x"}})))));
    }
}
