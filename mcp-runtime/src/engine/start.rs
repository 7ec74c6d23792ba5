//! Starting an engine: where it keeps what outlives a message ([`Storage`]), and the
//! [`Driver`] that runs its services beside the requests.
//!
//! An engine is started once, with [`Engine::start`], which hands back the engine (cheap to
//! clone, one per transport or connection) and its driver: one future to spawn once, before
//! serving or at the same time. Nothing starts lazily on a message: a server sweeps expired
//! tasks and, with a shared store, listens to the bus, beats its heartbeat and fails the tasks
//! of dead instances from the moment its driver runs, whether or not a request ever arrives. Dropping the driver's
//! task stops those services; the driver ends by itself when the last engine is dropped.

use std::future::IntoFuture;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::background::{self, Background};
use crate::catalog::Registry;
use crate::config::ServerConfig;
use crate::engine::handle::Engine;
use crate::runtime::Runtime;
#[cfg(feature = "shared-store")]
use crate::store::Store;
use crate::store::TaskStore;

/// Where an engine keeps tasks, sessions and stream events.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Storage {
    /// Everything in this process (tasks in an `InMemoryTaskStore`).
    #[default]
    Memory,
    /// Tasks in a store of their own (durable, or shared with other processes); sessions and
    /// events in this process.
    Tasks(Arc<dyn TaskStore>),
    /// Sessions, stream events, tasks and notifications shared with every engine given the same
    /// store (instances of one server behind a load balancer). `Store::memory()` shares
    /// between engines of one process; a backend crate (`mcp-store-redis`) between processes.
    #[cfg(feature = "shared-store")]
    Shared(Store),
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Storage::Memory => "Memory",
            Storage::Tasks(_) => "Tasks",
            #[cfg(feature = "shared-store")]
            Storage::Shared(_) => "Shared",
        })
    }
}

#[cfg(feature = "shared-store")]
impl From<Store> for Storage {
    fn from(store: Store) -> Self {
        Storage::Shared(store)
    }
}

impl From<Arc<dyn TaskStore>> for Storage {
    fn from(store: Arc<dyn TaskStore>) -> Self {
        Storage::Tasks(store)
    }
}

/// The services of a started engine, as one future: spawn it once (`tokio::spawn(driver.into_future())`, or
/// `.await` it in a task of your own). It runs what the engine needs beside the requests (the
/// sweep of expired tasks; with a shared store, the bus listener, the change forwarder, the
/// heartbeat and the sweep of dead instances' tasks; the extensions' services) and ends when the last [`Engine`] of its
/// runtime is dropped; dropping it stops them. The bus is subscribed to as the engine starts,
/// so nothing another instance publishes after [`Engine::start`] is missed, however late the
/// driver is spawned.
#[must_use = "a driver does nothing unless spawned or awaited"]
pub struct Driver {
    services: Vec<Background>,
    dropped: CancellationToken,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("services", &self.services.len())
            .finish_non_exhaustive()
    }
}

impl IntoFuture for Driver {
    type Output = ();
    type IntoFuture = Background;

    fn into_future(self) -> Background {
        background::boxed(async move {
            let mut running = JoinSet::new();
            for service in self.services {
                running.spawn(service);
            }
            tokio::select! {
                _ = self.dropped.cancelled() => {}
                _ = async { while running.join_next().await.is_some() {} } => {}
            }
        })
    }
}

impl Engine {
    /// Starts an engine over `registry`, configured by `config`, keeping its state in
    /// `storage`: the engine every transport of this server is given, and the [`Driver`] to
    /// spawn once. Needs no Tokio runtime (the driver does).
    pub fn start(config: ServerConfig, registry: Arc<Registry>, storage: Storage) -> (Engine, Driver) {
        let runtime = Arc::new(match storage {
            Storage::Memory => Runtime::new(config, registry),
            Storage::Tasks(tasks) => Runtime::with_task_store(config, registry, tasks),
            #[cfg(feature = "shared-store")]
            Storage::Shared(store) => Runtime::with_store(config, registry, store),
        });
        let driver = Driver {
            services: runtime.services(),
            dropped: runtime.dropped(),
        };
        (Engine { runtime }, driver)
    }
}
