//! Soak flags of `everything` (`cargo xtask soak`): the fault tools and the
//! bounds the soak raises.
//!
//! ```text
//! everything --soak [--soak-hang-ms 5000] --max-listeners-per-peer 4096 --max-streams-per-address 4096 \
//!     --max-body-bytes 65536
//! ```
//!
//! Without `--soak` no tool is added, so the conformance fixture's tool list
//! stays the same. With it:
//!
//! - `soak_panic` panics in its handler (answered as a tool error; the panic
//!   message itself is kept off stderr, the runtime logs it);
//! - `soak_hang` sleeps `--soak-hang-ms`, longer than the soak driver waits;
//! - `soak_sleep` sleeps `ms` milliseconds (at most [`MAX_SLEEP_MS`]), for
//!   clients that disconnect mid-call.
//!
//! The bound flags set the matching `ServerConfig` / `HttpConfig` fields and
//! are independent of `--soak`; unset, the defaults stay.

use std::time::Duration;

use mcp_server::HttpConfig;
use mcp_server::prelude::*;

/// The longest `soak_sleep` sleeps, whatever it is asked.
const MAX_SLEEP_MS: u64 = 10_000;

/// The soak flags.
#[derive(clap::Args, Debug)]
pub(super) struct SoakArgs {
    /// Add the soak tools (`soak_panic`, `soak_hang`, `soak_sleep`).
    #[arg(long)]
    soak: bool,
    /// How long `soak_hang` sleeps, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    soak_hang_ms: u64,
    /// Most `subscriptions/listen` streams open at once (`ServerConfig::max_listeners`).
    #[arg(long, value_name = "N")]
    max_listeners: Option<usize>,
    /// Most listen streams one client address holds (`ServerConfig::max_listeners_per_peer`).
    #[arg(long, value_name = "N")]
    max_listeners_per_peer: Option<usize>,
    /// Most listen streams one principal holds (`ServerConfig::max_listeners_per_principal`).
    #[arg(long, value_name = "N")]
    max_listeners_per_principal: Option<usize>,
    /// Most legacy sessions kept at once (`ServerConfig::max_sessions`).
    #[arg(long, value_name = "N")]
    max_sessions: Option<usize>,
    /// Most legacy sessions one principal keeps (`ServerConfig::max_sessions_per_principal`).
    #[arg(long, value_name = "N")]
    max_sessions_per_principal: Option<usize>,
    /// Largest accepted request body in bytes (`HttpConfig::max_body_bytes`).
    #[arg(long, value_name = "BYTES")]
    max_body_bytes: Option<usize>,
    /// Most long-lived streams one client address holds (`HttpConfig::max_streams_per_address`).
    #[arg(long, value_name = "N")]
    max_streams_per_address: Option<usize>,
}

/// The panic payload of `soak_panic`, told apart by the panic hook.
struct SoakPanic;

/// Panics with [`SoakPanic`].
fn explode() -> &'static str {
    std::panic::panic_any(SoakPanic)
}

impl SoakArgs {
    /// Applies the server bounds and, with `--soak`, adds the soak tools.
    pub(super) fn apply(&self, mut b: mcp_server::McpServerBuilder) -> mcp_server::McpServerBuilder {
        if let Some(n) = self.max_listeners {
            b = b.max_listeners(n);
        }
        if let Some(n) = self.max_listeners_per_peer {
            b = b.max_listeners_per_peer(n);
        }
        if let Some(n) = self.max_listeners_per_principal {
            b = b.max_listeners_per_principal(n);
        }
        if let Some(n) = self.max_sessions {
            b = b.max_sessions(n);
        }
        if let Some(n) = self.max_sessions_per_principal {
            b = b.max_sessions_per_principal(n);
        }
        if !self.soak {
            return b;
        }
        quiet_soak_panics();
        let hang = Duration::from_millis(self.soak_hang_ms);
        b.tool(Tool::new("soak_panic", "Panics (soak)", |_, _| async { explode() }).input_schema(empty()))
            .tool(
                Tool::new(
                    "soak_hang",
                    "Sleeps longer than the soak driver waits",
                    move |_, _| async move {
                        tokio::time::sleep(hang).await;
                        "soak_hang woke up"
                    },
                )
                .input_schema(empty()),
            )
            .tool(
                Tool::new(
                    "soak_sleep",
                    "Sleeps `ms` milliseconds (at most 10 s)",
                    |args, _| async move {
                        let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0).min(MAX_SLEEP_MS);
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        format!("slept {ms} ms")
                    },
                )
                .input_schema(json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}})),
            )
    }

    /// Applies the HTTP bounds.
    pub(super) fn http(&self, mut config: HttpConfig) -> HttpConfig {
        if let Some(n) = self.max_body_bytes {
            config = config.max_body_bytes(n);
        }
        if let Some(n) = self.max_streams_per_address {
            let total = config.max_streams;
            config = config.max_streams(total, n);
        }
        config
    }
}

fn empty() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Keeps `soak_panic`'s panics off stderr (the engine still logs each one
/// through `tracing`); every other panic goes to the default hook.
fn quiet_soak_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.payload().is::<SoakPanic>() {
            default(info);
        }
    }));
}
