//! URL-mode elicitation records (2025-11-25).
//!
//! When a handler of a 2025-11-25 session elicits in URL mode, the runtime
//! gives the request an unguessable `elicitationId` (16 bytes from the OS
//! CSPRNG) and records it, owned by the caller's principal and bound to the
//! session that asked. When the out-of-band interaction is over, the server
//! calls [`Engine::complete_elicitation`](crate::Engine::complete_elicitation) with the id and the principal it
//! acts for: `notifications/elicitation/complete` then goes to the initiating
//! session only. An unknown, expired, completed or another principal's id
//! answers [`ElicitationError::NotFound`], the same for all (behaviour
//! invariant 4: ownership answers like absence).
//!
//! Records live `elicitation_ttl` (default 15 min); one principal holds at
//! most `max_elicitations_per_principal` live ones (default 20), and over it
//! the URL-mode elicitation is refused. A record whose session ended is dead
//! (its rows are dropped with the session) and counts for nothing. A record
//! is forgotten as soon as its request fails or the user does not accept.
//! The 2026-07-28 era has no elicitation ids.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use mcp_protocol::jsonrpc::encode_notification;
use serde_json::json;
use tokio::time::Instant;

use crate::session::Session;

/// Why a URL-mode elicitation id could not be made or completed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitationError {
    /// The id is unknown, expired, already completed, its session ended, or
    /// another principal owns it.
    #[error("URL elicitation not found")]
    NotFound,
    /// The principal already holds the most live URL-mode elicitations.
    #[error("too many pending URL elicitations")]
    TooMany,
    /// Elicitation ids exist only in a 2025-11-25 session.
    #[error("URL elicitation ids need a 2025-11-25 session")]
    NotInSession,
    /// The operating system's random number generator failed.
    #[error("the operating system's random number generator failed")]
    Random,
    /// A chosen id that is empty, longer than 128 bytes, or not printable ASCII.
    #[error("a URL elicitation id is 1 to 128 printable ASCII characters")]
    InvalidId,
    /// A chosen id that a live URL elicitation already has.
    #[error("the URL elicitation id is already in use")]
    IdTaken,
}

/// The longest URL elicitation id a handler may choose, in bytes.
pub(crate) const MAX_CHOSEN_ID_BYTES: usize = 128;

#[derive(Debug)]
struct Record {
    principal: Arc<str>,
    session: Weak<Session>,
    expires: Instant,
}

impl Record {
    /// The session the record still points at, if it is alive.
    fn session(&self, now: Instant) -> Option<Arc<Session>> {
        if now >= self.expires {
            return None;
        }
        self.session.upgrade().filter(|s| !s.is_closed())
    }
}

/// The URL-mode elicitation records of one runtime.
#[derive(Debug)]
pub(crate) struct Elicitations {
    records: Mutex<HashMap<Arc<str>, Record>>,
    ttl: Duration,
    max_per_principal: usize,
}

impl Elicitations {
    pub(crate) fn new(ttl: Duration, max_per_principal: usize) -> Self {
        Elicitations {
            records: Mutex::new(HashMap::new()),
            ttl,
            max_per_principal,
        }
    }

    fn records(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Record>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a fresh id owned by `principal` for `session`: refused over
    /// the per-principal bound (dead records are dropped first).
    pub(crate) fn register(&self, principal: &Arc<str>, session: &Arc<Session>) -> Result<Arc<str>, ElicitationError> {
        self.register_as(principal, session, None)
    }

    /// [`register`](Self::register) under `chosen` when given (1 to [`MAX_CHOSEN_ID_BYTES`]
    /// printable ASCII characters, not the id of a live elicitation), else a fresh id.
    pub(crate) fn register_as(
        &self,
        principal: &Arc<str>,
        session: &Arc<Session>,
        chosen: Option<&str>,
    ) -> Result<Arc<str>, ElicitationError> {
        if let Some(id) = chosen
            && (id.is_empty() || id.len() > MAX_CHOSEN_ID_BYTES || !id.bytes().all(|b| b.is_ascii_graphic()))
        {
            return Err(ElicitationError::InvalidId);
        }
        let now = Instant::now();
        let mut records = self.records();
        records.retain(|_, r| r.session(now).is_some());
        let live = records.values().filter(|r| r.principal == *principal).count();
        if live >= self.max_per_principal {
            tracing::warn!(principal = %principal, live, "URL elicitation refused: too many pending");
            return Err(ElicitationError::TooMany);
        }
        let id = match chosen {
            Some(id) if records.contains_key(id) => return Err(ElicitationError::IdTaken),
            Some(id) => Arc::from(id),
            None => mint_id().ok_or(ElicitationError::Random)?,
        };
        records.insert(
            id.clone(),
            Record {
                principal: principal.clone(),
                session: Arc::downgrade(session),
                expires: now + self.ttl,
            },
        );
        Ok(id)
    }

    /// Whether `id` is live, owned by `principal` and bound to `session`.
    pub(crate) fn owns(&self, id: &str, principal: &str, session: &Session) -> bool {
        let now = Instant::now();
        self.records()
            .get(id)
            .is_some_and(|r| *r.principal == *principal && r.session(now).is_some_and(|s| s.id() == session.id()))
    }

    /// Drops a record (its request failed, or the user did not accept).
    pub(crate) fn forget(&self, id: &str) {
        self.records().remove(id);
    }

    /// Completes `id` for `principal`: the record is removed and
    /// `notifications/elicitation/complete` goes to its session only.
    pub(crate) fn complete(&self, id: &str, principal: &str) -> Result<(), ElicitationError> {
        let now = Instant::now();
        let session = {
            let mut records = self.records();
            let owned = records
                .get(id)
                .is_some_and(|r| *r.principal == *principal && r.session(now).is_some());
            if !owned {
                return Err(ElicitationError::NotFound);
            }
            let record = records.remove(id).ok_or(ElicitationError::NotFound)?;
            record.session(now).ok_or(ElicitationError::NotFound)?
        };
        let frame = encode_notification(
            "notifications/elicitation/complete",
            Some(&json!({ "elicitationId": id })),
        );
        if !session.notify(frame) {
            tracing::debug!(session = %session.id(), "elicitation completion not delivered: no stream took it");
        }
        Ok(())
    }

    /// How many live records `principal` holds.
    pub(crate) fn live_for(&self, principal: &str) -> usize {
        let now = Instant::now();
        self.records()
            .values()
            .filter(|r| *r.principal == *principal && r.session(now).is_some())
            .count()
    }
}

/// A fresh id: `el_` and 32 hex digits from the OS CSPRNG.
fn mint_id() -> Option<Arc<str>> {
    crate::mint::random_id::<16>("el_").map(Arc::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::test_session;
    use serde_json::Value;

    fn capture(s: &Session) -> Arc<Mutex<Vec<Value>>> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        s.set_outlet(move |f| {
            sink.lock().unwrap().push(serde_json::from_slice(&f).unwrap());
            true
        });
        seen
    }

    #[test]
    fn completion_reaches_the_initiating_session_only() {
        let table = Elicitations::new(Duration::from_secs(60), 20);
        let alice: Arc<str> = Arc::from("alice");
        let (a1, a2) = (test_session("alice"), test_session("alice"));
        let (seen1, seen2) = (capture(&a1), capture(&a2));
        let id = table.register(&alice, &a1).unwrap();
        assert!(id.starts_with("el_") && id.len() == 35);
        assert!(table.owns(&id, "alice", &a1));
        assert!(!table.owns(&id, "alice", &a2));
        assert!(!table.owns(&id, "bob", &a1));
        assert_eq!(table.complete(&id, "bob"), Err(ElicitationError::NotFound));
        assert_eq!(table.complete(&id, "alice"), Ok(()));
        assert_eq!(table.complete(&id, "alice"), Err(ElicitationError::NotFound), "once");
        let got = seen1.lock().unwrap().clone();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["method"], "notifications/elicitation/complete");
        assert_eq!(got[0]["params"]["elicitationId"], &*id);
        assert!(seen2.lock().unwrap().is_empty());
    }

    #[test]
    fn bounded_per_principal_and_dead_sessions_free_their_slots() {
        let table = Elicitations::new(Duration::from_secs(60), 2);
        let alice: Arc<str> = Arc::from("alice");
        let s = test_session("alice");
        table.register(&alice, &s).unwrap();
        let second = table.register(&alice, &s).unwrap();
        assert_eq!(table.register(&alice, &s), Err(ElicitationError::TooMany));
        assert!(
            table.register(&Arc::from("bob"), &test_session("bob")).is_ok(),
            "per principal"
        );
        table.forget(&second);
        let third = table.register(&alice, &s).unwrap();
        s.close();
        assert_eq!(table.live_for("alice"), 0);
        assert_eq!(table.complete(&third, "alice"), Err(ElicitationError::NotFound));
        assert!(table.register(&alice, &test_session("alice")).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn ids_expire() {
        let table = Elicitations::new(Duration::from_secs(900), 20);
        let s = test_session("alice");
        let id = table.register(&Arc::from("alice"), &s).unwrap();
        tokio::time::advance(Duration::from_secs(899)).await;
        assert_eq!(table.live_for("alice"), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(table.complete(&id, "alice"), Err(ElicitationError::NotFound));
    }
}
