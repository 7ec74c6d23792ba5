//! Throttling of failed authentication attempts, so that a flood of wrong credentials costs
//! the client sending it, not everyone else.
//!
//! Failures are counted in three tables, each bounded in entries ([`ThrottleConfig::max_entries`],
//! the oldest evicted first) and keyed by a keyed hash (HMAC-SHA-256 under a per-process random
//! key), so that no user name is held in clear:
//!
//! - **per client address** ([`ThrottleConfig::per_address`]): every failure from the address,
//!   whatever the user name. IPv6 addresses count by their /64 prefix (what one host usually
//!   holds); an IPv4-mapped address counts as its IPv4 address;
//! - **per (address, user name)** ([`ThrottleConfig::per_address_user`]): guessing one user's
//!   password from one address. A success clears it, and marks the address as one the user
//!   signed in from ([`ThrottleConfig::trust_after_success`]);
//! - **per user name** ([`ThrottleConfig::per_user`]): guessing one user's password from many
//!   addresses. It only slows (short blocks), and never applies to an address the user signed in
//!   from lately, so an attacker cannot lock a user out of the address the user works from.
//!
//! Once a record reaches its limit, the next attempt it covers is refused at once, without any
//! password check, for a block that doubles with each further failure (`first_block`,
//! `2 × first_block`, … up to `max_block`). A refused attempt is not counted, so refusals do not
//! lengthen the block; after `forget_after` without a failure the record starts again from
//! zero. Unknown user names are counted like known ones, so a refusal never says whether a user
//! exists. An attempt is charged before its password is checked and refunded if it succeeds, so
//! that concurrent attempts cannot overrun a limit. Without a client address (a transport that
//! names none) only the per-user table applies.

use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::AuthSetupError;
use crate::bounded::BoundedMap;

/// One bound on failed attempts: how many are tolerated, then how long further attempts are
/// refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailureLimit {
    /// Failures tolerated before attempts are refused (at least 1).
    pub failures: u32,
    /// How long attempts are refused after the last tolerated failure; each further failure
    /// doubles it.
    pub first_block: Duration,
    /// The longest block.
    pub max_block: Duration,
    /// How long without a failure before the count starts again from zero.
    pub forget_after: Duration,
}

impl FailureLimit {
    /// A limit of `failures` (at least 1), then blocks from `first_block` doubling up to
    /// `max_block`, forgotten after `forget_after` without a failure.
    pub fn new(failures: u32, first_block: Duration, max_block: Duration, forget_after: Duration) -> Self {
        FailureLimit {
            failures: failures.max(1),
            first_block,
            max_block: max_block.max(first_block),
            forget_after,
        }
    }

    /// The block that follows the `failures`-th failure, if any.
    fn block(&self, failures: u32) -> Option<Duration> {
        let over = failures.checked_sub(self.failures)?;
        let doubled = self.first_block.saturating_mul(1u32 << over.min(30));
        Some(doubled.min(self.max_block))
    }
}

/// Which failed attempts are throttled, and how much memory the records may take.
///
/// The defaults:
///
/// | table | limit | blocks | forgotten after |
/// | --- | --- | --- | --- |
/// | per address | 20 failures | 1 s doubling to 5 min | 5 min |
/// | per (address, user) | 5 failures | 1 s doubling to 5 min | 5 min |
/// | per user | 100 failures | 1 s doubling to 30 s | 5 min |
///
/// with at most 4,096 records per table, and an address trusted for a user for 24 h after a
/// success.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThrottleConfig {
    /// Failures from one client address, whatever the user name (`None`: not counted).
    pub per_address: Option<FailureLimit>,
    /// Failures for one user name from one client address (`None`: not counted).
    pub per_address_user: Option<FailureLimit>,
    /// Failures for one user name from every address (`None`: not counted). Not applied to an
    /// address the user signed in from within [`ThrottleConfig::trust_after_success`].
    pub per_user: Option<FailureLimit>,
    /// How long a success from an address exempts that address from the user's per-user
    /// limit.
    pub trust_after_success: Duration,
    /// The most records each table holds (at least 1); past it the oldest is evicted.
    pub max_entries: usize,
}

/// The default bound on the records of each throttle table.
pub const DEFAULT_THROTTLE_ENTRIES: usize = 4_096;

impl Default for ThrottleConfig {
    fn default() -> Self {
        let minutes = |m: u64| Duration::from_secs(60 * m);
        let second = Duration::from_secs(1);
        ThrottleConfig {
            per_address: Some(FailureLimit::new(20, second, minutes(5), minutes(5))),
            per_address_user: Some(FailureLimit::new(5, second, minutes(5), minutes(5))),
            per_user: Some(FailureLimit::new(100, second, Duration::from_secs(30), minutes(5))),
            trust_after_success: Duration::from_secs(24 * 3600),
            max_entries: DEFAULT_THROTTLE_ENTRIES,
        }
    }
}

impl ThrottleConfig {
    /// No throttling at all (every attempt is checked; only the provider's other bounds apply).
    pub fn disabled() -> Self {
        ThrottleConfig {
            per_address: None,
            per_address_user: None,
            per_user: None,
            ..ThrottleConfig::default()
        }
    }

    /// Sets [`ThrottleConfig::per_address`].
    pub fn per_address(mut self, limit: Option<FailureLimit>) -> Self {
        self.per_address = limit;
        self
    }

    /// Sets [`ThrottleConfig::per_address_user`].
    pub fn per_address_user(mut self, limit: Option<FailureLimit>) -> Self {
        self.per_address_user = limit;
        self
    }

    /// Sets [`ThrottleConfig::per_user`].
    pub fn per_user(mut self, limit: Option<FailureLimit>) -> Self {
        self.per_user = limit;
        self
    }

    /// Sets [`ThrottleConfig::trust_after_success`].
    pub fn trust_after_success(mut self, trust: Duration) -> Self {
        self.trust_after_success = trust;
        self
    }

    /// Sets [`ThrottleConfig::max_entries`] (at least 1).
    pub fn max_entries(mut self, n: usize) -> Self {
        self.max_entries = n.max(1);
        self
    }
}

/// A record's key: the first half of an HMAC-SHA-256 under the throttle's key.
type Key = [u8; 16];

/// The failures counted for one key.
#[derive(Debug, Clone)]
struct Record {
    failures: u32,
    last: Instant,
    blocked_until: Option<Instant>,
    /// Per (address, user) only: the address is trusted for the user until then.
    trusted_until: Option<Instant>,
}

impl Record {
    fn new(now: Instant) -> Self {
        Record {
            failures: 0,
            last: now,
            blocked_until: None,
            trusted_until: None,
        }
    }

    /// How much longer attempts are refused, if they are.
    fn blocked(&self, now: Instant) -> Option<Duration> {
        self.blocked_until.filter(|u| *u > now).map(|u| u - now)
    }

    fn trusted(&self, now: Instant) -> bool {
        self.trusted_until.is_some_and(|u| u > now)
    }

    /// Starts the count again when the last failure is old enough and no block holds.
    fn refresh(&mut self, limit: &FailureLimit, now: Instant) {
        if self.blocked(now).is_none() && now.saturating_duration_since(self.last) >= limit.forget_after {
            self.failures = 0;
            self.blocked_until = None;
        }
    }

    /// Whether the record holds nothing worth keeping.
    fn stale(&self, limit: &FailureLimit, now: Instant) -> bool {
        let forgotten = self.failures == 0 || now.saturating_duration_since(self.last) >= limit.forget_after;
        forgotten && self.blocked(now).is_none() && !self.trusted(now)
    }

    /// Counts one failure; returns what to undo if the attempt succeeds.
    fn charge(&mut self, limit: &FailureLimit, now: Instant) -> Undo {
        let previous = self.blocked_until;
        self.failures = self.failures.saturating_add(1);
        self.last = now;
        let set = limit.block(self.failures).map(|b| later(now, b));
        if set.is_some() {
            self.blocked_until = set;
        }
        Undo { previous, set }
    }

    /// Takes back one failure charged by an attempt that succeeded.
    fn refund(&mut self, undo: Undo) {
        self.failures = self.failures.saturating_sub(1);
        if undo.set.is_some() && self.blocked_until == undo.set {
            self.blocked_until = undo.previous;
        }
    }
}

/// What charging a record changed.
#[derive(Debug, Clone, Copy)]
struct Undo {
    previous: Option<Instant>,
    set: Option<Instant>,
}

/// The three tables of records.
#[derive(Debug)]
struct Tables {
    address: BoundedMap<Key, Record>,
    pair: BoundedMap<Key, Record>,
    user: BoundedMap<Key, Record>,
}

/// The keys of one attempt's records.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    address: Option<Key>,
    pair: Option<Key>,
    user: Option<Key>,
}

/// An attempt charged to its records: refunded by [`Throttle::succeeded`], kept as a failure
/// otherwise (also when the request is dropped while its password is checked).
#[derive(Debug)]
pub(crate) struct Charged {
    address: Option<Undo>,
    user: Option<Undo>,
}

/// Counts failed attempts and refuses attempts over a limit.
pub(crate) struct Throttle {
    config: ThrottleConfig,
    secret: [u8; 32],
    tables: Mutex<Tables>,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttle")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// `now + d`, with `d` clamped to a century so that no configuration can overflow the clock.
fn later(now: Instant, d: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    now.checked_add(d.min(CENTURY)).unwrap_or(now)
}

/// The address as throttled (and as the basic provider shares its password checks): an IPv4
/// address, or the /64 prefix of an IPv6 one.
pub(crate) fn address_bytes(ip: IpAddr) -> [u8; 17] {
    let mut out = [0u8; 17];
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            out[0] = 4;
            out[1..5].copy_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out[0] = 6;
            out[1..9].copy_from_slice(&v6.octets()[..8]);
        }
    }
    out
}

impl Throttle {
    /// A throttle with a fresh random key.
    pub(crate) fn new(config: ThrottleConfig) -> Result<Self, AuthSetupError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|_| AuthSetupError::Random)?;
        let cap = config.max_entries;
        Ok(Throttle {
            config,
            secret,
            tables: Mutex::new(Tables {
                address: BoundedMap::new(cap),
                pair: BoundedMap::new(cap),
                user: BoundedMap::new(cap),
            }),
        })
    }

    fn key(&self, parts: &[&[u8]]) -> Key {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes keys of any length");
        for p in parts {
            mac.update(&(p.len() as u64).to_be_bytes());
            mac.update(p);
        }
        let full = mac.finalize().into_bytes();
        let mut key = [0u8; 16];
        key.copy_from_slice(&full[..16]);
        key
    }

    /// The records an attempt from `client` for `user` is counted in.
    pub(crate) fn attempt(&self, client: Option<IpAddr>, user: Option<&str>) -> Attempt {
        let address = client.map(address_bytes);
        let c = &self.config;
        Attempt {
            address: address
                .filter(|_| c.per_address.is_some())
                .map(|a| self.key(&[b"a", &a])),
            pair: match (address, user) {
                (Some(a), Some(u)) => Some(self.key(&[b"p", &a, u.as_bytes()])),
                _ => None,
            },
            user: user
                .filter(|_| c.per_user.is_some())
                .map(|u| self.key(&[b"u", u.as_bytes()])),
        }
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `Err(retry_after)` when one of the attempt's records refuses it now.
    pub(crate) fn check(&self, attempt: &Attempt, now: Instant) -> Result<(), Duration> {
        let mut t = self.tables();
        self.refusal(&mut t, attempt, now).map_or(Ok(()), Err)
    }

    /// The longest block among the attempt's records, if any holds.
    fn refusal(&self, t: &mut Tables, attempt: &Attempt, now: Instant) -> Option<Duration> {
        let c = &self.config;
        let mut longest: Option<Duration> = None;
        let mut trusted = false;
        let consider = |map: &mut BoundedMap<Key, Record>, key: Option<Key>, limit: Option<FailureLimit>| {
            let (Some(key), Some(limit)) = (key, limit) else {
                return None;
            };
            let record = map.get_mut(&key)?;
            record.refresh(&limit, now);
            Some(record.clone())
        };
        if let Some(r) = consider(&mut t.address, attempt.address, c.per_address) {
            longest = longest.max(r.blocked(now));
        }
        if let Some(key) = attempt.pair
            && let Some(r) = t.pair.get_mut(&key)
        {
            trusted = r.trusted(now);
            if let Some(limit) = c.per_address_user {
                r.refresh(&limit, now);
                longest = longest.max(r.blocked(now));
            }
        }
        if !trusted && let Some(r) = consider(&mut t.user, attempt.user, c.per_user) {
            longest = longest.max(r.blocked(now));
        }
        longest
    }

    /// Counts the attempt as a failure before its credentials are checked, unless one of its
    /// records refuses it now (`Err(retry_after)`, nothing counted).
    pub(crate) fn charge(&self, attempt: &Attempt, now: Instant) -> Result<Charged, Duration> {
        let mut t = self.tables();
        if let Some(wait) = self.refusal(&mut t, attempt, now) {
            return Err(wait);
        }
        let c = &self.config;
        let charge = |map: &mut BoundedMap<Key, Record>, key: Option<Key>, limit: Option<FailureLimit>| {
            let (key, limit) = (key?, limit?);
            let record = map.entry(key, || Record::new(now), |r| r.stale(&limit, now));
            Some(record.charge(&limit, now))
        };
        let address = charge(&mut t.address, attempt.address, c.per_address);
        // The pair's failures are only undone by a success, which clears them all.
        charge(&mut t.pair, attempt.pair, c.per_address_user);
        let user = charge(&mut t.user, attempt.user, c.per_user);
        Ok(Charged { address, user })
    }

    /// The attempt succeeded: its charge (if it was charged) is refunded, the (address, user)
    /// record cleared and the address trusted for the user.
    pub(crate) fn succeeded(&self, attempt: &Attempt, charged: Option<Charged>, now: Instant) {
        let mut t = self.tables();
        if let Some(charged) = charged {
            if let (Some(key), Some(undo)) = (attempt.address, charged.address)
                && let Some(r) = t.address.get_mut(&key)
            {
                r.refund(undo);
            }
            if let (Some(key), Some(undo)) = (attempt.user, charged.user)
                && let Some(r) = t.user.get_mut(&key)
            {
                r.refund(undo);
            }
        }
        if let Some(key) = attempt.pair {
            let limit = self.config.per_address_user;
            let record = t.pair.entry(
                key,
                || Record::new(now),
                |r| limit.map_or(!r.trusted(now), |l| r.stale(&l, now)),
            );
            record.failures = 0;
            record.blocked_until = None;
            record.trusted_until = Some(later(now, self.config.trust_after_success));
        }
    }
}

#[cfg(test)]
mod tests;
