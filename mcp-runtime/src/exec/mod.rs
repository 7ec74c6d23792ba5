//! Running handlers: one run under its deadline, cancellation grace and panic guard
//! ([`run_graced`]), the rounds of legacy client input ([`run_rounds`]), a tool call's run with
//! its validation and rendering ([`tool`]), and the MRTR rounds of a modern call ([`rounds`]).
//! The dispatcher and the tasks both run handlers through here.

pub(crate) mod guard;
pub(crate) mod rounds;
pub(crate) mod tool;

use guard::Interrupted;

use crate::api::handler::BoxFuture;
use crate::api::{Ctx, HandlerError};
use crate::catalog::ToolEntry;
use crate::config::ServerConfig;

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
    pub(crate) fn of(config: &ServerConfig) -> Self {
        RoundLimits {
            handler_timeout: config.handler_timeout,
            cancel_grace: config.cancel_grace,
            max_input_rounds: config.max_input_rounds,
        }
    }

    /// The limits of one tool's runs: its own deadline, when it sets one
    /// (`ToolEntry::with_timeout`), replaces the configured one (inline and
    /// as a task alike).
    pub(crate) fn for_tool(self, tool: &ToolEntry) -> Self {
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
) -> Result<T, guard::Interrupted> {
    // Not `run_guarded`, whose cancellation branch would drop the handler at once: the
    // cancellation is watched here.
    let guarded = guard::run_bounded(name, fut, deadline);
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
    ctx: Ctx,
    call: impl Fn(Ctx) -> BoxFuture<Result<T, HandlerError>>,
) -> Result<(Result<T, HandlerError>, Ctx), guard::Interrupted> {
    // Every round's context carries the same token: it is read from the context, not cloned.
    let mut ctx = ctx;
    let mut round = 0;
    loop {
        if ctx.is_cancelled() {
            // Cancelled between rounds: the next round never starts.
            return Err(guard::Interrupted::Cancelled);
        }
        let outcome = run_graced(
            name,
            call(ctx.clone()),
            limits.handler_timeout,
            ctx.cancellation(),
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
            // Boxed: the legacy input rounds are rare, and their state would size every
            // handler's run (the hot path included) for them.
            match Box::pin(ctx.fulfil(&req)).await {
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

    use super::guard::Interrupted;
    use super::run_graced;

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
