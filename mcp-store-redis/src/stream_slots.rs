//! The Events extension's [`StreamSlots`] on Redis (feature `events`): the open push streams of
//! a type with a stream limit, counted across every instance.
//!
//! `<prefix>:{ev.<type>}:streams`: a sorted set of the streams holding a slot, each scored by
//! the end of its slot (ms, Redis's own clock, so that instances' clocks never matter). Taking a
//! slot drops the ended ones and counts the rest, in one script; the key expires with its
//! last slot. The key shares its type's slot of a Redis Cluster with the type's log.

use std::sync::LazyLock;
use std::time::Duration;

use mcp_events::slots::StreamSlots;
use mcp_runtime::store::StoreFuture;
use redis::Script;

use crate::conn::{Conn, millis, store_error};

/// Redis's clock in ms, inside a script.
const NOW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
";

/// Takes a slot: KEYS[1] the set; ARGV member, max, ttl ms. 1 when held.
static TAKE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ends = now + tonumber(ARGV[3])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], ends, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"
    ))
});

/// Renews a held slot: KEYS[1] the set; ARGV member, ttl ms.
static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{NOW}
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
"
    ))
});

/// Push stream slots in Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisStreamSlots {
    conn: Conn,
}

impl std::fmt::Debug for RedisStreamSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStreamSlots").finish_non_exhaustive()
    }
}

impl RedisStreamSlots {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisStreamSlots { conn }
    }
}

impl StreamSlots for RedisStreamSlots {
    fn take<'a>(&'a self, name: &'a str, id: &'a str, max: usize, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let held: i64 = TAKE
                .key(self.conn.keys.stream_slots(name))
                .arg(id)
                .arg(max)
                .arg(millis(ttl).max(1))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(held == 1)
        })
    }

    fn renew<'a>(&'a self, name: &'a str, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = RENEW
                .key(self.conn.keys.stream_slots(name))
                .arg(id)
                .arg(millis(ttl).max(1))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn release<'a>(&'a self, name: &'a str, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = redis::cmd("ZREM")
                .arg(self.conn.keys.stream_slots(name))
                .arg(id)
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }
}
