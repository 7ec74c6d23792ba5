//! Requests in flight, by id: cancellation (`notifications/cancelled`, a
//! closed stream, a deleted session) and the duplicate-id check.

use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::RequestId;
use tokio_util::sync::CancellationToken;

use crate::fast_map::FastMap;

/// A set of requests in flight, each with its cancellation token.
#[derive(Debug, Default, Clone)]
pub struct InFlight {
    map: Arc<Mutex<FastMap<RequestId, CancellationToken>>>,
}

/// The id is already in flight.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("request id {0} is already in flight")]
pub struct DuplicateId(pub RequestId);

impl InFlight {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FastMap<RequestId, CancellationToken>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request; the guard removes it when dropped.
    pub fn begin(&self, id: RequestId, token: CancellationToken) -> Result<InFlightGuard, DuplicateId> {
        match self.lock().entry(id.clone()) {
            Entry::Occupied(_) => return Err(DuplicateId(id)),
            Entry::Vacant(slot) => {
                slot.insert(token.clone());
            }
        }
        Ok(InFlightGuard {
            set: self.clone(),
            id,
            token,
        })
    }

    /// Cancels a request; `false` if it is not in flight.
    pub fn cancel(&self, id: &RequestId) -> bool {
        match self.lock().get(id) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels every request.
    pub fn cancel_all(&self) {
        for t in self.lock().values() {
            t.cancel();
        }
    }

    /// How many requests are in flight.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Keeps a request registered while it runs.
#[derive(Debug)]
pub struct InFlightGuard {
    set: InFlight,
    id: RequestId,
    token: CancellationToken,
}

impl InFlightGuard {
    /// The request's cancellation token.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.set.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_and_cancel() {
        let f = InFlight::new();
        let t = CancellationToken::new();
        let g = f.begin(1.into(), t.clone()).unwrap();
        assert_eq!(
            f.begin(1.into(), CancellationToken::new()).unwrap_err(),
            DuplicateId(1.into())
        );
        assert!(f.cancel(&1.into()));
        assert!(t.is_cancelled());
        drop(g);
        assert!(f.is_empty());
        assert!(!f.cancel(&1.into()));
        assert!(f.begin(1.into(), CancellationToken::new()).is_ok());
    }
}
