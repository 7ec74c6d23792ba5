//! Whether an endpoint is ready for new clients ([`Readiness`]): not while a graceful shutdown
//! runs, nor while the engine's shared store cannot be reached. The store's answer is cached
//! ([`StoreCheck`]) so that frequent probes, from several balancers, cost it at most one round
//! trip a second.

use std::time::Duration;

use mcp_runtime::Store;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How long a store check's answer is reused.
const CHECK_TTL: Duration = Duration::from_secs(1);
/// How long a store check may take before the store counts as unreachable (a backend bounds
/// its own check more tightly: Redis, 800 ms).
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether an endpoint is ready for new clients: what its readiness probe answers
/// (see [`HttpConfig::probes`](crate::HttpConfig::probes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Readiness {
    /// Ready: `200 ok`.
    Ready,
    /// A graceful shutdown has begun: `503 draining`.
    Draining,
    /// The shared store does not answer its check: `503 store unreachable`.
    StoreUnreachable,
}

impl Readiness {
    /// Whether new clients may be sent here.
    pub fn is_ready(self) -> bool {
        self == Readiness::Ready
    }

    /// The probe's plain-text body: `ok`, `draining` or `store unreachable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Ready => "ok",
            Readiness::Draining => "draining",
            Readiness::StoreUnreachable => "store unreachable",
        }
    }
}

impl std::fmt::Display for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The last answer of the shared store's check, and when it was given.
#[derive(Debug, Default)]
pub(crate) struct StoreCheck {
    /// Held while a check runs: concurrent probes wait for its answer instead of asking again.
    last: Mutex<Option<(Instant, bool)>>,
}

impl StoreCheck {
    /// Whether `store` answers its check, asked again only when the last answer is older than
    /// [`CHECK_TTL`]. A change is logged (a warning when the store is lost, once).
    pub(crate) async fn reachable(&self, store: &Store) -> bool {
        let mut last = self.last.lock().await;
        if let Some((at, reachable)) = *last
            && at.elapsed() < CHECK_TTL
        {
            return reachable;
        }
        let reachable = match tokio::time::timeout(CHECK_TIMEOUT, store.check()).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                if last.is_none_or(|(_, was)| was) {
                    tracing::warn!(error = %e, "shared store unreachable: not ready");
                }
                false
            }
            Err(_) => {
                if last.is_none_or(|(_, was)| was) {
                    tracing::warn!(timeout = ?CHECK_TIMEOUT, "shared store check timed out: not ready");
                }
                false
            }
        };
        if reachable && last.is_some_and(|(_, was)| !was) {
            tracing::info!("shared store reachable again: ready");
        }
        *last = Some((Instant::now(), reachable));
        reachable
    }
}
