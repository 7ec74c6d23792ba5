//! Webhook subscriptions as kept: the seam ([`SubscriptionStore`]) and its in-memory
//! implementation ([`MemorySubscriptions`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_protocol::events::cursor::{Cursor, Position};
use mcp_protocol::events::wire::LastError;
use mcp_runtime::store::StoreFuture;
use serde_json::{Map, Value};

/// A webhook subscription: its key, where it delivers, its secrets, its grant and how its
/// deliveries are going.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// The derived id (`sub_…`).
    pub id: String,
    /// The principal owning it.
    pub principal: String,
    /// The callback URL.
    pub url: String,
    /// The event type.
    pub name: String,
    /// The arguments.
    pub arguments: Map<String, Value>,
    /// The signing secrets (`whsec_…`), the newest first; during a rotation's grace window the
    /// one it replaced follows.
    pub secrets: Vec<String>,
    /// Until when (ms since the epoch) the replaced secret still signs.
    pub rotation_ends_ms: u64,
    /// When the grant ends (ms since the epoch; [`Subscription::NEVER`]: a grant without
    /// expiry).
    pub expires_ms: u64,
    /// Where delivery resumes: everything at or before it was delivered or abandoned (the
    /// safe-to-persist watermark).
    pub next: Cursor,
    /// Signals (gap, terminate) at or before this position were appended before the
    /// subscription existed: they are history, not acted on.
    pub signals_after: Position,
    /// Whether deliveries are made (false: suspended after sustained failure).
    pub active: bool,
    /// The last successful delivery (ms since the epoch).
    pub last_delivery_ms: Option<u64>,
    /// The category of the last failure, while the last attempt failed.
    pub last_error: Option<LastError>,
    /// Since when attempts have been failing (ms since the epoch).
    pub failed_since_ms: Option<u64>,
    /// Attempts and failures in the current window, and when it started (ms).
    pub window: (u32, u32, u64),
}

impl Subscription {
    /// The `expires_ms` of a grant without expiry (`ttlMs: null`, where the server grants it:
    /// [`WebhookSettings::no_expiry`](crate::WebhookSettings::no_expiry)).
    pub const NEVER: u64 = u64::MAX;

    /// Whether the grant ends (false: granted without expiry).
    pub fn expires(&self) -> bool {
        self.expires_ms != Self::NEVER
    }
}

/// Where webhook subscriptions are kept. Every method is cheap to call concurrently.
pub trait SubscriptionStore: Send + Sync + 'static {
    /// Creates or replaces a subscription.
    fn put(&self, subscription: Subscription) -> StoreFuture<'_, ()>;

    /// The subscription with this id.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Subscription>>;

    /// Removes a subscription; whether it existed.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool>;

    /// The ids of every subscription to the type `name`.
    fn of_type<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Vec<String>>;

    /// How many subscriptions `principal` owns.
    fn count_of<'a>(&'a self, principal: &'a str) -> StoreFuture<'a, usize>;

    /// The ids of every subscription (each instance's sweeper adopts those nobody delivers).
    fn all(&self) -> StoreFuture<'_, Vec<String>>;

    /// Takes or renews the lease on subscription `id`'s deliveries for `holder`, until `ttl`
    /// from now: true when `holder` holds it, false while another holder's lease lasts. Only the
    /// holder delivers, so each occurrence is delivered by one instance at a time.
    fn lease<'a>(&'a self, id: &'a str, holder: &'a str, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Gives up `holder`'s lease on subscription `id`, if it holds it (an instance that stops
    /// delivering, so that another takes over at once rather than when the lease lapses).
    fn release<'a>(&'a self, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()>;
}

/// A shared store is a store (one kept by the application, given to several servers in turn).
impl<T: SubscriptionStore + ?Sized> SubscriptionStore for std::sync::Arc<T> {
    fn put(&self, subscription: Subscription) -> StoreFuture<'_, ()> {
        (**self).put(subscription)
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Subscription>> {
        (**self).get(id)
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        (**self).remove(id)
    }

    fn of_type<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Vec<String>> {
        (**self).of_type(name)
    }

    fn count_of<'a>(&'a self, principal: &'a str) -> StoreFuture<'a, usize> {
        (**self).count_of(principal)
    }

    fn all(&self) -> StoreFuture<'_, Vec<String>> {
        (**self).all()
    }

    fn lease<'a>(&'a self, id: &'a str, holder: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        (**self).lease(id, holder, ttl)
    }

    fn release<'a>(&'a self, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        (**self).release(id, holder)
    }
}

/// Subscriptions in this process's memory.
#[derive(Debug, Default)]
pub struct MemorySubscriptions {
    all: Mutex<HashMap<String, Subscription>>,
    /// Each leased subscription's holder and the end of its lease.
    leases: Mutex<HashMap<String, (String, Instant)>>,
}

impl MemorySubscriptions {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Subscription>) -> T) -> T {
        f(&mut self.all.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl SubscriptionStore for MemorySubscriptions {
    fn put(&self, subscription: Subscription) -> StoreFuture<'_, ()> {
        self.with(|all| all.insert(subscription.id.clone(), subscription));
        Box::pin(std::future::ready(Ok(())))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Subscription>> {
        let found = self.with(|all| all.get(id).cloned());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let removed = self.with(|all| all.remove(id).is_some());
        Box::pin(std::future::ready(Ok(removed)))
    }

    fn of_type<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Vec<String>> {
        let ids = self.with(|all| all.values().filter(|s| s.name == name).map(|s| s.id.clone()).collect());
        Box::pin(std::future::ready(Ok(ids)))
    }

    fn count_of<'a>(&'a self, principal: &'a str) -> StoreFuture<'a, usize> {
        let n = self.with(|all| all.values().filter(|s| s.principal == principal).count());
        Box::pin(std::future::ready(Ok(n)))
    }

    fn all(&self) -> StoreFuture<'_, Vec<String>> {
        let ids = self.with(|all| all.keys().cloned().collect());
        Box::pin(std::future::ready(Ok(ids)))
    }

    fn lease<'a>(&'a self, id: &'a str, holder: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        let now = Instant::now();
        let mut leases = self.leases.lock().unwrap_or_else(|e| e.into_inner());
        leases.retain(|_, (_, until)| *until > now);
        let held = match leases.get(id) {
            Some((other, _)) if other != holder => false,
            _ => {
                leases.insert(id.to_owned(), (holder.to_owned(), now + ttl));
                true
            }
        };
        Box::pin(std::future::ready(Ok(held)))
    }

    fn release<'a>(&'a self, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        let mut leases = self.leases.lock().unwrap_or_else(|e| e.into_inner());
        if leases.get(id).is_some_and(|(h, _)| h == holder) {
            leases.remove(id);
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_at_a_time_until_its_lease_lapses() {
        let store = MemorySubscriptions::default();
        let ttl = Duration::from_millis(50);
        assert!(store.lease("sub_a", "one", ttl).await.unwrap());
        assert!(!store.lease("sub_a", "two", ttl).await.unwrap());
        assert!(store.lease("sub_a", "one", ttl).await.unwrap(), "renewed");
        assert!(store.lease("sub_b", "two", ttl).await.unwrap(), "another subscription");
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(
            store.lease("sub_a", "two", ttl).await.unwrap(),
            "taken over once lapsed"
        );
        assert!(!store.lease("sub_a", "one", ttl).await.unwrap());
        store.release("sub_a", "one").await.unwrap();
        assert!(!store.lease("sub_a", "one", ttl).await.unwrap(), "not its to give up");
        store.release("sub_a", "two").await.unwrap();
        assert!(
            store.lease("sub_a", "one", ttl).await.unwrap(),
            "given up: taken at once"
        );
    }
}
