//! [`EventLog`] on Redis: a Redis stream per (session, stream) and one hash of counters per
//! session.
//!
//! The counters hash `<prefix>:{<session>}:seq` holds, for stream `n`: the newest id handed out
//! (field `<n>`, `HINCRBY`), the id of the newest event stored (`l<n>`) and the highest id lost
//! from the stream (`e<n>`: evicted by the bound, or gone with an expired stream key). Events
//! are entries `0-<id>` of the Redis stream `<prefix>:{<session>}:ev:<n>`, field `f`. With the
//! counters, `after` decides truncation exactly as the in-memory ring does.
//!
//! When the session's record (`<prefix>:{<session>}:session`) exists, an append gives the
//! counters and the stream key the record's remaining lifetime, and the record's `load` and
//! `touch` push the counters' back with its own: the events of a session that expires without
//! being deleted go with it, and a stream left without appends for a whole ttl goes before (a
//! cursor into it then replays as truncated, never as a silent loss: the counters outlive it).

use std::sync::LazyLock;

use mcp_runtime::StoreError;
use mcp_runtime::store::{EventLog, Replay, StoreFuture, StreamKey};
use redis::{Script, Value};

use crate::conn::{Conn, bad_reply, parse_u64, store_error};

/// Gives the counters (`KEYS[1]`) and, when given, the stream (`KEYS[2]`, when not
/// `KEYS[1]`) the session record's (`KEYS[3]`) remaining lifetime, when it has one.
const FOLLOW_SESSION: &str = r"
local ttl = redis.call('PTTL', KEYS[3])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  if KEYS[2] ~= KEYS[1] then redis.call('PEXPIRE', KEYS[2], ttl) end
end
";

/// `append`: the next id, the event stored under it, the stream trimmed to its capacity (the
/// highest id trimmed kept in `e<n>`). A stream key that expired took its events with it:
/// they count as lost.
/// KEYS: seq, stream, session. ARGV: stream number, frame, capacity (at least 1).
static APPEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"
local n = ARGV[1]
if redis.call('EXISTS', KEYS[2]) == 0 then
  local last = redis.call('HGET', KEYS[1], 'l' .. n)
  if last then redis.call('HSET', KEYS[1], 'e' .. n, last) end
end
local id = string.format('%d', redis.call('HINCRBY', KEYS[1], n, 1))
redis.call('XADD', KEYS[2], '0-' .. id, 'f', ARGV[2])
redis.call('HSET', KEYS[1], 'l' .. n, id)
local cap = tonumber(ARGV[3])
local len = redis.call('XLEN', KEYS[2])
if len > cap then
  local old = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', len - cap)
  redis.call('XTRIM', KEYS[2], 'MAXLEN', cap)
  redis.call('HSET', KEYS[1], 'e' .. n, string.sub(old[#old][1], 3))
end
{FOLLOW_SESSION}
return id
"
    ))
});

/// `allocate`: the next id, no event.
/// KEYS: seq, seq (again: no stream key is touched), session. ARGV: stream number.
static ALLOCATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"
local id = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
{FOLLOW_SESSION}
return string.format('%d', id)
"
    ))
});

/// `after`: `{newest, lost, last, stream exists (1/0), id, frame, id, frame, …}` with the
/// events whose id is greater than the cursor. KEYS: seq, stream. ARGV: stream number, cursor.
static AFTER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local n = ARGV[1]
local m = redis.call('HMGET', KEYS[1], n, 'e' .. n, 'l' .. n)
local out = {m[1] or '0', m[2] or '0', m[3] or '0', tostring(redis.call('EXISTS', KEYS[2]))}
for _, e in ipairs(redis.call('XRANGE', KEYS[2], '(0-' .. ARGV[2], '+')) do
  out[#out + 1] = string.sub(e[1], 3)
  out[#out + 1] = e[2][2]
end
return out
",
    )
});

/// `delete_session`: every stream named in the counters, then the counters.
/// KEYS: seq. ARGV: what stream keys start with.
static DELETE_SESSION: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.find(f, '^%d') then redis.call('DEL', ARGV[1] .. f) end
end
redis.call('DEL', KEYS[1])
return 1
",
    )
});

/// Stream events in Redis.
pub(crate) struct RedisEventLog {
    conn: Conn,
}

impl RedisEventLog {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisEventLog { conn }
    }
}

fn bulk(v: Value, what: &str) -> Result<Vec<u8>, StoreError> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        Value::Int(i) => Ok(i.to_string().into_bytes()),
        _ => Err(bad_reply(what)),
    }
}

impl EventLog for RedisEventLog {
    fn append<'a>(&'a self, key: &'a StreamKey, frame: &'a [u8], capacity: usize) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let mut call = APPEND.key(keys.seq(&key.session));
            call.key(keys.stream(&key.session, key.stream))
                .key(keys.session(&key.session))
                .arg(key.stream)
                .arg(frame)
                .arg(capacity.max(1));
            let id: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            parse_u64(&bulk(id, "event id")?, "event id")
        })
    }

    fn allocate<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let seq = keys.seq(&key.session);
            let mut call = ALLOCATE.key(&seq);
            call.key(&seq).key(keys.session(&key.session)).arg(key.stream);
            let id: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            parse_u64(&bulk(id, "event id")?, "event id")
        })
    }

    fn after<'a>(&'a self, key: &'a StreamKey, cursor: u64) -> StoreFuture<'a, Replay> {
        Box::pin(async move {
            if cursor == u64::MAX {
                // Newer than any id a stream can hand out (and no exclusive range starts there).
                return Ok(Replay::Ahead);
            }
            let keys = &self.conn.keys;
            let mut call = AFTER.key(keys.seq(&key.session));
            call.key(keys.stream(&key.session, key.stream))
                .arg(key.stream)
                .arg(cursor);
            let reply: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            let Value::Array(items) = reply else {
                return Err(bad_reply("event replay"));
            };
            if items.len() < 4 || !items.len().is_multiple_of(2) {
                return Err(bad_reply("event replay"));
            }
            let mut it = items.into_iter();
            let mut number = |what: &str| -> Result<u64, StoreError> {
                parse_u64(&bulk(it.next().unwrap_or_default(), what)?, what)
            };
            let newest = number("newest id")?;
            let mut lost = number("lost id")?;
            let last = number("last event id")?;
            if number("stream exists")? == 0 {
                // The stream key expired with every event it held.
                lost = lost.max(last);
            }
            // The in-memory ring's rule; an unknown stream has newest = lost = 0, so cursor 0
            // replays nothing and any other cursor is ahead, as there.
            if cursor < lost {
                return Ok(Replay::Truncated);
            }
            if cursor > newest {
                return Ok(Replay::Ahead);
            }
            let mut events = Vec::with_capacity(it.len() / 2);
            while let (Some(id), Some(frame)) = (it.next(), it.next()) {
                let id = parse_u64(&bulk(id, "event id")?, "event id")?;
                events.push((id, bulk(frame, "event frame")?));
            }
            Ok(Replay::From(events))
        })
    }

    fn delete_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let mut call = DELETE_SESSION.key(keys.seq(session));
            call.arg(keys.stream_prefix(session));
            let _: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }
}
