//! The Events extension's [`OccurrenceLog`] on Redis (feature `events`): every instance of a
//! server appends to and reads one log per event type, so a cursor one instance handed out
//! resumes on any other, and a long poll or a push stream on one wakes for an occurrence another
//! emitted.
//!
//! - `<prefix>:{ev.<type>}:meta` (a hash): the log's `epoch` (drawn by the first instance that
//!   touches the type, and kept: cursors stay valid across restarts of every instance), `n` the
//!   newest position handed out, `e` the highest position lost (trimmed by the retention, or
//!   gone with the stream key).
//! - `<prefix>:{ev.<type>}:log` (a Redis stream): the entries, ids `0-<position>` (positions
//!   are contiguous, so a read knows exactly whether entries after a cursor were lost), fields
//!   `r` (the record, [`Record::to_stored`]) and `t` (when it was appended, ms).
//! - Both keys share the hash tag `{ev.<type>}`: a Redis Cluster keeps them on one slot, and one
//!   script appends (position, entry, trimming) or reads (trimming, head, losses, entries)
//!   atomically.
//! - Waking: an append wakes this process's watchers at once; a task polls the head of each
//!   type someone here watches every [`WAKE_POLL`], so an append by another instance wakes them
//!   within that.
//!
//! If Redis forgets the log (a flush, a failover without persistence), a new epoch is drawn:
//! every cursor of the old one reads from now with `truncated: true`, never an error.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use mcp_events::log::{Entry, OccurrenceLog, Record, Retention, Slice, Start};
use mcp_protocol::events::cursor::Position;
use mcp_runtime::store::StoreFuture;
use redis::{Script, Value};
use tokio::sync::watch;

use crate::conn::{Conn, bad_reply, millis, parse_u64, store_error};

/// How often the heads of the watched types are read (another instance's appends wake this
/// one's watchers within it).
pub const WAKE_POLL: Duration = Duration::from_millis(200);

/// The meta hash's epoch, drawn by whoever comes first (`ARGV[5]`), and the retention's trim:
/// at most `ARGV[2]` entries, none appended before `ARGV[3] - ARGV[4]` ms; the highest position
/// dropped goes to `e`. A stream key gone while the meta knows positions lost them all.
/// KEYS: meta, stream.
const PREAMBLE: &str = r"
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then
  epoch = ARGV[5]
  redis.call('HSET', KEYS[1], 'epoch', epoch)
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local n = redis.call('HGET', KEYS[1], 'n')
  if n then redis.call('HSET', KEYS[1], 'e', n) end
end
local function trim()
  local cap = tonumber(ARGV[2])
  local floor = tonumber(ARGV[3]) - tonumber(ARGV[4])
  local len = redis.call('XLEN', KEYS[2])
  local over = math.max(len - cap, 0)
  local scan = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', over + 64)
  local lost = nil
  for i = 1, #scan do
    local at = nil
    local fields = scan[i][2]
    for j = 1, #fields, 2 do
      if fields[j] == 't' then at = tonumber(fields[j + 1]) end
    end
    if i <= over or (at and at < floor) then lost = scan[i][1] else break end
  end
  if lost then
    local n = tonumber(string.sub(lost, 3))
    redis.call('XTRIM', KEYS[2], 'MINID', string.format('0-%d', n + 1))
    redis.call('HSET', KEYS[1], 'e', string.format('%d', n))
  end
end
";

/// Appends `ARGV[1]` at `ARGV[3]` ms; answers `{epoch, position}`. ARGV as [`PREAMBLE`].
static APPEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PREAMBLE}
local id = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('XADD', KEYS[2], string.format('0-%d', id), 'r', ARGV[1], 't', ARGV[3])
trim()
return {{epoch, string.format('%d', id)}}
"
    ))
});

/// Reads up to `ARGV[7]` entries after position `ARGV[6]` (none when empty); answers
/// `{epoch, head, lost, entries}`. ARGV 1–5 as [`PREAMBLE`] (`ARGV[1]` unused).
static READ: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{PREAMBLE}
trim()
local head = redis.call('HGET', KEYS[1], 'n') or '0'
local lost = redis.call('HGET', KEYS[1], 'e') or '0'
local entries = {{}}
if ARGV[6] ~= '' then
  entries = redis.call('XRANGE', KEYS[2], '(0-' .. ARGV[6], '+', 'COUNT', ARGV[7])
end
return {{epoch, head, lost, entries}}
"
    ))
});

/// The occurrence log of every instance sharing a Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisOccurrences {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Conn,
    retention: Retention,
    /// The watchers of each type in this process, and the head last seen.
    watched: Mutex<HashMap<String, (watch::Sender<u64>, u64)>>,
    /// Whether the task that polls the watched heads runs.
    polling: Mutex<bool>,
}

impl std::fmt::Debug for RedisOccurrences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOccurrences")
            .field("retention", &self.inner.retention)
            .finish_non_exhaustive()
    }
}

impl RedisOccurrences {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisOccurrences {
            inner: Arc::new(Inner {
                conn,
                retention: Retention::default(),
                watched: Mutex::new(HashMap::new()),
                polling: Mutex::new(false),
            }),
        }
    }

    /// The same log, keeping entries as `retention` says (default: 1,000 entries and 10
    /// minutes per type). Every instance should be given the same.
    pub fn with_retention(self, retention: Retention) -> Self {
        RedisOccurrences {
            inner: Arc::new(Inner {
                conn: self.inner.conn.clone(),
                retention,
                watched: Mutex::new(HashMap::new()),
                polling: Mutex::new(false),
            }),
        }
    }

    /// The script's shared arguments: the record (or nothing), the retention, now, a fresh
    /// epoch.
    fn prepare<'s>(&self, script: &'s Script, name: &str, record: String) -> redis::ScriptInvocation<'s> {
        let keys = &self.inner.conn.keys;
        let mut invocation = script.prepare_invoke();
        invocation
            .key(keys.occurrences_meta(name))
            .key(keys.occurrences(name))
            .arg(record)
            .arg(self.inner.retention.max_entries.max(1))
            .arg(now_ms())
            .arg(millis(self.inner.retention.max_age))
            .arg(fresh_epoch());
        invocation
    }

    /// Wakes this process's watchers of `name` when its head moved past what they saw.
    fn wake(&self, name: &str, head: u64) {
        wake(&self.inner, name, head);
    }
}

fn wake(inner: &Inner, name: &str, head: u64) {
    let mut watched = inner.watched.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((tx, seen)) = watched.get_mut(name)
        && head > *seen
    {
        *seen = head;
        tx.send_replace(head);
    }
}

/// Polls the heads of the types watched here, while anyone watches and the log lives.
async fn poll_heads(inner: Weak<Inner>) {
    let mut tick = tokio::time::interval(WAKE_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let names: Vec<String> = {
            let mut watched = inner.watched.lock().unwrap_or_else(|e| e.into_inner());
            watched.retain(|_, (tx, _)| tx.receiver_count() > 0);
            if watched.is_empty() {
                *inner.polling.lock().unwrap_or_else(|e| e.into_inner()) = false;
                return;
            }
            watched.keys().cloned().collect()
        };
        for name in names {
            let head: Result<Option<String>, _> = redis::cmd("HGET")
                .arg(inner.conn.keys.occurrences_meta(&name))
                .arg("n")
                .query_async(&mut inner.conn.commands())
                .await;
            match head {
                Ok(Some(head)) => wake(&inner, &name, head.parse().unwrap_or(0)),
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "the occurrence log's head could not be read"),
            }
        }
    }
}

impl OccurrenceLog for RedisOccurrences {
    fn append<'a>(&'a self, name: &'a str, record: Record) -> StoreFuture<'a, Position> {
        Box::pin(async move {
            let reply: Vec<String> = self
                .prepare(&APPEND, name, record.to_stored())
                .invoke_async(&mut self.inner.conn.commands())
                .await
                .map_err(store_error)?;
            let [_, position] = reply.as_slice() else {
                return Err(bad_reply("append: {epoch, position}"));
            };
            let position = parse_u64(position.as_bytes(), "append: the position")?;
            self.wake(name, position);
            Ok(Position::new(0, position))
        })
    }

    fn read<'a>(&'a self, name: &'a str, from: Start, limit: usize) -> StoreFuture<'a, Slice> {
        Box::pin(async move {
            let after = match from {
                Start::Cursor(c) if c.position.hi == 0 => Some(c),
                _ => None,
            };
            let mut invocation = self.prepare(&READ, name, String::new());
            invocation
                .arg(after.map_or(String::new(), |c| c.position.lo.to_string()))
                .arg(limit.max(1));
            let reply: Value = invocation
                .invoke_async(&mut self.inner.conn.commands())
                .await
                .map_err(store_error)?;
            let (epoch, head, lost, entries) = parse_read(reply)?;
            let mut slice = Slice {
                epoch,
                entries: Vec::new(),
                head: Position::new(0, head),
                gap: false,
            };
            match (from, after) {
                (Start::Now, _) => {}
                // Another epoch's cursor, one from the future, or not one of this log's: from now.
                (_, Some(c)) if c.epoch == epoch && c.position.lo <= head => {
                    slice.gap = lost > c.position.lo;
                    slice.entries = entries.into_iter().take(limit).collect();
                }
                _ => slice.gap = true,
            }
            Ok(slice)
        })
    }

    fn watch(&self, name: &str) -> watch::Receiver<u64> {
        let rx = {
            let mut watched = self.inner.watched.lock().unwrap_or_else(|e| e.into_inner());
            let (tx, _) = watched
                .entry(name.to_owned())
                .or_insert_with(|| (watch::Sender::new(0), 0));
            tx.subscribe()
        };
        let mut polling = self.inner.polling.lock().unwrap_or_else(|e| e.into_inner());
        if !*polling && tokio::runtime::Handle::try_current().is_ok() {
            *polling = true;
            mcp_runtime::background::spawn(poll_heads(Arc::downgrade(&self.inner)));
        }
        rx
    }
}

/// `{epoch, head, lost, entries}` of the read script, the entries decoded (one that does not
/// decode is skipped with a warning).
fn parse_read(reply: Value) -> Result<(u64, u64, u64, Vec<Entry>), mcp_runtime::StoreError> {
    let Value::Array(parts) = reply else {
        return Err(bad_reply("read: an array"));
    };
    let [epoch, head, lost, entries] = <[Value; 4]>::try_from(parts).map_err(|_| bad_reply("read: four parts"))?;
    let number = |v: Value, what| match v {
        Value::BulkString(b) => parse_u64(&b, what),
        Value::SimpleString(s) => parse_u64(s.as_bytes(), what),
        Value::Int(i) => u64::try_from(i).map_err(|_| bad_reply(what)),
        _ => Err(bad_reply(what)),
    };
    let (epoch, head, lost) = (
        number(epoch, "read: the epoch")?,
        number(head, "read: the head")?,
        number(lost, "read: the loss")?,
    );
    let Value::Array(raw) = entries else {
        return Err(bad_reply("read: the entries"));
    };
    let mut decoded = Vec::with_capacity(raw.len());
    for entry in raw {
        let Value::Array(parts) = entry else {
            return Err(bad_reply("read: an entry"));
        };
        let [id, fields] = <[Value; 2]>::try_from(parts).map_err(|_| bad_reply("read: an entry's id and fields"))?;
        let Value::BulkString(id) = id else {
            return Err(bad_reply("read: an entry's id"));
        };
        let position = parse_u64(id.strip_prefix(b"0-").unwrap_or(&id), "read: an entry's position")?;
        let record = match fields {
            Value::Array(fields) => fields
                .chunks(2)
                .find_map(|kv| match kv {
                    [Value::BulkString(k), Value::BulkString(v)] if k == b"r" => std::str::from_utf8(v).ok(),
                    _ => None,
                })
                .and_then(Record::from_stored),
            _ => None,
        };
        match record {
            Some(record) => decoded.push(Entry {
                position: Position::new(0, position),
                record,
            }),
            None => tracing::warn!(position, "an occurrence log entry does not decode; skipped"),
        }
    }
    Ok((epoch, head, lost, decoded))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A random epoch, in case this instance is the first to touch a type (decimal: Lua compares it
/// as a string, and a number this large would lose digits there).
fn fresh_epoch() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap_or_default();
    // Never 0, so that an epoch is always told from a missing one.
    u64::from_be_bytes(bytes).max(1).to_string()
}
