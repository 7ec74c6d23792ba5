//! [`Events`]: the declared types, the occurrence log and the settings of one server; where
//! occurrences are emitted and where the extension's methods come from.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcp_protocol::RpcError;
use mcp_protocol::events::cursor::Position;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::error::EventsError;
use crate::event_type::EventType;
use crate::log::{MemoryLog, Occurrence, OccurrenceLog, Record, Signal};
use crate::slots::{MemorySlots, StreamSlots};
use crate::webhook::store::SubscriptionStore;
use crate::webhook::{WebhookSettings, Webhooks};

/// The event types of a server and their occurrence log. Cheap to clone: emit from anywhere.
#[derive(Clone)]
pub struct Events {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("types", &self.catalog().types.len())
            .finish_non_exhaustive()
    }
}

/// The types served at one moment: replaced whole when one is added or removed.
#[derive(Default)]
pub(crate) struct Catalog {
    /// In declaration order.
    types: Vec<Arc<EventType>>,
    /// By name (the order of `events/list`).
    pub(crate) listed: Vec<Arc<EventType>>,
    by_name: HashMap<String, usize>,
}

impl Catalog {
    /// The catalog of `types`; refused when two share a name.
    fn of(types: Vec<Arc<EventType>>) -> Result<Catalog, EventsError> {
        let mut by_name = HashMap::new();
        for (i, t) in types.iter().enumerate() {
            if by_name.insert(t.name().to_owned(), i).is_some() {
                return Err(EventsError::Duplicate(t.name().to_owned()));
            }
        }
        let mut listed = types.clone();
        listed.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(Catalog { types, listed, by_name })
    }
}

pub(crate) struct Inner {
    /// The types served now.
    catalog: RwLock<Arc<Catalog>>,
    /// Counts the catalog's changes (the push streams tell their clients of each).
    changes: watch::Sender<u64>,
    pub(crate) log: Arc<dyn OccurrenceLog>,
    pub(crate) settings: Settings,
    /// The open push streams of the limited types.
    slots: Arc<dyn StreamSlots>,
    /// Webhook delivery, when the server offers it.
    pub(crate) webhooks: Option<Webhooks>,
}

/// How the methods are served.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) page_size: usize,
    pub(crate) next_poll: Duration,
    pub(crate) max_poll_wait: Duration,
    pub(crate) default_max_events: usize,
    pub(crate) max_events: usize,
    pub(crate) heartbeat: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            page_size: 50,
            next_poll: Duration::from_secs(1),
            max_poll_wait: Duration::from_secs(60),
            default_max_events: 100,
            max_events: 1000,
            heartbeat: Duration::from_secs(25),
        }
    }
}

/// Builds [`Events`].
#[derive(Default)]
pub struct EventsBuilder {
    types: Vec<EventType>,
    log: Option<Arc<dyn OccurrenceLog>>,
    settings: Settings,
    webhooks: Option<WebhookSettings>,
    subscriptions: Option<Arc<dyn SubscriptionStore>>,
    slots: Option<Arc<dyn StreamSlots>>,
    permitted: HashSet<String>,
    trusted: HashSet<String>,
}

impl std::fmt::Debug for EventsBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsBuilder")
            .field("types", &self.types)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl EventsBuilder {
    /// Declares a type.
    pub fn event(mut self, event: EventType) -> Self {
        self.types.push(event);
        self
    }

    /// Where occurrences are kept (default: a [`MemoryLog`] with its default retention).
    pub fn log(mut self, log: impl OccurrenceLog) -> Self {
        self.log = Some(Arc::new(log));
        self
    }

    /// At most this many types per `events/list` page (default 50; 0: one page).
    pub fn page_size(mut self, size: usize) -> Self {
        self.settings.page_size = size;
        self
    }

    /// The `nextPollMs` of poll results (default 1 s).
    pub fn next_poll(mut self, wait: Duration) -> Self {
        self.settings.next_poll = wait;
        self
    }

    /// The longest a poll is held, whatever its `timeoutMs` (default 60 s).
    pub fn max_poll_wait(mut self, wait: Duration) -> Self {
        self.settings.max_poll_wait = wait;
        self
    }

    /// How often a push stream's heartbeat is sent (default 25 s; at most 30 s).
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.settings.heartbeat = every.clamp(Duration::from_millis(100), Duration::from_secs(30));
        self
    }

    /// The events a poll returns without `maxEvents` (default 100), and the most it returns
    /// with it (default 1,000).
    pub fn poll_batch(mut self, default: usize, max: usize) -> Self {
        self.settings.max_events = max.max(1);
        self.settings.default_max_events = default.clamp(1, self.settings.max_events);
        self
    }

    /// Offers webhook delivery (`events/subscribe`, `events/unsubscribe`) within `settings`
    /// for the types whose delivery lists `webhook`; on by default as soon as one does.
    pub fn webhooks(mut self, settings: WebhookSettings) -> Self {
        self.webhooks = Some(settings);
        self
    }

    /// Where webhook subscriptions are kept (default: in memory).
    pub fn subscriptions(mut self, store: impl SubscriptionStore) -> Self {
        self.subscriptions = Some(Arc::new(store));
        self
    }

    /// Where the open push streams of the types with a stream limit are counted (default: in
    /// memory, so each instance counts its own; share them so that a limit holds across every
    /// instance).
    pub fn stream_slots(mut self, slots: impl StreamSlots) -> Self {
        self.slots = Some(Arc::new(slots));
        self
    }

    /// Exempts callbacks of `origin` (`scheme://host[:port]`) from the `https` and routability
    /// rules: a receiver on the operator's own network.
    pub fn permit_callback_origin(mut self, origin: &str) -> Self {
        self.permitted.insert(crate::webhook::normalize_origin(origin));
        self
    }

    /// Trusts callbacks of `origin` to want deliveries without a verification handshake (the
    /// design's allow-list path: a receiver the operator registered).
    pub fn trust_callback_origin(mut self, origin: &str) -> Self {
        self.trusted.insert(crate::webhook::normalize_origin(origin));
        self
    }

    /// The [`Events`]; refused when two types share a name.
    pub fn build(self) -> Result<Events, EventsError> {
        let offered = self
            .types
            .iter()
            .any(|t| t.offers(mcp_protocol::events::wire::DeliveryMode::Webhook));
        let webhooks = match (self.webhooks, offered) {
            (Some(settings), _) => Some(settings),
            (None, true) => Some(WebhookSettings::default()),
            (None, false) => None,
        }
        .map(|settings| Webhooks::new(settings, self.subscriptions, self.permitted, self.trusted));
        let catalog = Catalog::of(self.types.into_iter().map(Arc::new).collect())?;
        Ok(Events {
            inner: Arc::new(Inner {
                catalog: RwLock::new(Arc::new(catalog)),
                changes: watch::Sender::new(0),
                log: self.log.unwrap_or_else(|| Arc::new(MemoryLog::default())),
                settings: self.settings,
                slots: self.slots.unwrap_or_else(|| Arc::new(MemorySlots::default())),
                webhooks,
            }),
        })
    }
}

/// An occurrence that was emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitted {
    /// Its `eventId`.
    pub event_id: String,
    /// Its position in the type's log.
    pub position: Position,
}

impl Events {
    /// A builder.
    pub fn builder() -> EventsBuilder {
        EventsBuilder::default()
    }

    /// The type named `name`, if it is served now.
    pub fn get(&self, name: &str) -> Option<Arc<EventType>> {
        let catalog = self.catalog();
        catalog.by_name.get(name).map(|i| catalog.types[*i].clone())
    }

    /// The types served now, in the order they were declared or added.
    pub fn types(&self) -> Vec<Arc<EventType>> {
        self.catalog().types.clone()
    }

    /// The types served now.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A receiver that changes whenever a type is added or removed.
    pub(crate) fn catalog_changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Serves one more type from now on: `events/list` lists it, and every open push stream
    /// on this instance is sent `notifications/events/list_changed`. Refused when a type of its
    /// name is served, or when it offers webhook delivery and the server was built without
    /// (declare a webhook type, or call [`EventsBuilder::webhooks`], at build). Each instance
    /// of a server serves the types its own code adds.
    pub fn add_type(&self, event: EventType) -> Result<(), EventsError> {
        if event.offers(mcp_protocol::events::wire::DeliveryMode::Webhook) && self.inner.webhooks.is_none() {
            return Err(EventsError::WebhooksOff(event.name().to_owned()));
        }
        // A name already served is refused by `Catalog::of`.
        self.edit(|types| {
            types.push(Arc::new(event));
            Ok(())
        })
    }

    /// Withdraws type `name`: its open push streams get `notifications/events/terminated` with
    /// `error` and their final result, its webhook subscriptions a `terminated` envelope (and
    /// are removed), then it is no longer listed (polls and new subscriptions get -32011) and
    /// every open push stream on this instance is sent `notifications/events/list_changed`.
    pub async fn remove_type(&self, name: &str, error: RpcError) -> Result<(), EventsError> {
        self.terminate(name, error).await?;
        self.edit(|types| {
            let before = types.len();
            types.retain(|t| t.name() != name);
            if types.len() == before {
                return Err(EventsError::Unknown(name.to_owned()));
            }
            Ok(())
        })
    }

    /// Replaces the catalog with `edit`'s change to its types, and announces it.
    fn edit(&self, edit: impl FnOnce(&mut Vec<Arc<EventType>>) -> Result<(), EventsError>) -> Result<(), EventsError> {
        let mut current = self.inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let mut types = current.types.clone();
        edit(&mut types)?;
        *current = Arc::new(Catalog::of(types)?);
        drop(current);
        self.inner.changes.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Emits an occurrence of `name` now, with a fresh `eventId`: every poll, stream and
    /// subscription of the type whose arguments admit it receives it.
    pub async fn emit(&self, name: &str, data: impl Serialize) -> Result<Emitted, EventsError> {
        let id = format!("evt_{:016x}", crate::time::random_u64());
        self.emit_with_id(name, &id, data).await
    }

    /// Emits an occurrence with the upstream's own stable id as its `eventId` (so that the
    /// same upstream event reached by two paths is deduplicated by clients).
    pub async fn emit_with_id(&self, name: &str, event_id: &str, data: impl Serialize) -> Result<Emitted, EventsError> {
        let event = self.get(name).ok_or_else(|| EventsError::Unknown(name.to_owned()))?;
        let data = match serde_json::to_value(data) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(EventsError::Payload(name.to_owned(), "not an object".into())),
            Err(e) => return Err(EventsError::Payload(name.to_owned(), e.to_string())),
        };
        if let Some(schema) = &event.payload {
            let value = Value::Object(data);
            schema
                .validate(&value)
                .map_err(|v| EventsError::Payload(name.to_owned(), v.to_rpc_error().message))?;
            let Value::Object(data) = value else {
                unreachable!("built as an object")
            };
            return self.append(name, event_id, data).await;
        }
        self.append(name, event_id, data).await
    }

    async fn append(
        &self,
        name: &str,
        event_id: &str,
        data: serde_json::Map<String, Value>,
    ) -> Result<Emitted, EventsError> {
        let record = Record::Occurrence(Occurrence {
            event_id: event_id.to_owned(),
            at_ms: crate::time::now_ms(),
            data,
        });
        let position = self.signal_record(name, record).await?;
        Ok(Emitted {
            event_id: event_id.to_owned(),
            position,
        })
    }

    /// Tells the type's open push streams of a recoverable failure (an upstream fetch
    /// failed): `notifications/events/error`; the streams stay open.
    pub async fn fail(&self, name: &str, error: RpcError) -> Result<(), EventsError> {
        self.signal(name, Signal::Error(error)).await
    }

    /// Tells the type's open push streams that occurrences were skipped: a fresh
    /// `notifications/events/active` with `truncated: true`.
    pub async fn gap(&self, name: &str) -> Result<(), EventsError> {
        self.signal(name, Signal::Gap).await
    }

    /// Ends the type's open push streams (access revoked, the type withdrawn):
    /// `notifications/events/terminated` with `error`, then the final result.
    pub async fn terminate(&self, name: &str, error: RpcError) -> Result<(), EventsError> {
        self.signal(name, Signal::Terminate(error)).await
    }

    async fn signal(&self, name: &str, signal: Signal) -> Result<(), EventsError> {
        if self.get(name).is_none() {
            return Err(EventsError::Unknown(name.to_owned()));
        }
        self.signal_record(name, Record::Signal(signal)).await.map(|_| ())
    }

    async fn signal_record(&self, name: &str, record: Record) -> Result<Position, EventsError> {
        self.inner
            .log
            .append(name, record)
            .await
            .map_err(|e| EventsError::Log(e.to_string()))
    }

    /// Exempts callbacks of `origin` from the `https` and routability rules from now on (see
    /// [`EventsBuilder::permit_callback_origin`]).
    pub fn permit_callback_origin(&self, origin: &str) {
        if let Some(hooks) = &self.inner.webhooks {
            hooks.permit(origin);
        }
    }

    /// Sends webhook subscription `id` a `gap` envelope with the type's current position.
    pub async fn webhook_gap(&self, id: &str) -> Result<(), EventsError> {
        let (mut sub, hooks) = self.subscription(id).await?;
        let slice = (self.inner.log)
            .read(&sub.name, crate::log::Start::Now, 0)
            .await
            .map_err(|e| EventsError::Log(e.to_string()))?;
        let cursor = mcp_protocol::events::cursor::Cursor {
            epoch: slice.epoch,
            position: slice.head,
        };
        let body = mcp_protocol::events::webhook::gap_body(Some(&cursor.encode()));
        crate::webhook::deliver::send_envelope(self, &mut sub, mcp_protocol::events::webhook::Envelope::Gap, &body)
            .await;
        let _ = hooks;
        Ok(())
    }

    /// Ends webhook subscription `id`: a `terminated` envelope with `error`, then it is removed.
    pub async fn webhook_terminate(&self, id: &str, error: RpcError) -> Result<(), EventsError> {
        let (mut sub, _) = self.subscription(id).await?;
        crate::webhook::deliver::terminate(self, &mut sub, &error).await;
        Ok(())
    }

    /// Whether webhook subscription `id` is `"active"`, `"suspended"` or `"absent"`.
    pub async fn subscription_state(&self, id: &str) -> &'static str {
        match self.subscription(id).await {
            Ok((s, _)) if s.active => "active",
            Ok(_) => "suspended",
            Err(_) => "absent",
        }
    }

    pub(crate) async fn subscription(
        &self,
        id: &str,
    ) -> Result<(crate::webhook::store::Subscription, &Webhooks), EventsError> {
        let hooks = self
            .inner
            .webhooks
            .as_ref()
            .ok_or_else(|| EventsError::Unknown(id.to_owned()))?;
        match hooks.store.get(id).await {
            Ok(Some(s)) if crate::time::now_ms() < s.expires_ms => Ok((s, hooks)),
            Ok(_) => Err(EventsError::Unknown(id.to_owned())),
            Err(e) => Err(EventsError::Log(e.to_string())),
        }
    }

    /// Holds a slot of `event`'s stream limit for a push stream until the guard drops (`None`:
    /// the type has no limit), or says the limit is reached.
    pub(crate) async fn open_stream(&self, event: &EventType) -> Result<Option<StreamGuard>, RpcError> {
        let Some(max) = event.max_streams else {
            return Ok(None);
        };
        let id = format!("{:016x}{:016x}", crate::time::random_u64(), crate::time::random_u64());
        // Three heartbeats: the stream renews its slot with each.
        let ttl = self.inner.settings.heartbeat * 3;
        match self.inner.slots.take(event.name(), &id, max, ttl).await {
            Ok(true) => Ok(Some(StreamGuard {
                slots: self.inner.slots.clone(),
                name: event.name().to_owned(),
                id,
                ttl,
            })),
            Ok(false) => Err(mcp_protocol::events::errors::resource_exhausted("streams", max as u64)),
            Err(e) => {
                tracing::warn!(error = %e, "the stream slots could not be counted");
                Err(RpcError::store_unavailable())
            }
        }
    }
}

/// A push stream's slot of its type's limit, given back when dropped.
pub(crate) struct StreamGuard {
    slots: Arc<dyn StreamSlots>,
    name: String,
    id: String,
    /// How long the slot lasts unrenewed.
    ttl: Duration,
}

impl StreamGuard {
    /// Renews the slot for its lifetime again (as the stream sends a heartbeat).
    pub(crate) async fn renew(&self) {
        if let Err(e) = self.slots.renew(&self.name, &self.id, self.ttl).await {
            tracing::debug!(error = %e, "a stream slot was not renewed");
        }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let (slots, name, id) = (
            self.slots.clone(),
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.id),
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = slots.release(&name, &id).await {
                tracing::debug!(error = %e, "a stream slot was not given back; it lapses");
            }
        });
    }
}
