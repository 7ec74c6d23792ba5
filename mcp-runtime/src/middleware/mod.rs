//! The middleware chain: layers every inbound request and notification goes through, whatever
//! the transport (stdio, HTTP, a transport of your own; each item of a batch on its own).
//!
//! A layer ([`Middleware`]: a plain async closure `|request, next| async move { … }`, or a type
//! implementing the trait) sees the message ([`Inbound`]: its method, params, id, principal,
//! era, revision, session and the client's address) and decides what becomes of it:
//!
//! - **pass it on**: `next.run(request).await`, and see how it ended (an [`Outcome`]: the
//!   result, the error, a cancellation, an opened stream), to time, log or count it;
//! - **refuse it**: return [`Outcome::error`] without calling `next` (a JSON-RPC error;
//!   [`Outcome::with_status`] and [`Outcome::with_header`] add the HTTP status and
//!   [`Headers`], such as `Retry-After`, where the transport is HTTP);
//! - **answer it in place**: return [`Outcome::result`] without calling `next`;
//! - **attach data for the handler**: insert it in [`Inbound::attachments_mut`] before calling
//!   `next`; the handler reads it with `Ctx::attachments`.
//!
//! # Where the chain runs
//!
//! After the transport's own checks and authentication (the principal is known), after the
//! engine classified the era, resolved the legacy session and routed the request (the method
//! is served; a request refused before is never seen), before the handler: a request's layers
//! wrap its whole run, so a call that becomes a task is seen ending with its `CreateTaskResult`,
//! and each MRTR round of a modern call is a request of its own (the round's `requestState` is
//! opened after the chain). `initialize` is seen ending with its result (a refusal mints no
//! session), `subscriptions/listen` with its stream opened. A notification has no outcome: a
//! layer that calls `next` admits it (the outcome is [`Outcome::is_accepted`]), one that does
//! not drops it (with an HTTP status, if it gives one). Client responses to the server's own
//! requests do not go through the chain.
//!
//! Layers run in the order they were added, the first outermost. A layer that panics is
//! answered like a handler that panics (-32603, details in the log).
//!
//! One layer is built in: [`RateLimit`], rate limits per caller (and per tool or method) with
//! buckets in this process or in the shared store.

mod headers;
pub(crate) mod inbound;
pub(crate) mod outcome;
pub mod ratelimit;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use mcp_protocol::RpcError;

pub use headers::Headers;
pub use inbound::Inbound;
pub use outcome::Outcome;
pub use ratelimit::{Bucketing, OnStoreFailure, QuotaHook, RateLimit};

use crate::api::handler::BoxFuture;

/// One layer of the chain.
pub trait Middleware: Send + Sync + 'static {
    /// Handles `request`: call `next.run(request)` to pass it on, or return an outcome of
    /// your own.
    fn call(&self, request: Inbound, next: Next) -> BoxFuture<Outcome>;
}

impl<F, Fut> Middleware for F
where
    F: Fn(Inbound, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    fn call(&self, request: Inbound, next: Next) -> BoxFuture<Outcome> {
        Box::pin(self(request, next))
    }
}

/// What the chain ends in: the engine's own handling of the message.
pub(crate) type Terminal = Box<dyn FnOnce(Inbound) -> BoxFuture<Outcome> + Send>;

/// The rest of the chain, handed to a layer.
pub struct Next {
    layers: Arc<Vec<Arc<dyn Middleware>>>,
    index: usize,
    terminal: Terminal,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &(self.layers.len() - self.index))
            .finish_non_exhaustive()
    }
}

impl Next {
    /// Passes the request to the next layer (or, after the last, to the server) and returns
    /// how it ended.
    pub async fn run(self, request: Inbound) -> Outcome {
        let Next {
            layers,
            index,
            terminal,
        } = self;
        match layers.get(index).cloned() {
            Some(layer) => {
                let next = Next {
                    layers,
                    index: index + 1,
                    terminal,
                };
                layer.call(request, next).await
            }
            None => terminal(request).await,
        }
    }
}

/// The layers of a server, outermost first. Cheap to clone.
#[derive(Clone, Default)]
pub struct Middlewares {
    layers: Arc<Vec<Arc<dyn Middleware>>>,
}

impl std::fmt::Debug for Middlewares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Middlewares")
            .field("layers", &self.layers.len())
            .finish()
    }
}

impl Middlewares {
    /// No layer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a layer inside the ones added before.
    pub fn push(&mut self, layer: impl Middleware) {
        Arc::make_mut(&mut self.layers).push(Arc::new(layer));
    }

    /// Adds a layer outside every layer added before (it runs first).
    pub fn push_outermost(&mut self, layer: impl Middleware) {
        Arc::make_mut(&mut self.layers).insert(0, Arc::new(layer));
    }

    /// How many layers there are.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there is none (the engine then skips the chain entirely).
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Runs `request` through every layer, then `terminal`. A layer that panics is answered
    /// -32603 (details in the log).
    pub(crate) async fn run(&self, request: Inbound, terminal: Terminal) -> Outcome {
        let method = request.message.name();
        let next = Next {
            layers: self.layers.clone(),
            index: 0,
            terminal,
        };
        AssertUnwindSafe(next.run(request))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                tracing::error!(%method, "middleware or handler panicked");
                Outcome::error(RpcError::internal())
            })
    }
}
