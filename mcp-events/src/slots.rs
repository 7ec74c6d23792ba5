//! Where the open push streams of a type with a stream limit
//! ([`EventType::max_streams`](crate::EventType::max_streams)) are counted: the seam
//! ([`StreamSlots`]) and its in-memory implementation ([`MemorySlots`]). With several instances
//! of a server the slots must be shared (`mcp-store-redis` keeps them in Redis), or a type's
//! limit would hold once per instance.
//!
//! A slot is held by one stream, named by a unique id, until it is given back or until its
//! lifetime passes without a renewal: a stream renews its slot as it sends heartbeats, so the
//! slots of an instance that died free themselves.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_runtime::store::StoreFuture;

/// Where the open push streams of each limited type are counted.
///
/// # Contract
///
/// - `take(name, id, max, ttl)` holds a slot of type `name` for stream `id` until `ttl` from
///   now when fewer than `max` unexpired slots of `name` are held (true), or when `id` holds
///   one already (renewed, true); otherwise it changes nothing (false). Decisions on one type are
///   atomic across every instance sharing the backend.
/// - `renew(name, id, ttl)` moves a held slot's end to `ttl` from now (nothing if not held).
/// - `release(name, id)` gives the slot back (nothing if not held).
pub trait StreamSlots: Send + Sync + 'static {
    /// Takes a slot of `name` for `id` if fewer than `max` are held.
    fn take<'a>(&'a self, name: &'a str, id: &'a str, max: usize, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Renews `id`'s slot of `name`.
    fn renew<'a>(&'a self, name: &'a str, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()>;

    /// Gives `id`'s slot of `name` back.
    fn release<'a>(&'a self, name: &'a str, id: &'a str) -> StoreFuture<'a, ()>;
}

/// Slots in this process's memory.
#[derive(Debug, Default)]
pub struct MemorySlots {
    /// Per type, each holder's slot end.
    held: Mutex<HashMap<String, HashMap<String, Instant>>>,
}

impl MemorySlots {
    fn with<T>(&self, name: &str, f: impl FnOnce(&mut HashMap<String, Instant>) -> T) -> T {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let slots = held.entry(name.to_owned()).or_default();
        let now = Instant::now();
        slots.retain(|_, end| *end > now);
        let out = f(slots);
        if slots.is_empty() {
            held.remove(name);
        }
        out
    }
}

impl StreamSlots for MemorySlots {
    fn take<'a>(&'a self, name: &'a str, id: &'a str, max: usize, ttl: Duration) -> StoreFuture<'a, bool> {
        let taken = self.with(name, |slots| {
            if !slots.contains_key(id) && slots.len() >= max {
                return false;
            }
            slots.insert(id.to_owned(), Instant::now() + ttl);
            true
        });
        Box::pin(std::future::ready(Ok(taken)))
    }

    fn renew<'a>(&'a self, name: &'a str, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        self.with(name, |slots| {
            if let Some(end) = slots.get_mut(id) {
                *end = Instant::now() + ttl;
            }
        });
        Box::pin(std::future::ready(Ok(())))
    }

    fn release<'a>(&'a self, name: &'a str, id: &'a str) -> StoreFuture<'a, ()> {
        self.with(name, |slots| slots.remove(id));
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A shared seam is a seam (one kept by the application, given to several servers in turn).
impl<T: StreamSlots + ?Sized> StreamSlots for std::sync::Arc<T> {
    fn take<'a>(&'a self, name: &'a str, id: &'a str, max: usize, ttl: Duration) -> StoreFuture<'a, bool> {
        (**self).take(name, id, max, ttl)
    }

    fn renew<'a>(&'a self, name: &'a str, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        (**self).renew(name, id, ttl)
    }

    fn release<'a>(&'a self, name: &'a str, id: &'a str) -> StoreFuture<'a, ()> {
        (**self).release(name, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn at_most_max_slots_until_one_is_given_back_or_lapses() {
        let slots = MemorySlots::default();
        let ttl = Duration::from_millis(60);
        assert!(slots.take("t", "a", 2, ttl).await.unwrap());
        assert!(slots.take("t", "b", 2, ttl).await.unwrap());
        assert!(!slots.take("t", "c", 2, ttl).await.unwrap(), "full");
        assert!(
            slots.take("t", "a", 2, ttl).await.unwrap(),
            "a holder takes its own again"
        );
        assert!(slots.take("u", "c", 2, ttl).await.unwrap(), "another type counts apart");
        slots.release("t", "b").await.unwrap();
        assert!(slots.take("t", "c", 2, ttl).await.unwrap(), "given back");
        tokio::time::sleep(Duration::from_millis(40)).await;
        slots.renew("t", "a", ttl).await.unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
        // c lapsed (80 ms unrenewed), a was renewed at 40 ms.
        assert!(slots.take("t", "d", 2, ttl).await.unwrap());
        assert!(!slots.take("t", "e", 2, ttl).await.unwrap(), "a and d hold the two");
    }
}
