//! The runtime's side of a shared [`Store`]: what one instance does so that several instances
//! behind a load balancer that does not pin clients behave as one server.
//!
//! With no store configured there is no `Cluster` and nothing here runs. With one:
//!
//! - **Sessions.** `initialize` writes the session's record before it is answered; an instance
//!   that meets an id it does not hold loads the record and keeps a local replica (the
//!   [`Session`] object, with its own pending requests and requests in flight). Changes to the
//!   record (log level, `notifications/initialized`, subscriptions) are written through and
//!   announced; activity pushes the record's expiry back (at most every `ttl / 8`); DELETE on
//!   any instance deletes the record and ends every replica, whose streams end with it.
//! - **Server-to-client traffic.** Request ids carry the instance's id, so they are unique
//!   across instances. A client's response, or a `notifications/cancelled`, that reaches an
//!   instance not holding the waiting request is published on the bus; the holder delivers it.
//! - **Changes.** A local registry change is published; a change heard on the bus is announced
//!   to this instance's streams (the transports' streams and listen streams) without touching the
//!   local catalog (catalogs are code: every instance registers the same one). This instance's
//!   own change is announced here when the bus brings it back too (at once if the bus cannot
//!   take it): what an application broadcast before the change has then reached every instance,
//!   so a client told of the change by one instance lists it on any other.
//! - **Stream events.** Session-targeted notifications are appended to the session's log in the
//!   [`EventLog`](crate::store::EventLog) (stored before they are sent) and announced; the instance
//!   whose transport streams the session reads them from the log. A stream of the session claimed
//!   on one instance ends the one on another (one reader per session: [`LogNews::Claimed`](crate::LogNews::Claimed)).
//! - **Requests served elsewhere.** A URL-mode elicitation is completed by the instance holding
//!   its record, wherever `complete_elicitation` is called; a 2025-11-25 `tasks/result` on one
//!   instance carries the messages of a task another instance runs (`on_behalf`).
//! - **Mailboxes.** The instance holding a transport's mailbox keeps its record in
//!   [`MailboxRecords`](crate::store::MailboxRecords); mail for it reaching another instance is
//!   published to the holder, which hands it to its transport and publishes what became of it
//!   (`delivery`, see [`crate::mailbox`]).
//! - **Liveness.** The instance renews a heartbeat in [`Membership`](crate::store::Membership),
//!   and reports on the bus how many sessions it started (and which clients hold many): the
//!   session bounds count every instance's, approximately (`load`).
//! - **Addressing.** A message for one instance (a session's end to its holders and their
//!   acknowledgements, a response to the instance that asked, mail and its receipts,
//!   a task's cancellation, input and following to the instance its record names, a followed
//!   task's messages back, an answer) names it, and goes to its process's bus address when
//!   the bus has addresses (an instance's id starts with it): the others are not woken. On a
//!   bus without addresses it reaches every instance, and the others ignore it.
//! - **Loss.** A bus gap (a backlog overflow, a lost connection, a publish that failed here, a
//!   number skipped in another instance's counts, see `numbers`, or a message this instance
//!   cannot read: another build's, whose format version differs, the first time, an unreadable
//!   one each time) is answered like a lag:
//!   every list is re-announced and every stream that follows a log re-reads it.

mod asks;
mod delivery;
mod load;
mod loops;
mod note;
mod numbers;
mod on_behalf;
mod ports;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use mcp_protocol::Revision;
use mcp_protocol::model::ClientCapabilities;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

pub(crate) use note::Note;

use crate::background::{Background, boxed};
use crate::catalog::Registry;
use crate::config::ServerConfig;
use crate::elicitation::Elicitations;
use crate::quota::ClientKey;
use crate::session::Session;
use crate::session::store::Elsewhere;
use crate::session::store::SessionStore;
use crate::store::{SessionField, SessionRecord, Store, StoreError, StreamKey};
use crate::tasks::Tasks;
use loops::{append, forward_changes, heartbeat, listen};
use note::{BUS_VERSION, Envelope, Heard};

/// How often the heartbeat is renewed, and how long it lasts.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
const HEARTBEAT_TTL: Duration = Duration::from_secs(6);
/// The queue of stream events waiting to be appended.
const APPEND_QUEUE: usize = 4096;
/// How long a DELETE waits for the replicas on other instances to end.
const ACK_WAIT: Duration = Duration::from_secs(1);

/// An application's handler of broadcast messages on one topic.
pub(crate) type UserHandler = Arc<dyn Fn(&Value) + Send + Sync>;

/// A stream event to append.
struct Append {
    key: StreamKey,
    frame: Vec<u8>,
    capacity: usize,
}

/// One instance's part of a shared store.
pub(crate) struct Cluster {
    instance: Arc<str>,
    store: Store,
    session_ttl: Duration,
    event_capacity: usize,
    appends: mpsc::Sender<Append>,
    appends_rx: std::sync::Mutex<Option<mpsc::Receiver<Append>>>,
    /// Bumped by every bus gap: streams that follow a log re-read it.
    gaps: watch::Sender<u64>,
    /// The number of this instance's last message the bus brought back to it (see
    /// [`Cluster::published_everywhere`]).
    heard_own: watch::Sender<u64>,
    started: AtomicBool,
    me: OnceLock<Weak<Cluster>>,
    /// This instance's sessions (set as the runtime is built).
    sessions: OnceLock<Weak<SessionStore>>,
    /// This instance's tasks (set as the runtime is built).
    tasks: OnceLock<Weak<Tasks>>,
    /// This instance's URL-mode elicitation records (set as the runtime is built).
    elicitations: OnceLock<Weak<Elicitations>>,
    /// Requests served on behalf of other instances (see `on_behalf`).
    on_behalf: on_behalf::OnBehalf,
    /// The application's broadcast handlers, by topic.
    handlers: std::sync::RwLock<Vec<(String, UserHandler)>>,
    /// Sessions being deleted here: the holders not yet acknowledged, and the waiting DELETE.
    acks: std::sync::Mutex<std::collections::HashMap<String, Acks>>,
    /// The counts of the messages published (held while publishing, so that numbers go out in
    /// order).
    numbers: std::sync::Mutex<numbers::Outgoing>,
    /// The sessions the other instances report they started.
    loads: load::Loads,
    /// A client is named in this instance's reports from this many sessions on.
    report_from: usize,
    /// The mailboxes held here, and the mail forwarded from here awaiting an outcome.
    delivery: delivery::Delivery,
}

/// The holders of a session still to acknowledge its end, and who waits for them.
type Acks = (std::collections::BTreeSet<String>, tokio::sync::oneshot::Sender<()>);

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    pub(crate) fn new(store: Store, config: &ServerConfig) -> Arc<Self> {
        let (appends, rx) = mpsc::channel(APPEND_QUEUE);
        let c = Arc::new(Cluster {
            instance: mint_instance(store.bus.address()),
            store,
            session_ttl: config.session_ttl,
            event_capacity: config.max_stream_events.max(1),
            appends,
            appends_rx: std::sync::Mutex::new(Some(rx)),
            gaps: watch::Sender::new(0),
            heard_own: watch::Sender::new(0),
            started: AtomicBool::new(false),
            me: OnceLock::new(),
            sessions: OnceLock::new(),
            tasks: OnceLock::new(),
            elicitations: OnceLock::new(),
            on_behalf: on_behalf::OnBehalf::default(),
            handlers: std::sync::RwLock::new(Vec::new()),
            acks: std::sync::Mutex::new(std::collections::HashMap::new()),
            numbers: std::sync::Mutex::new(numbers::Outgoing::default()),
            loads: load::Loads::default(),
            report_from: (config.max_sessions_per_principal / 16).max(1),
            delivery: delivery::Delivery::default(),
        });
        let _ = c.me.set(Arc::downgrade(&c));
        c
    }

    /// This instance's id.
    pub(crate) fn instance(&self) -> &Arc<str> {
        &self.instance
    }

    /// The shared store.
    /// How long a session record lives without activity.
    pub(crate) fn session_ttl(&self) -> Duration {
        self.session_ttl
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The sessions the other instances started, in all and `client`'s, as they last reported
    /// (see `load`).
    pub(crate) fn started_elsewhere(&self, client: &ClientKey) -> Elsewhere {
        self.loads.elsewhere(&client.to_string(), HEARTBEAT_TTL)
    }

    /// A receiver woken by every bus gap.
    pub(crate) fn gaps(&self) -> watch::Receiver<u64> {
        self.gaps.subscribe()
    }

    /// Gives the cluster this instance's sessions, tasks and URL-elicitation records (weakly:
    /// the runtime owns them), once, as the runtime is built.
    pub(crate) fn bind(&self, sessions: &Arc<SessionStore>, tasks: &Arc<Tasks>, elicitations: &Arc<Elicitations>) {
        let _ = self.sessions.set(Arc::downgrade(sessions));
        let _ = self.tasks.set(Arc::downgrade(tasks));
        let _ = self.elicitations.set(Arc::downgrade(elicitations));
    }

    /// The services this instance runs beside the requests: the bus listener, the change
    /// forwarder, the appender and the heartbeat (the first call only: later calls get none).
    /// Subscribes to the bus before it returns, so that nothing published from now on is missed;
    /// the engine's driver runs the services.
    pub(crate) fn start(&self, registry: &Arc<Registry>) -> Vec<Background> {
        if self.started.swap(true, Ordering::AcqRel) {
            return Vec::new();
        }
        let Some(me) = self.me.get().and_then(Weak::upgrade) else {
            return Vec::new();
        };
        let sessions = self.sessions.get().cloned().unwrap_or_default();
        let bus = self.store.bus.subscribe();
        let mut services = vec![
            boxed(listen(Arc::downgrade(&me), bus, sessions, Arc::downgrade(registry))),
            boxed(forward_changes(
                Arc::downgrade(&me),
                registry.local_changes(),
                Arc::downgrade(registry),
            )),
        ];
        // Subscribed to the bus and to the local changes: from now on a local change reaches
        // this instance's streams when the bus brings it back, as it reaches the others'.
        registry.announce_when_heard();
        services.push(boxed(heartbeat(Arc::downgrade(&me))));
        let rx = self
            .appends_rx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(rx) = rx {
            services.push(boxed(append(Arc::downgrade(&me), rx)));
        }
        services
    }

    /// Publishes an application message on `topic` to every other instance.
    pub(crate) fn broadcast(&self, topic: &str, payload: Value) -> Result<(), StoreError> {
        self.publish(Note::User {
            topic: topic.to_owned(),
            payload,
        })
    }

    /// [`broadcast`](Self::broadcast), then waits (at most `wait`) until the bus carried it
    /// everywhere (see [`publish_everywhere`](Self::publish_everywhere)).
    pub(crate) async fn broadcast_everywhere(
        &self,
        topic: &str,
        payload: Value,
        wait: Duration,
    ) -> Result<(), StoreError> {
        let note = Note::User {
            topic: topic.to_owned(),
            payload,
        };
        self.publish_everywhere(note, wait).await
    }

    /// Makes `session` write its changes through to the store and announce them (a session
    /// created or loaded here).
    pub(crate) fn attach(self: &Arc<Self>, session: &Session) {
        session.attach(self.clone());
    }

    /// Registers an application handler of broadcast messages on `topic`.
    pub(crate) fn on_user(&self, topic: String, handler: UserHandler) {
        self.handlers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((topic, handler));
    }

    /// Runs the application's handlers of a message (in the bus listener: in bus order).
    fn user(&self, topic: &str, payload: &Value) {
        let handlers: Vec<UserHandler> = self
            .handlers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(t, _)| t == topic)
            .map(|(_, h)| h.clone())
            .collect();
        for h in handlers {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h(payload))).is_err() {
                tracing::error!(topic, "broadcast handler panicked");
            }
        }
    }

    /// Publishes `note` and waits until the bus has brought it back here: by then the bus has
    /// handed it to every instance (each applies it as it reads its bus, in order). Bounded by
    /// `wait`: past it (a slow or lost bus) the message may still arrive, or be a gap.
    pub(crate) async fn publish_everywhere(&self, note: Note, wait: Duration) -> Result<(), StoreError> {
        let seq = self.send(None, note)?;
        let mut heard = self.heard_own.subscribe();
        match tokio::time::timeout(wait, heard.wait_for(|n| *n >= seq)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(StoreError::Unavailable(format!(
                "the bus did not carry the message within {wait:?}"
            ))),
        }
    }

    /// Records that the bus brought back this instance's message `seq`.
    pub(super) fn heard_own(&self, seq: u64) {
        self.heard_own.send_if_modified(|n| {
            let newer = seq > *n;
            if newer {
                *n = seq;
            }
            newer
        });
    }

    /// Publishes `note` to every instance.
    pub(crate) fn publish(&self, note: Note) -> Result<(), StoreError> {
        self.send(None, note).map(|_| ())
    }

    /// Publishes `note` to instance `to` alone (to its process's bus address; on a bus without
    /// addresses, to every instance, and the others ignore it).
    pub(crate) fn publish_to(&self, to: &str, note: Note) -> Result<(), StoreError> {
        self.send(Some(to), note).map(|_| ())
    }

    /// Publishes `note` to `to` (`None`: to every instance); its number in its count.
    fn send(&self, to: Option<&str>, note: Note) -> Result<u64, StoreError> {
        let mut numbers = self.numbers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Counted even when the bus cannot take it: the others see the number skipped (a gap).
        let seq = numbers.next(to);
        let envelope = Envelope {
            v: BUS_VERSION,
            from: self.instance.to_string(),
            to: to.map(str::to_owned),
            seq,
            note,
        };
        let bytes = serde_json::to_vec(&envelope).map_err(|e| StoreError::Backend(e.to_string()))?;
        match to.and_then(address_of) {
            Some(address) => self.store.bus.publish_to(address, bytes),
            None => self.store.bus.publish(bytes),
        }
        .inspect_err(|e| {
            tracing::warn!(error = %e, "bus publish failed");
        })?;
        Ok(seq)
    }

    /// The record of a new session, written before `initialize` is answered.
    pub(crate) async fn create(&self, session: &Session) -> Result<(), StoreError> {
        let mut record = SessionRecord::new(
            session.id().to_string(),
            session.principal().to_string(),
            session.revision().as_str(),
            session.client_capabilities().raw().clone(),
            session.client_info().clone(),
        );
        record.holders.insert(self.instance.to_string());
        self.store.sessions.create(&record, self.session_ttl).await
    }

    /// A replica of a session this instance does not hold, from its record, with `changes`
    /// stored first (see [`SessionRecords::hold`](crate::store::SessionRecords::hold)); `None` when the record is absent, expired or
    /// another principal's.
    pub(crate) async fn load(
        &self,
        id: &str,
        principal: &str,
        changes: &[SessionField],
    ) -> Result<Option<Arc<Session>>, StoreError> {
        // Named in the record before serving: a DELETE anywhere waits for this replica. (The
        // record of another principal's session names this instance too, harmlessly: a DELETE
        // then waits for an instance that holds nothing and acknowledges at once.)
        let Some(record) = self
            .store
            .sessions
            .hold(id, &self.instance, self.session_ttl, changes)
            .await?
        else {
            return Ok(None);
        };
        if record.principal != principal {
            return Ok(None);
        }
        let Some(revision) = Revision::parse(&record.revision) else {
            tracing::warn!(session = id, revision = %record.revision, "stored session has an unknown revision");
            return Ok(None);
        };
        let session = Session::new(
            Arc::from(record.id.as_str()),
            Arc::from(record.principal.as_str()),
            revision,
            ClientCapabilities::new(record.client_capabilities),
            record.client_info,
        );
        session.set_log_level(record.log_level);
        if record.initialized {
            session.apply_remote(&SessionField::Initialized);
        }
        if record.tasks {
            session.apply_remote(&SessionField::Tasks);
        }
        for uri in &record.subscriptions {
            session.subscribe(uri);
        }
        Ok(Some(Arc::new(session)))
    }

    /// Deletes a session everywhere: its record, its stream logs, and every replica. Answers
    /// once every live instance holding a replica has ended it (bounded by [`ACK_WAIT`]), so
    /// that a request right after the DELETE is 404 wherever it lands; the record as it was, if
    /// the store still had it.
    pub(crate) async fn end(&self, session: &str) -> Result<Option<SessionRecord>, StoreError> {
        let Some(record) = self.store.sessions.delete(session).await? else {
            // The store forgot it already (a flush, a restart without persistence), but
            // replicas may remain: the end reaches them now, not at their next check.
            let _ = self.publish(Note::SessionEnded {
                session: session.to_owned(),
            });
            return Ok(None);
        };
        let mut waiting = std::collections::BTreeSet::new();
        for h in &record.holders {
            if *h != *self.instance && self.is_alive(h).await {
                waiting.insert(h.clone());
            }
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let wait = !waiting.is_empty();
        if wait {
            self.acks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(session.to_owned(), (waiting, tx));
        }
        // To the holders alone: no other instance has a replica (a replica is named in the
        // record before it serves).
        let mut published = Ok(());
        for h in record.holders.iter().filter(|h| h.as_str() != &*self.instance) {
            let sent = self.publish_to(
                h,
                Note::SessionEnded {
                    session: session.to_owned(),
                },
            );
            published = published.and(sent);
        }
        if wait {
            if published.is_ok() && tokio::time::timeout(ACK_WAIT, rx).await.is_err() {
                tracing::debug!(session, "not every replica acknowledged the end of the session in time");
            }
            self.acks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(session);
        }
        Ok(Some(record))
    }

    /// Whether `instance` is alive: from its latest report on the bus (one every heartbeat),
    /// or from the store when none was heard yet (this instance just started). A store that
    /// cannot tell counts it alive: waiting for a dead instance costs a bounded wait, never a
    /// stale replica.
    async fn is_alive(&self, instance: &str) -> bool {
        match self.loads.heard(instance, HEARTBEAT_TTL) {
            Some(alive) => alive,
            None => {
                let alive = self.store.members.alive(instance).await.unwrap_or(true);
                if alive {
                    self.loads.confirm(instance);
                }
                alive
            }
        }
    }

    /// Another instance ended its replica of a session this instance is deleting.
    fn acknowledged(&self, session: &str, from: &str) {
        let mut acks = self.acks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let done = acks.get_mut(session).is_some_and(|(waiting, _)| {
            waiting.remove(from);
            waiting.is_empty()
        });
        if done && let Some((_, tx)) = acks.remove(session) {
            let _ = tx.send(());
        }
    }
}

/// A fresh instance id: `i` and 16 hex digits from the OS CSPRNG, after the bus address of
/// this process and a `.` when the bus has addresses (see [`address_of`]).
fn mint_instance(address: Option<&str>) -> Arc<str> {
    let prefix = match address.filter(|a| !a.is_empty() && !a.contains('.')) {
        Some(a) => format!("{a}.i"),
        None => String::from("i"),
    };
    match crate::mint::random_id::<8>(&prefix) {
        Some(id) => Arc::from(id),
        None => panic!("the operating system's random number generator failed"),
    }
}

/// The bus address of an instance's process: what comes before the `.` of its id (see
/// [`mint_instance`]), if there is one.
fn address_of(instance: &str) -> Option<&str> {
    instance.split_once('.').map(|(address, _)| address)
}
