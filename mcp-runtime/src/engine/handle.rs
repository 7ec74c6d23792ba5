//! The engine's handles: [`Engine`], the one door into a server's runtime, and [`WeakEngine`],
//! one that does not keep it alive.

use std::sync::{Arc, Weak};

use crate::runtime::Runtime;

/// The one door into a server's runtime (cheap to clone): its message pipeline, and what a
/// transport or an application asks of it beside messages. Started with [`Engine::start`].
#[derive(Debug, Clone)]
pub struct Engine {
    pub(super) runtime: Arc<Runtime>,
}

/// An [`Engine`] that does not keep its runtime alive: what a handler registered with the
/// engine's own catalog holds to reach the engine (a strong one would be a cycle, and the
/// runtime would never be dropped). [`Engine::downgrade`] makes one.
#[derive(Debug, Clone)]
pub struct WeakEngine {
    runtime: Weak<Runtime>,
}

impl WeakEngine {
    /// The engine, while anything else keeps it.
    pub fn upgrade(&self) -> Option<Engine> {
        self.runtime.upgrade().map(|runtime| Engine { runtime })
    }
}

impl Engine {
    /// A handle that does not keep this engine alive (see [`WeakEngine`]).
    pub fn downgrade(&self) -> WeakEngine {
        WeakEngine {
            runtime: Arc::downgrade(&self.runtime),
        }
    }
}
