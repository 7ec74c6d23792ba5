//! The password checks in flight: a bound for the whole provider, waited for in arrival order,
//! and a share per client address.
//!
//! PBKDF2 costs milliseconds of CPU per attempt by design, so the checks running at once are
//! bounded ([`BasicAuthBuilder::max_concurrent_hashes`](super::BasicAuthBuilder::max_concurrent_hashes)).
//! A bound shared by every client must not be one client's to fill: an attempt first takes a
//! place in its address's share
//! ([`max_hashes_per_address`](super::BasicAuthBuilder::max_hashes_per_address), its checks
//! running or waiting), and over that share is refused at once with 429 (that address's own
//! excess). Only then does it wait for a place under the bound, in arrival order (tokio's
//! semaphore is fair), for at most
//! [`hash_wait`](super::BasicAuthBuilder::hash_wait); past that it is refused with 503. So
//! one address's flood holds at most its share of the places and of the queue, and another
//! client's attempt waits behind at most that many checks instead of being refused.
//!
//! Addresses are compared as the throttle compares them: an IPv4 address, or an IPv6 one by its
//! `/64`. An attempt whose address the transport did not name has no share (only the bound
//! applies).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::throttle::address_bytes;

/// A client address as the shares count it: the throttle's form (an IPv6 one by its `/64`).
type Client = [u8; 17];

/// Why an attempt got no place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The attempt's address holds its share of checks.
    AddressFull,
    /// No place under the bound freed up within the wait.
    Busy,
}

/// The places of password checks in flight.
#[derive(Debug)]
pub(crate) struct Hashing {
    places: Arc<Semaphore>,
    per_address: usize,
    wait: Duration,
    /// Checks running or waiting, per address (an address with none has no entry, so the map
    /// holds at most as many entries as there are attempts in flight).
    shares: Arc<Mutex<HashMap<Client, usize>>>,
}

/// A place under the bound (and in its address's share), held until the check ends, even when
/// the request is dropped meanwhile.
#[derive(Debug)]
pub(crate) struct Place {
    _permit: OwnedSemaphorePermit,
    _share: Option<Share>,
}

/// One place in an address's share, given back when dropped.
#[derive(Debug)]
struct Share {
    client: Client,
    shares: Arc<Mutex<HashMap<Client, usize>>>,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut shares = lock(&self.shares);
        if let Some(n) = shares.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                shares.remove(&self.client);
            }
        }
    }
}

fn lock(m: &Mutex<HashMap<Client, usize>>) -> MutexGuard<'_, HashMap<Client, usize>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hashing {
    /// At most `max` checks at once (at least 1), `per_address` of them (at least 1) running or
    /// waiting for one address, each waiting at most `wait` for a place.
    pub(crate) fn new(max: usize, per_address: usize, wait: Duration) -> Self {
        Hashing {
            places: Arc::new(Semaphore::new(max.max(1))),
            per_address: per_address.max(1),
            wait,
            shares: Arc::default(),
        }
    }

    /// A place for a check of an attempt from `address`: at once when one is free, after the
    /// attempts ahead of it otherwise.
    pub(crate) async fn enter(&self, address: Option<IpAddr>) -> Result<Place, Refused> {
        let share = match address.map(address_bytes) {
            Some(client) => {
                let mut shares = lock(&self.shares);
                let n = shares.entry(client).or_insert(0);
                if *n >= self.per_address {
                    return Err(Refused::AddressFull);
                }
                *n += 1;
                Some(Share {
                    client,
                    shares: self.shares.clone(),
                })
            }
            None => None,
        };
        let permit = match self.places.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => match tokio::time::timeout(self.wait, self.places.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                // Timed out, or (never: the semaphore is not closed) closed.
                _ => return Err(Refused::Busy),
            },
        };
        Ok(Place {
            _permit: permit,
            _share: share,
        })
    }

    /// Takes a place under the bound, whoever asks (tests hold the bound full with it).
    #[cfg(test)]
    pub(crate) fn hold(&self) -> OwnedSemaphorePermit {
        self.places.clone().try_acquire_owned().expect("a free place")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[tokio::test]
    async fn an_address_over_its_share_is_refused_at_once_and_others_still_enter() {
        let h = Hashing::new(4, 2, Duration::from_secs(5));
        let a = [
            h.enter(ip("192.0.2.1")).await.unwrap(),
            h.enter(ip("192.0.2.1")).await.unwrap(),
        ];
        assert_eq!(h.enter(ip("192.0.2.1")).await.unwrap_err(), Refused::AddressFull);
        // IPv6 addresses of one /64 share one share.
        let v6 = h.enter(ip("2001:db8::1")).await.unwrap();
        let _v6b = h.enter(ip("2001:db8::2")).await.unwrap();
        assert_eq!(h.enter(ip("2001:db8::3")).await.unwrap_err(), Refused::AddressFull);
        drop(v6);
        drop(a);
        assert!(h.enter(ip("192.0.2.1")).await.is_ok(), "the share is given back");
        assert_eq!(
            lock(&h.shares).len(),
            1,
            "an address with nothing in flight leaves no entry"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_bound_is_waited_for_in_order_and_for_a_while_only() {
        let h = Arc::new(Hashing::new(1, 1, Duration::from_secs(2)));
        let held = h.hold();
        let waiting = {
            let h = h.clone();
            tokio::spawn(async move { h.enter(ip("192.0.2.2")).await.map(drop) })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        drop(held);
        assert_eq!(waiting.await.unwrap(), Ok(()), "served once the check ahead ended");
        let _held = h.hold();
        let start = tokio::time::Instant::now();
        assert_eq!(h.enter(ip("192.0.2.2")).await.unwrap_err(), Refused::Busy);
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        assert!(lock(&h.shares).is_empty(), "a refused wait gives its share back");
    }
}
