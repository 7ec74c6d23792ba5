//! The stream budget: how many long-lived streams the endpoint holds at once, in all and per
//! client address, and the [`StreamPermit`] each one holds for as long as it is open.
//!
//! Long-lived streams (a `subscriptions/listen`, a session's GET stream or its resumption of a
//! POST stream, the 2024-11-05 pair's SSE stream) are held for minutes or hours by clients that
//! are idle nearly all that time. They are budgeted here, never against
//! [`HttpConfig::max_in_flight`](crate::HttpConfig::max_in_flight), which is the calls' own:
//! however many streams are held, a new `tools/call` still finds its in-flight slot.
//!
//! Calls also need a connection. On HTTP/1.1 every held stream keeps one busy (a busy
//! connection is never shed to admit a newcomer), so the budget in all is never more than
//! [`HttpConfig::max_connections`](crate::HttpConfig::max_connections) less a quarter of it
//! (rounded up): that quarter is always left to connections that hold no stream, whatever the
//! configuration. `docs/HARDENING.md` gives the arithmetic of the defaults.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::response::Response;
use http::header::{HeaderValue, RETRY_AFTER};
use mcp_protocol::{RequestId, RpcError};

use crate::response::rpc_error;
use crate::status;

/// Why a stream was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StreamRefusal {
    /// Every stream of the budget is held.
    #[error("every stream of the endpoint's budget is held")]
    Full,
    /// The client's address holds its most streams.
    #[error("the client's address holds its most streams")]
    AddressFull,
}

/// How long a client refused a stream is asked to wait before trying again, in seconds.
const RETRY_AFTER_SECS: u32 = 5;

impl StreamRefusal {
    /// The answer: 503 when every stream of the endpoint is held, 429 when the client's address
    /// holds its share; `Retry-After` and a JSON-RPC error (with the request's id for a
    /// `subscriptions/listen`) in both cases.
    pub(crate) fn response(self, id: Option<&RequestId>) -> Response {
        let (status, error) = match self {
            StreamRefusal::Full => (status::overload(), RpcError::too_many_streams()),
            StreamRefusal::AddressFull => (status::TOO_MANY_STREAMS, RpcError::too_many_streams_from_address()),
        };
        let mut r = rpc_error(status, id, &error);
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        r
    }
}

/// The streams held, in all and per address.
#[derive(Debug, Default)]
struct Held {
    total: usize,
    per_address: HashMap<IpAddr, usize>,
}

/// The endpoint's stream budget.
#[derive(Debug)]
pub(crate) struct StreamBudget {
    max: usize,
    max_per_address: usize,
    held: Arc<Mutex<Held>>,
}

fn lock(m: &Mutex<Held>) -> MutexGuard<'_, Held> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The most streams held in all: `max_streams`, and never more than `max_connections` less a
/// quarter of it rounded up (so at least one connection, and a quarter of them, hold no stream).
pub(crate) fn cap(max_streams: usize, max_connections: usize) -> usize {
    max_streams.min(max_connections - max_connections.div_ceil(4))
}

impl StreamBudget {
    /// A budget of `max` streams in all and `max_per_address` per client address.
    pub(crate) fn new(max: usize, max_per_address: usize) -> Self {
        StreamBudget {
            max,
            max_per_address,
            held: Arc::default(),
        }
    }

    /// Takes one stream for a client at `address` (`None`: the transport does not know it, and
    /// only the total applies).
    pub(crate) fn take(&self, address: Option<IpAddr>) -> Result<StreamPermit, StreamRefusal> {
        let mut held = lock(&self.held);
        if held.total >= self.max {
            return Err(StreamRefusal::Full);
        }
        if let Some(a) = address {
            let n = held.per_address.entry(a).or_insert(0);
            if *n >= self.max_per_address {
                return Err(StreamRefusal::AddressFull);
            }
            *n += 1;
        }
        held.total += 1;
        Ok(StreamPermit {
            held: self.held.clone(),
            address,
        })
    }

    /// How many streams are held now.
    #[cfg(test)]
    fn held(&self) -> usize {
        lock(&self.held).total
    }
}

/// One stream of the budget, given back when dropped (with the stream's response body).
#[derive(Debug)]
pub(crate) struct StreamPermit {
    held: Arc<Mutex<Held>>,
    address: Option<IpAddr>,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        held.total -= 1;
        if let Some(a) = self.address
            && let Some(n) = held.per_address.get_mut(&a)
        {
            *n -= 1;
            if *n == 0 {
                held.per_address.remove(&a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().expect("an address"))
    }

    #[test]
    fn streams_are_bounded_in_all_and_per_address_and_given_back() {
        let budget = StreamBudget::new(3, 2);
        let a1 = budget.take(ip("127.0.0.1")).expect("first");
        let a2 = budget.take(ip("127.0.0.1")).expect("second");
        assert_eq!(budget.take(ip("127.0.0.1")).unwrap_err(), StreamRefusal::AddressFull);
        let b = budget.take(ip("127.0.0.2")).expect("another address");
        assert_eq!(budget.take(ip("127.0.0.3")).unwrap_err(), StreamRefusal::Full);
        assert_eq!(budget.take(None).unwrap_err(), StreamRefusal::Full);
        assert_eq!(budget.held(), 3);
        drop(a1);
        let a3 = budget.take(ip("127.0.0.1")).expect("a place given back");
        drop((a2, a3, b));
        assert_eq!(budget.held(), 0);
        assert!(lock(&budget.held).per_address.is_empty(), "no address left behind");
        let unknown = budget.take(None).expect("no address: only the total applies");
        drop(unknown);
    }

    #[test]
    fn the_cap_leaves_a_quarter_of_the_connections_to_calls() {
        assert_eq!(cap(8_192, 16_384), 8_192, "the defaults");
        assert_eq!(cap(100_000, 16_384), 12_288);
        assert_eq!(cap(10, 4), 3);
        assert_eq!(cap(10, 1), 0, "one connection: it is the calls'");
        for connections in 1..200 {
            let streams = cap(usize::MAX, connections);
            assert!(
                streams < connections,
                "{connections}: a connection without a stream remains"
            );
            assert!(connections - streams >= connections.div_ceil(4));
        }
    }
}
