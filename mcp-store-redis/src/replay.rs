//! [`ReplayCache`] on Redis: the DPoP proofs already used (RFC 9449 §11.1), one key per proof,
//! set only if absent and expiring with the proof, so that a proof is single-use across every
//! instance sharing the Redis.

use std::time::Duration;

use mcp_auth::{BoxFuture, ReplayCache, ReplayError};
use redis::Value;

use crate::conn::{Conn, millis};

/// The DPoP replay cache of a [`RedisStore`](crate::RedisStore), from
/// [`RedisStore::replay_cache`](crate::RedisStore::replay_cache): `SET <prefix>:dpop:<key> 1 NX
/// PX <ttl>`, one round trip per accepted proof. Cheap to clone (it shares the store's
/// connection).
///
/// When Redis cannot be reached the cache answers [`ReplayError::Unavailable`] and the bearer
/// provider refuses the proof with a 503: it fails closed rather than accept a proof it could
/// not record.
#[derive(Clone)]
pub struct RedisReplayCache {
    conn: Conn,
}

impl std::fmt::Debug for RedisReplayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisReplayCache")
    }
}

impl RedisReplayCache {
    pub(crate) fn new(conn: Conn) -> Self {
        RedisReplayCache { conn }
    }
}

impl ReplayCache for RedisReplayCache {
    fn check_and_insert<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, ReplayError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.conn.keys.replay(key))
                .arg(1)
                .arg("NX")
                .arg("PX")
                .arg(millis(ttl).max(1));
            let reply: Value = cmd
                .query_async(&mut self.conn.commands())
                .await
                .map_err(|e| ReplayError::Unavailable(e.to_string()))?;
            match reply {
                Value::Okay => Ok(true),
                Value::Nil => Ok(false),
                Value::SimpleString(s) if s == "OK" => Ok(true),
                _ => Err(ReplayError::Unavailable("unexpected reply from Redis to SET NX".into())),
            }
        })
    }
}
