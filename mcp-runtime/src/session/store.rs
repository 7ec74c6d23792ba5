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

/// What [`SessionStore::admit`] did to make room.
#[derive(Debug, Default)]
#[must_use = "a shed session must be ended where it is shared"]
pub(crate) struct Admitted {
    /// The session shed for the newcomer (closed and removed here), if the store was full.
    pub(crate) shed: Option<Arc<Session>>,
}

/// Takes a session off its client's counts.
fn uncount(counts: &mut Counts, session: &Session) {
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
        let _unbounded = self.hold(session, client, usize::MAX, usize::MAX, None);
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

    /// Stores a session if its client holds fewer than `max_per_client` and the store fewer
    /// than `max_total`. A full store sheds for a newcomer: the client holding the most
    /// sessions started here gives up its longest-idle one, when it holds at least two more than
    /// the newcomer, so that no set of clients at their caps locks the others out
    /// ([`Admitted::shed`]: the caller ends it where it is shared). Otherwise nothing is stored.
    /// Sessions other instances started count too (`elsewhere`, as they reported them): the
    /// bounds hold across the cluster, approximately (see `crate::cluster`).
    pub(crate) fn admit(
        &self,
        session: Arc<Session>,
        client: ClientKey,
        max_total: usize,
        max_per_client: usize,
        elsewhere: Elsewhere,
    ) -> Result<Admitted, SessionLimit> {
        self.hold(session, client, max_total, max_per_client, Some(elsewhere))
    }

    /// Stores a session within the bounds; `started`: it was started here, and the sessions
    /// other instances started count against the bounds (and a full store may shed).
    fn hold(
        &self,
        session: Arc<Session>,
        client: ClientKey,
        max_total: usize,
        max_per_client: usize,
        started: Option<Elsewhere>,
    ) -> Result<Admitted, SessionLimit> {
        let mut counts = lock(&self.per_client);
        let elsewhere = started.unwrap_or_default();
        let started_by = counts.started_by.get(&client).copied().unwrap_or(0);
        let held = counts.held.get(&client).copied().unwrap_or(0);
        if held >= max_per_client || started_by + elsewhere.client >= max_per_client {
            return Err(SessionLimit::PrincipalFull);
        }
        let mut shed = None;
        if self.sessions.len() >= max_total || counts.started.len() + elsewhere.total >= max_total {
            let victim = started
                .and_then(|_| self.heaviest_idle(&counts, started_by + elsewhere.client))
                .ok_or(SessionLimit::Full)?;
            if let Some((_, s)) = self.sessions.remove(victim.id()) {
                uncount(&mut counts, &s);
            }
            shed = Some(victim);
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
        drop(counts);
        if let Some(s) = &shed {
            tracing::info!(
                session = %s.id(),
                "session shed for a newcomer: the store is full and its client holds the most"
            );
            s.close();
        }
        Ok(Admitted { shed })
    }

    /// The longest-idle session started here by the client holding the most of them, when that
    /// client holds at least two more than `newcomer` (so that, once the newcomer is in, it
    /// holds no more than the shedder: a full store is shared out, never ping-ponged).
    fn heaviest_idle(&self, counts: &Counts, newcomer: usize) -> Option<Arc<Session>> {
        let (heaviest, n) = counts.started_by.iter().max_by_key(|(_, n)| **n)?;
        if *n < newcomer + 2 {
            return None;
        }
        counts
            .started
            .iter()
            .filter(|(_, c)| *c == heaviest)
            .filter_map(|(id, _)| self.sessions.get(id).map(|s| s.clone()))
            .max_by_key(|s| s.idle_for())
    }

    /// Takes a removed session off its client's count, and closes it.
    fn release(&self, session: &Session) {
        uncount(&mut lock(&self.per_client), session);
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

    fn alice() -> ClientKey {
        ClientKey::Principal("alice".into())
    }

    /// Admits a session of `who` within 3 in all and 2 per client; `Ok(shed)`.
    fn admit(store: &SessionStore, who: &str) -> Result<Option<Arc<Session>>, SessionLimit> {
        let client = ClientKey::Principal(who.into());
        store
            .admit(test_session(who), client, 3, 2, Elsewhere::default())
            .map(|a| a.shed)
    }

    #[test]
    fn sessions_are_bounded_in_total_and_per_principal() {
        let store = SessionStore::new();
        let a1 = test_session("alice");
        assert!(store.admit(a1.clone(), alice(), 3, 2, Elsewhere::default()).is_ok());
        assert!(admit(&store, "alice").expect("second").is_none());
        assert_eq!(admit(&store, "alice").unwrap_err(), SessionLimit::PrincipalFull);
        assert!(admit(&store, "bob").expect("bob").is_none());
        assert_eq!(store.len(), 3, "refusals store nothing");
        assert!(store.remove(a1.id(), "alice"));
        assert!(
            admit(&store, "alice").expect("a removal frees both counts").is_none(),
            "room was made by the removal, not by shedding"
        );
        let shed = admit(&store, "carol")
            .expect("a newcomer to a full store")
            .expect("shed");
        assert_eq!(**shed.principal(), *"alice", "alice holds two more than carol");
        assert_eq!(store.len(), 3);
        assert_eq!(
            admit(&store, "dave").unwrap_err(),
            SessionLimit::Full,
            "every client holds one"
        );
        store.clear();
        assert!(admit(&store, "alice").is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_store_sheds_the_heaviest_clients_longest_idle_session() {
        let store = SessionStore::new();
        let first = test_session("alice");
        assert!(store.admit(first.clone(), alice(), 3, 3, Elsewhere::default()).is_ok());
        tokio::time::advance(Duration::from_secs(5)).await;
        let second = test_session("alice");
        assert!(store.admit(second.clone(), alice(), 3, 3, Elsewhere::default()).is_ok());
        tokio::time::advance(Duration::from_secs(1)).await;
        let third = test_session("alice");
        assert!(store.admit(third.clone(), alice(), 3, 3, Elsewhere::default()).is_ok());
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(store.get(first.id(), "alice").is_some(), "the first is active again");
        // One client filled the store: a newcomer gets in, and the client's longest-idle session
        // (the second, not the first it just used) makes room.
        let bob = ClientKey::Principal("bob".into());
        let shed = store
            .admit(test_session("bob"), bob.clone(), 3, 3, Elsewhere::default())
            .expect("the newcomer is admitted")
            .shed
            .expect("a session shed");
        assert_eq!(shed.id(), second.id());
        assert!(second.is_closed() && store.get(second.id(), "alice").is_none());
        assert_eq!(store.len(), 3);
        // Alice (2) holds two more than Carol (0): Carol gets in too, and then every client
        // holds one: a newcomer, or Bob's second session, is refused.
        let carol = ClientKey::Principal("carol".into());
        let admitted = store.admit(test_session("carol"), carol, 3, 3, Elsewhere::default());
        let shed = admitted.expect("carol").shed.expect("shed");
        assert_eq!(shed.id(), third.id(), "alice's longest-idle one left");
        let dave = ClientKey::Principal("dave".into());
        let refused = store.admit(test_session("dave"), dave, 3, 3, Elsewhere::default());
        assert_eq!(refused.unwrap_err(), SessionLimit::Full);
        let refused = store.admit(test_session("bob"), bob, 3, 3, Elsewhere::default());
        assert_eq!(refused.unwrap_err(), SessionLimit::Full);
        // Replicas of other instances' sessions are never shed: they were not started here.
        let replicas = SessionStore::new();
        replicas.insert(test_session("alice"));
        let refused = replicas.admit(
            test_session("bob"),
            ClientKey::Principal("bob".into()),
            1,
            3,
            Elsewhere::default(),
        );
        assert_eq!(refused.unwrap_err(), SessionLimit::Full);
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
