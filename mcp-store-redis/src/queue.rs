//! [`TaskQueue`] on Redis: one line (a list) per client, a ring of the clients with a due task,
//! and sorted sets for the leases and the delays, kept in step by scripts on Redis's own clock.
//!
//! | key (`<prefix>:{queue}:…`) | type | what |
//! | --- | --- | --- |
//! | `client` | hash | task id → the client whose line it waits in (every task the queue knows) |
//! | `attempt` | hash | task id → the last attempt claimed |
//! | `line:<client>` | list | the client's due tasks, in order |
//! | `ring` | list | the clients with a due task, in turn |
//! | `leases` | sorted set | task id by the end of its lease (ms, Redis's clock) |
//! | `delayed` | sorted set | task id by when it becomes due |
//!
//! Why lists and sorted sets under scripts rather than a stream with a consumer group: a stream
//! hands entries out in one order, but claims must take the clients in turn (one client's
//! 10,000 tasks must not starve another's one) and hold retries back for a backoff; a consumer
//! group's pending list would give the lapsed leases (`XAUTOCLAIM`) but neither fairness nor
//! delays, and its delivery count is not a fencing token a worker can be checked against. One
//! script per operation keeps the lines, the ring and the leases in step, and reads the time
//! from Redis (`TIME`), so that instances' clocks never matter.
//!
//! Every key shares the hash tag `{queue}`, so the scripts run on one slot of a Redis Cluster:
//! the queue holds ids only (the records are spread by the task store), and one primary
//! carries its bookkeeping.

use std::sync::LazyLock;
use std::time::Duration;

use mcp_runtime::store::{Claim, QueueDepth, StoreFuture, TaskQueue};
use redis::Script;

use crate::conn::{Conn, millis, store_error};

/// Redis's clock in ms, and the helpers every script shares: `due(id, front)` puts a due task
/// in its client's line (KEYS[1] the `client` hash, ARGV[1] the key prefix of the lines,
/// KEYS[2] the ring) and `settle()` moves the lapsed leases (KEYS[3]) and ended delays
/// (KEYS[4]) into their lines.
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function due(id, front)
  local client = redis.call('HGET', KEYS[1], id)
  if not client then return end
  local line = ARGV[1] .. client
  if redis.call('LLEN', line) == 0 then redis.call('RPUSH', KEYS[2], client) end
  if front then redis.call('LPUSH', line, id) else redis.call('RPUSH', line, id) end
end
local function settle()
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
    redis.call('ZREM', KEYS[3], id)
    due(id, true)
  end
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)) do
    redis.call('ZREM', KEYS[4], id)
    due(id, false)
  end
end
local function wait(id, delay)
  if delay <= 0 then due(id, false) else redis.call('ZADD', KEYS[4], now + delay, id) end
end
";

/// The keys every script takes, in order: client, ring, leases, delayed, attempt.
const KEY_NAMES: [&str; 5] = ["client", "ring", "leases", "delayed", "attempt"];

/// `enqueue`: ARGV line prefix, id, client, delay ms.
static ENQUEUE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PRELUDE}
if redis.call('HSETNX', KEYS[1], ARGV[2], ARGV[3]) == 0 then return 0 end
wait(ARGV[2], tonumber(ARGV[4]))
return 1
"
    ))
});

/// `hold`: ARGV line prefix, id, client, lease ms. The attempt (1), or nothing when the queue
/// knows the task.
static HOLD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PRELUDE}
if redis.call('HSETNX', KEYS[1], ARGV[2], ARGV[3]) == 0 then return false end
local attempt = redis.call('HINCRBY', KEYS[5], ARGV[2], 1)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[2])
return attempt
"
    ))
});

/// `claim`: ARGV line prefix, lease ms. The claimed id, client and attempt, or nothing.
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PRELUDE}
settle()
while true do
  local client = redis.call('LPOP', KEYS[2])
  if not client then return false end
  local line = ARGV[1] .. client
  local id = redis.call('LPOP', line)
  if id then
    if redis.call('LLEN', line) > 0 then redis.call('RPUSH', KEYS[2], client) end
    if redis.call('HEXISTS', KEYS[1], id) == 1 then
      local attempt = redis.call('HINCRBY', KEYS[5], id, 1)
      redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), id)
      return {{id, client, attempt}}
    end
  end
end
"
    ))
});

/// `renew`: ARGV line prefix, id, attempt, lease ms. 1 when renewed.
static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PRELUDE}
if redis.call('HGET', KEYS[5], ARGV[2]) ~= ARGV[3] or not redis.call('ZSCORE', KEYS[3], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[2])
return 1
"
    ))
});

/// `finish`: ARGV line prefix, id, attempt. 1 when removed.
static FINISH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PRELUDE}
if redis.call('HGET', KEYS[5], ARGV[2]) ~= ARGV[3] or not redis.call('ZSCORE', KEYS[3], ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('HDEL', KEYS[1], ARGV[2])
redis.call('HDEL', KEYS[5], ARGV[2])
return 1
"
    ))
});

/// `release`: ARGV line prefix, id, attempt, delay ms. 1 when given back.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PRELUDE}
if redis.call('HGET', KEYS[5], ARGV[2]) ~= ARGV[3] or not redis.call('ZSCORE', KEYS[3], ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[3], ARGV[2])
wait(ARGV[2], tonumber(ARGV[4]))
return 1
"
    ))
});

/// The task queue in Redis. Cheap to clone.
#[derive(Clone)]
pub(crate) struct RedisQueue {
    conn: Conn,
}

impl RedisQueue {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisQueue { conn }
    }

    /// A script call with the queue's keys and the lines' key prefix as its first argument.
    fn call<'s>(&self, script: &'s Script) -> redis::ScriptInvocation<'s> {
        let mut call = script.prepare_invoke();
        for name in KEY_NAMES {
            call.key(self.conn.keys.queue(name));
        }
        call.arg(self.conn.keys.queue("line:"));
        call
    }
}

impl TaskQueue for RedisQueue {
    fn enqueue<'a>(&'a self, task_id: &'a str, client: &'a str, delay: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self
                .call(&ENQUEUE)
                .arg(task_id)
                .arg(client)
                .arg(millis(delay))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn hold<'a>(&'a self, task_id: &'a str, client: &'a str, lease: Duration) -> StoreFuture<'a, Option<u32>> {
        Box::pin(async move {
            self.call(&HOLD)
                .arg(task_id)
                .arg(client)
                .arg(millis(lease).max(1))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)
        })
    }

    fn claim(&self, lease: Duration) -> StoreFuture<'_, Option<Claim>> {
        Box::pin(async move {
            let claimed: Option<(String, String, u32)> = self
                .call(&CLAIM)
                .arg(millis(lease).max(1))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(claimed.map(|(task_id, client, attempt)| Claim::new(task_id, client, attempt)))
        })
    }

    fn renew<'a>(&'a self, task_id: &'a str, attempt: u32, lease: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let renewed: i64 = self
                .call(&RENEW)
                .arg(task_id)
                .arg(attempt)
                .arg(millis(lease).max(1))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(renewed == 1)
        })
    }

    fn finish<'a>(&'a self, task_id: &'a str, attempt: u32) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let finished: i64 = self
                .call(&FINISH)
                .arg(task_id)
                .arg(attempt)
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(finished == 1)
        })
    }

    fn release<'a>(&'a self, task_id: &'a str, attempt: u32, delay: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let released: i64 = self
                .call(&RELEASE)
                .arg(task_id)
                .arg(attempt)
                .arg(millis(delay))
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(released == 1)
        })
    }

    fn depth(&self) -> StoreFuture<'_, QueueDepth> {
        Box::pin(async move {
            let (known, running): (usize, usize) = redis::pipe()
                .cmd("HLEN")
                .arg(self.conn.keys.queue("client"))
                .cmd("ZCARD")
                .arg(self.conn.keys.queue("leases"))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(QueueDepth::new(known.saturating_sub(running), running))
        })
    }
}
