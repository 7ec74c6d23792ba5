//! Multi round-trip requests (SEP-2322): the shape rules of input requests
//! and input responses (only answers to what was asked reach a handler), which client capability each input request needs,
//! and the `input_required` result that carries them.
//!
//! The sealing of `requestState` lives in [`crate::request_state`].

use serde_json::{Map, Value, json};

use crate::error::RpcError;
use crate::model::ClientCapabilities;
use crate::revision::Revision;

/// The methods an input request may carry.
pub const INPUT_METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// Validates the `inputResponses` of a retry: an object whose values are
/// objects (each an `ElicitResult`, `CreateMessageResult` or
/// `ListRootsResult`). Anything else is a protocol error (-32602).
pub fn parse_input_responses(value: &Value) -> Result<&Map<String, Value>, RpcError> {
    let map = value
        .as_object()
        .ok_or_else(|| RpcError::invalid_params("inputResponses must be an object"))?;
    if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_object()) {
        return Err(RpcError::invalid_params(format!(
            "inputResponses[\"{key}\"] must be an object"
        )));
    }
    Ok(map)
}

/// The sealed token a retry carries in `requestState`, if any. A client echoes the token of
/// the `input_required` result when there was one; a missing member, `null` and an empty
/// string all mean "no state" (a client that always sends the member, empty when the result
/// had none, is answered as one that leaves it out). Any other non-string is -32602.
pub fn request_state_token(value: Option<&Value>) -> Result<Option<&str>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(token)) if token.is_empty() => Ok(None),
        Some(Value::String(token)) => Ok(Some(token)),
        Some(_) => Err(RpcError::invalid_params("Invalid requestState")),
    }
}

/// The answers a handler may see: only those to the keys the server asked for in the round
/// the retry answers (the keys sealed in its `requestState`). An answer to a key that round did
/// not ask (a client slipping in the answer to the next question, to skip a confirmation) is
/// dropped, never handed to the handler. `asked` is `None` when nothing records what was
/// asked (a call without `requestState`, which the protocol allows, or a state sealed before
/// the asked keys were recorded): every answer is kept.
pub fn answers_to(fresh: &Map<String, Value>, asked: Option<&[Value]>) -> Map<String, Value> {
    let Some(asked) = asked else {
        return fresh.clone();
    };
    fresh
        .iter()
        .filter(|(key, _)| asked.iter().any(|a| a.as_str() == Some(key.as_str())))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The `requiredCapabilities` an input request needs that the client did not
/// declare, or `None` when it may be sent. Elicitation modes are checked
/// against the declaration and the revision (URL mode from 2025-11-25; an
/// empty `elicitation` object means form only); tool-enabled sampling needs
/// `sampling.tools`.
pub fn missing_capability(request: &Value, caps: &ClientCapabilities, revision: Option<Revision>) -> Option<Value> {
    let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
    let params = request.get("params");
    match method {
        "elicitation/create" => {
            let url = params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url");
            match (url, url && caps.elicitation_url(revision), caps.elicitation_form()) {
                (true, false, _) => Some(json!({"elicitation": {"url": {}}})),
                (false, _, false) => Some(json!({"elicitation": {}})),
                _ => None,
            }
        }
        "sampling/createMessage" => {
            let tools = params.and_then(|p| p.get("tools")).is_some();
            if !caps.sampling() {
                Some(json!({"sampling": {}}))
            } else if tools && !caps.sampling_tools() {
                Some(json!({"sampling": {"tools": {}}}))
            } else {
                None
            }
        }
        "roots/list" => (!caps.roots()).then(|| json!({"roots": {}})),
        _ => None,
    }
}

/// Checks the shape of a handler's input requests: each a `{method, params}`
/// object naming one of [`INPUT_METHODS`].
pub fn check_input_requests(requests: &Map<String, Value>) -> Result<(), String> {
    for (key, req) in requests {
        let method = req.get("method").and_then(Value::as_str);
        if !method.is_some_and(|m| INPUT_METHODS.contains(&m)) {
            return Err(format!("input request {key:?} must name one of {INPUT_METHODS:?}"));
        }
        if req.get("params").is_some_and(|p| !p.is_object()) {
            return Err(format!("input request {key:?} has non-object params"));
        }
    }
    Ok(())
}

/// A modern `input_required` result: the input requests the client is to
/// answer and the sealed `requestState` to send back on the retry. At least
/// one of the two is present in a valid result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequiredResult {
    /// `inputRequests`, by key (left out when empty).
    pub input_requests: Map<String, Value>,
    /// `requestState`: the sealed token (see [`crate::request_state`]).
    pub request_state: Option<String>,
}

impl InputRequiredResult {
    /// Whether the result carries neither input requests nor state (not a
    /// valid answer: the client would have nothing to do).
    pub fn is_empty(&self) -> bool {
        self.input_requests.is_empty() && self.request_state.is_none()
    }

    /// The result object: `resultType: "input_required"`, then
    /// `inputRequests` and `requestState` when present.
    pub fn render(self) -> Value {
        let mut result = Map::new();
        result.insert("resultType".into(), Value::String("input_required".into()));
        if !self.input_requests.is_empty() {
            result.insert("inputRequests".into(), Value::Object(self.input_requests));
        }
        if let Some(token) = self.request_state {
            result.insert("requestState".into(), Value::String(token));
        }
        Value::Object(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        ClientCapabilities::new(v.as_object().unwrap().clone())
    }

    #[test]
    fn responses_shape() {
        assert!(parse_input_responses(&json!({"a": {"action": "accept"}})).is_ok());
        assert!(parse_input_responses(&json!({})).is_ok());
        for bad in [json!(null), json!(42), json!([]), json!({"a": 42}), json!({"a": null})] {
            assert_eq!(parse_input_responses(&bad).unwrap_err().code, -32602, "{bad}");
        }
    }

    #[test]
    fn an_empty_request_state_is_none() {
        assert_eq!(request_state_token(None).unwrap(), None);
        assert_eq!(request_state_token(Some(&json!(null))).unwrap(), None);
        assert_eq!(request_state_token(Some(&json!(""))).unwrap(), None);
        assert_eq!(request_state_token(Some(&json!("v1.abc"))).unwrap(), Some("v1.abc"));
        for bad in [json!(42), json!({}), json!([]), json!(false)] {
            assert_eq!(request_state_token(Some(&bad)).unwrap_err().code, -32602, "{bad}");
        }
    }

    #[test]
    fn capability_table() {
        let form = json!({"method": "elicitation/create", "params": {"message": "m"}});
        let url =
            json!({"method": "elicitation/create", "params": {"mode": "url", "url": "https://x", "message": "m"}});
        let sample = json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}});
        let sample_tools = json!({"method": "sampling/createMessage", "params": {"tools": []}});
        let roots = json!({"method": "roots/list", "params": {}});
        let modern = Some(Revision::V2026_07_28);
        let table = [
            (&form, json!({}), Some(json!({"elicitation": {}}))),
            (&form, json!({"elicitation": {}}), None),
            (
                &form,
                json!({"elicitation": {"url": {}}}),
                Some(json!({"elicitation": {}})),
            ),
            (
                &url,
                json!({"elicitation": {}}),
                Some(json!({"elicitation": {"url": {}}})),
            ),
            (&url, json!({"elicitation": {"url": {}}}), None),
            (&sample, json!({}), Some(json!({"sampling": {}}))),
            (&sample, json!({"sampling": {}}), None),
            (
                &sample_tools,
                json!({"sampling": {}}),
                Some(json!({"sampling": {"tools": {}}})),
            ),
            (&sample_tools, json!({"sampling": {"tools": {}}}), None),
            (&roots, json!({}), Some(json!({"roots": {}}))),
            (&roots, json!({"roots": {}}), None),
        ];
        for (req, declared, want) in table {
            assert_eq!(
                missing_capability(req, &caps(declared.clone()), modern),
                want,
                "{req} with {declared}"
            );
        }
        let old = Some(Revision::V2025_06_18);
        assert!(missing_capability(&url, &caps(json!({"elicitation": {"url": {}}})), old).is_some());
    }

    #[test]
    fn input_required_result() {
        let empty = InputRequiredResult::default();
        assert!(empty.is_empty());
        assert_eq!(empty.render(), json!({"resultType": "input_required"}));

        let mut requests = Map::new();
        requests.insert("a".into(), json!({"method": "roots/list", "params": {}}));
        let both = InputRequiredResult {
            input_requests: requests.clone(),
            request_state: Some("tok".into()),
        };
        assert!(!both.is_empty());
        assert_eq!(
            serde_json::to_string(&both.render()).unwrap(),
            r#"{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list","params":{}}},"requestState":"tok"}"#
        );
        let state_only = InputRequiredResult {
            input_requests: Map::new(),
            request_state: Some("tok".into()),
        };
        assert!(!state_only.is_empty());
        assert_eq!(
            state_only.render(),
            json!({"resultType": "input_required", "requestState": "tok"})
        );
        let requests_only = InputRequiredResult {
            input_requests: requests,
            request_state: None,
        };
        assert!(requests_only.render().get("requestState").is_none());
    }

    #[test]
    fn request_shapes() {
        let mut ok = Map::new();
        ok.insert("a".into(), json!({"method": "roots/list", "params": {}}));
        assert!(check_input_requests(&ok).is_ok());
        let mut bad = Map::new();
        bad.insert("a".into(), json!({"method": "tools/call"}));
        assert!(check_input_requests(&bad).is_err());
    }
}
