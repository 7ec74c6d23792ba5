//! The inbound engine: the one message pipeline every transport hands its decoded messages to.
//!
//! A transport frames bytes (an HTTP body, a stdio line), decodes them with `mcp-protocol`, and
//! calls the engine with what only it knows, a [`Peer`]: the caller's identity, the revision it
//! declared beside the body, how it keeps legacy sessions, whether it can stream, the HTTP
//! headers for the agreement checks, and what it attaches for middleware and handlers. The engine does the rest, in
//! the order of behaviour invariant 3, and answers with a [`Step`]:
//!
//! - client responses are delivered to the pending server-to-client request of the caller's
//!   own session ([`Engine::deliver`]), or dropped;
//! - notifications are routed ([`Engine::notification`]): `notifications/cancelled` to the
//!   request it names, in the scope its era's requests were registered in;
//! - requests ([`Engine::request`]) are classified into their era (body first, then the
//!   transport's revision), checked (header agreement, method served by the era, `_meta`, the
//!   legacy session: minted by `initialize`, required otherwise where sessions are kept, and an
//!   unknown or another principal's session answered like absence), registered in flight
//!   (a duplicate id is refused), and handed back as a [`Call`] to run, a [`Listening`]
//!   stream, or an immediate [`Answer`];
//! - batches ([`Engine::batch`]) are split, checked against the revision, and their requests
//!   run concurrently into one array ([`Batch`]).
//!
//! Every refusal is an [`Answer`] carrying its JSON-RPC frame and its HTTP status, which
//! `mcp-protocol` maps from the stage and the era ([`status_at`]): the same input gets the same
//! answer on every transport. The transport keeps only what is its own: framing, the stream
//! choice and its event framing, replay, keep-alives, and its bounds.

mod batch;
mod call;
mod handle;
mod layers;
mod peer;
mod services;
mod start;
mod step;

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::classify::{era_of, may_stream, request_era};
use mcp_protocol::error::{Stage, status_at};
use mcp_protocol::headers::{check_param_headers, check_standard_headers};
use mcp_protocol::meta::meta_version;
use mcp_protocol::secure_params::ARGUMENTS_FIELD;
use mcp_protocol::{Era, Method, Notification, Request, RequestId, Response, Revision, RpcError, TransportRevision};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::remote::Remote;
pub use crate::session::slot::SessionSlot;
pub use batch::{Batch, BatchDone, BatchStep};
pub use call::{Call, Completed};
pub use handle::{Engine, WeakEngine};
pub use peer::{HeaderLookup, Peer, Sessions};
pub use start::{Driver, Storage};
pub use step::{Answer, Listening, Step};

use crate::dispatch::route::{Route, route};
use crate::listen::{Holder, ListenError};
use crate::middleware::inbound::Message;
use crate::middleware::outcome::Body;
use crate::middleware::{Inbound, Outcome, Terminal};
use crate::observe::{Observed, Origin};
use crate::runtime::Runtime;
use crate::session::Session;
use crate::session::store::{SessionLimit, StartError};
use crate::session::{InFlight, InFlightGuard};
use crate::store::SessionField;

/// The session a message names, resolved.
enum Resolved {
    Absent,
    Found(Arc<Session>),
    Unknown,
    /// The shared store could not be asked (503: the session may exist).
    Unavailable,
}

impl Engine {
    async fn resolve(&self, peer: &Peer<'_>) -> Resolved {
        self.resolve_changing(peer, &[]).await
    }

    /// [`Engine::resolve`] for a message that will make `changes` to its session (see
    /// [`Runtime::find_session_changing`]).
    async fn resolve_changing(&self, peer: &Peer<'_>, changes: &[SessionField]) -> Resolved {
        match peer.sessions {
            Sessions::Store(Some(id)) => match self
                .runtime
                .find_session_changing(id, &peer.auth.principal, changes)
                .await
            {
                Ok(Some(s)) => Resolved::Found(s),
                Ok(None) => Resolved::Unknown,
                Err(e) => {
                    let _ = e.unavailable();
                    Resolved::Unavailable
                }
            },
            Sessions::Store(None) | Sessions::None => Resolved::Absent,
            Sessions::Slot(slot) => slot.current().map_or(Resolved::Absent, Resolved::Found),
        }
    }

    /// Delivers a client's response to the pending server-to-client request of the caller's
    /// own session; anything else is dropped without a trace on the wire (no oracle).
    pub async fn deliver(&self, peer: &Peer<'_>, response: Response) {
        let session = match self.resolve(peer).await {
            Resolved::Found(s) => Some(s),
            _ => None,
        };
        deliver_to(session.as_deref(), response);
    }

    /// Routes a client notification. `Some` only when it must be refused: a legacy
    /// notification naming an unknown session where sessions are kept (404). Observed like a
    /// request (a span and a duration, without an id), until it is routed or refused.
    pub async fn notification(&self, peer: &Peer<'_>, note: &Notification) -> Option<Answer> {
        let era = era_of(note.params.as_ref(), peer.revision.known());
        let observed = Observed::notification(note, era, self.origin(peer));
        let (session, outcome) = observed.run_in(self.route_notification(peer, era, note)).await;
        noted(observed, session.as_ref(), &outcome);
        outcome.err().flatten()
    }

    /// [`Engine::notification`]'s work: the session it names, and whether it was routed (`Err`:
    /// refused, answered or dropped).
    async fn route_notification(
        &self,
        peer: &Peer<'_>,
        era: Era,
        note: &Notification,
    ) -> (Option<Arc<Session>>, Result<(), Option<Answer>>) {
        // The change the notification makes goes with the load of a replica for it; not where
        // middleware may still refuse the notification (then it is written once admitted).
        let change = Runtime::session_change(note).filter(|_| self.runtime.config().middleware.is_empty());
        let session = match (era, peer.sessions) {
            (Era::Legacy, Sessions::Store(_)) => match self.resolve_changing(peer, change.as_slice()).await {
                Resolved::Found(s) => Some(s),
                Resolved::Unknown => {
                    let refused = Answer::error(Stage::Session, era, None, &RpcError::session_not_found());
                    return (None, Err(Some(refused)));
                }
                Resolved::Unavailable => {
                    let refused = Answer::error(Stage::Overload, era, None, &RpcError::store_unavailable());
                    return (None, Err(Some(refused)));
                }
                Resolved::Absent => None,
            },
            (Era::Legacy, Sessions::Slot(slot)) => slot.current(),
            _ => None,
        };
        let outcome = self.notify_in(peer, era, session.as_ref(), note).await;
        (session, outcome)
    }

    /// What the observation of a message needs to know of its peer.
    fn origin<'a, 'p>(&'a self, peer: &'a Peer<'p>) -> Origin<'a, 'p> {
        Origin {
            auth: &peer.auth,
            revision: peer.revision.known(),
            headers: peer.headers,
            network: peer.network,
            remote: peer.remote,
            tracer: self.runtime.config().tracer.as_ref(),
        }
    }

    /// Routes a notification once its session is known, if every middleware layer admits it
    /// (`Err`: refused, with the answer a layer gave, if any): a cancellation reaches the
    /// requests of its era's scope (the connection's on a slot, the session's in the store).
    async fn notify_in(
        &self,
        peer: &Peer<'_>,
        era: Era,
        session: Option<&Arc<Session>>,
        note: &Notification,
    ) -> Result<(), Option<Answer>> {
        layers::admit(&self.runtime.config().middleware, peer, era, session, note).await?;
        let untracked = InFlight::new();
        let in_flight = match (peer.sessions, session) {
            (Sessions::Slot(slot), _) => slot.in_flight(),
            (_, Some(s)) if era == Era::Legacy => s.in_flight(),
            _ => &untracked,
        };
        self.runtime.notification(note, session, in_flight);
        Ok(())
    }

    /// Takes a request through every check and hands it back ready to run, or answered.
    pub async fn request(&self, peer: &Peer<'_>, req: Request) -> Step {
        let era = request_era(&req, peer.revision.known());
        let observed = Observed::start(&req, era, self.origin(peer), &|m, name| self.runtime.target(m, name));
        let step = observed
            .run_in(async {
                match era {
                    _ if !self.runtime.config().eras.has(era) => self.unserved(era, &req),
                    Era::Modern => self.modern(peer, req).await,
                    Era::Legacy => self.legacy(peer, req).await,
                }
            })
            .await;
        match step {
            Step::Answer(answer) => {
                observed.answered(&answer.frame, answer.session.as_ref().map(|s| &**s.id()));
                Step::Answer(answer)
            }
            Step::Listen(listening) => {
                observed.listening();
                Step::Listen(listening)
            }
            Step::Call(mut call) => {
                call.observed = Some(observed);
                Step::Call(call)
            }
        }
    }

    /// The answer to a request of an era the server does not serve (`ServerConfig::eras`):
    /// -32022 naming the revisions it serves (a modern-only server names them to an
    /// `initialize`, as the protocol asks) and the one the request named.
    fn unserved(&self, era: Era, req: &Request) -> Step {
        let params = req.params.as_ref();
        let requested = match era {
            Era::Legacy => params.and_then(|p| p.str("protocolVersion")),
            Era::Modern => meta_version(params).map(|v| v.to_string().into()),
        };
        let e = self.unserved_error(requested.as_deref().unwrap_or(""));
        Step::Answer(Answer::error(Stage::Envelope, era, Some(&req.id), &e))
    }

    /// -32022 naming the revisions the server serves (`ServerConfig::eras`) and `requested`.
    fn unserved_error(&self, requested: &str) -> RpcError {
        let served: Vec<Revision> = self.runtime.config().eras.revisions().collect();
        RpcError::unsupported_version(&served, requested)
    }

    async fn modern(&self, peer: &Peer<'_>, req: Request) -> Step {
        let refuse = |stage, e: &RpcError| Step::Answer(Answer::error(stage, Era::Modern, Some(&req.id), e));
        if peer.legacy_only {
            return refuse(Stage::Route, &RpcError::legacy_only_transport());
        }
        let params = req.params.as_ref();
        // Header/body agreement first (-32020); without a `_meta` version string the route
        // below refuses the envelope itself.
        if let Some(get) = peer.headers
            && let Some(version) = meta_version(params)
            && let Err(e) = check_standard_headers(&req.method, params, &version, get)
        {
            return refuse(Stage::Route, &e);
        }
        let route = match route(&self.runtime.routing(), &req, Era::Modern, None, &peer.auth) {
            Ok(r) => r,
            Err(rej) => return refuse(Stage::Route, &rej.error),
        };
        // The tool the route resolved (a tool hidden from the caller is unknown here too: its
        // headers are not checked).
        if let (Some(get), Some(tool)) = (peer.headers, route.tool()) {
            let sources = [
                (&tool.param_headers, "arguments"),
                (&tool.secure_param_headers, ARGUMENTS_FIELD),
            ];
            for (headers, field) in sources.into_iter().filter(|(h, _)| !h.is_empty()) {
                let args = params.and_then(|p| p.value(field));
                if let Err(e) = check_param_headers(headers, args.as_ref().and_then(Value::as_object), get) {
                    return refuse(Stage::Route, &e);
                }
            }
        }
        if req.method.streams() {
            return self.listen(peer, req, &route).await;
        }
        self.call(peer, req, route, None)
    }

    async fn legacy(&self, peer: &Peer<'_>, req: Request) -> Step {
        let refuse = |stage, e: &RpcError| Step::Answer(Answer::error(stage, Era::Legacy, Some(&req.id), e));
        if let TransportRevision::Unknown(v) = &peer.revision {
            return refuse(Stage::Envelope, &RpcError::unknown_revision_header(v));
        }
        let initialize = req.method == Method::Initialize;
        let session = match (self.resolve(peer).await, initialize) {
            (Resolved::Unavailable, _) => return refuse(Stage::Overload, &RpcError::store_unavailable()),
            // Boxed: once per session, its state would size every legacy request's future.
            (Resolved::Absent, true) => return Box::pin(self.initialize(peer, req)).await,
            (Resolved::Found(_), true) => return refuse(Stage::Session, &RpcError::already_initialized()),
            (Resolved::Unknown, _) => return refuse(Stage::Session, &RpcError::session_not_found()),
            (Resolved::Found(s), false) => Some(s),
            (Resolved::Absent, false) if matches!(peer.sessions, Sessions::Store(_)) && req.method.needs_session() => {
                return refuse(Stage::Session, &RpcError::session_required());
            }
            (Resolved::Absent, false) => None,
        };
        let route = match route(
            &self.runtime.routing(),
            &req,
            Era::Legacy,
            session.as_deref(),
            &peer.auth,
        ) {
            Ok(r) => r,
            Err(rej) => return refuse(Stage::Route, &rej.error),
        };
        self.call(peer, req, route, session)
    }

    /// A legacy `initialize` naming no session: mints one and hands it to the transport's
    /// session keeping (through the middleware chain: a layer that refuses it mints nothing).
    async fn initialize(&self, peer: &Peer<'_>, req: Request) -> Step {
        if let Err(rej) = route(&self.runtime.routing(), &req, Era::Legacy, None, &peer.auth) {
            return Step::Answer(Answer::error(Stage::Route, Era::Legacy, Some(&req.id), &rej.error));
        }
        let keeping = match peer.sessions {
            Sessions::Store(_) => Keeping::Store,
            Sessions::Slot(_) => Keeping::Slot,
            Sessions::None => Keeping::None,
        };
        let id = req.id.clone();
        let chain = &self.runtime.config().middleware;
        let (outcome, session) = if chain.is_empty() {
            let minted = std::sync::Mutex::new(None);
            let outcome = start(&self.runtime, &req, &peer.auth, peer.address(), keeping, &minted).await;
            (
                outcome,
                minted.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner),
            )
        } else {
            let minted = Arc::new(std::sync::Mutex::new(None));
            let (runtime, auth, cell, remote) =
                (self.runtime.clone(), peer.auth.clone(), minted.clone(), peer.address());
            let terminal: Terminal = Box::new(move |inbound: Inbound| {
                Box::pin(async move {
                    let Message::Request(req) = inbound.message else {
                        return Outcome::error(RpcError::internal());
                    };
                    start(&runtime, &req, &auth, remote, keeping, &cell).await
                })
            });
            let request = layers::inbound(peer, Message::Request(req), Era::Legacy, peer.revision.known(), None);
            let outcome = chain.run(request, terminal).await;
            let session = minted.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
            (outcome, session)
        };
        if let (true, Keeping::Store, Some(s)) = (outcome.is_error(), keeping, &session) {
            // A layer turned the minted session's `initialize` into an error: nobody will name
            // the session, so it does not stay (nor count against the bounds).
            if let Err(e) = self.runtime.end_session(s.id(), &peer.auth.principal).await {
                tracing::warn!(error = %e, "a session refused by a middleware layer could not be ended");
            }
        }
        if let (Sessions::Slot(slot), Some(s)) = (peer.sessions, &session)
            && !outcome.is_error()
            && !slot.fill(s.clone())
        {
            return Step::Answer(Answer::error(
                Stage::Session,
                Era::Legacy,
                Some(&id),
                &RpcError::already_initialized(),
            ));
        }
        let kept = session.filter(|_| keeping != Keeping::None);
        if let Some(s) = kept.as_ref().filter(|_| !outcome.is_error()) {
            s.opened_over(peer.network);
        }
        if let Some(s) = &kept {
            tracing::debug!(session = %s.id(), revision = %s.revision(), "legacy session started");
        }
        Step::Answer(layers::answer(outcome, Stage::Dispatch, Era::Legacy, &id, kept))
    }

    /// Where a request is registered in flight, and the parent of its cancellation token.
    fn scope<'s>(
        peer: &'s Peer<'_>,
        era: Era,
        session: Option<&'s Arc<Session>>,
    ) -> Option<(&'s InFlight, CancellationToken)> {
        match (peer.sessions, session) {
            (Sessions::Slot(slot), _) => Some((slot.in_flight(), slot.root().child_token())),
            (Sessions::Store(_), Some(s)) if era == Era::Legacy => Some((s.in_flight(), CancellationToken::new())),
            _ => None,
        }
    }

    /// Registers a routed request in its scope (a duplicate id is refused) and hands it back
    /// ready to run.
    fn call(&self, peer: &Peer<'_>, req: Request, route: Route, session: Option<Arc<Session>>) -> Step {
        let (guard, cancel) = match register(peer, route.era, session.as_ref(), &req.id) {
            Ok(r) => r,
            Err(e) => return Step::Answer(Answer::error(Stage::Dispatch, route.era, Some(&req.id), &e)),
        };
        let log_level = route.modern.as_ref().is_some_and(|m| m.log_level.is_some());
        // A long-lived request (an `events/stream`) is a stream whatever it asked for.
        let stream = peer.streams && (route.long_lived() || may_stream(route.era, req.params.as_ref(), log_level));
        Step::Call(Call::new(
            self.runtime.clone(),
            req,
            route,
            call::Env {
                auth: peer.auth.clone(),
                session,
                cancel,
                guard,
                attachments: peer.take_attachments(),
                remote: peer.remote,
                network: peer.network,
            },
            stream,
        ))
    }

    /// Opens a `subscriptions/listen` stream for a routed modern request (through the
    /// middleware chain).
    async fn listen(&self, peer: &Peer<'_>, req: Request, route: &Route) -> Step {
        let refuse = |e: &RpcError| Step::Answer(Answer::error(Stage::Route, Era::Modern, Some(&req.id), e));
        if !peer.streams {
            return refuse(&RpcError::needs_streaming(req.method.as_str()));
        }
        let (guard, _) = match register(peer, Era::Modern, None, &req.id) {
            Ok(r) => r,
            Err(e) => return refuse(&e),
        };
        let tasks = route
            .modern
            .as_ref()
            .is_some_and(|m| m.client_capabilities.tasks_extension());
        let holder = Holder {
            principal: peer.auth.principal.clone(),
            peer: peer.address().map(|ip| Arc::from(ip.to_string())),
        };
        let id = req.id.clone();
        let chain = &self.runtime.config().middleware;
        let outcome = if chain.is_empty() {
            open(&self.runtime, &req, &holder, tasks).await
        } else {
            let runtime = self.runtime.clone();
            let terminal: Terminal = Box::new(move |inbound: Inbound| {
                Box::pin(async move {
                    let Message::Request(req) = inbound.message else {
                        return Outcome::error(RpcError::internal());
                    };
                    open(&runtime, &req, &holder, tasks).await
                })
            });
            let request = layers::inbound(peer, Message::Request(req), Era::Modern, route.revision, None);
            chain.run(request, terminal).await
        };
        match outcome.body {
            Body::Stream(listener) => Step::Listen(Listening { listener, guard }),
            _ => Step::Answer(layers::answer(outcome, Stage::Route, Era::Modern, &id, None)),
        }
    }
}

/// How the transport keeps the session an `initialize` mints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keeping {
    Store,
    Slot,
    None,
}

/// Answers an `initialize`: a session minted (into `minted`) and, where the runtime keeps
/// sessions, admitted within the bounds and (with a shared store) written before the answer.
async fn start(
    runtime: &Runtime,
    req: &Request,
    auth: &AuthInfo,
    remote: Option<std::net::IpAddr>,
    keeping: Keeping,
    minted: &std::sync::Mutex<Option<Arc<Session>>>,
) -> Outcome {
    let refuse = |stage, e: RpcError| {
        let status = status_at(stage, Era::Legacy, e.code);
        Outcome::error(e).with_status(status)
    };
    let (result, session) = match runtime.initialize(req, auth) {
        Ok(r) => r,
        Err(e) => return refuse(Stage::Dispatch, e),
    };
    if keeping == Keeping::Store {
        // Whatever the transport keeps to stream the session's messages is created by the
        // transport when first needed: most sessions never open a stream.
        let config = runtime.config();
        match runtime.start_session(&session, remote).await {
            Ok(()) => {}
            Err(StartError::Limit(SessionLimit::Full)) => {
                tracing::warn!(limit = config.max_sessions, "initialize refused: too many sessions");
                return refuse(Stage::Overload, RpcError::too_many_sessions());
            }
            Err(StartError::Limit(SessionLimit::PrincipalFull)) => {
                tracing::warn!(
                    limit = config.max_sessions_per_principal,
                    "initialize refused: too many sessions for one client"
                );
                return refuse(Stage::Quota, RpcError::too_many_sessions_for_principal());
            }
            Err(StartError::Store(e)) => return refuse(Stage::Overload, e.unavailable()),
        }
    }
    *minted.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(session);
    Outcome::result(result)
}

/// Opens a listen subscription for `holder` (a refusal carries its status).
async fn open(runtime: &Runtime, req: &Request, holder: &Holder, tasks: bool) -> Outcome {
    match runtime.listen_as(req, holder, tasks).await {
        Ok(listener) => Outcome::stream(listener),
        Err(e) => {
            if !matches!(e, ListenError::Refused(_)) {
                tracing::warn!(reason = %e, "subscription refused: over a bound");
            }
            let status = status_at(e.stage(), Era::Modern, e.error().code);
            Outcome::error(e.error().clone()).with_status(status)
        }
    }
}

/// Registers request `id` in its scope: the guard (when tracked) and the request's token.
fn register<'s>(
    peer: &'s Peer<'_>,
    era: Era,
    session: Option<&'s Arc<Session>>,
    id: &RequestId,
) -> Result<(Option<InFlightGuard>, CancellationToken), RpcError> {
    match Engine::scope(peer, era, session) {
        Some((in_flight, cancel)) => match in_flight.begin(id.clone(), cancel.clone()) {
            Ok(guard) => Ok((Some(guard), cancel)),
            Err(dup) => {
                tracing::debug!(id = %dup.0, "duplicate request id refused");
                Err(RpcError::duplicate_id())
            }
        },
        None => Ok((None, CancellationToken::new())),
    }
}

/// Closes a notification's observation: the session it ran in, and how its routing ended (a
/// notification a layer dropped without an answer is observed as dropped).
fn noted(mut observed: Observed, session: Option<&Arc<Session>>, outcome: &Result<(), Option<Answer>>) {
    if let Some(s) = session {
        observed.in_session(Some(s.revision()), Some(&**s.id()));
    }
    match outcome {
        Ok(()) => observed.acknowledged(),
        Err(Some(answer)) => observed.answered(&answer.frame, None),
        Err(None) => {}
    }
}

/// Delivers a client response to `session`'s pending request, or drops it.
fn deliver_to(session: Option<&Session>, response: Response) {
    let Response { id, outcome } = response;
    match session {
        Some(s) if s.deliver(&id, outcome) => {}
        Some(_) => tracing::debug!(%id, "client response matches no pending request; dropped"),
        None => tracing::debug!(%id, "client response for no owned session; dropped"),
    }
}
