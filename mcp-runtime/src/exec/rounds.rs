//! MRTR rounds (SEP-2322) of a modern call: the `requestState` a retry carries is opened, the
//! input a handler asks for is checked and sealed into the `input_required` result.

use mcp_protocol::Params;
use mcp_protocol::request_state::{StateKey, StateKeyRing};
use serde_json::{Map, Value, json};

use crate::api::{Ctx, InputRequired};
use crate::config::ServerConfig;

/// What a call starts with: the client input gathered in earlier rounds and
/// the handler's state (both empty on a first call).
#[derive(Debug, Clone, Default)]
pub(crate) struct Round {
    pub(crate) responses: Option<Map<String, Value>>,
    pub(crate) state: Option<Value>,
}

/// Milliseconds since the Unix epoch (the clock of sealed states).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The MRTR rounds of one server: the keys that seal and open `requestState`, and how long a
/// sealed state lives.
#[derive(Debug)]
pub(crate) struct Rounds {
    keys: StateKeyRing,
    ttl_ms: u64,
}

impl Rounds {
    /// The rounds a configuration sets: sealed with `request_state_key` (a fresh per-process key
    /// when unset), opened by it and by `request_state_old_keys`, each state living
    /// `request_state_ttl`.
    pub(crate) fn of(config: &ServerConfig) -> Self {
        let keys = config.request_state_old_keys.iter().fold(
            StateKeyRing::new(config.request_state_key.clone().unwrap_or_else(random_state_key)),
            |ring, old| ring.with_old(old.clone()),
        );
        Rounds {
            keys,
            ttl_ms: config.request_state_ttl.as_millis() as u64,
        }
    }

    /// Opens the round a modern retry carries: validates `inputResponses`
    /// (malformed: -32602), verifies and opens `requestState` (tampered,
    /// expired, another principal's or another request's: -32602, never
    /// re-prompted), keeps only the answers to the keys the round it seals
    /// asked (a retry cannot add answers to questions never asked), and merges
    /// the responses of earlier rounds with them.
    pub(crate) fn open(
        &self,
        method: &str,
        params: Option<&Params>,
        principal: &str,
    ) -> Result<Round, mcp_protocol::RpcError> {
        use mcp_protocol::mrtr::{answers_to, parse_input_responses, request_state_token};
        use mcp_protocol::request_state::open_ring;
        // A first round carries neither member: nothing to read.
        let Some(raw) = params.filter(|p| p.contains("inputResponses") || p.contains("requestState")) else {
            return Ok(Round::default());
        };
        let p = raw.object();
        let params = Some(p);
        let fresh = p.get("inputResponses").map(parse_input_responses).transpose()?;
        // The keys the previous round asked, sealed in its state. A call without a state keeps
        // its answers: the protocol lets a server that seals nothing be answered that way, and
        // a stateless retry cannot say what was asked.
        // An empty or null `requestState` is no state (see `request_state_token`).
        let (state, mut responses, asked) = match request_state_token(p.get("requestState"))? {
            None => (None, Map::new(), None),
            Some(token) => {
                let opened = open_ring(&self.keys, token, principal, method, params, now_ms()).map_err(|e| {
                    tracing::debug!(method, error = %e, "requestState refused");
                    e.to_rpc_error()
                })?;
                let state = opened.get("s").filter(|s| !s.is_null()).cloned();
                let earlier = opened.get("r").and_then(Value::as_object).cloned().unwrap_or_default();
                let asked = opened.get("a").and_then(Value::as_array).cloned();
                (state, earlier, asked)
            }
        };
        let fresh = fresh.map(|fresh| {
            let kept = answers_to(fresh, asked.as_deref());
            if kept.len() < fresh.len() {
                tracing::debug!(
                    method,
                    dropped = fresh.len() - kept.len(),
                    "answers to unasked input ignored"
                );
            }
            kept
        });
        let had_input = fresh.as_ref().is_some_and(|f| !f.is_empty()) || !responses.is_empty();
        if let Some(fresh) = fresh {
            responses.extend(fresh);
        }
        Ok(Round {
            responses: had_input.then_some(responses),
            state,
        })
    }

    /// Answers a modern call whose handler needs input: checks each input
    /// request against the client's declared capabilities (-32021 with the
    /// nested `requiredCapabilities`), then seals the handler's state and the
    /// responses gathered so far into `requestState`; the result's shape is
    /// [`mcp_protocol::mrtr::InputRequiredResult`].
    pub(crate) fn input_required(
        &self,
        ctx: &Ctx,
        params: Option<&Map<String, Value>>,
        ir: InputRequired,
    ) -> Result<Value, mcp_protocol::RpcError> {
        use mcp_protocol::RpcError;
        use mcp_protocol::mrtr::{InputRequiredResult, check_input_requests, missing_capability};
        use mcp_protocol::request_state::{MAX_STATE_BYTES, StateError, seal};
        if let Err(why) = check_input_requests(&ir.requests) {
            tracing::error!(method = ctx.method(), %why, "handler returned a malformed input request");
            return Err(RpcError::internal());
        }
        for req in ir.requests.values() {
            if let Some(required) = missing_capability(req, ctx.client_capabilities(), ctx.revision()) {
                return Err(RpcError::missing_capability(required));
            }
        }
        let gathered = ctx.input_responses().cloned().unwrap_or_default();
        // Sealed whenever input is asked for: the asked keys travel in the state, so that the
        // retry's answers to anything else are ignored.
        let asked: Vec<&String> = ir.requests.keys().collect();
        let request_state = if ir.state.is_some() || !gathered.is_empty() || !asked.is_empty() {
            let payload = json!({ "s": ir.state, "r": gathered, "a": asked });
            let token = seal(
                self.keys.newest(),
                ctx.principal(),
                ctx.method(),
                params,
                &payload,
                now_ms(),
                self.ttl_ms,
            )
            .map_err(|e| match e {
                // The client's answers are what made it too large: the client's error.
                StateError::TooLarge if !gathered.is_empty() => RpcError::invalid_params(format!(
                    "Input responses too large: the request state they travel in is limited to {MAX_STATE_BYTES} bytes"
                )),
                e => {
                    tracing::error!(method = ctx.method(), error = %e, "requestState could not be sealed");
                    RpcError::internal()
                }
            })?;
            Some(token)
        } else {
            None
        };
        let result = InputRequiredResult {
            input_requests: ir.requests,
            request_state,
        };
        if result.is_empty() {
            tracing::error!(
                method = ctx.method(),
                "handler asked for input without requests or state"
            );
            return Err(RpcError::internal());
        }
        Ok(result.render())
    }
}

/// A fresh per-process key for sealing request states (from the OS CSPRNG).
fn random_state_key() -> StateKey {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        panic!("the operating system's random number generator failed");
    }
    tracing::info!("no request_state_key configured: request states are sealed with a per-process key");
    match StateKey::new(&bytes) {
        Ok(k) => k,
        Err(_) => unreachable!("32 bytes is a valid key length"),
    }
}
