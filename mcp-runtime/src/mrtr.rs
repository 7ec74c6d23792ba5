//! Multi round-trip requests (SEP-2322): what a handler returns when it needs
//! input from the client before it can answer.

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

impl crate::Runtime {
    /// Opens the round a modern retry carries: validates `inputResponses`
    /// (malformed: -32602), verifies and opens `requestState` (tampered,
    /// expired, another principal's or another request's: -32602, never
    /// re-prompted), and merges the responses of earlier rounds with the new
    /// ones.
    pub(crate) fn open_round(
        &self,
        method: &str,
        params: Option<&Map<String, Value>>,
        principal: &str,
    ) -> Result<Round, mcp_protocol::RpcError> {
        use mcp_protocol::mrtr::parse_input_responses;
        use mcp_protocol::request_state::open_ring;
        let Some(p) = params else {
            return Ok(Round::default());
        };
        let fresh = p.get("inputResponses").map(parse_input_responses).transpose()?;
        let (state, mut responses) = match p.get("requestState") {
            None => (None, Map::new()),
            Some(Value::String(token)) => {
                let opened = open_ring(self.state_keys(), token, principal, method, params, now_ms()).map_err(|e| {
                    tracing::debug!(method, error = %e, "requestState refused");
                    e.to_rpc_error()
                })?;
                let state = opened.get("s").filter(|s| !s.is_null()).cloned();
                let earlier = opened.get("r").and_then(Value::as_object).cloned().unwrap_or_default();
                (state, earlier)
            }
            Some(_) => return Err(mcp_protocol::RpcError::invalid_params("Invalid requestState")),
        };
        let had_input = fresh.is_some() || !responses.is_empty();
        if let Some(fresh) = fresh {
            responses.extend(fresh.iter().map(|(k, v)| (k.clone(), v.clone())));
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
        ctx: &crate::Ctx,
        params: Option<&Map<String, Value>>,
        ir: InputRequired,
    ) -> Result<Value, mcp_protocol::RpcError> {
        use mcp_protocol::RpcError;
        use mcp_protocol::mrtr::{InputRequiredResult, check_input_requests, missing_capability};
        use mcp_protocol::request_state::seal;
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
        let request_state = if ir.state.is_some() || !gathered.is_empty() {
            let payload = json!({ "s": ir.state, "r": gathered });
            let ttl = self.config().request_state_ttl.as_millis() as u64;
            let token = seal(
                self.state_keys().newest(),
                ctx.principal(),
                ctx.method(),
                params,
                &payload,
                now_ms(),
                ttl,
            )
            .map_err(|e| {
                tracing::error!(method = ctx.method(), error = %e, "requestState could not be sealed");
                RpcError::internal()
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

    /// Runs a handler through its rounds (see [`run_rounds`]) under this
    /// runtime's limits.
    pub(crate) async fn run_rounds<T>(
        &self,
        name: &str,
        ctx: crate::Ctx,
        call: impl Fn(crate::Ctx) -> crate::handler::BoxFuture<Result<T, crate::HandlerError>>,
    ) -> Result<(Result<T, crate::HandlerError>, crate::Ctx), crate::guard::Interrupted> {
        run_rounds(RoundLimits::of(self.config()), name, ctx, call).await
    }
}

/// The limits of one handler run: its deadline and the most rounds of
/// legacy client input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RoundLimits {
    pub(crate) handler_timeout: std::time::Duration,
    pub(crate) max_input_rounds: usize,
}

impl RoundLimits {
    /// The limits a configuration sets for calls.
    pub(crate) fn of(config: &crate::ServerConfig) -> Self {
        RoundLimits {
            handler_timeout: config.handler_timeout,
            max_input_rounds: config.max_input_rounds,
        }
    }
}

/// Runs a handler through its rounds. In the legacy era, a handler that
/// answers `input_required` gets its input requests sent to the client as
/// real server-to-client requests, then runs again with the answers (at
/// most `max_input_rounds` times). In the modern era the outcome is returned
/// as it is, with the context of the call.
pub(crate) async fn run_rounds<T>(
    limits: RoundLimits,
    name: &str,
    ctx: crate::Ctx,
    call: impl Fn(crate::Ctx) -> crate::handler::BoxFuture<Result<T, crate::HandlerError>>,
) -> Result<(Result<T, crate::HandlerError>, crate::Ctx), crate::guard::Interrupted> {
    use crate::HandlerError;
    let cancel = ctx.cancellation().clone();
    let mut ctx = ctx;
    let mut round = 0;
    loop {
        let outcome = crate::guard::run_guarded(name, call(ctx.clone()), limits.handler_timeout, &cancel).await?;
        let ir = match outcome {
            Err(HandlerError::InputRequired(ir)) if ctx.era() == mcp_protocol::Era::Legacy => ir,
            other => return Ok((other, ctx)),
        };
        round += 1;
        if round >= limits.max_input_rounds {
            return Ok((Err(HandlerError::internal("too many rounds of client input")), ctx));
        }
        let mut responses = ctx.input_responses().cloned().unwrap_or_default();
        for (key, req) in ir.requests {
            match ctx.fulfil(&req).await {
                Ok(v) => {
                    responses.insert(key, v);
                }
                Err(e) => return Ok((Err(e), ctx)),
            }
        }
        ctx = ctx.next_round(responses, ir.state.clone());
    }
}
