//! [`MailboxRecords`] on Redis: one key per open mailbox, the record as JSON, `SET … PX ttl`.

use std::time::Duration;

use mcp_runtime::StoreError;
use mcp_runtime::store::{MailboxRecord, MailboxRecords, StoreFuture};

use crate::conn::{Conn, millis, store_error};

/// Mailbox records in Redis.
pub(crate) struct RedisMailboxRecords {
    conn: Conn,
}

impl RedisMailboxRecords {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisMailboxRecords { conn }
    }
}

impl MailboxRecords for RedisMailboxRecords {
    fn open<'a>(&'a self, record: &'a MailboxRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_string(record).map_err(|e| StoreError::Backend(e.to_string()))?;
            let _: redis::Value = redis::cmd("SET")
                .arg(self.conn.keys.mailbox(&record.id))
                .arg(json)
                .arg("PX")
                .arg(millis(ttl).max(1))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<MailboxRecord>> {
        Box::pin(async move {
            let json: Option<String> = redis::cmd("GET")
                .arg(self.conn.keys.mailbox(id))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(json.and_then(|j| match serde_json::from_str(&j) {
                Ok(r) => Some(r),
                Err(e) => {
                    tracing::warn!(mailbox = id, error = %e, "stored mailbox record does not decode: treated as gone");
                    None
                }
            }))
        })
    }

    fn refresh<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let n: i64 = redis::cmd("PEXPIRE")
                .arg(self.conn.keys.mailbox(id))
                .arg(millis(ttl).max(1))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(n == 1)
        })
    }

    fn close<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = redis::cmd("DEL")
                .arg(self.conn.keys.mailbox(id))
                .query_async(&mut self.conn.commands())
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }
}
