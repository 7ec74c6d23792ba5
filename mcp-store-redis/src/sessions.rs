//! [`SessionRecords`] on Redis: one hash per session, expiring with `PEXPIRE`.
//!
//! The hash holds the record as created (field `record`, JSON) and the fields later requests
//! change, each on its own so that two instances changing one session never overwrite each
//! other: `logLevel`, `initialized`, `tasks`, one field `s:<uri>` per resource subscription and
//! one field `h:<instance>` per instance holding a replica.

use std::collections::BTreeSet;
use std::sync::LazyLock;
use std::time::Duration;

use mcp_protocol::model::LoggingLevel;
use mcp_runtime::StoreError;
use mcp_runtime::store::{SessionField, SessionRecord, SessionRecords, StoreFuture};
use redis::{Script, Value};

use crate::conn::{Conn, bad_reply, millis, store_error};

/// The field a subscription is stored in starts with this.
const SUBSCRIPTION: &str = "s:";
/// The field an instance holding a replica is stored in starts with this.
const HOLDER: &str = "h:";

/// `load`: the record's fields, or nil; slides the expiry of the record and of the session's
/// event counters (the stream keys take the record's lifetime when appended to).
/// KEYS: session, seq. ARGV: ttl ms.
static LOAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return fields
",
    )
});

/// `hold`: `load`, with changes applied first (the instance named among the holders, and those
/// of the request that loads), each as `op`, `field`, `value` (`op` as in `update`).
/// KEYS: session, seq. ARGV: ttl ms, then the changes' triples.
static HOLD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
for i = 2, #ARGV, 3 do
  if ARGV[i] == 'del' then
    redis.call('HDEL', KEYS[1], ARGV[i + 1])
  else
    redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[i + 2])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return redis.call('HGETALL', KEYS[1])
",
    )
});

/// `delete`: the record's fields (or nil), the record deleted, and every stream of the session
/// named in its event counters deleted with the counters (as `EventLog::delete_session` does).
/// KEYS: session, seq. ARGV: what stream keys start with.
static DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local fields = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  if string.find(f, '^%d') then redis.call('DEL', ARGV[1] .. f) end
end
redis.call('DEL', KEYS[2])
if #fields == 0 then return false end
return fields
",
    )
});

/// `touch`: slides the expiry of a live record and of its event counters; 1 when the record
/// exists, 0 when it does not. KEYS: session, seq. ARGV: ttl ms.
static TOUCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local live = redis.call('PEXPIRE', KEYS[1], ARGV[1])
if live == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
return live
",
    )
});

/// `update`: sets (`ARGV[1]` = `set`) or removes (`del`) one field of a live record; nothing
/// when the record is absent. KEYS: session. ARGV: op, field, value.
static UPDATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == 'del' then
  redis.call('HDEL', KEYS[1], ARGV[2])
else
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
end
return 1
",
    )
});

/// Session records in Redis.
pub(crate) struct RedisSessionRecords {
    conn: Conn,
}

impl RedisSessionRecords {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisSessionRecords { conn }
    }
}

/// How a log level is spelled in the hash (as on the wire: `info`, `debug`, …).
fn level_name(level: LoggingLevel) -> Result<String, StoreError> {
    match serde_json::to_value(level) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::Backend("cannot encode a log level".into())),
    }
}

fn parse_level(bytes: &[u8]) -> Result<LoggingLevel, String> {
    let s = std::str::from_utf8(bytes).map_err(|_| "its logLevel is not text".to_owned())?;
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| format!("its logLevel {s:?} is unknown"))
}

/// How a change is written to the hash: `set` a field to a value, or `del` it.
fn change_of(field: &SessionField) -> Result<(&'static str, String, String), StoreError> {
    Ok(match field {
        SessionField::LogLevel(l) => ("set", "logLevel".to_owned(), level_name(*l)?),
        SessionField::Initialized => ("set", "initialized".to_owned(), "1".to_owned()),
        SessionField::Subscribe(uri) => ("set", format!("{SUBSCRIPTION}{uri}"), "1".to_owned()),
        SessionField::Unsubscribe(uri) => ("del", format!("{SUBSCRIPTION}{uri}"), String::new()),
        SessionField::Holder(instance) => ("set", format!("{HOLDER}{instance}"), "1".to_owned()),
        SessionField::Tasks => ("set", "tasks".to_owned(), "1".to_owned()),
    })
}

/// Rebuilds a record from the flat `HGETALL` reply; why it cannot be, if it cannot (a record
/// written by something else, or damaged: the session is then answered as gone).
fn decode(fields: Vec<Vec<u8>>) -> Result<SessionRecord, String> {
    if !fields.len().is_multiple_of(2) {
        return Err("its fields are not name and value pairs".into());
    }
    let mut record: Option<SessionRecord> = None;
    let mut level = None;
    let mut initialized = false;
    let mut tasks = false;
    let mut subscriptions = BTreeSet::new();
    let mut holders = BTreeSet::new();
    let mut it = fields.into_iter();
    while let (Some(name), Some(value)) = (it.next(), it.next()) {
        match name.as_slice() {
            b"record" => {
                record = Some(serde_json::from_slice(&value).map_err(|e| format!("its record does not decode: {e}"))?);
            }
            b"logLevel" => level = Some(parse_level(&value)?),
            b"initialized" => initialized = value == b"1",
            b"tasks" => tasks = value == b"1",
            n if n.starts_with(SUBSCRIPTION.as_bytes()) => {
                let uri = std::str::from_utf8(&n[SUBSCRIPTION.len()..])
                    .map_err(|_| "a subscription is not text".to_owned())?;
                subscriptions.insert(uri.to_owned());
            }
            n if n.starts_with(HOLDER.as_bytes()) => {
                let instance =
                    std::str::from_utf8(&n[HOLDER.len()..]).map_err(|_| "a holder is not text".to_owned())?;
                holders.insert(instance.to_owned());
            }
            _ => {}
        }
    }
    let mut record = record.ok_or_else(|| "it has no record".to_owned())?;
    if let Some(level) = level {
        record.log_level = level;
    }
    record.initialized = initialized;
    record.subscriptions = subscriptions;
    record.holders = holders;
    record.tasks = tasks;
    Ok(record)
}

impl SessionRecords for RedisSessionRecords {
    fn create<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.conn.keys.session(&record.id);
            let json = serde_json::to_vec(record)
                .map_err(|e| StoreError::Backend(format!("a session does not encode: {e}")))?;
            let mut hset = redis::cmd("HSET");
            hset.arg(&key)
                .arg("record")
                .arg(json)
                .arg("logLevel")
                .arg(level_name(record.log_level)?)
                .arg("initialized")
                .arg(if record.initialized { "1" } else { "0" })
                .arg("tasks")
                .arg(if record.tasks { "1" } else { "0" });
            for uri in &record.subscriptions {
                hset.arg(format!("{SUBSCRIPTION}{uri}")).arg("1");
            }
            for instance in &record.holders {
                hset.arg(format!("{HOLDER}{instance}")).arg("1");
            }
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("DEL")
                .arg(&key)
                .ignore()
                .add_command(hset)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(millis(ttl))
                .ignore();
            pipe.exec_async(&mut self.conn.commands()).await.map_err(store_error)
        })
    }

    fn load<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let mut call = LOAD.key(keys.session(id));
            call.key(keys.seq(id)).arg(millis(ttl));
            let reply: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            record_of(id, reply)
        })
    }

    fn hold<'a>(
        &'a self,
        id: &'a str,
        instance: &'a str,
        ttl: Duration,
        changes: &'a [SessionField],
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let mut call = HOLD.key(keys.session(id));
            call.key(keys.seq(id)).arg(millis(ttl));
            for change in std::iter::once(&SessionField::Holder(instance.to_owned())).chain(changes) {
                let (op, name, value) = change_of(change)?;
                call.arg(op).arg(name).arg(value);
            }
            let reply: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            record_of(id, reply)
        })
    }

    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let mut call = TOUCH.key(keys.session(id));
            call.key(keys.seq(id)).arg(millis(ttl));
            let live: i64 = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(live == 1)
        })
    }

    fn update<'a>(&'a self, id: &'a str, field: &'a SessionField) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (op, name, value) = change_of(field)?;
            let mut call = UPDATE.key(self.conn.keys.session(id));
            call.arg(op).arg(name).arg(value);
            let _: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let mut call = DELETE.key(keys.session(id));
            call.key(keys.seq(id)).arg(keys.stream_prefix(id));
            let reply: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            record_of(id, reply)
        })
    }
}

/// The record in a script's reply: its `HGETALL` fields, or nil when there was none. A record
/// that does not decode is answered as absent (and logged), not as an outage: answering 503
/// would have the client retry for the session's whole life; gone, it starts a new one.
fn record_of(id: &str, reply: Value) -> Result<Option<SessionRecord>, StoreError> {
    match reply {
        Value::Nil | Value::Boolean(false) => Ok(None),
        Value::Array(items) => {
            let fields = items
                .into_iter()
                .map(|v| match v {
                    Value::BulkString(b) => Ok(b),
                    _ => Err(bad_reply("session field")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            match decode(fields) {
                Ok(record) => Ok(Some(record)),
                Err(why) => {
                    tracing::warn!(session = %id, reason = %why, "a stored session cannot be read; answered as gone");
                    Ok(None)
                }
            }
        }
        _ => Err(bad_reply("session record")),
    }
}
