//! What [`serve`](crate::serve) knows of each connection: whether a request is in flight, how
//! long it has been idle, and whether its responses are being taken by the client.
//!
//! - **The connection cap.** [`Conns`] holds every open connection. At
//!   [`HttpConfig::max_connections`](crate::HttpConfig::max_connections) a newcomer is admitted
//!   by shedding the longest-idle connection (no request in flight): silent sockets never lock
//!   out a live client. When every connection has a request in flight, the peer address holding
//!   the most connections gives one up if it holds at least two more than the newcomer's: one
//!   client holding every connection busy (slow bodies, slow calls, streams) never locks the
//!   others out. Only when the connections are shared out evenly is the newcomer refused.
//! - **Requests in flight.** [`Tracked`] wraps the router: a request is in flight from the
//!   moment hyper hands it over until its response body ends or is dropped ([`Busy`]).
//! - **Stalled responses.** Every response body is a [`TrackedBody`]. A body that handed hyper
//!   a frame and was not asked for the next one, or was never asked at all, is waiting for the
//!   client (a full TCP window, a closed HTTP/2 flow-control window); one that answered
//!   `Pending` is waiting for the server, which is not a stall. [`Conn::reap`] drops the inner
//!   body of a response stalled for `stall_timeout` (for an SSE stream this ends its pump and
//!   frees its pending replies) and asks for the connection to be closed when the client still
//!   holds such a stream one `stall_timeout` later.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::service::TowerToHyperService;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::routes;
use crate::state::Shared;

/// Locks a mutex, ignoring poisoning (the guarded state stays consistent at every step).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The server's clock: milliseconds since it started, never 0 (0 means "unset").
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock(Instant);

impl Clock {
    /// A clock starting now.
    pub(super) fn new() -> Clock {
        Clock(Instant::now())
    }

    /// Now, in milliseconds (at least 1).
    fn now(self) -> u64 {
        u64::try_from(self.0.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// The instant of a reading.
    fn instant(self, ms: u64) -> Instant {
        self.0 + Duration::from_millis(ms.saturating_sub(1))
    }
}

/// Milliseconds in a duration.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Every open connection, within the cap.
#[derive(Debug)]
pub(super) struct Conns {
    clock: Clock,
    max: usize,
    next: AtomicU64,
    open: Mutex<Open>,
}

/// The open connections, by id, and how many each peer address holds.
#[derive(Debug, Default)]
struct Open {
    conns: HashMap<u64, Arc<Conn>>,
    per_address: HashMap<IpAddr, usize>,
}

impl Open {
    /// Removes connection `id` (and its count); `None` when it was already gone.
    fn remove(&mut self, id: u64) -> Option<Arc<Conn>> {
        let conn = self.conns.remove(&id)?;
        if let Some(n) = self.per_address.get_mut(&conn.address) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&conn.address);
            }
        }
        Some(conn)
    }

    /// Closes the longest-idle connection, if one has no request in flight.
    fn shed_idle(&mut self) -> bool {
        let victim = self
            .conns
            .iter()
            .filter(|(_, c)| c.in_flight.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, c)| c.idle_since.load(Ordering::Acquire))
            .map(|(id, _)| *id);
        self.evict(victim)
    }

    /// Closes a connection of the address holding the most, busy or not, when it holds at least
    /// two more than `newcomer` does (so that, once the newcomer is in, it holds no more than
    /// that address: the connections are shared out, never ping-ponged). The one whose last
    /// request began the longest ago goes.
    fn shed_heaviest(&mut self, newcomer: IpAddr) -> bool {
        let Some((&heaviest, &n)) = self.per_address.iter().max_by_key(|(_, n)| **n) else {
            return false;
        };
        if n < self.per_address.get(&newcomer).copied().unwrap_or(0) + 2 {
            return false;
        }
        let victim = self
            .conns
            .iter()
            .filter(|(_, c)| c.address == heaviest)
            .min_by_key(|(_, c)| c.idle_since.load(Ordering::Acquire))
            .map(|(id, _)| *id);
        self.evict(victim)
    }

    fn evict(&mut self, victim: Option<u64>) -> bool {
        match victim.and_then(|id| self.remove(id)) {
            Some(conn) => {
                conn.evict.cancel();
                true
            }
            None => false,
        }
    }
}

/// How a newcomer was admitted.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Admitted {
    /// A free slot.
    Free,
    /// The longest-idle connection was closed to make room.
    Shed,
    /// Every connection was busy: one of the address holding the most was closed.
    ShedHeaviest,
}

impl Conns {
    /// Room for `max` connections.
    pub(super) fn new(max: usize, clock: Clock) -> Arc<Conns> {
        Arc::new(Conns {
            clock,
            max: max.max(1),
            next: AtomicU64::new(0),
            open: Mutex::new(Open::default()),
        })
    }

    /// How many connections are open.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.open).conns.len()
    }

    /// Admits a connection from `address`, shedding at the cap the longest-idle one, or when
    /// every one is busy one of the address holding the most ([`Open::shed_heaviest`]); `None`:
    /// every connection is busy and shared out evenly.
    pub(super) fn admit(self: &Arc<Self>, address: IpAddr) -> Option<(Slot, Admitted)> {
        let mut open = lock(&self.open);
        let how = if open.conns.len() < self.max {
            Admitted::Free
        } else if open.shed_idle() {
            Admitted::Shed
        } else if open.shed_heaviest(address) {
            Admitted::ShedHeaviest
        } else {
            return None;
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            clock: self.clock,
            address,
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(self.clock.now()),
            evict: CancellationToken::new(),
            bodies: Mutex::new(Bodies::default()),
        });
        open.conns.insert(id, conn.clone());
        *open.per_address.entry(address).or_insert(0) += 1;
        Some((
            Slot {
                conns: self.clone(),
                id,
                conn,
            },
            how,
        ))
    }

    /// Closes the longest-idle connection, if one has no request in flight (to free a file
    /// descriptor when `accept` runs out of them).
    pub(super) fn shed_idle(&self) -> bool {
        lock(&self.open).shed_idle()
    }
}

/// A connection's place among the open ones, released when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    conns: Arc<Conns>,
    id: u64,
    /// The connection's state.
    pub(super) conn: Arc<Conn>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.conns.open).remove(self.id);
    }
}

/// The responses of one connection, as weak handles (hyper owns the bodies).
#[derive(Debug, Default)]
struct Bodies {
    list: Vec<Weak<Watch>>,
    /// The length at which dead handles are pruned.
    prune_at: usize,
}

/// One connection's state.
#[derive(Debug)]
pub(super) struct Conn {
    clock: Clock,
    /// The peer's address (a trusted proxy's, for the clients behind it).
    address: IpAddr,
    in_flight: AtomicUsize,
    /// When the last request ended (or the connection opened).
    idle_since: AtomicU64,
    /// Cancelled when the connection is shed.
    pub(super) evict: CancellationToken,
    bodies: Mutex<Bodies>,
}

/// What [`Conn::reap`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reaped {
    /// Nothing to do, or stalled responses were ended.
    Fine,
    /// A response ended for stalling is still held by the client: close the connection.
    Close,
}

impl Conn {
    /// Marks a request in flight until the guard is dropped.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// When the connection will have been idle for `idle` (`None`: a request is in flight).
    pub(super) fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.idle_since.load(Ordering::Acquire);
        Some(self.clock.instant(since) + idle)
    }

    /// Wraps a response body so that its progress is watched.
    fn track(&self, body: Body, busy: Busy) -> TrackedBody {
        let watch = Arc::new(Watch {
            clock: self.clock,
            state: Mutex::new(WatchState {
                body: Some(body),
                busy: Some(busy),
                armed: self.clock.now(),
                killed: 0,
            }),
        });
        let mut bodies = lock(&self.bodies);
        bodies.list.push(Arc::downgrade(&watch));
        if bodies.list.len() >= bodies.prune_at {
            bodies.list.retain(|w| w.strong_count() > 0);
            bodies.prune_at = (bodies.list.len() * 2).max(32);
        }
        TrackedBody { watch }
    }

    /// Ends every response stalled for `stall`; [`Reaped::Close`] when one ended earlier is
    /// still held `stall` later.
    pub(super) fn reap(&self, stall: Duration) -> Reaped {
        let stall = millis(stall);
        let now = self.clock.now();
        let mut close = false;
        let mut ended = 0usize;
        let mut bodies = lock(&self.bodies);
        bodies.list.retain(|w| {
            let Some(watch) = w.upgrade() else {
                return false;
            };
            let mut st = lock(&watch.state);
            if st.killed != 0 {
                close |= now.saturating_sub(st.killed) >= stall;
            } else if st.armed != 0 && now.saturating_sub(st.armed) >= stall {
                st.body = None;
                st.busy = None;
                st.armed = 0;
                st.killed = now;
                ended += 1;
            }
            true
        });
        drop(bodies);
        if ended > 0 {
            tracing::debug!(streams = ended, "responses ended: the client took nothing of them");
        }
        if close { Reaped::Close } else { Reaped::Fine }
    }
}

/// A request in flight on a connection.
#[derive(Debug)]
pub(super) struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle_since.store(self.0.clock.now(), Ordering::Release);
        }
    }
}

/// The watched state of one response body.
#[derive(Debug)]
struct Watch {
    clock: Clock,
    state: Mutex<WatchState>,
}

#[derive(Debug)]
struct WatchState {
    /// The body (`None` once it ended or was dropped for stalling).
    body: Option<Body>,
    /// The request's in-flight mark, released with the body.
    busy: Option<Busy>,
    /// Since when the body waits for hyper to ask for more (0: it waits for the server).
    armed: u64,
    /// When it was dropped for stalling (0: it was not).
    killed: u64,
}

/// A response ended because its client took nothing of it for the stall timeout.
#[derive(Debug, thiserror::Error)]
#[error("response stalled: the client took nothing of it")]
pub(super) struct Stalled;

/// A response body's error: the inner body's, or [`Stalled`].
type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// A response body watched for progress.
#[derive(Debug)]
pub(super) struct TrackedBody {
    watch: Arc<Watch>,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let clock = self.watch.clock;
        let mut st = lock(&self.watch.state);
        let Some(body) = st.body.as_mut() else {
            return Poll::Ready(if st.killed != 0 {
                Some(Err(Stalled.into()))
            } else {
                None
            });
        };
        match Pin::new(body).poll_frame(cx) {
            Poll::Pending => {
                st.armed = 0;
                Poll::Pending
            }
            Poll::Ready(Some(Ok(frame))) => {
                // The clock is read only when a frame is handed over (the stall watch starts).
                st.armed = clock.now();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(end) => {
                st.body = None;
                st.busy = None;
                st.armed = 0;
                Poll::Ready(end.map(|r| r.map_err(Into::into)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let st = lock(&self.watch.state);
        match &st.body {
            Some(b) => b.is_end_stream(),
            None => st.killed == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        let st = lock(&self.watch.state);
        match &st.body {
            Some(b) => b.size_hint(),
            None if st.killed == 0 => SizeHint::with_exact(0),
            None => SizeHint::default(),
        }
    }
}

/// The endpoint as a hyper service whose requests and responses are tracked on `conn`.
///
/// A request for the endpoint's path goes straight to its handler
/// ([`routes::endpoint`]): the router would only have matched the path, at the cost of
/// several allocations per request (its path parameters, the matched path, a boxed clone of the
/// route and its futures). Every other path (the pair, the metadata document, the probes, a
/// 404) goes through the router.
#[derive(Debug, Clone)]
pub(super) struct Tracked {
    endpoint: Endpoint,
    conn: Arc<Conn>,
    peer: ConnectInfo<SocketAddr>,
}

/// What serves an endpoint's requests: its state, and its router for the other paths.
#[derive(Clone)]
pub(super) struct Endpoint {
    shared: Arc<Shared>,
    router: TowerToHyperService<Router>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("path", &self.shared.config.path)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The endpoint `shared` describes (`router`: [`routes::build`] of it).
    pub(super) fn new(shared: Arc<Shared>, router: Router) -> Endpoint {
        Endpoint {
            shared,
            router: TowerToHyperService::new(router),
        }
    }
}

impl Tracked {
    /// Tracks `endpoint`'s requests on `conn`; each request carries the peer's address as
    /// axum's `ConnectInfo`.
    pub(super) fn new(endpoint: Endpoint, conn: Arc<Conn>, peer: SocketAddr) -> Tracked {
        Tracked {
            endpoint,
            conn,
            peer: ConnectInfo(peer),
        }
    }
}

impl hyper::service::Service<http::Request<Incoming>> for Tracked {
    type Response = http::Response<TrackedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, mut req: http::Request<Incoming>) -> Self::Future {
        req.extensions_mut().insert(self.peer);
        let busy = self.conn.busy();
        let conn = self.conn.clone();
        if req.uri().path() == self.endpoint.shared.config.path {
            // The endpoint's future is built inside the boxed one (not built here and moved in,
            // which sized the box for both and copied each into it).
            let shared = self.endpoint.shared.clone();
            return Box::pin(async move {
                let resp = routes::endpoint(shared, req.map(Body::new)).await;
                Ok(resp.map(|body| conn.track(body, busy)))
            });
        }
        let fut = self.endpoint.router.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            Ok(resp.map(|body| conn.track(body, busy)))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use super::*;

    fn poll(body: &mut TrackedBody) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        Pin::new(body).poll_frame(&mut Context::from_waker(Waker::noop()))
    }

    /// Loopback address `127.0.0.n`.
    fn ip(n: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, n])
    }

    #[tokio::test(start_paused = true)]
    async fn busy_connections_are_shared_out_between_addresses() {
        let conns = Conns::new(4, Clock::new());
        let mut held = Vec::new();
        for _ in 0..4 {
            let (slot, how) = conns.admit(ip(1)).expect("a free slot");
            assert_eq!(how, Admitted::Free);
            held.push((slot.conn.busy(), slot));
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        // One address holds every connection busy: a newcomer from another gets in, and the
        // first address's connection whose request began first is closed.
        let (b1, how) = conns.admit(ip(2)).expect("the newcomer");
        assert_eq!(how, Admitted::ShedHeaviest);
        assert!(held[0].1.conn.evict.is_cancelled());
        assert!(held[1..].iter().all(|(_, s)| !s.conn.evict.is_cancelled()));
        let _b1_busy = b1.conn.busy();
        // 3 against 1: once more. 2 against 2: shared out, the next one is refused.
        let (b2, how) = conns.admit(ip(2)).expect("again");
        assert_eq!(how, Admitted::ShedHeaviest);
        let _b2_busy = b2.conn.busy();
        assert!(conns.admit(ip(2)).is_none(), "two each: shared out");
        assert!(conns.admit(ip(1)).is_none(), "two each: shared out");
        assert_eq!(lock(&conns.open).per_address.get(&ip(1)), Some(&2));
        // A third address holds none: it gets one too.
        let (c1, how) = conns.admit(ip(3)).expect("a third address");
        assert_eq!(how, Admitted::ShedHeaviest);
        assert_eq!(conns.len(), 4);
        drop((held, b1, b2, c1));
        assert!(lock(&conns.open).per_address.is_empty(), "counts follow the slots");
    }

    #[tokio::test(start_paused = true)]
    async fn the_cap_sheds_the_longest_idle() {
        let conns = Conns::new(2, Clock::new());
        let (a, how) = conns.admit(ip(1)).expect("first");
        assert_eq!(how, Admitted::Free);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (b, _) = conns.admit(ip(1)).expect("second");
        // `a` is the longest idle, but has a request in flight: `b` goes.
        let busy = a.conn.busy();
        let (c, how) = conns.admit(ip(1)).expect("third");
        assert_eq!(how, Admitted::Shed);
        assert!(b.conn.evict.is_cancelled() && !a.conn.evict.is_cancelled());
        assert_eq!(conns.len(), 2);
        drop(b);
        assert_eq!(conns.len(), 2, "a shed slot is not released twice");
        let busy_c = c.conn.busy();
        assert!(conns.admit(ip(1)).is_none(), "every connection is busy");
        drop(busy);
        let d = conns.admit(ip(1)).expect("idle again: `a` is shed");
        assert!(a.conn.evict.is_cancelled());
        drop((a, c, busy_c));
        assert!(!d.0.conn.evict.is_cancelled());
        assert_eq!(conns.len(), 1, "only the last one is left");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_deadline_follows_requests() {
        let conns = Conns::new(1, Clock::new());
        let (slot, _) = conns.admit(ip(1)).expect("slot");
        let idle = Duration::from_secs(5);
        let opened = Instant::now();
        assert_eq!(slot.conn.idle_deadline(idle), Some(opened + idle));
        let busy = slot.conn.busy();
        assert_eq!(slot.conn.idle_deadline(idle), None);
        tokio::time::sleep(Duration::from_secs(2)).await;
        drop(busy);
        assert_eq!(
            slot.conn.idle_deadline(idle),
            Some(opened + Duration::from_secs(2) + idle)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_is_ended_then_its_connection_closed() {
        let conns = Conns::new(1, Clock::new());
        let (slot, _) = conns.admit(ip(1)).expect("slot");
        let stall = Duration::from_secs(3);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, Infallible>>(1);
        let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
        let mut body = slot.conn.track(Body::from_stream(stream), slot.conn.busy());
        assert!(slot.conn.idle_deadline(stall).is_none(), "a response is in flight");
        // Waiting for the server (Pending) is never a stall.
        assert!(poll(&mut body).is_pending());
        tokio::time::sleep(stall * 2).await;
        assert_eq!(slot.conn.reap(stall), Reaped::Fine);
        assert!(!tx.is_closed());
        // A frame handed over and never followed by another poll: the client is not reading.
        tx.send(Ok(Bytes::from_static(b"x"))).await.expect("send");
        assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
        tokio::time::sleep(stall - Duration::from_millis(1)).await;
        assert_eq!(slot.conn.reap(stall), Reaped::Fine);
        assert!(!tx.is_closed(), "not yet");
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(slot.conn.reap(stall), Reaped::Fine);
        assert!(tx.is_closed(), "the inner body (and the pump's receiver) is dropped");
        assert!(slot.conn.idle_deadline(stall).is_some(), "no longer in flight");
        assert!(!body.is_end_stream(), "an ended stream is not a complete one");
        tokio::time::sleep(stall).await;
        assert_eq!(slot.conn.reap(stall), Reaped::Close, "still held: close the connection");
        assert!(matches!(poll(&mut body), Poll::Ready(Some(Err(_)))), "hyper resets it");
    }

    #[tokio::test(start_paused = true)]
    async fn finished_bodies_release_the_request() {
        let conns = Conns::new(1, Clock::new());
        let (slot, _) = conns.admit(ip(1)).expect("slot");
        let mut body = slot.conn.track(Body::from("{}"), slot.conn.busy());
        assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
        assert!(matches!(poll(&mut body), Poll::Ready(None)));
        assert!(body.is_end_stream());
        assert!(slot.conn.idle_deadline(Duration::ZERO).is_some());
        let unpolled = slot.conn.track(Body::from("{}"), slot.conn.busy());
        drop(unpolled);
        assert!(slot.conn.idle_deadline(Duration::ZERO).is_some(), "dropped unread");
        for _ in 0..100 {
            drop(slot.conn.track(Body::empty(), slot.conn.busy()));
        }
        assert!(lock(&slot.conn.bodies).list.len() < 40, "dead handles are pruned");
    }
}
