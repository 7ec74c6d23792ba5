//! What every request of one endpoint shares ([`Shared`]): the engine, the
//! configuration and its Origin and Host policies, the session event hub, the open 2024-11-05
//! pairs, the in-flight cap, the stream budget, the CORS headers, the tasks a graceful shutdown waits for, the
//! endpoint's readiness, and the idle-session sweep. Its parts live below it; it imports no
//! verb.

mod cors;
mod pairs;
mod permit;
mod readiness;
mod stream_budget;

pub(crate) use pairs::{Pair, Pairs};
pub(crate) use permit::{NoSlot, Permit};
pub use readiness::Readiness;
pub(crate) use stream_budget::{StreamPermit, StreamRefusal};

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::response::Response;
use http::{HeaderMap, HeaderValue};
use mcp_runtime::Engine;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{HttpConfig, HttpMode};
use crate::error::HttpError;
use crate::guard::{HostPolicy, OriginPolicy};
use crate::response;
use crate::streams::hub::Hub;
use cors::AllowHeaders;
use permit::InFlight;
use readiness::StoreCheck;
use stream_budget::StreamBudget;

/// The state of one endpoint.
pub(crate) struct Shared {
    /// The door into the runtime: every verb hands its messages to it.
    pub(crate) engine: Engine,
    pub(crate) config: HttpConfig,
    pub(crate) origins: OriginPolicy,
    pub(crate) hosts: HostPolicy,
    pub(crate) hub: Arc<Hub>,
    /// The open 2024-11-05 HTTP+SSE sessions.
    pub(crate) pairs: Pairs,
    /// Request tasks and stream pumps, awaited by a graceful shutdown.
    pub(crate) tracker: TaskTracker,
    /// Cancelled when a graceful shutdown is asked: readiness falls at once, and `shutdown`
    /// follows [`HttpConfig::readiness_delay`] later.
    pub(crate) stopping: CancellationToken,
    /// Cancelled when the server shuts down: streams end.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when a shutdown's drain deadline passed: the calls still running are
    /// cancelled (each then gets the engine's `cancel_grace`).
    pub(crate) stop_calls: CancellationToken,
    /// Cancelled once a shutdown has drained (or given up on) the calls in flight.
    pub(crate) drained: CancellationToken,
    /// Whether the drain of a shutdown has started (it runs once).
    draining: AtomicBool,
    /// Whether the background tasks (registry fan-out, session sweep) were started.
    started: AtomicBool,
    in_flight: InFlight,
    /// The long-lived streams held, apart from the calls' in-flight cap.
    stream_budget: StreamBudget,
    allow_headers: AllowHeaders,
    /// The shared store's last check, for readiness.
    store_check: StoreCheck,
}

impl Shared {
    /// Checks the configuration and builds the state of an endpoint; `bind` is the listening
    /// address when known (a non-loopback one needs an explicit origin list).
    pub(crate) fn build(
        engine: Engine,
        config: HttpConfig,
        bind: Option<SocketAddr>,
        shutdown: CancellationToken,
    ) -> Result<Arc<Shared>, HttpError> {
        let mut paths = vec![config.path.as_str()];
        if let Some((sse, message)) = &config.sse_pair {
            paths.extend([sse.as_str(), message.as_str()]);
        }
        if let Some((live, ready)) = &config.probes {
            paths.extend([live.as_str(), ready.as_str()]);
        }
        for (i, p) in paths.iter().enumerate() {
            if !p.starts_with('/') || paths[..i].contains(p) {
                return Err(HttpError::InvalidPath((*p).to_owned()));
            }
        }
        let loopback = bind.is_none_or(|a| a.ip().is_loopback());
        if let (Some(addr), false, None) = (bind, loopback, &config.allowed_origins) {
            return Err(HttpError::AllowedOriginsRequired { addr });
        }
        let origins = OriginPolicy::new(&config, loopback)?;
        let hosts = HostPolicy::new(&config, loopback)?;
        Ok(Arc::new(Shared::new(engine, config, origins, hosts, shutdown)))
    }

    /// The state of an endpoint.
    fn new(
        engine: Engine,
        config: HttpConfig,
        origins: OriginPolicy,
        hosts: HostPolicy,
        shutdown: CancellationToken,
    ) -> Self {
        let hub = Arc::new(Hub::new(config.sse_buffer_size));
        let stream_budget = StreamBudget::new(
            stream_budget::cap(config.max_streams, config.max_connections),
            config.max_streams_per_address,
        );
        Shared {
            engine,
            config,
            origins,
            hosts,
            hub,
            pairs: Pairs::default(),
            tracker: TaskTracker::new(),
            stopping: CancellationToken::new(),
            shutdown,
            stop_calls: CancellationToken::new(),
            drained: CancellationToken::new(),
            draining: AtomicBool::new(false),
            started: AtomicBool::new(false),
            in_flight: InFlight::default(),
            stream_budget,
            allow_headers: AllowHeaders::default(),
            store_check: StoreCheck::default(),
        }
    }

    /// Starts the endpoint's background tasks once (they need a Tokio runtime: the first
    /// request, [`serve`](crate::serve) or [`router`](crate::router) calls this): the fan-out
    /// of registry changes and the idle-session sweep. Both end at shutdown, and when the
    /// endpoint is dropped.
    pub(crate) fn start_tasks(self: &Arc<Self>) {
        self.hub.start_fan_out(&self.engine, &self.shutdown);
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        mcp_runtime::background::spawn(sweep(Arc::downgrade(self)));
    }

    /// Begins a graceful shutdown once (later calls do nothing): readiness falls at once;
    /// [`HttpConfig::readiness_delay`] later (at once by default) every stream ends, and a task
    /// drains the calls in flight ([`Shared::drain`]), then cancels [`Shared::drained`].
    pub(crate) fn begin_shutdown(self: &Arc<Self>) {
        self.stopping.cancel();
        let delay = self.config.readiness_delay;
        if delay.is_zero() {
            self.shutdown.cancel();
        }
        if self.draining.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.clone();
        mcp_runtime::background::spawn(async move {
            if !delay.is_zero() {
                tracing::info!(?delay, "shutting down: not ready; serving on for the readiness delay");
                tokio::time::sleep(delay).await;
            }
            shared.drain(std::future::ready(())).await;
        });
    }

    /// Whether the endpoint is ready for new clients: not once a graceful shutdown has begun,
    /// nor while the engine's shared store does not answer its check (cached for a second).
    pub(crate) async fn readiness(&self) -> Readiness {
        if self.stopping.is_cancelled() {
            return Readiness::Draining;
        }
        match self.engine.store() {
            Some(store) if !self.store_check.reachable(store).await => Readiness::StoreUnreachable,
            _ => Readiness::Ready,
        }
    }

    /// The drain of a graceful shutdown (behaviour invariant 27): streams end (the shutdown
    /// token), then the calls in flight and `also` (the connections, for `serve`) get
    /// [`HttpConfig::shutdown_grace`] to finish. Past it every session is closed and every call
    /// still running is cancelled; each then has the engine's `cancel_grace` to clean up
    /// (plus a second for its answer to be written) before the drain gives up on it.
    pub(crate) async fn drain(&self, also: impl Future<Output = ()>) {
        self.draining.store(true, Ordering::Release);
        self.stopping.cancel();
        self.shutdown.cancel();
        self.tracker.close();
        let grace = self.config.shutdown_grace;
        let work = async {
            also.await;
            self.tracker.wait().await;
        };
        tokio::pin!(work);
        // The tasks running here drain beside the calls, and are handed back before the
        // sessions close (which would cancel the legacy ones).
        let (calls, _) = tokio::join!(tokio::time::timeout(grace, &mut work), self.engine.drain_tasks(grace));
        if calls.is_err() {
            tracing::warn!(
                ?grace,
                "calls still in flight after the shutdown grace; cancelling them"
            );
            self.engine.close_sessions();
            self.stop_calls.cancel();
            let wind_down = self.engine.config().cancel_grace + Duration::from_secs(1);
            if tokio::time::timeout(wind_down, &mut work).await.is_err() {
                tracing::warn!("calls still running after their cancellation grace; abandoned");
            }
        }
        self.drained.cancel();
    }

    /// Whether legacy sessions are minted (the streamable mode with sessions enabled, on a
    /// server that serves the legacy era).
    pub(crate) fn sessions(&self) -> bool {
        self.config.sessions_enabled
            && self.config.mode == HttpMode::Streamable
            && self.engine.config().eras.has(mcp_protocol::Era::Legacy)
    }

    /// Whether replies may stream (not in the simple mode).
    pub(crate) fn streams(&self) -> bool {
        self.config.mode == HttpMode::Streamable
    }

    /// Takes one slot of the in-flight cap for a client at `address`, or says why not.
    pub(crate) fn permit(&self, address: Option<std::net::IpAddr>) -> Result<Permit, NoSlot> {
        self.permits(1, address)
    }

    /// Takes `n` slots of the in-flight cap at once (the requests of a batch) for a client at
    /// `address`, or says why not (and takes nothing) when they do not all fit.
    pub(crate) fn permits(&self, n: usize, address: Option<std::net::IpAddr>) -> Result<Permit, NoSlot> {
        let c = &self.config;
        self.in_flight
            .take(n, c.max_in_flight, address, c.max_in_flight_per_address)
            .inspect_err(|busy| match busy {
                NoSlot::Full => tracing::warn!(limit = c.max_in_flight, "too many requests in flight"),
                NoSlot::AddressFull => tracing::warn!(
                    limit = c.max_in_flight_per_address,
                    ?address,
                    "too many requests in flight from one address"
                ),
            })
    }

    /// Takes one stream of the budget for a client at `address`, or says why not.
    pub(crate) fn stream(&self, address: Option<std::net::IpAddr>) -> Result<StreamPermit, StreamRefusal> {
        self.stream_budget.take(address).inspect_err(|refusal| {
            tracing::warn!(
                limit = self.config.max_streams,
                per_address = self.config.max_streams_per_address,
                ?address,
                %refusal,
                "stream refused"
            );
        })
    }

    /// Adds the CORS headers for a validated `Origin`.
    pub(crate) fn apply_cors(&self, headers: &mut HeaderMap, origin: HeaderValue) {
        self.allow_headers
            .apply(&self.engine, headers, origin, self.allowed_methods());
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
        response::not_allowed(self.allowed_methods())
    }
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
                let n = shared.engine.sweep_sessions().await;
                shared.hub.prune();
                if n > 0 {
                    tracing::debug!(expired = n, "idle sessions swept");
                }
            }
        }
    }
}
