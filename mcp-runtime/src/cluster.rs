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
//!   to this instance's streams (legacy GET streams and listen streams) without touching the
//!   local catalog (catalogs are code: every instance registers the same one).
//! - **Stream events.** Session-targeted notifications are appended to the session's log in the
//!   [`EventLog`](crate::store::EventLog) (stored before they are sent) and announced; the instance
//!   holding the session's GET stream reads them from the log. A GET stream opened on one instance
//!   ends the session's older GET stream on another (one GET stream per session).
//! - **Liveness.** The instance renews a heartbeat in [`Membership`](crate::store::Membership).
//! - **Loss.** A bus gap (a backlog overflow, a lost connection) is answered like a lag: every
//!   list is re-announced and every GET stream re-reads its log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use mcp_protocol::model::ClientCapabilities;
use mcp_protocol::{RequestId, Revision, RpcError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::catalog::{Change, Registry};
use crate::session::{Replication, Session, SessionStore};
use crate::store::{BusEvent, SessionField, SessionRecord, Store, StoreError, StoreFuture, StreamKey};
use crate::tasks::{Sharing, Tasks};

/// How often the heartbeat is renewed, and how long it lasts.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
const HEARTBEAT_TTL: Duration = Duration::from_secs(6);
/// The queue of stream events waiting to be appended.
const APPEND_QUEUE: usize = 4096;
/// How long a DELETE waits for the replicas on other instances to end.
const ACK_WAIT: Duration = Duration::from_secs(1);

/// A change as it travels on the bus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum WireChange {
    Tools,
    Resources,
    Prompts,
    ResourceUpdated(String),
}

impl From<&Change> for WireChange {
    fn from(c: &Change) -> Self {
        match c {
            Change::Tools => WireChange::Tools,
            Change::Resources => WireChange::Resources,
            Change::Prompts => WireChange::Prompts,
            Change::ResourceUpdated(uri) => WireChange::ResourceUpdated(uri.to_string()),
        }
    }
}

impl From<WireChange> for Change {
    fn from(c: WireChange) -> Self {
        match c {
            WireChange::Tools => Change::Tools,
            WireChange::Resources => Change::Resources,
            WireChange::Prompts => Change::Prompts,
            WireChange::ResourceUpdated(uri) => Change::ResourceUpdated(Arc::from(uri)),
        }
    }
}

/// What instances tell each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub(crate) enum Note {
    /// A registry change on the sender.
    Change { change: WireChange },
    /// A session was deleted: every replica ends.
    SessionEnded { session: String },
    /// The sender ended its replica of a deleted session (the DELETE waits for these).
    Ended { session: String },
    /// A session's record changed.
    SessionChanged { session: String, field: SessionField },
    /// A client's response to a server-to-client request the sender does not hold.
    Response {
        session: String,
        id: RequestId,
        outcome: Result<Value, RpcError>,
    },
    /// A `notifications/cancelled` for a request the sender does not hold.
    Cancel { session: String, id: RequestId },
    /// An event was appended to a session's stream log.
    Event { session: String, stream: u64, id: u64 },
    /// A GET stream of the session opened on the sender.
    StreamOpened { session: String },
    /// `tasks/cancel` reached the sender for a task another instance runs.
    TaskCancel { task: String },
    /// `tasks/update` brought input for a task another instance runs.
    TaskInput {
        task: String,
        responses: serde_json::Map<String, Value>,
    },
    /// A modern task's status changed on the sender: listen streams asking for it hear it.
    TaskChanged {
        task: String,
        params: serde_json::Map<String, Value>,
    },
    /// An application message ([`crate::Runtime::broadcast`]).
    User { topic: String, payload: Value },
}

/// An application's handler of broadcast messages on one topic.
pub(crate) type UserHandler = Arc<dyn Fn(&Value) + Send + Sync>;

/// A bus message: who sent it, and what it says.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    from: String,
    #[serde(flatten)]
    note: Note,
}

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
    /// Bumped by every bus gap: GET streams re-read their logs.
    gaps: watch::Sender<u64>,
    started: AtomicBool,
    me: OnceLock<Weak<Cluster>>,
    /// This instance's sessions (set when started).
    sessions: OnceLock<Weak<SessionStore>>,
    /// This instance's tasks (set when started).
    tasks: OnceLock<Weak<Tasks>>,
    /// The application's broadcast handlers, by topic.
    handlers: std::sync::RwLock<Vec<(String, UserHandler)>>,
    /// Sessions being deleted here: the holders not yet acknowledged, and the waiting DELETE.
    acks: std::sync::Mutex<std::collections::HashMap<String, Acks>>,
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
    pub(crate) fn new(store: Store, session_ttl: Duration, event_capacity: usize) -> Arc<Self> {
        let (appends, rx) = mpsc::channel(APPEND_QUEUE);
        let c = Arc::new(Cluster {
            instance: mint_instance(),
            store,
            session_ttl,
            event_capacity: event_capacity.max(1),
            appends,
            appends_rx: std::sync::Mutex::new(Some(rx)),
            gaps: watch::Sender::new(0),
            started: AtomicBool::new(false),
            me: OnceLock::new(),
            sessions: OnceLock::new(),
            tasks: OnceLock::new(),
            handlers: std::sync::RwLock::new(Vec::new()),
            acks: std::sync::Mutex::new(std::collections::HashMap::new()),
        });
        let _ = c.me.set(Arc::downgrade(&c));
        c
    }

    /// This instance's id.
    pub(crate) fn instance(&self) -> &Arc<str> {
        &self.instance
    }

    /// The shared store.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// A receiver woken by every bus gap.
    pub(crate) fn gaps(&self) -> watch::Receiver<u64> {
        self.gaps.subscribe()
    }

    /// Starts the bus listener, the change forwarder, the appender and the heartbeat (once;
    /// needs a Tokio runtime).
    pub(crate) fn ensure_started(&self, sessions: &Arc<SessionStore>, registry: &Arc<Registry>, tasks: &Arc<Tasks>) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(me) = self.me.get().and_then(Weak::upgrade) else {
            return;
        };
        let _ = self.sessions.set(Arc::downgrade(sessions));
        let _ = self.tasks.set(Arc::downgrade(tasks));
        let bus = self.store.bus.subscribe();
        tokio::spawn(listen(
            Arc::downgrade(&me),
            bus,
            Arc::downgrade(sessions),
            Arc::downgrade(registry),
        ));
        tokio::spawn(forward_changes(Arc::downgrade(&me), registry.local_changes()));
        tokio::spawn(heartbeat(Arc::downgrade(&me)));
        let rx = self
            .appends_rx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(rx) = rx {
            tokio::spawn(append(Arc::downgrade(&me), rx));
        }
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

    /// Publishes a note to every instance.
    pub(crate) fn publish(&self, note: Note) -> Result<(), StoreError> {
        let envelope = Envelope {
            from: self.instance.to_string(),
            note,
        };
        let bytes = serde_json::to_vec(&envelope).map_err(|e| StoreError::Backend(e.to_string()))?;
        self.store.bus.publish(bytes).inspect_err(|e| {
            tracing::warn!(error = %e, "bus publish failed");
        })
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

    /// A replica of a session this instance does not hold, from its record; `None` when the
    /// record is absent, expired or another principal's.
    pub(crate) async fn load(&self, id: &str, principal: &str) -> Result<Option<Arc<Session>>, StoreError> {
        let Some(record) = self.store.sessions.load(id, self.session_ttl).await? else {
            return Ok(None);
        };
        if record.principal != principal {
            return Ok(None);
        }
        if !record.holders.contains(&*self.instance) {
            // Named in the record before serving: a DELETE anywhere waits for this replica.
            let holder = SessionField::Holder(self.instance.to_string());
            self.store.sessions.update(id, &holder).await?;
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
            session.mark_initialized();
        }
        for uri in &record.subscriptions {
            session.subscribe(uri);
        }
        Ok(Some(Arc::new(session)))
    }

    /// Deletes a session everywhere: its record, its stream logs, and every replica. Answers
    /// once every live instance holding a replica has ended it (bounded by [`ACK_WAIT`]), so
    /// that a request right after the DELETE is 404 wherever it lands.
    pub(crate) async fn end(&self, session: &str) -> Result<bool, StoreError> {
        let holders = match self.store.sessions.load(session, self.session_ttl).await? {
            Some(r) => r.holders,
            None => return Ok(false),
        };
        let existed = self.store.sessions.delete(session).await?;
        if !existed {
            return Ok(false);
        }
        if let Err(e) = self.store.events.delete_session(session).await {
            tracing::warn!(session, error = %e, "stream events of a deleted session not dropped");
        }
        let mut waiting = std::collections::BTreeSet::new();
        for h in holders {
            if h != *self.instance && self.store.members.alive(&h).await.unwrap_or(false) {
                waiting.insert(h);
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
        let published = self.publish(Note::SessionEnded {
            session: session.to_owned(),
        });
        if wait {
            if published.is_ok() && tokio::time::timeout(ACK_WAIT, rx).await.is_err() {
                tracing::debug!(session, "not every replica acknowledged the end of the session in time");
            }
            self.acks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(session);
        }
        Ok(true)
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

impl Replication for Cluster {
    fn instance(&self) -> &str {
        &self.instance
    }

    /// A change to a session's record: written through, then announced.
    fn changed(&self, session: &str, field: SessionField) {
        let Some(me) = self.me.get().and_then(Weak::upgrade) else {
            return;
        };
        // Announced at once, before the request that made the change is answered: a change
        // this instance raises next (a resource update after `resources/subscribe`) is published
        // after it, and the bus keeps one publisher's order. The record follows.
        let _ = self.publish(Note::SessionChanged {
            session: session.to_owned(),
            field: field.clone(),
        });
        let session = session.to_owned();
        tokio::spawn(async move {
            if let Err(e) = me.store.sessions.update(&session, &field).await {
                tracing::warn!(session, error = %e, "session change not stored");
            }
        });
    }

    /// Pushes a session's record expiry back.
    fn touched(&self, session: &str) {
        let Some(me) = self.me.get().and_then(Weak::upgrade) else {
            return;
        };
        let session = session.to_owned();
        tokio::spawn(async move {
            if let Err(e) = me.store.sessions.touch(&session, me.session_ttl).await {
                tracing::debug!(session, error = %e, "session expiry not pushed back");
            }
        });
    }

    /// How often a replica pushes its record's expiry back.
    fn touch_every(&self) -> Duration {
        self.session_ttl / 8
    }

    /// Appends an event to a session's stream log (in order, stored before it is announced and
    /// sent); `false` when the queue is full (the event is lost, and logged).
    fn append(&self, session: &str, stream: u64, frame: Vec<u8>) -> bool {
        let append = Append {
            key: StreamKey {
                session: session.to_owned(),
                stream,
            },
            frame,
            capacity: self.event_capacity,
        };
        match self.appends.try_send(append) {
            Ok(()) => true,
            Err(_) => {
                tracing::warn!(session, "stream event queue full: event dropped");
                false
            }
        }
    }

    fn stream_opened(&self, session: &str) {
        let _ = self.publish(Note::StreamOpened {
            session: session.to_owned(),
        });
    }

    fn forward_response(&self, session: &str, id: &RequestId, outcome: Result<Value, RpcError>) -> bool {
        self.publish(Note::Response {
            session: session.to_owned(),
            id: id.clone(),
            outcome,
        })
        .is_ok()
    }

    fn forward_cancel(&self, session: &str, id: &RequestId) -> bool {
        self.publish(Note::Cancel {
            session: session.to_owned(),
            id: id.clone(),
        })
        .is_ok()
    }
}

impl Sharing for Cluster {
    fn instance(&self) -> &str {
        &self.instance
    }

    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool> {
        self.store.members.alive(instance)
    }

    fn forward_cancel(&self, task: &str) -> Result<(), StoreError> {
        self.publish(Note::TaskCancel { task: task.to_owned() })
    }

    fn forward_input(&self, task: &str, responses: &serde_json::Map<String, Value>) -> Result<(), StoreError> {
        self.publish(Note::TaskInput {
            task: task.to_owned(),
            responses: responses.clone(),
        })
    }

    fn task_changed(&self, task: &str, params: &serde_json::Map<String, Value>) {
        let _ = self.publish(Note::TaskChanged {
            task: task.to_owned(),
            params: params.clone(),
        });
    }
}

/// A fresh instance id: `i` and 16 hex digits from the OS CSPRNG.
fn mint_instance() -> Arc<str> {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        panic!("the operating system's random number generator failed");
    }
    let mut s = String::from("i");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    Arc::from(s)
}

/// Applies what other instances say.
async fn listen(
    cluster: Weak<Cluster>,
    mut bus: mpsc::Receiver<BusEvent>,
    sessions: Weak<SessionStore>,
    registry: Weak<Registry>,
) {
    while let Some(event) = bus.recv().await {
        let (Some(cluster), Some(sessions), Some(registry)) =
            (cluster.upgrade(), sessions.upgrade(), registry.upgrade())
        else {
            return;
        };
        let bytes = match event {
            BusEvent::Message(bytes) => bytes,
            BusEvent::Gap => {
                tracing::warn!("bus gap: messages may have been lost; every list is re-announced");
                for change in Change::EVERY_LIST {
                    registry.announce(change);
                }
                cluster.gaps.send_modify(|n| *n += 1);
                continue;
            }
        };
        let envelope: Envelope = match serde_json::from_slice(&bytes) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "unreadable bus message ignored");
                continue;
            }
        };
        if *envelope.from == *cluster.instance {
            continue;
        }
        match &envelope.note {
            Note::Ended { session } => {
                cluster.acknowledged(session, &envelope.from);
                continue;
            }
            Note::SessionEnded { session } => {
                sessions.drop_replica(session);
                let _ = cluster.publish(Note::Ended {
                    session: session.clone(),
                });
                continue;
            }
            _ => {}
        }
        if let Note::User { topic, payload } = &envelope.note {
            cluster.user(topic, payload);
            continue;
        }
        let tasks = cluster.tasks.get().and_then(Weak::upgrade);
        apply(envelope.note, &sessions, &registry, tasks);
    }
}

fn apply(note: Note, sessions: &SessionStore, registry: &Registry, tasks: Option<Arc<Tasks>>) {
    match note {
        Note::TaskCancel { task } => {
            if let Some(tasks) = tasks.filter(|t| t.live(&task).is_some()) {
                tokio::spawn(async move {
                    let _ = tasks.cancel(&task).await;
                });
            }
        }
        Note::TaskInput { task, responses } => {
            if let Some(tasks) = tasks.filter(|t| t.live(&task).is_some()) {
                tokio::spawn(async move {
                    let _ = tasks.feed_input(&task, &responses).await;
                });
            }
        }
        Note::User { .. } | Note::Ended { .. } => {}
        Note::TaskChanged { task, params } => {
            if let Some(tasks) = tasks {
                tasks.subscriptions().task_changed(&task, params);
            }
        }
        Note::Change { change } => registry.announce(change.into()),
        Note::SessionEnded { session } => {
            sessions.drop_replica(&session);
        }
        Note::SessionChanged { session, field } => {
            if let Some(s) = sessions.replica(&session) {
                s.apply_remote(&field);
            }
        }
        Note::Response { session, id, outcome } => {
            if let Some(s) = sessions.replica(&session) {
                s.deliver_local(&id, outcome);
            }
        }
        Note::Cancel { session, id } => {
            if let Some(s) = sessions.replica(&session) {
                s.in_flight().cancel(&id);
            }
        }
        Note::Event { session, stream, id } => {
            if let Some(s) = sessions.replica(&session) {
                s.event_appended(stream, id);
            }
        }
        Note::StreamOpened { session } => {
            if let Some(s) = sessions.replica(&session) {
                s.stream_taken_elsewhere();
            }
        }
    }
}

/// Publishes this instance's registry changes.
async fn forward_changes(cluster: Weak<Cluster>, mut changes: tokio::sync::broadcast::Receiver<Change>) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let change = match changes.recv().await {
            Ok(c) => c,
            Err(RecvError::Lagged(_)) => {
                // Changes were missed: tell every instance that every list may have changed.
                let Some(c) = cluster.upgrade() else { return };
                for change in Change::EVERY_LIST {
                    let _ = c.publish(Note::Change {
                        change: (&change).into(),
                    });
                }
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Some(c) = cluster.upgrade() else { return };
        let _ = c.publish(Note::Change {
            change: (&change).into(),
        });
    }
}

/// Renews the instance's heartbeat until the cluster is dropped.
async fn heartbeat(cluster: Weak<Cluster>) {
    let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
    loop {
        tick.tick().await;
        let Some(c) = cluster.upgrade() else { return };
        if let Err(e) = c.store.members.heartbeat(&c.instance, HEARTBEAT_TTL).await {
            tracing::warn!(error = %e, "heartbeat not renewed");
        }
    }
}

/// Appends stream events in order, then announces them (here and on the bus).
async fn append(cluster: Weak<Cluster>, mut rx: mpsc::Receiver<Append>) {
    while let Some(a) = rx.recv().await {
        let Some(c) = cluster.upgrade() else { return };
        match c.store.events.append(&a.key, &a.frame, a.capacity).await {
            Ok(id) => {
                let _ = c.publish(Note::Event {
                    session: a.key.session.clone(),
                    stream: a.key.stream,
                    id,
                });
                // The local replica (if any) hears it too: the bus skips our own notes.
                c.local_event(&a.key.session, a.key.stream, id);
            }
            Err(e) => tracing::warn!(session = %a.key.session, error = %e, "stream event not stored: dropped"),
        }
    }
}

impl Cluster {
    /// Wakes the local replica's streams for an event appended here.
    fn local_event(&self, session: &str, stream: u64, id: u64) {
        if let Some(s) = self
            .sessions
            .get()
            .and_then(Weak::upgrade)
            .and_then(|st| st.replica(session))
        {
            s.event_appended(stream, id);
        }
    }
}
