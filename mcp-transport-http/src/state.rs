//! What every request of one endpoint shares, the in-flight cap, CORS, and the helpers that
//! build answers.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::header::{ALLOW, CONTENT_TYPE, HeaderName, HeaderValue, VARY};
use http::{HeaderMap, StatusCode};
use mcp_protocol::error::{Stage, status_at};
use mcp_protocol::headers::param_header_names;
use mcp_protocol::jsonrpc::encode_error;
use mcp_protocol::{Era, RequestId, RpcError};
use mcp_runtime::registry::Catalog;
use mcp_runtime::{Engine, Runtime};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{HttpConfig, HttpMode};
use crate::guard::{HostPolicy, OriginPolicy};
use crate::pair::Pairs;
use crate::streams::hub::Hub;

/// The lowercase name of the session header.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

const BASE_ALLOW_HEADERS: &str =
    "content-type, accept, authorization, mcp-session-id, mcp-protocol-version, last-event-id, mcp-method, mcp-name";
const EXPOSE_HEADERS: &str = "mcp-session-id, mcp-protocol-version, www-authenticate";

/// The state of one endpoint.
pub(crate) struct Shared {
    pub(crate) runtime: Arc<Runtime>,
    /// The message pipeline every verb hands its messages to.
    pub(crate) engine: Engine,
    pub(crate) config: HttpConfig,
    pub(crate) origins: OriginPolicy,
    pub(crate) hosts: HostPolicy,
    pub(crate) hub: Arc<Hub>,
    /// The open 2024-11-05 HTTP+SSE sessions.
    pub(crate) pairs: Pairs,
    /// Request tasks and stream pumps, awaited by a graceful shutdown.
    pub(crate) tracker: TaskTracker,
    /// Cancelled when the server shuts down: streams end.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when a shutdown's drain deadline passed: the calls still running are
    /// cancelled (each then gets the runtime's `cancel_grace`).
    pub(crate) stop_calls: CancellationToken,
    /// Cancelled once a shutdown has drained (or given up on) the calls in flight.
    pub(crate) drained: CancellationToken,
    /// Whether the drain of a shutdown has started (it runs once).
    draining: AtomicBool,
    /// Whether the background tasks (registry fan-out, session sweep) were started.
    started: AtomicBool,
    in_flight: Arc<AtomicUsize>,
    allow_headers: Mutex<Option<(Arc<Catalog>, HeaderValue)>>,
}

impl Shared {
    /// The state of an endpoint.
    pub(crate) fn new(
        runtime: Arc<Runtime>,
        config: HttpConfig,
        origins: OriginPolicy,
        hosts: HostPolicy,
        shutdown: CancellationToken,
    ) -> Self {
        let hub = Arc::new(Hub::new(config.sse_buffer_size));
        Shared {
            engine: Engine::new(runtime.clone()),
            runtime,
            config,
            origins,
            hosts,
            hub,
            pairs: Pairs::default(),
            tracker: TaskTracker::new(),
            shutdown,
            stop_calls: CancellationToken::new(),
            drained: CancellationToken::new(),
            draining: AtomicBool::new(false),
            started: AtomicBool::new(false),
            in_flight: Arc::new(AtomicUsize::new(0)),
            allow_headers: Mutex::new(None),
        }
    }

    /// Starts the endpoint's background tasks once (they need a Tokio runtime: the first
    /// request, [`serve`](crate::serve) or [`router`](crate::router) calls this): the fan-out
    /// of registry changes and the idle-session sweep. Both end at shutdown, and when the
    /// endpoint is dropped.
    pub(crate) fn ensure_started(self: &Arc<Self>) {
        self.hub.ensure_started(&self.runtime, &self.shutdown);
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(sweep(Arc::downgrade(self)));
    }

    /// Begins a graceful shutdown once (later calls do nothing): every stream ends at once, and
    /// a task drains the calls in flight ([`Shared::drain`]), then cancels [`Shared::drained`].
    pub(crate) fn begin_shutdown(self: &Arc<Self>) {
        self.shutdown.cancel();
        if self.draining.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.clone();
        tokio::spawn(async move {
            shared.drain(std::future::ready(())).await;
        });
    }

    /// The drain of a graceful shutdown (behaviour invariant 27): streams end (the shutdown
    /// token), then the calls in flight and `also` (the connections, for `serve`) get
    /// [`HttpConfig::shutdown_grace`] to finish. Past it every session is closed and every call
    /// still running is cancelled; each then has the runtime's `cancel_grace` to clean up
    /// (plus a second for its answer to be written) before the drain gives up on it.
    pub(crate) async fn drain(&self, also: impl Future<Output = ()>) {
        self.draining.store(true, Ordering::Release);
        self.shutdown.cancel();
        self.tracker.close();
        let grace = self.config.shutdown_grace;
        let work = async {
            also.await;
            self.tracker.wait().await;
        };
        tokio::pin!(work);
        if tokio::time::timeout(grace, &mut work).await.is_err() {
            tracing::warn!(
                ?grace,
                "calls still in flight after the shutdown grace; cancelling them"
            );
            self.runtime.sessions().clear();
            self.stop_calls.cancel();
            let wind_down = self.runtime.config().cancel_grace + Duration::from_secs(1);
            if tokio::time::timeout(wind_down, &mut work).await.is_err() {
                tracing::warn!("calls still running after their cancellation grace; abandoned");
            }
        }
        self.drained.cancel();
    }

    /// Whether legacy sessions are minted (the streamable mode with sessions enabled).
    pub(crate) fn sessions(&self) -> bool {
        self.config.sessions_enabled && self.config.mode == HttpMode::Streamable
    }

    /// Whether replies may stream (not in the simple mode).
    pub(crate) fn streams(&self) -> bool {
        self.config.mode == HttpMode::Streamable
    }

    /// Takes one slot of the in-flight cap, or `None` when the server is full.
    pub(crate) fn permit(&self) -> Option<Arc<Permit>> {
        self.permits(1).map(Arc::new)
    }

    /// Takes `n` slots of the in-flight cap at once (the requests of a batch), or `None` (and
    /// nothing taken) when they do not all fit.
    pub(crate) fn permits(&self, n: usize) -> Option<Permit> {
        let total = self.in_flight.fetch_add(n, Ordering::AcqRel) + n;
        if total > self.config.max_in_flight {
            self.in_flight.fetch_sub(n, Ordering::AcqRel);
            return None;
        }
        Some(Permit(self.in_flight.clone(), n))
    }

    /// The CORS allow-list of request headers: the fixed ones plus every registered
    /// `mcp-param-*` (recomputed when the catalog changes).
    fn allow_headers(&self) -> HeaderValue {
        let catalog = self.runtime.registry().snapshot();
        let mut cache = self.allow_headers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((c, v)) = cache.as_ref()
            && Arc::ptr_eq(c, &catalog)
        {
            return v.clone();
        }
        let mut names: Vec<String> = Vec::new();
        for tool in catalog.tools() {
            for name in param_header_names(&tool.param_headers) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        let mut value = BASE_ALLOW_HEADERS.to_owned();
        for n in names {
            value.push_str(", ");
            value.push_str(&n);
        }
        let value = HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static(BASE_ALLOW_HEADERS));
        *cache = Some((catalog, value.clone()));
        value
    }

    /// Adds the CORS headers for a validated `Origin`.
    pub(crate) fn apply_cors(&self, headers: &mut HeaderMap, origin: HeaderValue) {
        use http::header::{
            ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
            ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
        };
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.append(VARY, HeaderValue::from_static("Origin"));
        headers.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(self.allowed_methods()),
        );
        headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, self.allow_headers());
        headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
        headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    }

    /// The methods served on the endpoint (for `Allow`).
    pub(crate) fn allowed_methods(&self) -> &'static str {
        if self.sessions() {
            "POST, GET, DELETE, OPTIONS"
        } else {
            "POST, OPTIONS"
        }
    }

    /// 405 with `Allow`.
    pub(crate) fn method_not_allowed(&self) -> Response {
        let mut r = empty(StatusCode::METHOD_NOT_ALLOWED);
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static(self.allowed_methods()));
        r
    }
}

/// Slots of the in-flight cap (one per request), released when dropped.
#[derive(Debug)]
pub(crate) struct Permit(Arc<AtomicUsize>, usize);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::AcqRel);
    }
}

/// A response with a status and no body.
pub(crate) fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// A JSON response.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A JSON-RPC error response with an HTTP status.
pub(crate) fn rpc_error(status: u16, id: Option<&RequestId>, error: &RpcError) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    json(status, encode_error(id, error))
}

/// A session failure outside the engine's pipeline (GET, DELETE, the pair's message path),
/// with the status `mcp-protocol` gives it.
fn session_error(e: &RpcError) -> Response {
    rpc_error(status_at(Stage::Session, Era::Legacy, e.code), None, e)
}

/// The answer for an unknown, deleted or another principal's session: always the same 404.
pub(crate) fn session_not_found() -> Response {
    session_error(&RpcError::session_not_found())
}

/// The answer for a legacy request without `Mcp-Session-Id`.
pub(crate) fn session_required() -> Response {
    session_error(&RpcError::session_required())
}

/// The answer when the shared store a session request needs cannot be reached: 503, so that the
/// client retries (the session may well exist).
pub(crate) fn store_unavailable() -> Response {
    let e = RpcError::store_unavailable();
    rpc_error(status_at(Stage::Overload, Era::Legacy, e.code), None, &e)
}

/// Expires idle sessions every [`HttpConfig::session_sweep_interval`], until the endpoint shuts
/// down or is dropped.
async fn sweep(shared: std::sync::Weak<Shared>) {
    let (every, shutdown) = match shared.upgrade() {
        Some(s) => (
            s.config.session_sweep_interval.max(Duration::from_millis(10)),
            s.shutdown.clone(),
        ),
        None => return,
    };
    let mut tick = tokio::time::interval(every);
    tick.reset();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {
                let Some(shared) = shared.upgrade() else { return };
                let n = shared.runtime.sessions().sweep(shared.runtime.config().session_ttl);
                shared.hub.prune();
                if n > 0 {
                    tracing::debug!(expired = n, "idle sessions swept");
                }
            }
        }
    }
}
