//! [`TaskStore`] on Redis: a JSON string per task, spread over [`TASK_SHARDS`] shards by task
//! id, each shard with its own indexes under its own hash tag `{tasks:<shard>}`; and a set per
//! owner and per client, each in a slot of its own. On a Redis Cluster the task load spreads
//! over every primary instead of one slot carrying it all.
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `{tasks:<shard>}:task:<id>` | string | the record (JSON) |
//! | `{tasks:<shard>}:all` | set | the shard's task ids (`count`) |
//! | `{tasks:<shard>}:expiry` | sorted set | the shard's ids by `expires_at_ms` (`expired`) |
//! | `{tasks:<shard>}:unfinished` | set | the shard's ids in `working` or `input_required` (`recover`) |
//! | `{tasks:<shard>}:index:owner`, `…:index:client` | hash | id → the owner and client sets it is in |
//! | `{tasks-of:o:<owner>}` | set | the ids of one owner (`list`) |
//! | `{tasks-of:c:<client>}` | set | the ids counted against one client (`count_for_client`, `list_for_client`) |
//!
//! A write stores the record and its shard's indexes in one script (one slot), then moves the
//! id to its owner's and client's sets (out of those it was in, when a record was replaced under
//! another owner or client). A failure between the two leaves a record that its owner's list
//! does not show yet; it still expires and is swept. A delete removes the record and its shard's entries in one script, which names the
//! owner and client sets to remove the id from next.
//!
//! The runtime deletes expired records itself (`expired`, then `delete`), exactly as with the
//! in-memory store, so records read the same until then. A record with a ttl also expires in
//! Redis [`GRACE`] after its expiry time, a backstop for when no instance is left to sweep;
//! `list` and `recover` skip ids whose record is gone, and the next sweep removes them from the
//! indexes.
//!
//! **Upgrading.** Records were all under one hash tag `{tasks}` before the shards; this store
//! does not read those (tasks live an hour by default): drain the instances, or let the old
//! records expire, when upgrading.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_protocol::model::TaskStatus;
use mcp_runtime::store::StoreFuture;
use mcp_runtime::{StoreError, TaskOwner, TaskRecord, TaskStore};
use redis::{Script, Value};

use crate::conn::{Conn, TASK_SHARDS, millis, store_error, task_shard};

/// How long after its expiry time Redis drops a task record that no instance deleted.
pub(crate) const GRACE: Duration = Duration::from_secs(3600);

/// `put`: the record, and its shard's indexes moved to what it says now. Returns the owner and
/// client sets the id was in before, when they are not the record's now (else empty strings).
/// KEYS: task, all, expiry, unfinished, index:owner, index:client (the shard's).
/// ARGV: id, json, unfinished (`1`/`0`), expires_at ms or empty, pexpireat ms or empty, owner
/// set key, client set key.
static PUT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local id = ARGV[1]
local oldo = redis.call('HGET', KEYS[5], id) or ''
local oldc = redis.call('HGET', KEYS[6], id) or ''
if oldo == ARGV[6] then oldo = '' end
if oldc == ARGV[7] then oldc = '' end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[5] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[5]) end
redis.call('SADD', KEYS[2], id)
redis.call('HSET', KEYS[5], id, ARGV[6])
redis.call('HSET', KEYS[6], id, ARGV[7])
if ARGV[3] == '1' then redis.call('SADD', KEYS[4], id) else redis.call('SREM', KEYS[4], id) end
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[3], ARGV[4], id) else redis.call('ZREM', KEYS[3], id) end
return {oldo, oldc}
",
    )
});

/// `delete`: the record and its place in its shard's indexes. Returns the owner and client
/// sets it was in (empty strings when it was not known).
/// KEYS: task, all, expiry, unfinished, index:owner, index:client (the shard's). ARGV: id.
static DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local id = ARGV[1]
local o = redis.call('HGET', KEYS[5], id) or ''
local c = redis.call('HGET', KEYS[6], id) or ''
redis.call('HDEL', KEYS[5], id)
redis.call('HDEL', KEYS[6], id)
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
redis.call('SREM', KEYS[4], id)
return {o, c}
",
    )
});

/// The records whose ids a shard's set holds (those still stored).
/// KEYS: the set. ARGV: what the shard's task keys start with.
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
            TaskOwner::Principal(p) => self.conn.keys.tasks_of(&format!("o:p:{p}")),
            TaskOwner::Session { principal, session } => self
                .conn
                .keys
                .tasks_of(&format!("o:s:{}:{principal}:{session}", principal.len())),
        }
    }

    /// The set of the ids counted against one client (`TaskRecord::counted_as`).
    fn client_key(&self, client: &str) -> String {
        self.conn.keys.tasks_of(&format!("c:{client}"))
    }

    /// The records of the ids in one shard's set (one script on the shard's slot).
    async fn fetch_shard(&self, shard: u8, set: &str) -> Result<Vec<TaskRecord>, StoreError> {
        let mut call = FETCH.key(self.conn.keys.tasks(shard, set));
        call.arg(self.conn.keys.task_prefix(shard));
        let reply: Vec<Vec<u8>> = call
            .invoke_async(&mut self.conn.commands())
            .await
            .map_err(store_error)?;
        reply.iter().map(|j| decode(j)).collect()
    }

    /// The records of the ids in an owner's or client's set: its members, then each record from
    /// its shard (concurrently; those gone are skipped).
    async fn fetch_set(&self, set: String) -> Result<Vec<TaskRecord>, StoreError> {
        let ids: Vec<String> = redis::cmd("SMEMBERS")
            .arg(set)
            .query_async(&mut self.conn.commands())
            .await
            .map_err(store_error)?;
        let reads = ids.iter().map(|id| async move {
            redis::cmd("GET")
                .arg(self.conn.keys.task(id))
                .query_async::<Option<Vec<u8>>>(&mut self.conn.commands())
                .await
                .map_err(store_error)
        });
        let mut records = Vec::with_capacity(ids.len());
        for json in futures::future::try_join_all(reads).await?.into_iter().flatten() {
            records.push(decode(&json)?);
        }
        Ok(records)
    }

    /// A count over every shard's set `set`.
    async fn count_shards(&self, set: &str) -> Result<usize, StoreError> {
        let mut n = 0;
        for shard in 0..TASK_SHARDS {
            let here: usize = redis::cmd("SCARD")
                .arg(self.conn.keys.tasks(shard, set))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            n += here;
        }
        Ok(n)
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
            let shard = task_shard(&record.task_id);
            let expires = record.expires_at_ms();
            let pexpireat = expires.map(|e| e.max(now_ms()).saturating_add(millis(GRACE)));
            let (owner, client) = (self.owner_key(&record.owner), self.client_key(&record.counted_as()));
            let mut call = PUT.key(keys.task(&record.task_id));
            call.key(keys.tasks(shard, "all"))
                .key(keys.tasks(shard, "expiry"))
                .key(keys.tasks(shard, "unfinished"))
                .key(keys.tasks(shard, "index:owner"))
                .key(keys.tasks(shard, "index:client"))
                .arg(&record.task_id)
                .arg(json)
                .arg(if unfinished(record.status) { "1" } else { "0" })
                .arg(expires.map(|e| e.to_string()).unwrap_or_default())
                .arg(pexpireat.map(|e| e.to_string()).unwrap_or_default())
                .arg(&owner)
                .arg(&client);
            let left: Vec<String> = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            // The sets it left (a record replaced under another owner or client), then the
            // sets it is in (adding it again is a no-op).
            for (command, set) in left
                .into_iter()
                .filter(|s| !s.is_empty())
                .map(|s| ("SREM", s))
                .chain([("SADD", owner), ("SADD", client)])
            {
                let _: Value = redis::cmd(command)
                    .arg(set)
                    .arg(&record.task_id)
                    .query_async(&mut self.conn.commands())
                    .await
                    .map_err(store_error)?;
            }
            Ok(())
        })
    }

    fn delete<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let keys = &self.conn.keys;
            let shard = task_shard(task_id);
            let mut call = DELETE.key(keys.task(task_id));
            call.key(keys.tasks(shard, "all"))
                .key(keys.tasks(shard, "expiry"))
                .key(keys.tasks(shard, "unfinished"))
                .key(keys.tasks(shard, "index:owner"))
                .key(keys.tasks(shard, "index:client"))
                .arg(task_id);
            let sets: Vec<String> = call
                .invoke_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            for set in sets.into_iter().filter(|s| !s.is_empty()) {
                let _: Value = redis::cmd("SREM")
                    .arg(set)
                    .arg(task_id)
                    .query_async(&mut self.conn.commands())
                    .await
                    .map_err(store_error)?;
            }
            Ok(())
        })
    }

    fn list<'a>(&'a self, owner: &'a TaskOwner) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move {
            let mut records = self.fetch_set(self.owner_key(owner)).await?;
            records.retain(|r| r.owner == *owner);
            Ok(records)
        })
    }

    fn count(&self) -> StoreFuture<'_, usize> {
        Box::pin(self.count_shards("all"))
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
            let mut records = self.fetch_set(self.client_key(client)).await?;
            records.retain(|r| r.counted_as() == client);
            Ok(records)
        })
    }

    fn expired(&self, now_ms: u64) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move {
            let mut ids = Vec::new();
            for shard in 0..TASK_SHARDS {
                let here: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                    .arg(self.conn.keys.tasks(shard, "expiry"))
                    .arg("-inf")
                    .arg(now_ms)
                    .query_async(&mut self.conn.commands())
                    .await
                    .map_err(store_error)?;
                ids.extend(here);
            }
            Ok(ids)
        })
    }

    /// Every unfinished record, whichever instance runs it: the runtime keeps those whose
    /// instance is gone.
    fn recover(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(async move {
            let mut records = Vec::new();
            for shard in 0..TASK_SHARDS {
                records.extend(self.fetch_shard(shard, "unfinished").await?);
            }
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
