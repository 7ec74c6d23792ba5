//! Multi round-trip requests (SEP-2322): what a handler returns when it needs
//! input from the client before it can answer.

use serde_json::{Map, Value, json};

pub use crate::api::InputRequired;

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
        call: impl Fn(crate::Ctx) -> crate::api::handler::BoxFuture<Result<T, crate::HandlerError>>,
    ) -> Result<(Result<T, crate::HandlerError>, crate::Ctx), crate::guard::Interrupted> {
        run_rounds(RoundLimits::of(self.config()), name, ctx, call).await
    }
}

/// The limits of one handler run: its deadline, the grace a cancelled
/// handler gets, and the most rounds of legacy client input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RoundLimits {
    pub(crate) handler_timeout: std::time::Duration,
    pub(crate) cancel_grace: std::time::Duration,
    pub(crate) max_input_rounds: usize,
}

impl RoundLimits {
    /// The limits a configuration sets for calls.
    pub(crate) fn of(config: &crate::ServerConfig) -> Self {
        RoundLimits {
            handler_timeout: config.handler_timeout,
            cancel_grace: config.cancel_grace,
            max_input_rounds: config.max_input_rounds,
        }
    }

    /// The limits of one tool's runs: its own deadline, when it sets one
    /// (`ToolEntry::with_timeout`), replaces the configured one (inline and
    /// as a task alike).
    pub(crate) fn for_tool(self, tool: &crate::catalog::ToolEntry) -> Self {
        RoundLimits {
            handler_timeout: tool.timeout.unwrap_or(self.handler_timeout),
            ..self
        }
    }
}

/// Runs one handler future under its deadline and its call's cancellation,
/// race-free (behaviour invariant 13): when `cancel` fires first, the
/// handler is not dropped at once but keeps running for `grace`, so that
/// cleanup code after a `select!` on its token runs every time; then it is
/// dropped if still running. Whatever it returns after the cancellation is
/// discarded: the outcome is [`Interrupted::Cancelled`].
pub(crate) async fn run_graced<T>(
    name: &str,
    fut: impl std::future::Future<Output = T>,
    deadline: std::time::Duration,
    cancel: &tokio_util::sync::CancellationToken,
    grace: std::time::Duration,
) -> Result<T, crate::guard::Interrupted> {
    use crate::guard::Interrupted;
    // The guard's own cancellation branch would drop the handler at once: it gets a token
    // that never fires, and the cancellation is watched here.
    let never = tokio_util::sync::CancellationToken::new();
    let guarded = crate::guard::run_guarded(name, fut, deadline, &never);
    tokio::pin!(guarded);
    tokio::select! {
        biased;
        r = &mut guarded => r,
        () = cancel.cancelled() => {
            match tokio::time::timeout(grace, &mut guarded).await {
                Ok(_) => tracing::debug!(handler = name, "cancelled handler ended within its grace"),
                Err(_) => tracing::debug!(handler = name, ?grace, "cancelled handler still running after its grace; dropped"),
            }
            Err(Interrupted::Cancelled)
        }
    }
}

/// Runs a handler through its rounds. In the legacy era, a handler that
/// answers `input_required` gets its input requests sent to the client as
/// real server-to-client requests, then runs again with the answers (at
/// most `max_input_rounds` times). In the modern era the outcome is returned
/// as it is, with the context of the call. A cancelled run gets the grace
/// of [`run_graced`].
pub(crate) async fn run_rounds<T>(
    limits: RoundLimits,
    name: &str,
    ctx: crate::Ctx,
    call: impl Fn(crate::Ctx) -> crate::api::handler::BoxFuture<Result<T, crate::HandlerError>>,
) -> Result<(Result<T, crate::HandlerError>, crate::Ctx), crate::guard::Interrupted> {
    use crate::HandlerError;
    let cancel = ctx.cancellation().clone();
    let mut ctx = ctx;
    let mut round = 0;
    loop {
        if cancel.is_cancelled() {
            // Cancelled between rounds: the next round never starts.
            return Err(crate::guard::Interrupted::Cancelled);
        }
        let outcome = run_graced(
            name,
            call(ctx.clone()),
            limits.handler_timeout,
            &cancel,
            limits.cancel_grace,
        )
        .await?;
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::run_graced;
    use crate::guard::Interrupted;

    /// A handler that waits for its token, then cleans up for `cleanup`.
    async fn handler(token: CancellationToken, cleanup: Duration, cleaned: Arc<AtomicBool>) -> &'static str {
        token.cancelled().await;
        tokio::time::sleep(cleanup).await;
        cleaned.store(true, Ordering::SeqCst);
        "late result"
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_handler_cleans_up_within_its_grace() {
        let token = CancellationToken::new();
        let cleaned = Arc::new(AtomicBool::new(false));
        let fut = handler(token.clone(), Duration::from_millis(300), cleaned.clone());
        token.cancel();
        let r = run_graced("t", fut, Duration::from_secs(60), &token, Duration::from_secs(1)).await;
        assert_eq!(r, Err(Interrupted::Cancelled), "its late result is discarded");
        assert!(cleaned.load(Ordering::SeqCst), "the cleanup ran");
    }

    #[tokio::test(start_paused = true)]
    async fn a_handler_past_its_grace_is_dropped() {
        let token = CancellationToken::new();
        let cleaned = Arc::new(AtomicBool::new(false));
        let fut = handler(token.clone(), Duration::from_secs(5), cleaned.clone());
        let started = tokio::time::Instant::now();
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            canceller.cancel();
        });
        let r = run_graced("t", fut, Duration::from_secs(60), &token, Duration::from_secs(1)).await;
        assert_eq!(r, Err(Interrupted::Cancelled));
        assert!(!cleaned.load(Ordering::SeqCst), "dropped before its cleanup ended");
        assert_eq!(started.elapsed(), Duration::from_millis(1100), "cancel, then one grace");
    }

    #[tokio::test(start_paused = true)]
    async fn an_uncancelled_handler_keeps_its_result_and_deadline() {
        let token = CancellationToken::new();
        let r = run_graced("t", async { 7 }, Duration::from_secs(1), &token, Duration::from_secs(1)).await;
        assert_eq!(r, Ok(7));
        let slow = tokio::time::sleep(Duration::from_secs(10));
        let r = run_graced("t", slow, Duration::from_secs(1), &token, Duration::from_secs(1)).await;
        assert_eq!(r, Err(Interrupted::TimedOut));
    }
}
