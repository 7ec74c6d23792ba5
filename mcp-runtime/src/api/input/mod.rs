//! Typed client input on top of [`Ctx::input`]: form elicitation into a Rust type
//! ([`Ctx::elicit`]), sampling ([`Ctx::sample`]), roots ([`Ctx::roots`]), and typed state
//! kept across the rounds of a modern call ([`Ctx::round_state`], [`Ctx::keep_round_state`],
//! [`Ctx::once`]).
//!
//! Every method here goes through [`Ctx::input`], so it works in both eras:
//!
//! - **2026-07-28 (modern)**: the first time a handler asks, the call is answered
//!   `input_required` (the `?` on the method's result returns
//!   [`HandlerError::InputRequired`] from the handler). The client answers and retries the
//!   whole call; **the handler runs again from the top**, and this time the same ask returns
//!   the client's answer at once. Everything the handler did before the ask runs once per
//!   round: keep side effects after the asks, or keep their outcome with [`Ctx::once`].
//! - **Legacy eras**: the ask is a real server-to-client request on the call's stream; the
//!   method waits for the answer and the handler runs once.
//!
//! Either way the client must have declared the capability (`elicitation`, `sampling`,
//! `roots`), else the call fails with -32021 and `requiredCapabilities`.
//!
//! # Keys
//!
//! Each input request has a key, unique within the call. The methods here name theirs
//! `elicit-N`, `sample-N` and `roots-N`: `N` counts the asks of that kind this run of the
//! handler made (1 for the first elicitation, 2 for the second, …), so a re-run that asks
//! the same things in the same order finds its earlier answers under the same keys. That
//! holds as long as what the handler asks, and in which order, depends only on the call's
//! arguments and the answers so far (not on the clock, randomness, or data that may change
//! between rounds). When it does not, or to ask from concurrently spawned tasks, give the
//! ask a key of your own ([`Elicit::key`], [`Sampling::key`]); explicit keys do not advance
//! the counters. Do not use the `elicit-`, `sample-` and `roots-` prefixes for your own keys.
//!
//! # State across rounds
//!
//! A modern re-run starts with nothing but the call's arguments, the answers gathered so far
//! and the state the previous round kept. [`Ctx::keep_round_state`] keeps a value for the next
//! round (sealed into `requestState`, integrity-protected and bound to the caller and the
//! call); [`Ctx::round_state`] reads it back. [`Ctx::once`] does both for a value computed by
//! a side effect that must run once per call (a charge, a reservation, a generated id):
//!
//! ```no_run
//! # use mcp_runtime as mcp_server;
//! use mcp_server::{Ctx, HandlerError};
//! use mcp_server::input::Elicitation;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Confirm {
//!     /// Go ahead?
//!     ok: bool,
//! }
//!
//! async fn reserve_seat() -> Result<String, HandlerError> {
//!     Ok("seat-12A".to_owned())
//! }
//!
//! async fn book(ctx: Ctx) -> Result<String, HandlerError> {
//!     // Runs in the first round only; later rounds get the kept value.
//!     let seat: String = ctx.once(reserve_seat).await?;
//!     match ctx.elicit::<Confirm>(format!("Book {seat}?")).await? {
//!         Elicitation::Accept(Confirm { ok: true }) => Ok(format!("booked {seat}")),
//!         _ => Ok("not booked".to_owned()),
//!     }
//! }
//! ```
//!
//! In the legacy eras the handler is not re-run, so [`Ctx::once`] simply runs its closure.

use std::any::type_name;
use std::future::Future;

use mcp_protocol::{Feature, RpcError};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::ctx::Ctx;
use super::error::HandlerError;
use super::input_required::InputRequired;

mod form;
mod sampling;
#[cfg(test)]
mod tests;

pub use form::{FormSchemaError, form_schema};
use sampling::RootsReply;
pub use sampling::{Root, Sampling, SamplingReply};

// ------------------------------------------------------------------ elicitation

/// The user's answer to a form elicitation ([`Ctx::elicit`]), one variant per `action`.
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::input::Elicitation;
///
/// let answer: Elicitation<u32> = Elicitation::Accept(3);
/// assert_eq!(answer.accepted(), Some(3));
/// assert!(Elicitation::<u32>::Decline.accepted().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// `accept`: the user submitted the form; its content, deserialized.
    Accept(T),
    /// `decline`: the user explicitly refused.
    Decline,
    /// `cancel`: the user dismissed the form without choosing.
    Cancel,
}

impl<T> Elicitation<T> {
    /// The submitted content, when the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicitation::Accept(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the user accepted.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Elicitation::Accept(_))
    }
}

/// A form elicitation to send with [`Ctx::elicit_with`]: the message, and optionally the
/// input key (see the [module docs](self#keys)).
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::input::Elicit;
///
/// let ask = Elicit::new("Delete the file?").key("confirm-delete");
/// assert_eq!(ask.message(), "Delete the file?");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Elicit {
    message: String,
    key: Option<String>,
}

impl Elicit {
    /// An elicitation showing `message` to the user.
    pub fn new(message: impl Into<String>) -> Self {
        Elicit {
            message: message.into(),
            key: None,
        }
    }

    /// Names the input request `key` instead of the counted `elicit-N`; the same key on a
    /// re-run finds the same answer.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Reads an `ElicitResult` into its typed outcome.
fn read_elicitation<T: DeserializeOwned>(key: &str, answer: Value) -> Result<Elicitation<T>, HandlerError> {
    let action = answer.get("action").and_then(Value::as_str);
    match action {
        Some("accept") => {
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            serde_json::from_value(content).map(Elicitation::Accept).map_err(|e| {
                HandlerError::tool(format!(
                    "The user's answer to the form ({key}) does not fit what was asked: {e}"
                ))
            })
        }
        Some("decline") => Ok(Elicitation::Decline),
        Some("cancel") => Ok(Elicitation::Cancel),
        _ => Err(HandlerError::Rpc(RpcError::invalid_params(format!(
            "the answer to input request {key:?} is not an ElicitResult (action must be accept, decline or cancel)"
        )))),
    }
}

// ------------------------------------------------------------------------- Ctx

impl Ctx {
    /// Asks the user to fill a form of `T` (`elicitation/create` in form mode, with
    /// `requestedSchema` derived from `T`, see [`form_schema`]) and returns the answer,
    /// typed. The input key is the counted `elicit-N` (see the [module docs](self#keys));
    /// use [`Ctx::elicit_with`] for a key of your own.
    ///
    /// Modern era: the first run answers `input_required` through `?` and **the handler
    /// runs again from the top** with the answer; legacy eras: a real request, awaited. A
    /// client without the `elicitation` capability fails the call with -32021.
    ///
    /// Errors: `T` is not a flat form: an internal error (logged with the reason); the
    /// accepted content does not deserialize into `T`: [`HandlerError::Tool`] with the
    /// reason (a tool call answers `isError: true`, which the model can read and act on);
    /// an answer that is not an `ElicitResult`: -32602.
    ///
    /// ```no_run
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::{Ctx, HandlerError};
    /// use mcp_server::input::Elicitation;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Contact {
    ///     name: String,
    ///     #[schemars(email)]
    ///     email: String,
    /// }
    ///
    /// async fn greet(ctx: Ctx) -> Result<String, HandlerError> {
    ///     Ok(match ctx.elicit::<Contact>("Who are you?").await? {
    ///         Elicitation::Accept(c) => format!("hello {} <{}>", c.name, c.email),
    ///         Elicitation::Decline => "you declined".into(),
    ///         Elicitation::Cancel => "you cancelled".into(),
    ///     })
    /// }
    /// ```
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicitation<T>, HandlerError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        self.elicit_with(Elicit::new(message)).await
    }

    /// [`Ctx::elicit`] with the options of an [`Elicit`]: a key of your own, for a handler
    /// whose asks are not always made in the same order.
    ///
    /// ```no_run
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::{Ctx, HandlerError};
    /// use mcp_server::input::{Elicit, Elicitation};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm {
    ///     ok: bool,
    /// }
    ///
    /// async fn delete(ctx: Ctx, file: &str) -> Result<bool, HandlerError> {
    ///     let ask = Elicit::new(format!("Delete {file}?")).key(format!("delete:{file}"));
    ///     Ok(matches!(ctx.elicit_with::<Confirm>(ask).await?, Elicitation::Accept(Confirm { ok: true })))
    /// }
    /// ```
    pub async fn elicit_with<T>(&self, ask: Elicit) -> Result<Elicitation<T>, HandlerError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let key = ask.key.unwrap_or_else(|| self.run().next_key("elicit"));
        let schema = form_schema::<T>().map_err(|e| {
            tracing::error!(error = %e, "elicitation form refused");
            HandlerError::internal(e)
        })?;
        if self.revision().is_some_and(|r| !r.has(Feature::Elicitation)) {
            return Err(HandlerError::Rpc(RpcError::missing_capability(
                json!({"elicitation": {}}),
            )));
        }
        let params = json!({"message": ask.message, "requestedSchema": schema});
        let answer = self.ask_one(&key, "elicitation/create", params).await?;
        read_elicitation(&key, answer)
    }

    /// Asks the client's model for a message (`sampling/createMessage`) and returns its
    /// reply. Keyed `sample-N` unless [`Sampling::key`] names it. Modern era: an MRTR round
    /// (the handler re-runs from the top); legacy eras: a real request. A client without the
    /// `sampling` capability fails the call with -32021; a reply that is not a
    /// `CreateMessageResult` of text, image or audio content is -32602.
    ///
    /// ```no_run
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::{Ctx, HandlerError};
    /// use mcp_server::input::Sampling;
    ///
    /// async fn haiku(ctx: Ctx) -> Result<String, HandlerError> {
    ///     let ask = Sampling::new().system("You write haiku.").user("The sea").max_tokens(60);
    ///     Ok(ctx.sample(ask).await?.text())
    /// }
    /// ```
    pub async fn sample(&self, ask: Sampling) -> Result<SamplingReply, HandlerError> {
        if ask.messages.is_empty() {
            return Err(HandlerError::internal("a sampling request needs at least one message"));
        }
        let key = ask.key.clone().unwrap_or_else(|| self.run().next_key("sample"));
        let params = ask.params_for(self.revision(), self.client_capabilities());
        let answer = self.ask_one(&key, "sampling/createMessage", params).await?;
        serde_json::from_value(answer).map_err(|e| {
            HandlerError::Rpc(RpcError::invalid_params(format!(
                "the answer to input request {key:?} is not a CreateMessageResult: {e}"
            )))
        })
    }

    /// The client's roots (`roots/list`), keyed `roots-N`. Modern era: an MRTR round (the
    /// handler re-runs from the top); legacy eras: a real request. A client without the
    /// `roots` capability fails the call with -32021; a malformed answer is -32602.
    ///
    /// ```no_run
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::{Ctx, HandlerError};
    ///
    /// async fn where_am_i(ctx: Ctx) -> Result<Vec<String>, HandlerError> {
    ///     Ok(ctx.roots().await?.into_iter().map(|r| r.uri).collect())
    /// }
    /// ```
    pub async fn roots(&self) -> Result<Vec<Root>, HandlerError> {
        let key = self.run().next_key("roots");
        let answer = self.ask_one(&key, "roots/list", json!({})).await?;
        serde_json::from_value::<RootsReply>(answer)
            .map(|r| r.roots)
            .map_err(|e| {
                HandlerError::Rpc(RpcError::invalid_params(format!(
                    "the answer to input request {key:?} is not a ListRootsResult: {e}"
                )))
            })
    }

    /// The state the previous round of this call kept ([`Ctx::keep_round_state`],
    /// [`Ctx::once`], or [`InputRequired::with_state`]), as an `S`; `None` in the first
    /// round (and, the handler never re-running, in the legacy eras). A state that is not an
    /// `S` is an internal error.
    ///
    /// ```no_run
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::{Ctx, HandlerError};
    ///
    /// async fn step(ctx: Ctx) -> Result<u32, HandlerError> {
    ///     let round: u32 = ctx.round_state()?.unwrap_or(0) + 1;
    ///     ctx.keep_round_state(&round)?;
    ///     Ok(round)
    /// }
    /// ```
    pub fn round_state<S: DeserializeOwned>(&self) -> Result<Option<S>, HandlerError> {
        self.request_state()
            .map(|s| S::deserialize(s))
            .transpose()
            .map_err(|e| HandlerError::internal(format!("the round state is not a {}: {e}", type_name::<S>())))
    }

    /// Keeps `state` for the next round of this call: the next `input_required` this run
    /// answers (through [`Ctx::input`] and the methods built on it) carries it, sealed in
    /// `requestState`, and the re-run reads it with [`Ctx::round_state`]. State is kept one
    /// round at a time: a round that asks again and wants it still must keep it again (as
    /// [`Ctx::once`] does). The last value kept in a run wins; a request's own
    /// [`InputRequired::with_state`] wins over it; a handler that returns
    /// `Err(HandlerError::InputRequired(…))` itself must put the state there.
    ///
    /// The state travels through the client: it is integrity-protected and bound to the
    /// caller and the call, but it is not encrypted, so keep secrets out of it. See
    /// [`Ctx::round_state`] for an example.
    pub fn keep_round_state<S: Serialize>(&self, state: &S) -> Result<(), HandlerError> {
        let value = serde_json::to_value(state)
            .map_err(|e| HandlerError::internal(format!("the round state could not be serialized: {e}")))?;
        self.run().keep(value);
        Ok(())
    }

    /// The value of a side effect that must happen once per call: in the first round it
    /// runs `init`, later rounds get the value it produced (kept with
    /// [`Ctx::keep_round_state`], so it uses the call's one state slot: keep a struct for
    /// several values). In the legacy eras the handler runs once, so `init` just runs.
    ///
    /// ```no_run
    /// # use mcp_runtime as mcp_server;
    /// use mcp_server::{Ctx, HandlerError};
    /// use mcp_server::input::Elicitation;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Pay {
    ///     ok: bool,
    /// }
    ///
    /// async fn new_order() -> Result<String, HandlerError> {
    ///     Ok("order-17".to_owned()) // say, an INSERT: it must not run twice
    /// }
    ///
    /// async fn order(ctx: Ctx) -> Result<String, HandlerError> {
    ///     let order_id: String = ctx.once(new_order).await?;
    ///     match ctx.elicit::<Pay>(format!("Pay {order_id}?")).await? {
    ///         Elicitation::Accept(Pay { ok: true }) => Ok(format!("{order_id} paid")),
    ///         _ => Ok(format!("{order_id} left unpaid")),
    ///     }
    /// }
    /// ```
    pub async fn once<S, F, Fut>(&self, init: F) -> Result<S, HandlerError>
    where
        S: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<S, HandlerError>>,
    {
        let value = match self.round_state::<S>()? {
            Some(kept) => kept,
            None => init().await?,
        };
        self.keep_round_state(&value)?;
        Ok(value)
    }

    /// Asks one keyed input request through [`Ctx::input`] and returns its answer.
    async fn ask_one(&self, key: &str, method: &str, params: Value) -> Result<Value, HandlerError> {
        let mut answers = self.input(InputRequired::new().request(key, method, params)).await?;
        answers
            .remove(key)
            .ok_or_else(|| HandlerError::internal(format!("no answer to input request {key:?}")))
    }
}
