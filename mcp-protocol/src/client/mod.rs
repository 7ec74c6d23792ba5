//! The client's side of the wire: what a client puts on every request and how it reads the
//! answers that steer it, written once for every client of the workspace (the `mcp-client`
//! crate, the facade's in-process test client).
//!
//! - [`stamp`] and [`stamp_notification`]: the modern per-request `_meta` envelope (spec
//!   2026-07-28, basic/index §_meta) and the progress token of either era.
//! - [`is_input_required`], [`input_requests`] and [`retry_params`]: the MRTR loop
//!   (basic/patterns/mrtr): the retry carries the original params, the `inputResponses` and
//!   the `requestState` echoed byte for byte (never one the server did not give).
//! - [`initialize_params`] and [`initialized_revision`]: the legacy handshake.
//! - [`discover_outcome`] and [`read_discover`]: era detection (basic/versioning): a client
//!   that tried `server/discover` falls back to `initialize` on anything but a recognised
//!   modern error, and never keyed to one error code.
//! - [`ServerNotification`], [`Progress`], [`LogMessage`]: what the server sends unasked, as a
//!   client reads it.

use serde_json::{Map, Value, json};

mod received;
pub use received::{LogMessage, Progress, ServerNotification};

use crate::error::{RpcError, codes};
use crate::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROGRESS_TOKEN, PROTOCOL_VERSION};
use crate::model::LoggingLevel;
use crate::revision::{Era, Revision};

/// What a client says about itself on each request (the modern envelope) or once (the legacy
/// `initialize`).
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    /// The revision of the request.
    pub revision: Revision,
    /// The client's capabilities (`{}` when it has none).
    pub capabilities: &'a Value,
    /// The client's `Implementation` (`{name, version, …}`).
    pub client_info: &'a Value,
    /// The level of `notifications/message` the client wants (modern: none when absent).
    pub log_level: Option<LoggingLevel>,
}

/// Stamps a request's params: in the modern era `_meta` gets the protocol version, the client
/// capabilities, the client info and the log level; in either era the progress token when one
/// is given. Keys the caller set already are kept; an empty `_meta` is left out.
pub fn stamp(params: &mut Map<String, Value>, envelope: &Envelope<'_>, progress_token: Option<Value>) {
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    if envelope.revision.era() == Era::Modern {
        meta.entry(PROTOCOL_VERSION)
            .or_insert_with(|| json!(envelope.revision.as_str()));
        meta.entry(CLIENT_CAPABILITIES)
            .or_insert_with(|| envelope.capabilities.clone());
        meta.entry(CLIENT_INFO).or_insert_with(|| envelope.client_info.clone());
        if let Some(level) = envelope.log_level {
            meta.entry(LOG_LEVEL).or_insert_with(|| json!(level));
        }
    }
    if let Some(token) = progress_token {
        meta.entry(PROGRESS_TOKEN).or_insert(token);
    }
    if meta.is_empty() {
        params.remove("_meta");
    }
}

/// Stamps a notification's params: in the modern era `_meta` names the protocol version (the
/// one key a notification carries); a legacy notification is left as it is.
pub fn stamp_notification(params: &mut Map<String, Value>, revision: Revision) {
    if revision.era() != Era::Modern {
        return;
    }
    if let Some(meta) = params.entry("_meta").or_insert_with(|| json!({})).as_object_mut() {
        meta.entry(PROTOCOL_VERSION).or_insert_with(|| json!(revision.as_str()));
    }
}

/// Whether a result asks for input before the request can finish (`resultType:
/// "input_required"`; an absent `resultType` is `"complete"`).
pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// One input request of an `input_required` result: its key, method and params.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest<'a> {
    /// The key its response goes under in `inputResponses`.
    pub key: &'a str,
    /// The method (`elicitation/create`, `sampling/createMessage`, `roots/list`).
    pub method: &'a str,
    /// The params (`{}` when absent).
    pub params: Value,
}

/// The input requests of an `input_required` result, in order (none for a result that only
/// carries `requestState`, the load-shedding form).
pub fn input_requests(result: &Value) -> Vec<InputRequest<'_>> {
    let requests = result.get("inputRequests").and_then(Value::as_object);
    requests
        .into_iter()
        .flatten()
        .map(|(key, req)| InputRequest {
            key,
            method: req.get("method").and_then(Value::as_str).unwrap_or_default(),
            params: req.get("params").cloned().unwrap_or_else(|| json!({})),
        })
        .collect()
}

/// The params of an MRTR retry: the original params, the `inputResponses`, and the
/// `requestState` of `result` echoed as it came (left out when the server gave none). The
/// retry goes out under a new request id.
pub fn retry_params(
    original: &Map<String, Value>,
    responses: Map<String, Value>,
    result: &Value,
) -> Map<String, Value> {
    let mut retry = original.clone();
    retry.insert("inputResponses".into(), Value::Object(responses));
    match result.get("requestState") {
        Some(state) => retry.insert("requestState".into(), state.clone()),
        None => retry.remove("requestState"),
    };
    retry
}

/// The params of a legacy `initialize` request.
pub fn initialize_params(envelope: &Envelope<'_>) -> Value {
    json!({
        "protocolVersion": envelope.revision.as_str(),
        "capabilities": envelope.capabilities,
        "clientInfo": envelope.client_info,
    })
}

/// Why an `initialize` answer cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The server chose a revision this client does not speak.
    #[error("the server chose protocol version {0:?}, which this client does not speak")]
    UnsupportedVersion(String),
    /// The answer has no `protocolVersion`.
    #[error("the initialize result has no protocolVersion")]
    Malformed,
}

/// The revision an `initialize` result settles on: a legacy revision this client knows.
pub fn initialized_revision(result: &Value) -> Result<Revision, HandshakeError> {
    let chosen = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or(HandshakeError::Malformed)?;
    match Revision::parse(chosen) {
        Some(r) if r.era() == Era::Legacy => Ok(r),
        _ => Err(HandshakeError::UnsupportedVersion(chosen.to_owned())),
    }
}

/// What a client does after `server/discover` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoverOutcome {
    /// The server is modern but refused this revision: ask again with this one (the newest of
    /// its `supported` list this client speaks).
    Retry(Revision),
    /// The server is modern and the error stands (a header mismatch, a missing capability, or
    /// no modern revision in common).
    Modern,
    /// Anything else: the server is not modern; fall back to `initialize`.
    Legacy,
}

/// Reads the error a `server/discover` got. A recognised modern error (-32020, -32021,
/// -32022) means a modern server; anything else means falling back to `initialize`.
pub fn discover_outcome(error: &RpcError) -> DiscoverOutcome {
    match error.code {
        codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported = error.data.as_ref().and_then(|d| d.get("supported"));
            let newest = supported
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| Revision::parse(v.as_str()?))
                .filter(|r| r.era() == Era::Modern)
                .max();
            match newest {
                Some(r) => DiscoverOutcome::Retry(r),
                None if supported.is_some() => DiscoverOutcome::Legacy,
                None => DiscoverOutcome::Modern,
            }
        }
        codes::HEADER_MISMATCH | codes::MISSING_REQUIRED_CLIENT_CAPABILITY => DiscoverOutcome::Modern,
        _ => DiscoverOutcome::Legacy,
    }
}

/// Reads a `server/discover` result: the revision to speak (the one asked when the server
/// lists it, else the newest modern one it lists), or `None` when none is in common.
pub fn read_discover(result: &Value, asked: Revision) -> Option<Revision> {
    let listed: Vec<Revision> = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| Revision::parse(v.as_str()?))
        .collect();
    if listed.contains(&asked) {
        return Some(asked);
    }
    listed.into_iter().filter(|r| r.era() == Era::Modern).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope<'a>(revision: Revision, caps: &'a Value, info: &'a Value) -> Envelope<'a> {
        Envelope {
            revision,
            capabilities: caps,
            client_info: info,
            log_level: None,
        }
    }

    #[test]
    fn a_modern_request_carries_the_envelope_and_keeps_what_the_caller_set() {
        let (caps, info) = (json!({"elicitation": {}}), json!({"name": "c", "version": "1"}));
        let mut params = Map::new();
        params.insert("_meta".into(), json!({PROTOCOL_VERSION: "custom"}));
        stamp(
            &mut params,
            &envelope(Revision::V2026_07_28, &caps, &info),
            Some(json!(7)),
        );
        let meta = &params["_meta"];
        assert_eq!(meta[PROTOCOL_VERSION], "custom");
        assert_eq!(meta[CLIENT_CAPABILITIES], caps);
        assert_eq!(meta[CLIENT_INFO], info);
        assert_eq!(meta[PROGRESS_TOKEN], 7);
        assert!(meta.get(LOG_LEVEL).is_none(), "no level asked: none sent");
    }

    #[test]
    fn a_legacy_request_carries_only_its_progress_token_and_no_empty_meta() {
        let (caps, info) = (json!({}), json!({}));
        let mut params = Map::new();
        stamp(&mut params, &envelope(Revision::V2025_11_25, &caps, &info), None);
        assert!(params.is_empty(), "{params:?}");
        stamp(
            &mut params,
            &envelope(Revision::V2025_11_25, &caps, &info),
            Some(json!("p")),
        );
        assert_eq!(params["_meta"], json!({PROGRESS_TOKEN: "p"}));
    }

    #[test]
    fn a_retry_echoes_the_state_given_and_drops_a_stale_one() {
        let original = json!({"name": "t", "requestState": "old"});
        let original = original.as_object().unwrap();
        let result = json!({"resultType": "input_required", "requestState": "s1",
            "inputRequests": {"a": {"method": "roots/list"}}});
        assert!(is_input_required(&result));
        let asked = input_requests(&result);
        assert_eq!(
            (asked[0].key, asked[0].method, &asked[0].params),
            ("a", "roots/list", &json!({}))
        );
        let mut answers = Map::new();
        answers.insert("a".into(), json!({"roots": []}));
        let retry = retry_params(original, answers, &result);
        assert_eq!(retry["requestState"], "s1");
        assert_eq!(retry["inputResponses"]["a"], json!({"roots": []}));
        let shed = json!({"resultType": "input_required", "inputRequests": {}});
        let retry = retry_params(original, Map::new(), &shed);
        assert!(
            retry.get("requestState").is_none(),
            "never a state the server did not give"
        );
        assert!(
            !is_input_required(&json!({"content": []})),
            "absent resultType is complete"
        );
    }

    #[test]
    fn a_failed_discover_falls_back_unless_the_error_is_a_modern_one() {
        let unsupported = |supported: Value| {
            RpcError::new(codes::UNSUPPORTED_PROTOCOL_VERSION, "no").with_data(json!({"supported": supported}))
        };
        assert_eq!(
            discover_outcome(&unsupported(json!(["2026-07-28", "2025-11-25"]))),
            DiscoverOutcome::Retry(Revision::V2026_07_28)
        );
        assert_eq!(
            discover_outcome(&unsupported(json!(["2025-11-25"]))),
            DiscoverOutcome::Legacy
        );
        assert_eq!(
            discover_outcome(&RpcError::new(codes::HEADER_MISMATCH, "h")),
            DiscoverOutcome::Modern
        );
        for code in [
            codes::METHOD_NOT_FOUND,
            codes::INVALID_REQUEST,
            codes::SESSION_NOT_FOUND,
            -1,
        ] {
            assert_eq!(
                discover_outcome(&RpcError::new(code, "x")),
                DiscoverOutcome::Legacy,
                "{code}"
            );
        }
    }

    #[test]
    fn discover_and_initialize_settle_on_a_revision_both_speak() {
        let result = json!({"supportedVersions": ["2025-11-25", "2026-07-28"]});
        assert_eq!(
            read_discover(&result, Revision::V2026_07_28),
            Some(Revision::V2026_07_28)
        );
        assert_eq!(
            read_discover(&json!({"supportedVersions": ["2099-01-01"]}), Revision::V2026_07_28),
            None
        );
        assert_eq!(
            initialized_revision(&json!({"protocolVersion": "2025-06-18"})),
            Ok(Revision::V2025_06_18)
        );
        assert!(matches!(
            initialized_revision(&json!({"protocolVersion": "2026-07-28"})),
            Err(HandshakeError::UnsupportedVersion(_))
        ));
        assert_eq!(initialized_revision(&json!({})), Err(HandshakeError::Malformed));
    }
}
