//! [`InputRequired`]: what a handler returns when it needs input from the client before it can
//! answer (multi round-trip requests, SEP-2322).

use serde_json::{Map, Value, json};

/// A handler's request for client input: keyed input requests (elicitation,
/// sampling, roots) and optional state to get back on the retry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequired {
    /// Input requests by key: each `{"method": …, "params": …}`.
    pub requests: Map<String, Value>,
    /// Handler state, sealed into `requestState` by the runtime.
    pub state: Option<Value>,
}

impl InputRequired {
    /// No requests yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input request under `key`.
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> Self {
        self.requests
            .insert(key.into(), json!({ "method": method, "params": params }));
        self
    }

    /// Sets the state returned on the retry.
    pub fn with_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }
}
