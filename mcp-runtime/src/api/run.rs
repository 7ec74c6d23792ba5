//! [`Run`]: what one run of a handler counts and keeps (its input keys, its kept round state).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// What one run of a handler counts and keeps: the asks of each kind (their keys) and the
/// state to attach to the next input request. A fresh one per run (every [`Ctx`] the runtime
/// makes for a round); the handler's clones of its `Ctx` share it.
#[derive(Debug, Default)]
pub(crate) struct Run {
    elicit: AtomicUsize,
    sample: AtomicUsize,
    roots: AtomicUsize,
    kept: Mutex<Option<Value>>,
}

impl Run {
    /// The next counted key of a kind: `elicit-1`, `elicit-2`, …
    pub(crate) fn next_key(&self, kind: &str) -> String {
        let counter = match kind {
            "elicit" => &self.elicit,
            "sample" => &self.sample,
            _ => &self.roots,
        };
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{kind}-{n}")
    }

    /// The state [`Ctx::keep_round_state`] kept, if any.
    pub(crate) fn kept(&self) -> Option<Value> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn keep(&self, state: Value) {
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(state);
    }
}
