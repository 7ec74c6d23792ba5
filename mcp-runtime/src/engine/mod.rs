//! The inbound engine: the one message pipeline every transport hands its decoded messages to.
//!
//! A transport frames bytes (an HTTP body, a stdio line), decodes them with `mcp-protocol`, and
//! calls the engine with what only it knows, a [`Peer`]: the caller's identity, the revision it
//! declared beside the body, how it keeps legacy sessions, whether it can stream, the HTTP
//! headers for the agreement checks, and middleware extensions. The engine does the rest, in
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
//! choice and SSE, replay, keep-alives, and its bounds.

mod batch;
mod call;

use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::classify::{era_of, may_stream, request_era};
use mcp_protocol::error::{Stage, status_at};
use mcp_protocol::headers::{check_param_headers, check_standard_headers};
use mcp_protocol::jsonrpc::{encode_error, encode_result};
use mcp_protocol::meta::{PROTOCOL_VERSION, meta_of};
use mcp_protocol::{Era, Method, Notification, Request, RequestId, Response, RpcError, TransportRevision};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use crate::session::SessionSlot;
pub use batch::{Batch, BatchDone, BatchStep};
pub use call::{Call, Completed};

use crate::dispatch::route::Route;
use crate::listen::{Holder, ListenError, Listener};
use crate::observe::Observed;
use crate::runtime::Runtime;
use crate::session::{InFlight, InFlightGuard};
use crate::session::{Session, SessionLimit, StartError};
use crate::sink::Frame;

/// Reads one HTTP request header by (lowercase) name.
pub type HeaderLookup<'h> = dyn Fn(&str) -> Option<&'h [u8]> + Sync + 'h;

/// How a transport keeps legacy sessions.
#[derive(Clone, Copy)]
pub enum Sessions<'a> {
    /// In the runtime's session store, named by each request (Streamable HTTP's
    /// `Mcp-Session-Id`): `initialize` mints one, every other legacy request but
    /// `server/discover` must name one. `Some("")` names no session that exists (use it for a
    /// header that is not valid text).
    Store(Option<&'a str>),
    /// One session per connection or process, in its slot (stdio, the HTTP+SSE pair): requests
    /// before `initialize` run without a session.
    Slot(&'a SessionSlot),
    /// None (HTTP simple mode, or sessions turned off): `initialize` is answered, nothing kept.
    None,
}

impl std::fmt::Debug for Sessions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sessions::Store(id) => f.debug_tuple("Store").field(id).finish(),
            Sessions::Slot(_) => f.write_str("Slot"),
            Sessions::None => f.write_str("None"),
        }
    }
}

/// What only the transport knows about an inbound message.
pub struct Peer<'a> {
    /// The authenticated caller.
    pub auth: Arc<AuthInfo>,
    /// The revision declared beside the body (HTTP `MCP-Protocol-Version`).
    pub revision: TransportRevision,
    /// How legacy sessions are kept.
    pub sessions: Sessions<'a>,
    /// Whether a reply may stream (false in HTTP simple mode).
    pub streams: bool,
    /// Whether the transport serves the legacy revisions only (the 2024-11-05 HTTP+SSE pair).
    pub legacy_only: bool,
    /// The HTTP headers, for the modern header/body agreement checks (none on stdio).
    pub headers: Option<&'a HeaderLookup<'a>>,
    /// The client's address, where the transport tells peers apart (HTTP): bounds that protect
    /// clients from each other (open subscriptions) count per peer.
    pub remote: Option<std::net::IpAddr>,
    /// Transport or middleware extensions handed to handlers: moved into the call the message
    /// becomes (a batch's calls get copies), so that a single request never copies them.
    pub extensions: Mutex<http::Extensions>,
}

impl<'a> Peer<'a> {
    /// A peer with a caller and a session policy: no declared revision, streaming, both eras,
    /// no headers, no extensions.
    pub fn new(auth: Arc<AuthInfo>, sessions: Sessions<'a>) -> Self {
        Peer {
            auth,
            revision: TransportRevision::Absent,
            sessions,
            streams: true,
            legacy_only: false,
            headers: None,
            remote: None,
            extensions: Mutex::default(),
        }
    }

    /// Sets the extensions handed to handlers.
    pub fn with_extensions(mut self, extensions: http::Extensions) -> Self {
        self.extensions = Mutex::new(extensions);
        self
    }

    /// Takes the extensions (the call the message becomes owns them).
    fn take_extensions(&self) -> http::Extensions {
        std::mem::take(&mut *self.extensions.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// An answer known without running a handler (a refusal, or `initialize`'s result).
#[derive(Debug)]
pub struct Answer {
    /// The encoded JSON-RPC response.
    pub frame: Frame,
    /// The HTTP status it is answered with.
    pub status: u16,
    /// The legacy session `initialize` minted and the transport now serves (HTTP sends its id
    /// in `Mcp-Session-Id`; stdio and the pair connect its outlet).
    pub session: Option<Arc<Session>>,
}

impl Answer {
    fn error(stage: Stage, era: Era, id: Option<&RequestId>, error: &RpcError) -> Self {
        Answer {
            frame: encode_error(id, error),
            status: status_at(stage, era, error.code),
            session: None,
        }
    }
}

/// An open `subscriptions/listen` stream, for the transport to write.
#[derive(Debug)]
pub struct Listening {
    /// The subscription: its acknowledgement first, then its notifications.
    pub listener: Listener,
    /// Where the transport tracks requests in flight (stdio), the listen request's
    /// registration: `notifications/cancelled` naming it cancels its token.
    pub guard: Option<InFlightGuard>,
}

/// What the engine made of a request.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "a step is made once per request and matched at once; boxing the call would cost an allocation per request"
)]
pub enum Step {
    /// Answered at once.
    Answer(Answer),
    /// Ready to run: the transport gives it a sink and writes what it returns.
    Call(Call),
    /// A subscription stream.
    Listen(Listening),
}

/// The session a message names, resolved.
enum Resolved {
    Absent,
    Found(Arc<Session>),
    Unknown,
    /// The shared store could not be asked (503: the session may exist).
    Unavailable,
}

/// The message pipeline of one runtime (cheap to clone).
#[derive(Debug, Clone)]
pub struct Engine {
    runtime: Arc<Runtime>,
}

impl Engine {
    /// The engine of a runtime.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Engine { runtime }
    }

    /// The runtime it drives.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    async fn resolve(&self, peer: &Peer<'_>) -> Resolved {
        match peer.sessions {
            Sessions::Store(Some(id)) => match self.runtime.find_session(id, &peer.auth.principal).await {
                Ok(Some(s)) => Resolved::Found(s),
                Ok(None) => Resolved::Unknown,
                Err(e) => {
                    let _ = e.unavailable();
                    Resolved::Unavailable
                }
            },
            Sessions::Store(None) | Sessions::None => Resolved::Absent,
            Sessions::Slot(slot) => slot.session().map_or(Resolved::Absent, Resolved::Found),
        }
    }

    /// Delivers a client's response to the pending server-to-client request of the caller's
    /// own session; anything else is dropped without a trace on the wire (no oracle).
    pub async fn deliver(&self, peer: &Peer<'_>, response: Response) {
        self.runtime.ensure_started();
        let session = match self.resolve(peer).await {
            Resolved::Found(s) => Some(s),
            _ => None,
        };
        deliver_to(session.as_deref(), response);
    }

    /// Routes a client notification. `Some` only when it must be refused: a legacy
    /// notification naming an unknown session where sessions are kept (404).
    pub async fn notification(&self, peer: &Peer<'_>, note: &Notification) -> Option<Answer> {
        self.runtime.ensure_started();
        let era = era_of(note.params.as_ref(), peer.revision.known());
        let session = match (era, peer.sessions) {
            (Era::Legacy, Sessions::Store(_)) => match self.resolve(peer).await {
                Resolved::Found(s) => Some(s),
                Resolved::Unknown => {
                    return Some(Answer::error(Stage::Session, era, None, &RpcError::session_not_found()));
                }
                Resolved::Unavailable => {
                    return Some(Answer::error(
                        Stage::Overload,
                        era,
                        None,
                        &RpcError::store_unavailable(),
                    ));
                }
                Resolved::Absent => None,
            },
            (Era::Legacy, Sessions::Slot(slot)) => slot.session(),
            _ => None,
        };
        self.notify_in(peer, era, session.as_ref(), note);
        None
    }

    /// Routes a notification once its session is known: a cancellation reaches the requests
    /// of its era's scope (the connection's on a slot, the session's in the store).
    fn notify_in(&self, peer: &Peer<'_>, era: Era, session: Option<&Arc<Session>>, note: &Notification) {
        let untracked = InFlight::new();
        let in_flight = match (peer.sessions, session) {
            (Sessions::Slot(slot), _) => slot.in_flight(),
            (_, Some(s)) if era == Era::Legacy => s.in_flight(),
            _ => &untracked,
        };
        self.runtime.notification(note, session, in_flight);
    }

    /// Takes a request through every check and hands it back ready to run, or answered.
    pub async fn request(&self, peer: &Peer<'_>, req: Request) -> Step {
        self.runtime.ensure_started();
        let era = request_era(&req, peer.revision.known());
        let observed = Observed::start(&req, era, &peer.auth, peer.revision.known(), peer.headers);
        let step = async {
            match era {
                Era::Modern => self.modern(peer, req).await,
                Era::Legacy => self.legacy(peer, req).await,
            }
        }
        .instrument(observed.span().clone())
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

    async fn modern(&self, peer: &Peer<'_>, req: Request) -> Step {
        let refuse = |stage, e: &RpcError| Step::Answer(Answer::error(stage, Era::Modern, Some(&req.id), e));
        if peer.legacy_only {
            return refuse(Stage::Route, &RpcError::legacy_only_transport());
        }
        let params = req.params.as_ref();
        // Header/body agreement first (-32020); without a `_meta` version string the route
        // below refuses the envelope itself.
        if let Some(get) = peer.headers
            && let Some(version) = meta_of(params)
                .and_then(|m| m.get(PROTOCOL_VERSION))
                .and_then(Value::as_str)
            && let Err(e) = check_standard_headers(&req.method, params, version, get)
        {
            return refuse(Stage::Route, &e);
        }
        let route = match self.runtime.route_in(&req, Era::Modern, None, &peer.auth) {
            Ok(r) => r,
            Err(rej) => return refuse(Stage::Route, &rej.error),
        };
        // The tool the route resolved (a tool hidden from the caller is unknown here too: its
        // headers are not checked).
        if let (Some(get), Some(tool)) = (peer.headers, route.tool()) {
            let args = params.and_then(|p| p.get("arguments")).and_then(Value::as_object);
            if let Err(e) = check_param_headers(&tool.param_headers, args, get) {
                return refuse(Stage::Route, &e);
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
            (Resolved::Absent, true) => return self.initialize(peer, &req).await,
            (Resolved::Found(_), true) => return refuse(Stage::Session, &RpcError::already_initialized()),
            (Resolved::Unknown, _) => return refuse(Stage::Session, &RpcError::session_not_found()),
            (Resolved::Found(s), false) => Some(s),
            (Resolved::Absent, false) if matches!(peer.sessions, Sessions::Store(_)) && req.method.needs_session() => {
                return refuse(Stage::Session, &RpcError::session_required());
            }
            (Resolved::Absent, false) => None,
        };
        let route = match self.runtime.route_in(&req, Era::Legacy, session.as_deref(), &peer.auth) {
            Ok(r) => r,
            Err(rej) => return refuse(Stage::Route, &rej.error),
        };
        self.call(peer, req, route, session)
    }

    /// A legacy `initialize` naming no session: mints one and hands it to the transport's
    /// session keeping.
    async fn initialize(&self, peer: &Peer<'_>, req: &Request) -> Step {
        let refuse = |stage, e: &RpcError| Step::Answer(Answer::error(stage, Era::Legacy, Some(&req.id), e));
        if let Err(rej) = self.runtime.route_in(req, Era::Legacy, None, &peer.auth) {
            return refuse(Stage::Route, &rej.error);
        }
        let (result, session) = match self.runtime.initialize(req, &peer.auth) {
            Ok(r) => r,
            Err(e) => return refuse(Stage::Dispatch, &e),
        };
        let kept = match peer.sessions {
            Sessions::Store(_) => {
                // The session's event channel (ring buffer, GET stream state) is created by the
                // transport when first needed: most sessions never open a stream.
                let config = self.runtime.config();
                match self.runtime.start_session(&session).await {
                    Ok(()) => true,
                    Err(StartError::Limit(SessionLimit::Full)) => {
                        tracing::warn!(limit = config.max_sessions, "initialize refused: too many sessions");
                        return refuse(Stage::Overload, &RpcError::too_many_sessions());
                    }
                    Err(StartError::Limit(SessionLimit::PrincipalFull)) => {
                        tracing::warn!(
                            limit = config.max_sessions_per_principal,
                            "initialize refused: too many sessions for one principal"
                        );
                        return refuse(Stage::Quota, &RpcError::too_many_sessions_for_principal());
                    }
                    Err(StartError::Store(e)) => {
                        return refuse(Stage::Overload, &e.unavailable());
                    }
                }
            }
            Sessions::Slot(slot) => {
                if !slot.fill(session.clone()) {
                    return refuse(Stage::Session, &RpcError::already_initialized());
                }
                true
            }
            Sessions::None => false,
        };
        tracing::debug!(session = %session.id(), revision = %session.revision(), kept, "legacy session started");
        Step::Answer(Answer {
            frame: encode_result(&req.id, &result),
            status: 200,
            session: kept.then_some(session),
        })
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
        let stream = peer.streams && may_stream(route.era, req.params.as_ref(), log_level);
        Step::Call(Call::new(
            self.runtime.clone(),
            req,
            route,
            call::Env {
                auth: peer.auth.clone(),
                session,
                cancel,
                guard,
                extensions: peer.take_extensions(),
            },
            stream,
        ))
    }

    /// Opens a `subscriptions/listen` stream for a routed modern request.
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
            peer: peer.remote.map(|ip| Arc::from(ip.to_string())),
        };
        match self.runtime.listen_as(&req, &holder, tasks).await {
            Ok(listener) => Step::Listen(Listening { listener, guard }),
            Err(e) => {
                if !matches!(e, ListenError::Refused(_)) {
                    tracing::warn!(reason = %e, "subscription refused: over a bound");
                }
                Step::Answer(Answer::error(e.stage(), Era::Modern, Some(&req.id), e.error()))
            }
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

/// Delivers a client response to `session`'s pending request, or drops it.
fn deliver_to(session: Option<&Session>, response: Response) {
    let Response { id, outcome } = response;
    match session {
        Some(s) if s.deliver(&id, outcome) => {}
        Some(_) => tracing::debug!(%id, "client response matches no pending request; dropped"),
        None => tracing::debug!(%id, "client response for no owned session; dropped"),
    }
}
