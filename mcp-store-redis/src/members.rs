//! [`Membership`] on Redis: one key per instance, `SET … PX ttl`; the reachability check is a
//! `PING` bounded by [`CHECK_TIMEOUT`].

use std::time::Duration;

use mcp_runtime::StoreError;
use mcp_runtime::store::{Membership, StoreFuture};

use crate::conn::{Conn, millis, store_error};

/// How long the reachability check waits for `PONG` (a probe must answer well within the
/// prober's own timeout, Kubernetes' default being 1 s).
const CHECK_TIMEOUT: Duration = Duration::from_millis(800);

/// Instance heartbeats in Redis.
pub(crate) struct RedisMembership {
    conn: Conn,
}

impl RedisMembership {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisMembership { conn }
    }
}

impl Membership for RedisMembership {
    fn heartbeat<'a>(&'a self, instance: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.conn.keys.instance(instance);
            let ttl = millis(ttl);
            let cmd = if ttl == 0 {
                // Alive until now: gone already (`PX 0` is refused).
                let mut c = redis::cmd("DEL");
                c.arg(key);
                c
            } else {
                let mut c = redis::cmd("SET");
                c.arg(key).arg("1").arg("PX").arg(ttl);
                c
            };
            let _: redis::Value = cmd.query_async(&mut self.conn.commands()).await.map_err(store_error)?;
            Ok(())
        })
    }

    fn alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let n: i64 = redis::cmd("EXISTS")
                .arg(self.conn.keys.instance(instance))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(n > 0)
        })
    }

    fn leave<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = redis::cmd("DEL")
                .arg(self.conn.keys.instance(instance))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn check(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let ping = redis::cmd("PING");
            let mut commands = self.conn.commands();
            match tokio::time::timeout(CHECK_TIMEOUT, ping.query_async::<redis::Value>(&mut commands)).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(store_error(e)),
                Err(_) => Err(StoreError::Unavailable(format!(
                    "PING unanswered after {} ms",
                    CHECK_TIMEOUT.as_millis()
                ))),
            }
        })
    }
}
