//! Legacy sessions: what `initialize` negotiated, the session's log level and
//! resource subscriptions ([`negotiated`]), its pending server-to-client requests
//! ([`correlation`]), its requests in flight, the outlet of the notifications meant for it
//! alone, and, when sessions are shared by several instances, its link to the shared record
//! ([`replica`]). Sessions are bound to the principal that created them; another principal's
//! lookup answers like an unknown id.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use mcp_protocol::bounds::SubscriptionBounds;
use mcp_protocol::model::{ClientCapabilities, LoggingLevel};
use mcp_protocol::notifications::Change;
use mcp_protocol::{RequestId, Revision, RpcError};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::observe::Network;

mod correlation;
mod handle;
pub(crate) mod inflight;
mod logs;
mod negotiated;
mod replica;
mod replication;
pub(crate) mod slot;
pub(crate) mod store;
mod values;

use correlation::Correlation;
pub use handle::SessionHandle;
pub use inflight::{DuplicateId, InFlight, InFlightGuard};
pub use logs::{LogNews, LogWatcher};
use negotiated::Negotiated;
use replica::Replica;
pub(crate) use replication::Replication;
pub(crate) use values::SessionValues;

use crate::sink::Frame;
use crate::store::{SessionField, StoreError};

/// Where the notifications meant for one session go (for example
/// `notifications/elicitation/complete`): installed by the transport that
/// serves the session (over HTTP, the session's event buffer and its stream;
/// stdio: the writer). It answers whether the frame was accepted, and never
/// waits.
pub type Outlet = Arc<dyn Fn(Frame) -> bool + Send + Sync>;

/// The session's outlet slot (the closure has no `Debug`).
#[derive(Default)]
struct OutletSlot(Mutex<Option<Outlet>>);

impl std::fmt::Debug for OutletSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if lock(&self.0).is_some() { "Outlet" } else { "NoOutlet" })
    }
}

/// One legacy session.
#[derive(Debug)]
pub struct Session {
    id: Arc<str>,
    principal: Arc<str>,
    negotiated: Negotiated,
    correlation: Correlation,
    replica: Replica,
    /// Whether a 2025-11-25 task was created in the session (here, or in the record loaded).
    tasks: AtomicBool,
    in_flight: InFlight,
    last_activity_ms: AtomicU64,
    epoch: Instant,
    /// Set by the engine at `initialize` to the network of the transport that opened the
    /// session (`Some(None)` in process), and taken by the first close, which records the
    /// session's duration; a replica loaded from a shared record has none.
    opened: Mutex<Option<Option<Network>>>,
    closed: CancellationToken,
    outlet: OutletSlot,
    /// What the transport serving the session installed to hear of its logs (shared store).
    watcher: OnceLock<Arc<dyn LogWatcher>>,
    /// What handlers keep for the session ([`Ctx::session_state`](crate::Ctx::session_state)).
    values: SessionValues,
}

impl Session {
    /// A session negotiated by `initialize`.
    pub fn new(
        id: Arc<str>,
        principal: Arc<str>,
        revision: Revision,
        client_capabilities: ClientCapabilities,
        client_info: Value,
    ) -> Self {
        Session {
            id,
            principal,
            negotiated: Negotiated::new(revision, client_capabilities, client_info),
            correlation: Correlation::new(),
            replica: Replica::default(),
            tasks: AtomicBool::new(false),
            in_flight: InFlight::new(),
            last_activity_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            opened: Mutex::new(None),
            closed: CancellationToken::new(),
            outlet: OutletSlot::default(),
            watcher: OnceLock::new(),
            values: SessionValues::default(),
        }
    }

    #[cfg(feature = "shared-store")]
    /// Makes the session a replica of a shared record: its changes are written through and
    /// announced to other instances.
    pub(crate) fn attach(&self, replication: Arc<dyn Replication>) {
        self.replica.attach(replication);
    }

    /// Whether the session's record is shared by several instances.
    pub fn is_shared(&self) -> bool {
        self.replica.link().is_some()
    }

    /// Where the record is replicated, when it is shared.
    pub(super) fn replication(&self) -> Option<&Arc<dyn Replication>> {
        self.replica.link()
    }

    fn changed(&self, field: SessionField) {
        if let Some(c) = self.replication() {
            c.changed(&self.id, field);
        }
    }

    #[cfg(feature = "shared-store")]
    /// Applies a change another instance made to the record.
    pub(crate) fn apply_remote(&self, field: &SessionField) {
        if matches!(field, SessionField::Tasks) {
            self.tasks.store(true, Ordering::Relaxed);
        }
        self.negotiated.apply(field);
    }

    #[cfg(feature = "shared-store")]
    /// Tells the session's [`LogWatcher`] (if the transport installed one) of its logs.
    pub(crate) fn log_news(&self, news: LogNews) {
        if let Some(w) = self.watcher.get() {
            w.news(news);
        }
    }

    /// The session id.
    pub fn id(&self) -> &Arc<str> {
        &self.id
    }

    /// The owning principal.
    pub fn principal(&self) -> &Arc<str> {
        &self.principal
    }

    /// The negotiated revision.
    pub fn revision(&self) -> Revision {
        self.negotiated.revision()
    }

    /// The capabilities the client declared.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.negotiated.client_capabilities()
    }

    /// The client's `clientInfo`.
    pub fn client_info(&self) -> &Value {
        self.negotiated.client_info()
    }

    /// The minimum level of `notifications/message` (default `info`).
    pub fn log_level(&self) -> LoggingLevel {
        self.negotiated.log_level()
    }

    /// Sets the minimum log level (`logging/setLevel`).
    pub fn set_log_level(&self, level: LoggingLevel) {
        self.negotiated.set_log_level(level);
        self.changed(SessionField::LogLevel(level));
    }

    /// Whether `notifications/initialized` arrived. With a shared store, on a replica: whether
    /// it arrived at this instance or was in the record when this instance loaded the session
    /// (it is written through but not announced: nothing a replica does depends on it).
    pub fn is_initialized(&self) -> bool {
        self.negotiated.is_initialized()
    }

    /// Records `notifications/initialized`.
    pub fn mark_initialized(&self) {
        if self.negotiated.mark_initialized() {
            self.changed(SessionField::Initialized);
        }
    }

    /// Whether a 2025-11-25 task was created in the session (with a shared store: on this
    /// instance, or before it loaded the session).
    pub(crate) fn has_tasks(&self) -> bool {
        self.tasks.load(Ordering::Relaxed)
    }

    /// Records that a 2025-11-25 task is created in the session: in the shared record before
    /// this returns, so that the session's end, wherever it happens, deletes its tasks.
    pub(crate) async fn mark_tasks(&self) -> Result<(), StoreError> {
        if self.tasks.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        match self.replication() {
            Some(c) => c.write(&self.id, SessionField::Tasks).await.inspect_err(|_| {
                self.tasks.store(false, Ordering::Relaxed);
            }),
            None => Ok(()),
        }
    }

    /// The session's requests in flight.
    pub fn in_flight(&self) -> &InFlight {
        &self.in_flight
    }

    /// What handlers keep for this session, one value per type.
    pub(crate) fn values(&self) -> &SessionValues {
        &self.values
    }

    /// A token cancelled when the session ends.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Milliseconds since the session's epoch.
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Records activity (for the idle sweep).
    pub fn touch(&self) {
        let ms = self.now_ms();
        self.last_activity_ms.store(ms, Ordering::Relaxed);
        if let Some(c) = self.replication()
            && self.replica.touch_due(ms, c.touch_every())
        {
            c.touched(&self.id);
        }
    }

    /// Whether this copy of a shared session is due to be checked against the store (its last
    /// check, or its creation here, is `every` old); claims the check when it is, so that one
    /// request of many does it.
    pub(crate) fn check_due(&self, every: Duration) -> bool {
        self.replica.check_due(self.now_ms(), every)
    }

    /// Time since the last activity.
    pub fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_activity_ms.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// Subscribes to `notifications/resources/updated` for a URI.
    pub fn subscribe(&self, uri: &str) {
        if self.negotiated.subscribe(uri) {
            self.changed(SessionField::Subscribe(uri.to_owned()));
        }
    }

    /// Subscribes within `bounds`: a URI already subscribed is kept; a new one is refused
    /// (-32602) when the session holds [`SubscriptionBounds::max_entries`] already.
    pub fn subscribe_within(&self, uri: &str, bounds: &SubscriptionBounds) -> Result<(), RpcError> {
        if self.negotiated.subscribe_within(uri, bounds)? {
            self.changed(SessionField::Subscribe(uri.to_owned()));
        }
        Ok(())
    }

    /// Unsubscribes from a URI.
    pub fn unsubscribe(&self, uri: &str) {
        if self.negotiated.unsubscribe(uri) {
            self.changed(SessionField::Unsubscribe(uri.to_owned()));
        }
    }

    /// Whether the session subscribed to a URI.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.negotiated.is_subscribed(uri)
    }

    /// Whether the session is told about a change: every list change while it is open, a
    /// resource update only for a URI it subscribed to.
    pub fn wants(&self, change: &Change) -> bool {
        if self.is_closed() {
            return false;
        }
        match change {
            Change::ResourceUpdated(uri) => self.is_subscribed(uri),
            _ => true,
        }
    }

    /// Registers a server-to-client request and returns its id and the
    /// receiver of its response.
    pub fn register_request(&self) -> (RequestId, oneshot::Receiver<Result<Value, RpcError>>) {
        // Shared sessions: the instance's id keeps ids unique across instances.
        self.correlation.register(self.replication().map(|c| c.instance()))
    }

    /// The instance that sent a server-to-client request of a shared session, from its id
    /// (see [`Session::register_request`]); `None` for any other id.
    #[cfg(feature = "shared-store")]
    pub(crate) fn asker(id: &RequestId) -> Option<&str> {
        Correlation::asker(id)
    }

    /// Forgets a pending request (timed out or abandoned).
    pub fn forget_request(&self, id: &RequestId) {
        self.correlation.take(id);
    }

    /// Delivers a client response to the pending request it answers; `false` when no such
    /// request is pending (the response is dropped). A shared session forwards a response it
    /// does not hold to the other instances (one of them holds it) and answers `true`.
    pub fn deliver(&self, id: &RequestId, outcome: Result<Value, RpcError>) -> bool {
        match (self.correlation.take(id), self.replication()) {
            (Some(tx), _) => tx.send(outcome).is_ok(),
            (None, Some(r)) => r.forward_response(&self.id, id, outcome),
            (None, None) => false,
        }
    }

    #[cfg(feature = "shared-store")]
    /// Delivers a response forwarded by another instance (never forwarded again).
    pub(crate) fn deliver_local(&self, id: &RequestId, outcome: Result<Value, RpcError>) -> bool {
        match self.correlation.take(id) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Cancels a request of the session in flight; a shared session forwards a cancellation for
    /// a request it does not hold to the other instances. `false` when none holds it here and
    /// nothing was forwarded.
    pub fn cancel(&self, id: &RequestId) -> bool {
        if self.in_flight.cancel(id) {
            return true;
        }
        self.replication().is_some_and(|r| r.forward_cancel(&self.id, id))
    }

    /// Connects the session to the stream that carries the notifications
    /// meant for it alone (the transport serving the session calls this; a
    /// later call replaces the outlet).
    pub fn set_outlet(&self, outlet: impl Fn(Frame) -> bool + Send + Sync + 'static) {
        *lock(&self.outlet.0) = Some(Arc::new(outlet));
    }

    /// Sends a notification to this session only, through its outlet;
    /// `false` when the session ended, no transport connected it, or the
    /// stream refused the frame (notifications have no reply: nothing waits).
    pub fn notify(&self, frame: Frame) -> bool {
        if self.is_closed() {
            return false;
        }
        let outlet = lock(&self.outlet.0).clone();
        match (outlet, self.replication()) {
            (Some(o), _) => o(frame),
            // Shared: into the session's own log, whichever instance reads it.
            (None, Some(c)) => c.append(&self.id, 0, frame),
            (None, None) => false,
        }
    }

    /// Marks the session as opened here, over `network`: its duration is recorded
    /// ([`SESSION_DURATION`](crate::observe::SESSION_DURATION)) when it is closed.
    pub(crate) fn opened_over(&self, network: Option<Network>) {
        *lock(&self.opened) = Some(network);
    }

    /// Records the duration of a session opened here, once.
    fn ended(&self) {
        let opened = lock(&self.opened).take();
        if let Some(network) = opened {
            crate::observe::session_ended(Some(self.revision()), network, self.epoch.elapsed().as_secs_f64());
        }
    }

    /// Ends the session: in-flight calls are cancelled, pending requests fail
    /// at once, streams watching [`Session::closed`] end. The first close of a session opened
    /// here records its duration.
    pub fn close(&self) {
        self.ended();
        self.closed.cancel();
        lock(&self.outlet.0).take();
        self.in_flight.cancel_all();
        for tx in self.correlation.drain() {
            let _ = tx.send(Err(RpcError::internal_with("Session terminated")));
        }
        self.negotiated.clear_subscriptions();
    }
}

/// A session opened here that was never closed ends with its last holder (the server shut
/// down, the runtime dropped): its duration is recorded then, unless its record is shared, when
/// it lives on in the other instances.
impl Drop for Session {
    fn drop(&mut self) {
        if !self.is_shared() {
            self.ended();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A 2025-11-25 session of `principal` with no client capabilities (for unit tests).
#[cfg(test)]
pub(crate) fn test_session(principal: &str) -> Arc<Session> {
    Arc::new(Session::new(
        store::SessionStore::mint_id(),
        Arc::from(principal),
        Revision::V2025_11_25,
        ClientCapabilities::default(),
        Value::Null,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_changes_a_session_wants() {
        let s = test_session("alice");
        let updated = Change::ResourceUpdated(Arc::from("file:///a"));
        assert!(s.wants(&Change::Prompts));
        assert!(!s.wants(&updated), "not subscribed");
        s.subscribe("file:///a");
        assert!(s.wants(&updated));
        s.close();
        assert!(!s.wants(&Change::Tools), "closed");
    }

    #[tokio::test]
    async fn close_fails_pending_and_cancels_in_flight() {
        let s = test_session("a");
        let (id, rx) = s.register_request();
        let token = CancellationToken::new();
        let _g = s.in_flight().begin(1.into(), token.clone()).unwrap();
        s.close();
        assert!(token.is_cancelled());
        assert!(rx.await.unwrap().is_err());
        assert!(!s.deliver(&id, Ok(Value::Null)));
    }

    #[tokio::test]
    async fn delivery_matches_pending_ids_only() {
        let s = test_session("a");
        let (id, rx) = s.register_request();
        assert!(!s.deliver(&RequestId::from("other"), Ok(Value::Null)));
        assert!(s.deliver(&id, Ok(Value::Bool(true))));
        assert_eq!(rx.await.unwrap(), Ok(Value::Bool(true)));
    }

    #[cfg(feature = "shared-store")]
    #[test]
    fn a_shared_request_id_names_its_asker() {
        let id = RequestId::from("s2c-0123abcd.i00ff-17");
        assert_eq!(Session::asker(&id), Some("0123abcd.i00ff"));
        assert_eq!(
            Session::asker(&RequestId::from("s2c-3")),
            None,
            "a session of one process"
        );
        assert_eq!(Session::asker(&RequestId::from("c-1-2")), None);
        assert_eq!(Session::asker(&RequestId::Number(4)), None);
    }

    #[test]
    fn notifications_go_through_the_outlet_until_the_session_ends() {
        let s = test_session("a");
        assert!(!s.notify(b"x".to_vec()), "no outlet yet");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        s.set_outlet(move |f| {
            lock(&sink).push(f);
            true
        });
        assert!(s.notify(b"one".to_vec()));
        s.close();
        assert!(!s.notify(b"two".to_vec()));
        assert_eq!(*lock(&seen), vec![b"one".to_vec()]);
    }
}
