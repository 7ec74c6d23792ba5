//! `--rate-limit RATE[:BURST]`: limits `tools/call` to `RATE` requests per second (a decimal
//! number) per principal, or per client address for anonymous callers, `BURST` at once
//! (default: `RATE` rounded up). With `--redis` the buckets are shared by every instance.
//! Without the flag nothing is limited.
//!
//! ```text
//! everything --port 3000 --rate-limit 5:10
//! ```

use mcp_server::store::Quota;
use mcp_server::{McpServerBuilder, RateLimit};

/// The rate limit of `tools/call`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct RateLimitArgs {
    /// Limit `tools/call` to RATE requests per second per principal (per client address when
    /// anonymous), BURST at once (default: RATE rounded up).
    #[arg(long, value_name = "RATE[:BURST]")]
    rate_limit: Option<Quota>,
}

impl RateLimitArgs {
    /// Adds the rate-limit layer, if asked.
    pub(crate) fn apply(&self, b: McpServerBuilder) -> McpServerBuilder {
        match self.rate_limit {
            Some(quota) => b.rate_limit(RateLimit::new(quota)),
            None => b,
        }
    }
}
