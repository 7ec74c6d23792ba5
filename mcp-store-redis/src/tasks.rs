//! [`TaskStore`] on Redis: a JSON string per task and index sets, all under the hash tag
//! `{tasks}` so that the scripts that keep them in step run on one slot.
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `task:<id>` | string | the record (JSON) |
//! | `all` | set | every task id (`count`) |
//! | `owner:<owner>` | set | the ids of one owner (`list`) |
//! | `client:<client>` | set | the ids counted against one client (`count_for_client`, `list_for_client`) |
//! | `expiry` | sorted set | ids by `expires_at_ms` (`expired`) |
//! | `unfinished` | set | ids in `working` or `input_required` (`recover`) |
//! | `index:owner`, `index:client` | hash | id → the owner and client sets it is in |
//!
//! The runtime deletes expired records itself (`expired`, then `delete`), exactly as with the
//! in-memory store, so records read the same until then. A record with a ttl also expires in
//! Redis [`GRACE`] after its expiry time, a backstop for when no instance is left to sweep;
//! `list` and `recover` skip ids whose record is gone, and the next sweep removes them from the
//! indexes.
//!
//! The `client:` sets replaced per-principal sets (`principal:`, `index:principal`), which
//! counted every anonymous caller as one client. A record written before then joins its
//! client's set at its next write; until it does (or expires) it is not counted against the
//! stored-task bound, and the old sets are left for an operator to delete.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_protocol::model::TaskStatus;
use mcp_runtime::store::StoreFuture;
use mcp_runtime::{StoreError, TaskOwner, TaskRecord, TaskStore};
use redis::{Script, Value};

use crate::conn::{Conn, millis, store_error};

/// How long after its expiry time Redis drops a task record that no instance deleted.
pub(crate) const GRACE: Duration = Duration::from_secs(3600);

/// `put`: the record, and every index moved to what it says now.
/// KEYS: task, all, expiry, unfinished, index:owner, index:client, owner set, client set.
/// ARGV: id, json, unfinished (`1`/`0`), expires_at ms or empty, pexpireat ms or empty.
static PUT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local id = ARGV[1]
local oldo = redis.call('HGET', KEYS[5], id)
if oldo and oldo ~= KEYS[7] then redis.call('SREM', oldo, id) end
local oldp = redis.call('HGET', KEYS[6], id)
if oldp and oldp ~= KEYS[8] then redis.call('SREM', oldp, id) end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[5] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[5]) end
redis.call('SADD', KEYS[2], id)
redis.call('HSET', KEYS[5], id, KEYS[7])
redis.call('HSET', KEYS[6], id, KEYS[8])
redis.call('SADD', KEYS[7], id)
redis.call('SADD', KEYS[8], id)
if ARGV[3] == '1' then redis.call('SADD', KEYS[4], id) else redis.call('SREM', KEYS[4], id) end
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[3], ARGV[4], id) else redis.call('ZREM', KEYS[3], id) end
return 1
",
    )
});

/// `delete`: the record and its place in every index.
/// KEYS: task, all, expiry, unfinished, index:owner, index:client. ARGV: id.
static DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local id = ARGV[1]
local o = redis.call('HGET', KEYS[5], id)
if o then redis.call('SREM', o, id) end
local p = redis.call('HGET', KEYS[6], id)
if p then redis.call('SREM', p, id) end
redis.call('HDEL', KEYS[5], id)
redis.call('HDEL', KEYS[6], id)
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
redis.call('SREM', KEYS[4], id)
return 1
",
    )
});

/// The records whose ids a set holds (those still stored).
/// KEYS: the set. ARGV: what task keys start with.
static FETCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local j = redis.call('GET', ARGV[1] .. id)
  if j then out[#out + 1] = j end
end
return out
",
    )
});

/// Task records in Redis.
pub(crate) struct RedisTaskStore {
    conn: Conn,
}

impl RedisTaskStore {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisTaskStore { conn }
    }

    /// The set of one owner's ids. The principal is length-prefixed, so no two owners share a
    /// name whatever characters they hold.
    fn owner_key(&self, owner: &TaskOwner) -> String {
        match owner {
            TaskOwner::Principal(p) => self.conn.keys.tasks(&format!("owner:p:{p}")),
            TaskOwner::Session { principal, session } => self
                .conn
                .keys
                .tasks(&format!("owner:s:{}:{principal}:{session}", principal.len())),
        }
    }

    /// The set of the ids counted against one client (`TaskRecord::counted_as`).
    fn client_key(&self, client: &str) -> String {
        self.conn.keys.tasks(&format!("client:{client}"))
    }

    /// The records of the ids in one set.
    async fn fetch(&self, set: String) -> Result<Vec<TaskRecord>, StoreError> {
        let mut call = FETCH.key(set);
        call.arg(self.conn.keys.task_prefix());
        let reply: Vec<Vec<u8>> = call
            .invoke_async(&mut self.conn.commands())
            .await
            .map_err(store_error)?;
        reply.iter().map(|j| decode(j)).collect()
    }
}

fn decode(json: &[u8]) -> Result<TaskRecord, StoreError> {
    serde_json::from_slice(json).map_err(|e| StoreError::Backend(format!("a stored task does not decode: {e}")))
}

fn unfinished(status: TaskStatus) -> bool {
    matches!(status, TaskStatus::Working | TaskStatus::InputRequired)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl TaskStore for RedisTaskStore {
    fn get<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let json: Option<Vec<u8>> = redis::cmd("GET")
                .arg(self.conn.keys.task(task_id))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            json.as_deref().map(decode).transpose()
        })
    }

    fn put(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let json =
                serde_json::to_vec(&record).map_err(|e| StoreError::Backend(format!("a task does not encode: {e}")))?;
            let keys = &self.conn.keys;
            let expires = record.expires_at_ms();
            let pexpireat = expires.map(|e| e.max(now_ms()).saturating_add(millis(GRACE)));
            let mut call = PUT.key(keys.task(&record.task_id));
            call.key(keys.tasks("all"))
                .key(keys.tasks("expiry"))
                .key(keys.tasks("unfinished"))
                .key(keys.tasks("index:owner"))
                .key(keys.tasks("index:client"))
                .key(self.owner_key(&record.owner))
                .key(self.client_key(&record.counted_as()))
                .arg(&record.task_id)
                .arg(json)
                .arg(if unfinished(record.status) { "1" } else { "0" })
                .arg(expires.map(|e| e.to_string()).unwrap_or_default())
                .arg(pexpireat.map(|e| e.to_string()).unwrap_or_default());
            let _: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn delete<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let mut call = DELETE.key(keys.task(task_id));
            call.key(keys.tasks("all"))
                .key(keys.tasks("expiry"))
                .key(keys.tasks("unfinished"))
                .key(keys.tasks("index:owner"))
                .key(keys.tasks("index:client"))
                .arg(task_id);
            let _: Value = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn list<'a>(&'a self, owner: &'a TaskOwner) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move {
            let mut records = self.fetch(self.owner_key(owner)).await?;
            records.retain(|r| r.owner == *owner);
            Ok(records)
        })
    }

    fn count(&self) -> StoreFuture<'_, usize> {
        Box::pin(async move {
            redis::cmd("SCARD")
                .arg(self.conn.keys.tasks("all"))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)
        })
    }

    fn count_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, usize> {
        Box::pin(async move {
            redis::cmd("SCARD")
                .arg(self.client_key(client))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)
        })
    }

    fn list_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move {
            let mut records = self.fetch(self.client_key(client)).await?;
            records.retain(|r| r.counted_as() == client);
            Ok(records)
        })
    }

    fn expired(&self, now_ms: u64) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move {
            redis::cmd("ZRANGEBYSCORE")
                .arg(self.conn.keys.tasks("expiry"))
                .arg("-inf")
                .arg(now_ms)
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)
        })
    }

    /// Every unfinished record, whichever instance runs it: the runtime keeps those whose
    /// instance is gone.
    fn recover(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(async move {
            let mut records = self.fetch(self.conn.keys.tasks("unfinished")).await?;
            records.retain(|r| unfinished(r.status));
            Ok(records)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_statuses() {
        assert!(unfinished(TaskStatus::Working));
        assert!(unfinished(TaskStatus::InputRequired));
        assert!(!unfinished(TaskStatus::Completed));
        assert!(!unfinished(TaskStatus::Failed));
        assert!(!unfinished(TaskStatus::Cancelled));
    }
}
