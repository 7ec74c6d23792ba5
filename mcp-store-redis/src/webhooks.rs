//! The Events extension's webhook [`SubscriptionStore`] on Redis (feature `events`): every
//! instance of a server sees every subscription, and the lease on each subscription's
//! deliveries makes one instance at a time deliver it.
//!
//! - `<prefix>:webhook:<id>`: a subscription ([`Subscription::to_stored`]), expiring a minute
//!   after its grant ends (so that a subscription no instance is left to remove goes too); one
//!   granted without expiry is kept until it is removed.
//! - `<prefix>:webhooks`, `<prefix>:webhooks:type:<type>`, `<prefix>:webhooks:of:<principal>`:
//!   sets of ids (every subscription, those of a type, those of a principal). A member whose
//!   record is gone (it expired) is dropped when a listing meets it.
//! - `<prefix>:webhook-lease:<id>`: the holder of the subscription's delivery lease (`SET … PX`,
//!   taken or renewed by one script, given up by another).
//!
//! Every command names one key, so the keys may live on any slots of a Redis Cluster.

use std::sync::LazyLock;
use std::time::Duration;

use mcp_events::webhook::store::{Subscription, SubscriptionStore};
use mcp_runtime::store::StoreFuture;
use redis::Script;

use crate::conn::{Conn, millis, store_error};

/// How long a subscription's record outlives its grant.
const GRACE_MS: u64 = 60_000;

/// Takes the lease `KEYS[1]` for `ARGV[1]` for `ARGV[2]` ms unless another holder has it.
static LEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
",
    )
});

/// Gives up the lease `KEYS[1]` if `ARGV[1]` holds it.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
",
    )
});

/// Webhook subscriptions in Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisWebhookSubscriptions {
    conn: Conn,
}

impl std::fmt::Debug for RedisWebhookSubscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisWebhookSubscriptions").finish_non_exhaustive()
    }
}

impl RedisWebhookSubscriptions {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisWebhookSubscriptions { conn }
    }

    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, mcp_runtime::StoreError> {
        cmd.query_async(&mut self.conn.commands()).await.map_err(store_error)
    }

    /// The members of the set `set` whose record still exists (the others are dropped).
    async fn live(&self, set: String) -> Result<Vec<String>, mcp_runtime::StoreError> {
        let ids: Vec<String> = self.query(redis::cmd("SMEMBERS").arg(&set)).await?;
        let mut live = Vec::with_capacity(ids.len());
        for id in ids {
            let exists: bool = self
                .query(redis::cmd("EXISTS").arg(self.conn.keys.webhook(&id)))
                .await?;
            if exists {
                live.push(id);
            } else {
                let _: i64 = self.query(redis::cmd("SREM").arg(&set).arg(&id)).await?;
            }
        }
        Ok(live)
    }
}

impl SubscriptionStore for RedisWebhookSubscriptions {
    fn put(&self, subscription: Subscription) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let id = &subscription.id;
            let mut set = redis::cmd("SET");
            set.arg(keys.webhook(id)).arg(subscription.to_stored());
            if subscription.expires() {
                set.arg("PXAT").arg(subscription.expires_ms.saturating_add(GRACE_MS));
            }
            let _: () = self.query(&set).await?;
            for set in [
                keys.webhooks(),
                keys.webhooks_of_type(&subscription.name),
                keys.webhooks_of(&subscription.principal),
            ] {
                let _: i64 = self.query(redis::cmd("SADD").arg(set).arg(id)).await?;
            }
            Ok(())
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Subscription>> {
        Box::pin(async move {
            let stored: Option<String> = self.query(redis::cmd("GET").arg(self.conn.keys.webhook(id))).await?;
            Ok(stored.and_then(|s| {
                let found = Subscription::from_stored(&s);
                if found.is_none() {
                    tracing::warn!(id, "a stored webhook subscription does not decode: treated as gone");
                }
                found
            }))
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let Some(sub) = self.get(id).await? else {
                let _: i64 = self.query(redis::cmd("SREM").arg(keys.webhooks()).arg(id)).await?;
                return Ok(false);
            };
            let removed: i64 = self.query(redis::cmd("DEL").arg(keys.webhook(id))).await?;
            for set in [
                keys.webhooks(),
                keys.webhooks_of_type(&sub.name),
                keys.webhooks_of(&sub.principal),
            ] {
                let _: i64 = self.query(redis::cmd("SREM").arg(set).arg(id)).await?;
            }
            Ok(removed == 1)
        })
    }

    fn of_type<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Vec<String>> {
        Box::pin(self.live(self.conn.keys.webhooks_of_type(name)))
    }

    fn count_of<'a>(&'a self, principal: &'a str) -> StoreFuture<'a, usize> {
        Box::pin(async move { Ok(self.live(self.conn.keys.webhooks_of(principal)).await?.len()) })
    }

    fn all(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(self.live(self.conn.keys.webhooks()))
    }

    fn lease<'a>(&'a self, id: &'a str, holder: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let held: i64 = LEASE
                .key(self.conn.keys.webhook_lease(id))
                .arg(holder)
                .arg(millis(ttl).max(1))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(held == 1)
        })
    }

    fn release<'a>(&'a self, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = RELEASE
                .key(self.conn.keys.webhook_lease(id))
                .arg(holder)
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }
}
