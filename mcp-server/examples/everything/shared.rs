//! The flags that make several `everything` processes one logical server behind a load
//! balancer: `--redis URL` shares sessions, stream events, tasks and notifications through
//! Redis; `--state-key HEX` is the request-state key every instance is given.
//!
//! ```text
//! everything --port 3001 --redis redis://127.0.0.1:6379 --state-key $KEY
//! everything --port 3002 --redis redis://127.0.0.1:6379 --state-key $KEY
//! ```

use mcp_server::McpServerBuilder;
use mcp_server::protocol::request_state::StateKey;
use mcp_store_redis::{RedisOptions, RedisReplayCache, RedisStore, RedisTls};

/// Sharing state between instances.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct SharedArgs {
    /// Share legacy sessions, stream events, tasks and notifications with every instance
    /// started with the same Redis URL (redis://host:port; rediss://:password@host:port for
    /// TLS with a password).
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// With a rediss:// URL: the PEM file of the CA that signed Redis's certificate (default:
    /// the platform's and the webpki roots).
    #[arg(long, value_name = "PEM", requires = "redis")]
    redis_ca: Option<std::path::PathBuf>,
    /// The key prefix in Redis: instances of one logical server use the same one.
    #[arg(long, value_name = "PREFIX", default_value = "mcp")]
    redis_prefix: String,
    /// The request-state key shared by every instance: 64 hexadecimal digits (32 bytes).
    /// Without it each process seals request states with a random key of its own.
    #[arg(long, value_name = "HEX")]
    state_key: Option<String>,
}

impl SharedArgs {
    /// Applies the flags: connects to Redis (a bad URL or an unreachable Redis is an error).
    /// Returns the builder and, with Redis, the DPoP replay cache every instance shares.
    pub(crate) async fn apply(
        &self,
        mut b: McpServerBuilder,
    ) -> Result<(McpServerBuilder, Option<RedisReplayCache>), Box<dyn std::error::Error>> {
        if let Some(hex) = &self.state_key {
            let key = StateKey::from_hex(hex).map_err(|e| format!("--state-key: {e} (64 hexadecimal digits)"))?;
            b = b.request_state_key(key);
        }
        if let Some(url) = &self.redis {
            let root_ca = match &self.redis_ca {
                Some(path) => Some(std::fs::read(path).map_err(|e| format!("--redis-ca {}: {e}", path.display()))?),
                None => None,
            };
            let options = RedisOptions {
                prefix: self.redis_prefix.clone(),
                tls: root_ca.map(|ca| RedisTls {
                    root_ca: Some(ca),
                    client: None,
                }),
                ..RedisOptions::default()
            };
            // The error names the URL without its password.
            let store = RedisStore::connect_with(url, options)
                .await
                .map_err(|e| format!("--redis: {e}"))?;
            let replay = store.replay_cache();
            return Ok((b.store(store), Some(replay)));
        }
        Ok((b, None))
    }
}
