//! A request that passed every check, ready to run, and how it ended.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use mcp_protocol::auth::AuthInfo;
use mcp_protocol::classify::disconnect_cancels;
use mcp_protocol::error::{Stage, status_at};
use mcp_protocol::{Era, Method, Request, RequestId, RpcError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::api::handler::BoxFuture;
use crate::attachments::Attachments;
use crate::dispatch::route::Route;
use crate::dispatch::{RequestEnv, dispatch};
use crate::middleware::inbound::Message;
use crate::middleware::outcome::Body;
use crate::middleware::{Headers, Inbound, Outcome, Terminal};
use crate::observe::{Network, Observed, Origin};
use crate::reply::Reply;
use crate::runtime::Runtime;
use crate::session::InFlightGuard;
use crate::session::{Session, SessionHandle};
use crate::sink::{Frame, Sink};

/// What a call runs with besides its request.
#[derive(Debug)]
pub(crate) struct Env {
    pub(crate) auth: Arc<AuthInfo>,
    pub(crate) session: Option<Arc<Session>>,
    pub(crate) cancel: CancellationToken,
    pub(crate) guard: Option<InFlightGuard>,
    pub(crate) attachments: Attachments,
    /// The client's address, where the transport tells clients apart.
    pub(crate) remote: Option<crate::remote::Remote>,
    /// The transport's network (for the call's telemetry).
    pub(crate) network: Option<Network>,
}

/// A routed, registered request: the transport gives it a sink and runs it where it likes (a
/// task, a worker of its pool).
#[derive(Debug)]
pub struct Call {
    runtime: Arc<Runtime>,
    req: Request,
    route: Route,
    env: Env,
    stream: bool,
    /// Its span and clock, from the engine (`None` for a batch's calls: opened when run).
    pub(crate) observed: Option<Observed>,
}

impl Call {
    pub(crate) fn new(runtime: Arc<Runtime>, req: Request, route: Route, env: Env, stream: bool) -> Self {
        Call {
            runtime,
            req,
            route,
            env,
            stream,
            observed: None,
        }
    }

    /// The request id.
    pub fn id(&self) -> &RequestId {
        &self.req.id
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.req.method
    }

    /// The era the request was classified in.
    pub fn era(&self) -> Era {
        self.route.era
    }

    /// The legacy session it runs in, if any.
    pub fn session(&self) -> Option<SessionHandle> {
        self.env.session.clone().map(SessionHandle)
    }

    /// Whether what the handler emits travels on the request's own stream (behaviour
    /// invariant 16, and the transport can stream); otherwise the sink is detached.
    pub fn may_stream(&self) -> bool {
        self.stream
    }

    /// Whether the request is a long-lived stream: a custom method marked
    /// [`long_lived`](crate::extension::CustomMethod::long_lived) (the Events extension's
    /// `events/stream`), which a transport holds with its stream budget rather than its
    /// in-flight request bound.
    pub fn long_lived(&self) -> bool {
        self.route.long_lived()
    }

    /// Whether the client going away cancels the call (behaviour invariant 14); a long-lived
    /// request's stream is its subscription, which ends with it in every era.
    pub fn disconnect_cancels(&self) -> bool {
        disconnect_cancels(self.route.era) || self.route.long_lived()
    }

    /// The tool a `tools/call` names.
    pub fn tool_name(&self) -> Option<Cow<'_, str>> {
        match self.req.method {
            Method::ToolsCall => self.req.params.as_ref()?.str("name"),
            _ => None,
        }
    }

    /// The call's cancellation token (cancelled by `notifications/cancelled`, a closed
    /// session, or the transport).
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.env.cancel
    }

    /// Gives up a call that will not run: its registration, to release with its answer.
    pub fn into_guard(self) -> Option<InFlightGuard> {
        self.env.guard
    }

    /// Runs the call: dispatch with `sink` (detached unless [`Call::may_stream`]), a panic
    /// answered as an internal error, and a cancellation seen at the end winning over the
    /// outcome (behaviour invariant 13).
    pub async fn run(self, sink: Sink) -> Completed {
        let Call {
            runtime,
            req,
            route,
            env,
            stream,
            observed,
        } = self;
        let id = req.id.clone();
        let era = route.era;
        let mut observed = observed.unwrap_or_else(|| {
            let origin = Origin {
                auth: &env.auth,
                revision: route.revision,
                headers: None,
                network: env.network,
                remote: env.remote,
                tracer: runtime.config().tracer.as_ref(),
            };
            Observed::start(&req, era, origin, &|m, name| runtime.target(m, name))
        });
        observed.routed(
            route.revision,
            env.session.as_ref().map(|s| &**s.id()),
            route.custom_label(),
            route.tool(),
        );
        let cancel = env.cancel;
        if cancel.is_cancelled() {
            tracing::debug!(%id, "request cancelled before it started");
            observed.cancelled();
            return Completed::new(id, era, Reply::Cancelled, env.guard);
        }
        let method = req.method.clone();
        let sink = if stream { sink } else { Sink::detached() };
        let (reply, hints) = if runtime.config().middleware.is_empty() {
            let renv = RequestEnv {
                auth: env.auth,
                session: env.session,
                sink,
                cancel: cancel.clone(),
                attachments: env.attachments,
                remote: env.remote.map(|r| r.address),
            };
            let reply =
                AssertUnwindSafe(observed.run_in(dispatch(&runtime.parts(route.catalog.clone()), req, &route, renv)))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        tracing::error!(%id, %method, "request handler panicked");
                        Reply::Error(RpcError::internal())
                    });
            (reply, None)
        } else {
            let inbound = Inbound {
                message: Message::Request(req),
                auth: env.auth,
                era,
                revision: route.revision,
                session: env.session,
                remote: env.remote.map(|r| r.address),
                attachments: env.attachments,
            };
            // Boxed: a call without middleware does not carry the chain's state in its future.
            let layered = layered(runtime.clone(), route, inbound, sink, cancel.clone(), method.clone());
            observed.run_in(layered).await
        };
        let reply = if cancel.is_cancelled() {
            tracing::debug!(%id, %method, "request cancelled; no answer");
            Reply::Cancelled
        } else {
            reply
        };
        observed.finish(&reply);
        let mut done = Completed::new(id, era, reply, env.guard);
        done.hints = hints;
        done
    }
}

/// Runs a call through the middleware chain around its dispatch: the reply (a layer's own
/// result decorated for the era) and the HTTP status and headers the layers chose.
fn layered(
    runtime: Arc<Runtime>,
    route: Route,
    inbound: Inbound,
    sink: Sink,
    cancel: CancellationToken,
    method: Method,
) -> BoxFuture<(Reply, Option<Box<Hints>>)> {
    Box::pin(async move {
        let era = route.era;
        let rt = runtime.clone();
        let terminal: Terminal = Box::new(move |inbound: Inbound| {
            Box::pin(async move {
                let Message::Request(req) = inbound.message else {
                    return Outcome::error(RpcError::internal());
                };
                let renv = RequestEnv {
                    auth: inbound.auth,
                    session: inbound.session,
                    sink,
                    cancel,
                    attachments: inbound.attachments,
                    remote: inbound.remote,
                };
                Outcome::reply_of(dispatch(&rt.parts(route.catalog.clone()), req, &route, renv).await)
            })
        });
        let chain = runtime.config().middleware.clone();
        let outcome = chain.run(inbound, terminal).await;
        let reply = match outcome.body {
            // A layer's own answer is decorated for the era like any other.
            Body::Reply(Reply::Result(v)) if era == Era::Modern => runtime.decorate(&method, era, v),
            Body::Reply(r) => r,
            Body::Stream(_) | Body::Accepted => Reply::Error(RpcError::internal()),
        };
        let hints = (outcome.status.is_some() || !outcome.headers.is_empty()).then(|| {
            Box::new(Hints {
                status: outcome.status,
                headers: outcome.headers,
            })
        });
        (reply, hints)
    })
}

/// The HTTP status and headers middleware chose for an answer.
#[derive(Debug, Default)]
struct Hints {
    status: Option<u16>,
    headers: Headers,
}

/// No headers (what a call without middleware answers with).
static NO_HEADERS: Headers = Headers::new();

/// How a call ended.
#[derive(Debug)]
pub struct Completed {
    id: RequestId,
    era: Era,
    /// The reply ([`Reply::Cancelled`] when cancelled: nothing is answered).
    pub reply: Reply,
    /// The request's registration: the id stays in flight until it is dropped (stdio drops it
    /// when the answer is written).
    pub guard: Option<InFlightGuard>,
    /// What middleware chose for the HTTP answer (none: the protocol's status, no headers).
    hints: Option<Box<Hints>>,
}

impl Completed {
    fn new(id: RequestId, era: Era, reply: Reply, guard: Option<InFlightGuard>) -> Self {
        Completed {
            id,
            era,
            reply,
            guard,
            hints: None,
        }
    }

    /// The request id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Whether the call was cancelled (nothing is answered).
    pub fn is_cancelled(&self) -> bool {
        matches!(self.reply, Reply::Cancelled)
    }

    /// The encoded response (`None` when cancelled).
    pub fn frame(&self) -> Option<Frame> {
        self.reply.encode(&self.id)
    }

    /// The HTTP status of the answer: the one a middleware layer chose, else the protocol's
    /// (errors raised while running the method).
    pub fn status(&self) -> u16 {
        if let Some(status) = self.hints.as_ref().and_then(|h| h.status) {
            return status;
        }
        match &self.reply {
            Reply::Error(e) => status_at(Stage::Dispatch, self.era, e.code),
            _ => 200,
        }
    }

    /// The HTTP headers middleware layers added to the answer.
    pub fn headers(&self) -> &Headers {
        self.hints.as_ref().map_or(&NO_HEADERS, |h| &h.headers)
    }

    /// The reply as a response outcome (`None` when cancelled).
    pub fn into_outcome(self) -> Option<Result<Value, RpcError>> {
        self.reply.into_outcome()
    }
}
