//! [`SessionStore`]: every legacy session of a server by id, bounded in total and per client
//! (a principal, or an anonymous caller's address: `crate::quota`); another principal's
//! lookup answers like an unknown id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;

use super::{Session, lock};
use crate::quota::ClientKey;
use crate::store::StoreError;

/// All legacy sessions of a server, by id, and how many each principal holds.
#[derive(Debug, Default)]
pub struct SessionStore {
    sessions: DashMap<Arc<str>, Arc<Session>>,
    /// Sessions per client; written only under this lock (lookups never take it).
    per_client: Mutex<Counts>,
}

/// How many sessions each client holds, and the client of each session counted apart from
/// its principal (an anonymous caller's address); and, apart from the replicas of sessions other
/// instances started, those started here (what this instance reports to the others).
#[derive(Debug, Default)]
struct Counts {
    held: HashMap<ClientKey, usize>,
    client_of: HashMap<Arc<str>, ClientKey>,
    started: HashMap<Arc<str>, ClientKey>,
    started_by: HashMap<ClientKey, usize>,
}

/// The sessions other instances started, as they last reported them: in all, and for the
/// client being admitted (`crate::cluster` keeps the reports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Elsewhere {
    /// Sessions started on the other instances.
    pub(crate) total: usize,
    /// Of those, the client's.
    pub(crate) client: usize,
}

#[cfg(feature = "shared-store")]
/// What this instance reports of the sessions it started: how many, and the clients holding
/// at least a given number of them (by their store key, `ClientKey`'s display).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StartedHere {
    pub(crate) total: usize,
    pub(crate) heavy: Vec<(String, usize)>,
}

/// Why a session was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionLimit {
    /// The store holds its most sessions.
    #[error("the session store is full")]
    Full,
    /// The session's client (its principal, or an anonymous caller's address) holds its most
    /// sessions.
    #[error("the client holds its most sessions")]
    PrincipalFull,
}

impl SessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Mints a new session id: `mcp_` and 32 hex digits from the OS CSPRNG.
    pub fn mint_id() -> Arc<str> {
        match crate::mint::random_id::<16>("mcp_") {
            Some(id) => Arc::from(id),
            // The OS generator failing is unrecoverable for a server that
            // must not hand out guessable ids.
            None => panic!("the operating system's random number generator failed"),
        }
    }

    /// Stores a session, with no bound (a replica of a session another instance started).
    pub fn insert(&self, session: Arc<Session>) {
        let client = ClientKey::Principal(session.principal().clone());
        let _ = self.hold(session, client, usize::MAX, usize::MAX, None);
    }

    #[cfg(feature = "shared-store")]
    /// The sessions started here: how many, and the clients holding at least `from` of them
    /// (the `most` largest).
    pub(crate) fn started_here(&self, from: usize, most: usize) -> StartedHere {
        let counts = lock(&self.per_client);
        let mut heavy: Vec<(String, usize)> = counts
            .started_by
            .iter()
            .filter(|(_, n)| **n >= from.max(1))
            .map(|(c, n)| (c.to_string(), *n))
            .collect();
        heavy.sort_unstable_by_key(|(_, n)| std::cmp::Reverse(*n));
        heavy.truncate(most);
        StartedHere {
            total: counts.started.len(),
            heavy,
        }
    }

    /// Stores a session if the store holds fewer than `max_total` and its client fewer than
    /// `max_per_client`; otherwise nothing is stored.
    /// Sessions other instances started count too (`elsewhere`, as they reported them): the
    /// bounds hold across the cluster, approximately (see `crate::cluster`).
    pub(crate) fn admit(
        &self,
        session: Arc<Session>,
        client: ClientKey,
        max_total: usize,
        max_per_client: usize,
        elsewhere: Elsewhere,
    ) -> Result<(), SessionLimit> {
        self.hold(session, client, max_total, max_per_client, Some(elsewhere))
    }

    /// Stores a session within the bounds; `started`: it was started here, and the sessions
    /// other instances started count against the bounds.
    fn hold(
        &self,
        session: Arc<Session>,
        client: ClientKey,
        max_total: usize,
        max_per_client: usize,
        started: Option<Elsewhere>,
    ) -> Result<(), SessionLimit> {
        let mut counts = lock(&self.per_client);
        let elsewhere = started.unwrap_or_default();
        if self.sessions.len() >= max_total || counts.started.len() + elsewhere.total >= max_total {
            return Err(SessionLimit::Full);
        }
        let started_by = counts.started_by.get(&client).copied().unwrap_or(0);
        let held = counts.held.get(&client).copied().unwrap_or(0);
        if held >= max_per_client || started_by + elsewhere.client >= max_per_client {
            return Err(SessionLimit::PrincipalFull);
        }
        *counts.held.entry(client.clone()).or_insert(0) += 1;
        if started.is_some() {
            *counts.started_by.entry(client.clone()).or_insert(0) += 1;
            counts.started.insert(session.id().clone(), client.clone());
        }
        if !matches!(&client, ClientKey::Principal(p) if p == session.principal()) {
            counts.client_of.insert(session.id().clone(), client);
        }
        session.touch();
        self.sessions.insert(session.id().clone(), session);
        Ok(())
    }

    /// Takes a removed session off its client's count, and closes it.
    fn release(&self, session: &Session) {
        let mut counts = lock(&self.per_client);
        let client = counts
            .client_of
            .remove(session.id())
            .unwrap_or_else(|| ClientKey::Principal(session.principal().clone()));
        if let Some(n) = counts.held.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                counts.held.remove(&client);
            }
        }
        if let Some(starter) = counts.started.remove(session.id())
            && let Some(n) = counts.started_by.get_mut(&starter)
        {
            *n -= 1;
            if *n == 0 {
                counts.started_by.remove(&starter);
            }
        }
        drop(counts);
        session.close();
    }

    /// Looks a session up for a principal: unknown, closed and other
    /// principals' sessions all answer `None`.
    pub fn get(&self, id: &str, principal: &str) -> Option<Arc<Session>> {
        let s = self.sessions.get(id)?.clone();
        if s.is_closed() || **s.principal() != *principal {
            return None;
        }
        s.touch();
        Some(s)
    }

    /// The local session (or replica) with this id, whoever owns it (for notes from other
    /// instances).
    pub(crate) fn replica(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.get(id).map(|s| s.clone())
    }

    /// Ends the local replica of a session deleted elsewhere.
    pub(crate) fn drop_replica(&self, id: &str) -> bool {
        match self.sessions.remove(id) {
            Some((_, s)) => {
                self.release(&s);
                true
            }
            None => false,
        }
    }

    /// Deletes a principal's session (closing it); `false` when unknown or
    /// another principal's.
    pub fn remove(&self, id: &str, principal: &str) -> bool {
        match self.sessions.remove_if(id, |_, s| **s.principal() == *principal) {
            Some((_, s)) => {
                self.release(&s);
                true
            }
            None => false,
        }
    }

    /// Closes and removes every session idle for longer than `ttl`; returns
    /// how many were removed.
    pub fn sweep(&self, ttl: Duration) -> usize {
        self.sweep_out(ttl).len()
    }

    /// [`sweep`](Self::sweep), returning the sessions removed (for what they leave behind).
    pub(crate) fn sweep_out(&self, ttl: Duration) -> Vec<Arc<Session>> {
        let expired: Vec<Arc<str>> = self
            .sessions
            .iter()
            .filter(|s| s.idle_for() > ttl || s.is_closed())
            .map(|s| s.key().clone())
            .collect();
        let mut removed = Vec::new();
        for id in expired {
            if let Some((_, s)) = self.sessions.remove(&id) {
                self.release(&s);
                removed.push(s);
            }
        }
        removed
    }

    /// Closes and removes every session.
    pub fn clear(&self) {
        let ids: Vec<Arc<str>> = self.sessions.iter().map(|s| s.key().clone()).collect();
        for id in ids {
            if let Some((_, s)) = self.sessions.remove(&id) {
                self.release(&s);
            }
        }
    }

    /// Number of live sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// A snapshot of the live sessions (for notification fan-out).
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.sessions.iter().map(|s| s.value().clone()).collect()
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::test_session;

    #[test]
    fn sessions_are_bounded_in_total_and_per_principal() {
        let store = SessionStore::new();
        let a1 = test_session("alice");
        assert_eq!(
            store.admit(
                a1.clone(),
                ClientKey::Principal("alice".into()),
                3,
                2,
                Elsewhere::default()
            ),
            Ok(())
        );
        assert_eq!(
            store.admit(
                test_session("alice"),
                ClientKey::Principal("alice".into()),
                3,
                2,
                Elsewhere::default()
            ),
            Ok(())
        );
        assert_eq!(
            store.admit(
                test_session("alice"),
                ClientKey::Principal("alice".into()),
                3,
                2,
                Elsewhere::default()
            ),
            Err(SessionLimit::PrincipalFull)
        );
        assert_eq!(
            store.admit(
                test_session("bob"),
                ClientKey::Principal("bob".into()),
                3,
                2,
                Elsewhere::default()
            ),
            Ok(())
        );
        assert_eq!(
            store.admit(
                test_session("carol"),
                ClientKey::Principal("carol".into()),
                3,
                2,
                Elsewhere::default()
            ),
            Err(SessionLimit::Full)
        );
        assert_eq!(store.len(), 3, "refusals store nothing");
        assert!(store.remove(a1.id(), "alice"));
        assert_eq!(
            store.admit(
                test_session("alice"),
                ClientKey::Principal("alice".into()),
                3,
                2,
                Elsewhere::default()
            ),
            Ok(()),
            "a removal frees both counts"
        );
        store.clear();
        assert_eq!(
            store.admit(
                test_session("alice"),
                ClientKey::Principal("alice".into()),
                3,
                2,
                Elsewhere::default()
            ),
            Ok(())
        );
    }

    #[test]
    fn ids_are_unguessable_shape() {
        let a = SessionStore::mint_id();
        let b = SessionStore::mint_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
    }

    #[test]
    fn ownership_answers_like_absence() {
        let store = SessionStore::new();
        let s = test_session("alice");
        store.insert(s.clone());
        assert!(store.get(s.id(), "alice").is_some());
        assert!(store.get(s.id(), "bob").is_none());
        assert!(store.get("mcp_nope", "alice").is_none());
        assert!(!store.remove(s.id(), "bob"));
        assert!(store.remove(s.id(), "alice"));
        assert!(store.get(s.id(), "alice").is_none());
        assert!(s.is_closed());
    }

    #[tokio::test(start_paused = true)]
    async fn sweep_removes_idle_sessions() {
        let store = SessionStore::new();
        let s = test_session("a");
        store.insert(s.clone());
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(store.sweep(Duration::from_secs(30)), 0);
        tokio::time::advance(Duration::from_secs(31)).await;
        assert_eq!(store.sweep(Duration::from_secs(30)), 1);
        assert!(s.is_closed());
        assert!(store.is_empty());
    }
}
