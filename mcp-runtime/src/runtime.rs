//! [`Runtime`]: one server's protocol state and the services that act on it, all in one place.
//!
//! The runtime owns the configuration, the catalog's [`Registry`], the legacy sessions, the
//! MRTR rounds, the tasks, the `subscriptions/listen` hub, the URL-elicitation records and (with
//! a shared [`Store`]) this instance's part of the cluster. Each of those is a service with its
//! own methods; the runtime wires them together and is what the engine calls: it routes a
//! request ([`Runtime::route`]), dispatches it ([`Runtime::dispatch`]), answers `initialize`,
//! routes notifications, opens listen streams, and keeps sessions (found, started and ended here
//! and, with a store, on every instance).

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::model::{ListenFilter, ServerFeatures};
use mcp_protocol::{Era, Notification, NotificationMethod, Params, Request, RequestId, Revision, RpcError};
use serde_json::Value;
use serde_json::value::RawValue;

use tokio_util::sync::CancellationToken;

use crate::background::Background;
use crate::catalog::{Catalog, Registry};
use crate::cluster::Cluster;
use crate::config::ServerConfig;
use crate::dispatch::lifecycle;
use crate::dispatch::parts::Parts;
use crate::dispatch::route::Routing;
use crate::elicitation::{ElicitationError, Elicitations};
use crate::exec::rounds::Rounds;
use crate::listen::{self, Holder, ListenError, Listener, Subscriptions};
use crate::reply::Reply;
use crate::session::store::{SessionStore, StartError};
use crate::session::{InFlight, Session};
use crate::store::{InMemoryTaskStore, SessionField, Store, StoreError, TaskOwner, TaskStore};
use crate::tasks::Tasks;

/// The protocol state of one server: registry, configuration, sessions, tasks, subscriptions.
#[derive(Debug)]
pub(crate) struct Runtime {
    config: ServerConfig,
    registry: Arc<Registry>,
    sessions: Arc<SessionStore>,
    /// This instance's part of a shared store (none: everything in this process).
    cluster: Option<Arc<Cluster>>,
    /// The server's `Implementation` serialized, as modern results carry it (`None`: not sent).
    server_info: Option<Box<RawValue>>,
    /// The revisions errors name (`config.advertise`, listed once).
    advertised: Vec<Revision>,
    rounds: Rounds,
    subscriptions: Arc<Subscriptions>,
    tasks: Arc<Tasks>,
    elicitations: Arc<Elicitations>,
    /// Cancelled when the runtime is dropped.
    dropped: CancellationToken,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}

impl Runtime {
    /// A runtime over a registry, with tasks kept in memory.
    pub(crate) fn new(config: ServerConfig, registry: Arc<Registry>) -> Self {
        Self::with_task_store(config, registry, Arc::new(InMemoryTaskStore::new()))
    }

    /// A runtime over a registry, with tasks kept in `store` (a durable or
    /// shared [`TaskStore`]; see its contract).
    pub(crate) fn with_task_store(config: ServerConfig, registry: Arc<Registry>, store: Arc<dyn TaskStore>) -> Self {
        Self::build(
            config,
            registry,
            store,
            Arc::new(crate::store::MemoryQueue::new()),
            None,
        )
    }

    /// A runtime whose legacy sessions, stream events, tasks and notifications are shared with
    /// every other runtime given the same `store` (instances of one server behind a load
    /// balancer). `Store::memory()` shares between runtimes of one process; a backend crate
    /// (`mcp-store-redis`) between processes.
    #[cfg(feature = "shared-store")]
    pub(crate) fn with_store(config: ServerConfig, registry: Arc<Registry>, store: Store) -> Self {
        let cluster = Cluster::new(store.clone(), &config);
        let runtime = Self::build(
            config,
            registry,
            store.tasks.clone(),
            store.queue.clone(),
            Some(cluster.clone()),
        );
        runtime.tasks.share(cluster);
        runtime
    }

    /// This instance's id among the instances sharing a store (`None` without a store).
    pub(crate) fn instance_id(&self) -> Option<&str> {
        self.cluster.as_deref().map(|c| &**c.instance())
    }

    /// The services this runtime runs beside the requests, for the engine's
    /// [`Driver`](crate::engine::Driver): the sweep of expired tasks and, with a shared store,
    /// the bus listener, the change forwarder, the appender and the heartbeat (the sweep then
    /// also fails the tasks of instances that are gone); and the extensions' services. The
    /// first call only; it subscribes to
    /// the bus before it returns, so nothing published after it is missed.
    pub(crate) fn services(self: &Arc<Self>) -> Vec<Background> {
        let mut services = match &self.cluster {
            Some(c) => c.start(&self.registry),
            None => Vec::new(),
        };
        services.extend(self.tasks.sweeper());
        #[cfg(feature = "shared-store")]
        services.extend(self.tasks.workers(self.worker_env()));
        services.extend(self.config.extensions.start_services());
        services
    }

    #[cfg(feature = "shared-store")]
    /// What this runtime's task workers are given: the catalog, the legacy sessions (found here
    /// or loaded from the store), and what every handler's context is given.
    fn worker_env(self: &Arc<Self>) -> crate::tasks::durable::WorkerEnv {
        let me = Arc::downgrade(self);
        crate::tasks::durable::WorkerEnv {
            registry: self.registry.clone(),
            find_session: Box::new(move |id, principal| {
                let me = me.clone();
                Box::pin(async move { me.upgrade()?.find_session(&id, &principal).await.ok().flatten() })
            }),
            advertised: self.config.advertise.revisions(),
            client_request_timeout: self.config.client_request_timeout,
            logging: self.config.logging,
            state: self.config.state.clone(),
            elicitations: self.elicitations.clone(),
        }
    }

    /// Cancelled when the runtime is dropped: its driver ends then.
    pub(crate) fn dropped(&self) -> CancellationToken {
        self.dropped.clone()
    }

    /// A receiver woken whenever messages between instances may have been lost (streams that follow a
    /// session's log re-read it); `None` without a store.
    pub(crate) fn bus_gaps(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.cluster.as_ref().map(|c| c.gaps())
    }

    /// Sends an application message to every other instance sharing the store (nothing
    /// without a store: a single process has no peers). Instances run the handlers registered
    /// with [`Runtime::on_broadcast`] for the topic, in the order each sender published. Use it
    /// to keep what is not shared equal everywhere, for example a tool added at run time: add
    /// it here and broadcast it, and let the handler add it on the other instances.
    pub(crate) fn broadcast(&self, topic: &str, payload: serde_json::Value) -> Result<(), StoreError> {
        match &self.cluster {
            Some(c) => c.broadcast(topic, payload),
            None => Ok(()),
        }
    }

    /// [`broadcast`](Runtime::broadcast), then waits (at most `wait`) until the bus has handed the
    /// message to every instance: a change replicated this way, then answered to the client, is
    /// found by the client's next request whichever instance serves it. `Err` when the store
    /// cannot take the message or the bus did not carry it in time; without a store, `Ok` at once.
    pub(crate) async fn broadcast_everywhere(
        &self,
        topic: &str,
        payload: serde_json::Value,
        wait: std::time::Duration,
    ) -> Result<(), StoreError> {
        match &self.cluster {
            Some(c) => c.broadcast_everywhere(topic, payload, wait).await,
            None => Ok(()),
        }
    }

    /// Runs `handler` for every message another instance [`broadcast`](Runtime::broadcast)s on
    /// `topic` (never for this instance's own; never without a store). It runs on the bus
    /// listener: keep it short and non-blocking (spawn for anything longer). Make the registry
    /// changes it applies through [`Registry::unannounced`]: the sender's own change is
    /// announced on every instance's streams already.
    pub(crate) fn on_broadcast(
        &self,
        topic: impl Into<String>,
        handler: impl Fn(&serde_json::Value) + Send + Sync + 'static,
    ) {
        if let Some(c) = &self.cluster {
            c.on_user(topic.into(), Arc::new(handler));
        }
    }

    /// This instance's part of the cluster, with a shared store.
    pub(crate) fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.cluster.as_ref()
    }

    /// The shared store, if any.
    pub(crate) fn store(&self) -> Option<&Store> {
        self.cluster.as_deref().map(Cluster::store)
    }

    /// Looks a legacy session up for a principal: this instance's sessions first, then (with a
    /// shared store) the store, whose record becomes a local replica. Unknown, expired and other
    /// principals' sessions all answer `Ok(None)`; a store failure is an error (the caller
    /// answers 503: the session may well exist).
    pub(crate) async fn find_session(&self, id: &str, principal: &str) -> Result<Option<Arc<Session>>, StoreError> {
        self.find_session_changing(id, principal, &[]).await
    }

    /// [`Runtime::find_session`] for a message that will make `changes` to the session: a
    /// replica loaded for it has them stored with its load, in one trip to the store rather
    /// than two (a session held here already is changed as usual, by the message).
    pub(crate) async fn find_session_changing(
        &self,
        id: &str,
        principal: &str,
        changes: &[SessionField],
    ) -> Result<Option<Arc<Session>>, StoreError> {
        if let Some(s) = self.sessions.get(id, principal) {
            if let Some(cluster) = &self.cluster
                && s.check_due(self.config.session_check_interval)
                && !self.still_stored(cluster, &s).await
            {
                return Ok(None);
            }
            return Ok(Some(s));
        }
        let Some(cluster) = &self.cluster else {
            return Ok(None);
        };
        if self.sessions.replica(id).is_some() {
            // Held here, but another principal's (or closed): absence.
            return Ok(None);
        }
        let Some(session) = cluster.load(id, principal, changes).await? else {
            return Ok(None);
        };
        cluster.attach(&session);
        self.sessions.insert(session.clone());
        // A concurrent load may have inserted first: keep whichever the store now holds.
        Ok(self.sessions.get(id, principal))
    }

    /// Whether the store still has the record of a session held here (its expiry pushed back as
    /// it is asked). A record the store lost (expired, deleted elsewhere, flushed) ends the
    /// session here too: what the store forgot is forgotten by every instance. A store that
    /// cannot answer leaves the copy serving; the outage is answered where the store is needed.
    async fn still_stored(&self, cluster: &Cluster, session: &Arc<Session>) -> bool {
        let id = session.id();
        match cluster.store().sessions.touch(id, cluster.session_ttl()).await {
            Ok(true) => true,
            Ok(false) => {
                tracing::info!(session = %id, "the store no longer has this session: ended here too");
                self.sessions.drop_replica(id);
                self.tasks.release_session(session.principal(), id).await;
                false
            }
            Err(e) => {
                tracing::debug!(session = %id, error = %e, "session not checked against the store");
                true
            }
        }
    }

    /// Stores a session `initialize` minted, within the session bounds (counted per instance;
    /// per client: its principal, or `remote` for an anonymous caller), and (with a shared
    /// store) writes its record before the caller answers.
    pub(crate) async fn start_session(
        &self,
        session: &Arc<Session>,
        remote: Option<std::net::IpAddr>,
    ) -> Result<(), StartError> {
        let config = &self.config;
        let client = crate::quota::ClientKey::of(session.principal(), remote);
        let elsewhere = self
            .cluster
            .as_ref()
            .map(|c| c.started_elsewhere(&client))
            .unwrap_or_default();
        let admitted = self.sessions.admit(
            session.clone(),
            client,
            config.max_sessions,
            config.max_sessions_per_principal,
            elsewhere,
        )?;
        if let Some(shed) = admitted.shed {
            self.end_shed(&shed).await;
        }
        if let Some(cluster) = &self.cluster {
            if let Err(e) = cluster.create(session).await {
                self.sessions.drop_replica(session.id());
                return Err(e.into());
            }
            cluster.attach(session);
        }
        Ok(())
    }

    /// Ends, wherever it is shared, a session the store shed for a newcomer (already closed and
    /// removed here): its record and replicas on the other instances, and its tasks. A store
    /// that cannot be reached leaves the record to expire; the newcomer is admitted either way.
    async fn end_shed(&self, shed: &Session) {
        // As for a DELETE: with a shared store, only a session that had tasks asks the task store.
        let tasks = match &self.cluster {
            None => true,
            Some(cluster) => match cluster.end(shed.id()).await {
                Ok(ended) => shed.has_tasks() || ended.is_some_and(|r| r.tasks),
                Err(e) => {
                    tracing::warn!(session = %shed.id(), error = %e, "a shed session's record not deleted: store unavailable");
                    shed.has_tasks()
                }
            },
        };
        if tasks {
            self.tasks.release_session(shed.principal(), shed.id()).await;
        }
    }

    /// Ends a principal's session (DELETE): here, and with a shared store on every instance
    /// (its record, its stream logs, every replica). `Ok(false)` when unknown or another
    /// principal's.
    pub(crate) async fn end_session(&self, id: &str, principal: &str) -> Result<bool, StoreError> {
        let Some(cluster) = &self.cluster else {
            let removed = self.sessions.remove(id, principal);
            if removed {
                self.tasks.release_session(principal, id).await;
            }
            return Ok(removed);
        };
        let Some(session) = self.find_session(id, principal).await? else {
            return Ok(false);
        };
        let ended = cluster.end(id).await?;
        self.sessions.remove(id, principal);
        // Only a session that had tasks asks the task store (one round trip saved per session).
        if session.has_tasks() || ended.as_ref().is_some_and(|r| r.tasks) {
            self.tasks.release_session(principal, id).await;
        }
        Ok(ended.is_some())
    }

    fn build(
        config: ServerConfig,
        registry: Arc<Registry>,
        store: Arc<dyn TaskStore>,
        queue: Arc<dyn crate::store::TaskQueue>,
        cluster: Option<Arc<Cluster>>,
    ) -> Self {
        let advertised = config.advertise.revisions();
        // A `Value` always serializes (its keys are strings).
        let server_info = config.send_server_info.then(|| {
            serde_json::value::to_raw_value(&config.server_info.render(None))
                .unwrap_or_else(|_| RawValue::NULL.to_owned())
        });
        let limits = listen::Limits {
            total: config.max_listeners,
            per_peer: config.max_listeners_per_peer,
            per_principal: config.max_listeners_per_principal,
        };
        let completion_info = config.send_server_info.then(|| config.server_info.render(None));
        let subscriptions = Arc::new(Subscriptions::new(limits, completion_info));
        let tasks = Tasks::new(&config, store, queue, subscriptions.clone());
        let elicitations = Arc::new(Elicitations::new(
            config.elicitation_ttl,
            config.max_elicitations_per_principal,
        ));
        let sessions = Arc::new(SessionStore::new());
        if let Some(c) = &cluster {
            c.bind(&sessions, &tasks, &elicitations);
        }
        Runtime {
            rounds: Rounds::of(&config),
            config,
            registry,
            sessions,
            cluster,
            server_info,
            advertised,
            subscriptions,
            tasks,
            elicitations,
            dropped: CancellationToken::new(),
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The registry.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Every scope an operation of this server can need (the methods', and the fixed scopes of
    /// the current catalog's items), once each, sorted: what a protected-resource metadata
    /// document lists in `scopes_supported`.
    pub(crate) fn scopes_supported(&self) -> Vec<String> {
        let mut all = self.registry.snapshot().scopes();
        all.extend(self.config.method_scopes.all().map(str::to_owned));
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The legacy sessions of network transports.
    pub(crate) fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// The store tasks are kept in.
    pub(crate) fn task_store(&self) -> &Arc<dyn TaskStore> {
        self.tasks.store()
    }

    /// Closes and removes the sessions idle for longer than `session_ttl`, and the
    /// 2025-11-25 tasks they own (nobody can reach them any more); returns how many sessions
    /// were removed. The HTTP transport runs it periodically.
    pub(crate) async fn sweep_sessions(&self) -> usize {
        let removed = self.sessions.sweep_out(self.config.session_ttl);
        for s in &removed {
            self.tasks.release_session(s.principal(), s.id()).await;
        }
        removed.len()
    }

    /// Removes the expired tasks now (this also happens every
    /// `task_sweep_interval` once a task exists); returns how many.
    pub(crate) async fn sweep_tasks(&self) -> usize {
        self.tasks.sweep().await
    }

    /// The drain of the tasks running here: see [`Engine::drain_tasks`](crate::Engine::drain_tasks).
    pub(crate) async fn drain_tasks(&self, grace: std::time::Duration) -> usize {
        // A server of one process: its tasks end with it (what recovery makes of them at the
        // next start depends on its task store).
        #[cfg(not(feature = "shared-store"))]
        return {
            let _ = grace;
            0
        };
        #[cfg(feature = "shared-store")]
        self.tasks.stop_claiming();
        #[cfg(feature = "shared-store")]
        {
            if tokio::time::timeout(grace, self.tasks.all_ended()).await.is_ok() {
                return 0;
            }
            self.tasks.hand_back().await
        }
    }

    /// The registered tool (`tools/call`) or prompt (`prompts/get`) named `name`, for a
    /// request's telemetry.
    pub(crate) fn target(&self, method: &mcp_protocol::Method, name: &str) -> Option<crate::observe::Target> {
        use crate::observe::Target;
        let catalog = self.registry.snapshot();
        match method {
            mcp_protocol::Method::ToolsCall => catalog.tool(name).cloned().map(|t| Target::Tool(t)),
            mcp_protocol::Method::PromptsGet => catalog.prompt(name).cloned().map(|p| Target::Prompt(p)),
            _ => None,
        }
    }

    /// What the server offers, from the registry and the configuration.
    pub(crate) fn features(&self) -> ServerFeatures {
        lifecycle::features(self.config.logging, &self.registry.snapshot())
    }

    /// The server capabilities for a revision.
    pub(crate) fn capabilities(&self, revision: Option<Revision>) -> Value {
        lifecycle::capabilities(&self.config, &self.registry.snapshot(), revision)
    }

    /// What the router uses of this runtime ([`route`](crate::dispatch::route::route)), with
    /// the registry's current catalog.
    pub(crate) fn routing(&self) -> Routing<'_> {
        Routing {
            advertised: &self.advertised,
            catalog: self.registry.snapshot(),
            visibility: self.config.visibility.as_ref(),
            extensions: &self.config.extensions,
            method_scopes: &self.config.method_scopes,
            logging: self.config.logging,
        }
    }

    /// What the dispatcher uses of this runtime ([`dispatch`](crate::dispatch::dispatch)), for
    /// one request served from `catalog`.
    pub(crate) fn parts(&self, catalog: Arc<Catalog>) -> Parts<'_> {
        Parts {
            config: &self.config,
            catalog,
            rounds: &self.rounds,
            tasks: &self.tasks,
            elicitations: &self.elicitations,
            server_info: self.server_info.as_deref(),
        }
    }

    /// Decorates a result a middleware layer answered in place, like the dispatcher's own.
    pub(crate) fn decorate(&self, method: &mcp_protocol::Method, era: Era, result: Value) -> Reply {
        let params = Params::default();
        crate::dispatch::finish::finish(
            &self.parts(self.registry.snapshot()),
            method,
            &params,
            era,
            Reply::Result(result),
        )
    }

    /// Answers a legacy `initialize`: validates the params, negotiates the
    /// version (echoed when served, else the newest legacy one) and returns
    /// the result with a new session bound to the caller (the engine hands it to the
    /// transport's session keeping).
    pub(crate) fn initialize(&self, req: &Request, auth: &AuthInfo) -> Result<(Value, Arc<Session>), RpcError> {
        lifecycle::initialize(&self.config, &self.registry.snapshot(), req, auth)
    }

    /// The change a client notification makes to its session's record, if any (the one
    /// [`Runtime::notification`] makes): a replica loaded for the notification stores it with
    /// its load.
    pub(crate) fn session_change(note: &Notification) -> Option<SessionField> {
        note.method.is_initialized().then_some(SessionField::Initialized)
    }

    /// Handles a client notification. `in_flight` is where the transport
    /// registered the requests a `notifications/cancelled` may name.
    pub(crate) fn notification(&self, note: &Notification, session: Option<&Arc<Session>>, in_flight: &InFlight) {
        if let Some(change) = Self::session_change(note) {
            if let (SessionField::Initialized, Some(s)) = (change, session) {
                s.mark_initialized();
            }
            return;
        }
        match &note.method {
            NotificationMethod::Cancelled => {
                let id = note
                    .params
                    .as_ref()
                    .and_then(|p| p.parse::<RequestId>("requestId"))
                    .and_then(Result::ok);
                if let Some(id) = id
                    && !in_flight.cancel(&id)
                    // A shared session's request may be in flight on another instance.
                    && !session.is_some_and(|s| s.is_shared() && s.cancel(&id))
                {
                    tracing::debug!(%id, "cancellation for a request not in flight");
                }
            }
            other => tracing::debug!(method = %other, "notification ignored"),
        }
    }

    /// Opens a `subscriptions/listen` subscription for a routed modern request, for a holder.
    /// Unknown filter keys are dropped, not refused; `taskIds` from a client that did not
    /// declare the tasks extension is -32021, and only the caller's own tasks are kept (others
    /// are dropped without saying whether they exist). The subscription counts against the server's total
    /// ([`ServerConfig::max_listeners`]), the holder's peer
    /// ([`ServerConfig::max_listeners_per_peer`]) and its principal
    /// ([`ServerConfig::max_listeners_per_principal`]), so that one client cannot lock the others
    /// out of subscriptions.
    pub(crate) async fn listen_as(
        &self,
        req: &Request,
        holder: &Holder,
        tasks_declared: bool,
    ) -> Result<Listener, ListenError> {
        let mut filter = ListenFilter::parse(
            req.params.as_ref().map(Params::object),
            &self.features(),
            tasks_declared,
            &self.config().subscription_bounds,
        )
        .map_err(ListenError::Refused)?;
        if !filter.task_ids.is_empty() {
            let owner = TaskOwner::Principal(holder.principal.to_string());
            let mut owned = std::collections::HashSet::new();
            for id in &filter.task_ids {
                if self.tasks.owns_anywhere(id, &owner).await {
                    owned.insert(id.clone());
                }
            }
            filter.retain_task_ids(|id| owned.contains(id));
        }
        self.subscriptions.open(&self.registry, &req.id, holder, filter)
    }

    /// Ends every open subscription (graceful shutdown): listeners see
    /// [`Listener::next`] return `None`.
    pub(crate) fn shutdown(&self) {
        self.subscriptions.shutdown();
    }

    /// Ends a 2025-11-25 URL-mode elicitation: sends
    /// `notifications/elicitation/complete {elicitationId}` to the session
    /// that elicited, and only to it. `principal` is the identity the server
    /// acts for; an unknown, expired, already completed or another
    /// principal's id is [`ElicitationError::NotFound`].
    ///
    /// With a shared store, any instance may be asked: an id this instance does not hold is
    /// completed by the instance that does (the one whose handler elicited), through the bus,
    /// and answered once it did; no answer within a second is [`ElicitationError::NotFound`].
    pub(crate) async fn complete_elicitation(
        &self,
        elicitation_id: &str,
        principal: &str,
    ) -> Result<(), ElicitationError> {
        match (self.elicitations.complete(elicitation_id, principal), &self.cluster) {
            (Err(ElicitationError::NotFound), Some(cluster)) => {
                if cluster.complete_elicitation(elicitation_id, principal).await {
                    Ok(())
                } else {
                    Err(ElicitationError::NotFound)
                }
            }
            (done, _) => done,
        }
    }

    /// How many URL-mode elicitations `principal` has pending (live ids).
    pub(crate) fn pending_elicitations(&self, principal: &str) -> usize {
        self.elicitations.live_for(principal)
    }
}
