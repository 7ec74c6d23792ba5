//! The in-flight cap: the count of requests being handled, in all and per client address, and
//! the [`Permit`] each one holds.
//!
//! The total ([`HttpConfig::max_in_flight`](crate::HttpConfig::max_in_flight)) protects the
//! server; the share of one client address
//! ([`HttpConfig::max_in_flight_per_address`](crate::HttpConfig::max_in_flight_per_address))
//! protects the other clients: one address holding its share in slow bodies or slow calls
//! leaves the rest of the slots to everyone else.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::response::Response;
use http::header::{HeaderValue, RETRY_AFTER};
use mcp_protocol::RpcError;

use crate::response::{overloaded, rpc_error};
use crate::status;

/// Why a request found no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoSlot {
    /// Every slot is taken.
    Full,
    /// The client's address holds its share.
    AddressFull,
}

impl NoSlot {
    /// The answer: 503 when the server is full, 429 with `Retry-After` when the client's
    /// address holds its share.
    pub(crate) fn response(self) -> Response {
        match self {
            NoSlot::Full => overloaded(),
            NoSlot::AddressFull => {
                let error = RpcError::too_many_in_flight_from_address();
                let mut r = rpc_error(status::TOO_MANY_IN_FLIGHT, None, &error);
                r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(1u32));
                r
            }
        }
    }
}

/// Requests in flight per client address.
type PerAddress = Arc<Mutex<HashMap<IpAddr, usize>>>;

fn lock(m: &Mutex<HashMap<IpAddr, usize>>) -> MutexGuard<'_, HashMap<IpAddr, usize>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The number of requests in flight (a request of a batch counts as one), in all and per
/// client address.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    total: Arc<AtomicUsize>,
    per_address: PerAddress,
}

impl InFlight {
    /// Takes `n` slots at once when they all fit under `max`, and under `max_per_address` for
    /// the client at `address` (`None`: only the total applies); otherwise takes none.
    pub(crate) fn take(
        &self,
        n: usize,
        max: usize,
        address: Option<IpAddr>,
        max_per_address: usize,
    ) -> Result<Permit, NoSlot> {
        let total = self.total.fetch_add(n, Ordering::AcqRel) + n;
        if total > max {
            self.total.fetch_sub(n, Ordering::AcqRel);
            return Err(NoSlot::Full);
        }
        let mut permit = Permit {
            total: self.total.clone(),
            n,
            address: None,
        };
        if let Some(a) = address {
            let mut held = lock(&self.per_address);
            let mine = held.entry(a).or_insert(0);
            if *mine + n > max_per_address {
                if *mine == 0 {
                    held.remove(&a);
                }
                return Err(NoSlot::AddressFull);
            }
            *mine += n;
            permit.address = Some((self.per_address.clone(), a));
        }
        Ok(permit)
    }
}

/// Slots of the in-flight cap (one per request), released when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    total: Arc<AtomicUsize>,
    n: usize,
    address: Option<(PerAddress, IpAddr)>,
}

impl Permit {
    /// The client address the slots were counted against.
    pub(crate) fn address(&self) -> Option<IpAddr> {
        self.address.as_ref().map(|(_, a)| *a)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.total.fetch_sub(self.n, Ordering::AcqRel);
        if let Some((per_address, a)) = &self.address {
            let mut held = lock(per_address);
            if let Some(mine) = held.get_mut(a) {
                *mine -= self.n;
                if *mine == 0 {
                    held.remove(a);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> Option<IpAddr> {
        Some(IpAddr::from([127, 0, 0, n]))
    }

    #[test]
    fn slots_are_bounded_in_all_and_per_address_and_given_back() {
        let in_flight = InFlight::default();
        let a = in_flight.take(2, 4, ip(1), 2).expect("two for the first address");
        assert_eq!(a.address(), ip(1));
        assert_eq!(in_flight.take(1, 4, ip(1), 2).unwrap_err(), NoSlot::AddressFull);
        let b = in_flight.take(1, 4, ip(2), 2).expect("another address");
        let unknown = in_flight.take(1, 4, None, 2).expect("no address: the total alone");
        assert_eq!(in_flight.take(1, 4, ip(3), 2).unwrap_err(), NoSlot::Full);
        assert_eq!(in_flight.total.load(Ordering::Acquire), 4, "refusals take nothing");
        drop((a, b, unknown));
        assert_eq!(in_flight.total.load(Ordering::Acquire), 0);
        assert!(lock(&in_flight.per_address).is_empty(), "no address left behind");
        assert_eq!(
            in_flight.take(3, 4, ip(1), 2).unwrap_err(),
            NoSlot::AddressFull,
            "all or nothing"
        );
        assert!(lock(&in_flight.per_address).is_empty());
    }
}
