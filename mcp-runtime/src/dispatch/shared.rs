//! The runtime's session lifecycle over an optional shared [`Store`]: one set of calls for the
//! engine and the transports, whether sessions live in this process only or are shared by
//! several instances (see [`crate::cluster`]).

use std::sync::Arc;

use mcp_protocol::RpcError;

use super::Runtime;
use crate::catalog::Registry;
use crate::cluster::Cluster;
use crate::config::ServerConfig;
use crate::session::{Session, SessionLimit};
use crate::store::{Store, StoreError};

/// Why a session was not started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Over a session bound.
    #[error(transparent)]
    Limit(#[from] SessionLimit),
    /// The shared store failed: the session could not be shared.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runtime {
    /// A runtime whose legacy sessions, stream events, tasks and notifications are shared with
    /// every other runtime given the same `store` (instances of one server behind a load
    /// balancer). `Store::memory()` shares between runtimes of one process; a backend crate
    /// (`mcp-store-redis`) between processes.
    pub fn with_store(config: ServerConfig, registry: Arc<Registry>, store: Store) -> Self {
        let cluster = Cluster::new(store.clone(), config.session_ttl, config.max_stream_events);
        let runtime = Self::build(config, registry, store.tasks.clone(), Some(cluster.clone()));
        runtime.tasks().share(cluster);
        runtime
    }

    /// Whether state is shared with other instances through a store.
    pub fn is_shared(&self) -> bool {
        self.cluster.is_some()
    }

    /// This instance's id among the instances sharing a store (`None` without a store).
    pub fn instance_id(&self) -> Option<&str> {
        self.cluster.as_deref().map(|c| &**c.instance())
    }

    /// Starts what a shared store needs in the background (the bus listener, the heartbeat);
    /// the engine calls this on every message, so it is cheap after the first call. Needs a Tokio
    /// runtime.
    pub fn ensure_started(&self) {
        if let Some(c) = &self.cluster {
            c.ensure_started(&self.sessions, &self.registry, self.tasks());
            // The periodic sweep also fails the tasks of instances that are gone, whether or
            // not this instance ever ran a task.
            self.tasks().start_sweeper();
        }
    }

    /// A receiver woken whenever messages between instances may have been lost (GET streams
    /// re-read their logs); `None` without a store.
    pub fn bus_gaps(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.cluster.as_ref().map(|c| c.gaps())
    }

    /// Sends an application message to every other instance sharing the store (nothing
    /// without a store: a single process has no peers). Instances run the handlers registered
    /// with [`Runtime::on_broadcast`] for the topic, in the order each sender published. Use it
    /// to keep what is not shared equal everywhere, for example a tool added at run time: add
    /// it here and broadcast it, and let the handler add it on the other instances.
    pub fn broadcast(&self, topic: &str, payload: serde_json::Value) -> Result<(), StoreError> {
        match &self.cluster {
            Some(c) => c.publish(crate::cluster::Note::User {
                topic: topic.to_owned(),
                payload,
            }),
            None => Ok(()),
        }
    }

    /// Runs `handler` for every message another instance [`broadcast`](Runtime::broadcast)s on
    /// `topic` (never for this instance's own; never without a store). It runs on the bus
    /// listener: keep it short and non-blocking (spawn for anything longer). Make the registry
    /// changes it applies through [`Registry::unannounced`]: the sender's own change is
    /// announced on every instance's streams already.
    pub fn on_broadcast(&self, topic: impl Into<String>, handler: impl Fn(&serde_json::Value) + Send + Sync + 'static) {
        if let Some(c) = &self.cluster {
            c.on_user(topic.into(), Arc::new(handler));
        }
    }

    /// The shared store, if any.
    pub fn store(&self) -> Option<&Store> {
        self.cluster.as_deref().map(Cluster::store)
    }

    /// Looks a legacy session up for a principal: this instance's sessions first, then (with a
    /// shared store) the store, whose record becomes a local replica. Unknown, expired and other
    /// principals' sessions all answer `Ok(None)`; a store failure is an error (the caller
    /// answers 503: the session may well exist).
    pub async fn find_session(&self, id: &str, principal: &str) -> Result<Option<Arc<Session>>, StoreError> {
        if let Some(s) = self.sessions.get(id, principal) {
            return Ok(Some(s));
        }
        let Some(cluster) = &self.cluster else {
            return Ok(None);
        };
        if self.sessions.replica(id).is_some() {
            // Held here, but another principal's (or closed): absence.
            return Ok(None);
        }
        let Some(session) = cluster.load(id, principal).await? else {
            return Ok(None);
        };
        session.attach(cluster.clone());
        self.sessions.insert(session.clone());
        // A concurrent load may have inserted first: keep whichever the store now holds.
        Ok(self.sessions.get(id, principal))
    }

    /// Stores a session `initialize` minted, within the session bounds (counted per instance),
    /// and (with a shared store) writes its record before the caller answers.
    pub async fn start_session(&self, session: &Arc<Session>) -> Result<(), StartError> {
        let config = &self.config;
        self.sessions
            .admit(session.clone(), config.max_sessions, config.max_sessions_per_principal)?;
        if let Some(cluster) = &self.cluster {
            if let Err(e) = cluster.create(session).await {
                self.sessions.drop_replica(session.id());
                return Err(e.into());
            }
            session.attach(cluster.clone());
        }
        Ok(())
    }

    /// Ends a principal's session (DELETE): here, and with a shared store on every instance
    /// (its record, its stream logs, every replica). `Ok(false)` when unknown or another
    /// principal's.
    pub async fn end_session(&self, id: &str, principal: &str) -> Result<bool, StoreError> {
        let Some(cluster) = &self.cluster else {
            return Ok(self.sessions.remove(id, principal));
        };
        if self.find_session(id, principal).await?.is_none() {
            return Ok(false);
        }
        let existed = cluster.end(id).await?;
        self.sessions.remove(id, principal);
        Ok(existed)
    }
}

/// The wire error of a store failure met while serving a request.
pub(crate) fn store_unavailable(e: &StoreError) -> RpcError {
    tracing::warn!(error = %e, "shared store unavailable");
    RpcError::store_unavailable()
}
