//! Starting an engine for a suite as a transport's owner would: [`Engine::start`], its driver
//! spawned on the test's Tokio runtime.

use std::future::IntoFuture;
use std::sync::Arc;

use mcp_runtime::{Engine, Registry, ServerConfig, Storage};

/// Starts an engine over `registry` keeping its state in `storage`, and spawns its driver on the
/// current Tokio runtime (outside one, the driver is dropped: nothing runs beside requests).
pub fn start(config: ServerConfig, registry: Arc<Registry>, storage: Storage) -> Engine {
    let (engine, driver) = Engine::start(config, registry, storage);
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::spawn(driver.into_future());
    }
    engine
}

/// Starts an engine that keeps everything in this process.
pub fn memory(config: ServerConfig, registry: Arc<Registry>) -> Engine {
    start(config, registry, Storage::Memory)
}
