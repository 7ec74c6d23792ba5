//! [`RateBuckets`] on Redis: one key per bucket holding its GCRA state (the theoretical
//! arrival time), decided by one Lua script on Redis's clock, so that every instance holds a
//! client to one rate.

use std::sync::LazyLock;
use std::time::Duration;

use mcp_runtime::store::{Admission, Quota, RateBuckets, StoreFuture};
use redis::{Script, Value};

use crate::conn::{Conn, bad_reply, store_error};

/// The GCRA (the generic cell rate algorithm, a token bucket that stores one number): the bucket
/// allows a request when Redis's clock has reached its theoretical arrival time (TAT) less the
/// burst's tolerance, then pushes the TAT one interval on. Times are in microseconds on Redis's
/// own clock (`TIME`), so instances with skewed clocks agree. The key expires when the bucket
/// is full again: an idle bucket costs nothing. Returns `{1, 0}` (allowed) or `{0, wait µs}`.
/// KEYS: the bucket. ARGV: the interval (µs), the burst.
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = interval * (tonumber(ARGV[2]) - 1)
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local wait = tat - tolerance - now
if wait > 0 then return {0, math.ceil(wait)} end
local next_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX', math.ceil((next_tat - now) / 1000))
return {1, 0}
",
    )
});

/// Rate-limit buckets in Redis.
pub(crate) struct RedisBuckets {
    conn: Conn,
}

impl RedisBuckets {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisBuckets { conn }
    }
}

impl RateBuckets for RedisBuckets {
    fn acquire<'a>(&'a self, key: &'a str, quota: Quota) -> StoreFuture<'a, Admission> {
        Box::pin(async move {
            let interval = u64::try_from(quota.interval().as_micros()).unwrap_or(u64::MAX).max(1);
            let mut call = ACQUIRE.key(self.conn.keys.bucket(key));
            call.arg(interval).arg(quota.burst());
            let reply: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            match reply {
                Value::Array(items) => match items.as_slice() {
                    [Value::Int(1), _] => Ok(Admission::Allowed),
                    [Value::Int(0), Value::Int(wait)] => Ok(Admission::Limited {
                        retry_after: Duration::from_micros(u64::try_from(*wait).unwrap_or(0).max(1)),
                    }),
                    _ => Err(bad_reply("rate-limit decision")),
                },
                _ => Err(bad_reply("rate-limit decision")),
            }
        })
    }
}
