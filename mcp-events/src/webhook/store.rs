//! Webhook subscriptions as kept: the seam ([`SubscriptionStore`]) and its in-memory
//! implementation ([`MemorySubscriptions`]).

use std::collections::HashMap;
use std::sync::Mutex;

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
    /// When the grant ends (ms since the epoch).
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
}

/// Subscriptions in this process's memory.
#[derive(Debug, Default)]
pub struct MemorySubscriptions {
    all: Mutex<HashMap<String, Subscription>>,
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
}
