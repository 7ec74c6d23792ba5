//! A gateway: other MCP servers (stdio commands, or Streamable HTTP URLs, of either era) served
//! over Streamable HTTP for every revision, behind this library's authentication, rate limits,
//! metrics and Redis.
//!
//! ```text
//! cargo run --release --example gateway -- \
//!     --mount fs="npx -y @modelcontextprotocol/server-filesystem /tmp" \
//!     --mount-flat http://127.0.0.1:9000/mcp \
//!     --port 8080 --api-key secret --rate-limit 100/min
//! ```
//!
//! - `--mount NAME=CMD|URL` mounts a server with its tool and prompt names under `NAME_`;
//!   `--mount-flat CMD|URL` keeps its names. A value starting with `http://` is a URL, anything
//!   else a command line, split as a shell would split it (no shell runs).
//! - A stdio upstream is started once, restarted with a backoff when it exits, and greeted
//!   again.
//! - `--upstream-revision` speaks one revision to every upstream, instead of discovering each
//!   one's era.
//! - `--upstream-bearer` sends a token to every HTTP upstream.
//! - The authentication, rate-limit, Redis and metrics flags are `everything`'s, from the same
//!   files.
//!
//! Scale-out: each instance holds its own upstream connections (a child process per stdio
//! mount). A stdio upstream's state (its session, its subscriptions) lives in that instance's
//! child. With `--redis`, the front's sessions are shared and any instance serves any client,
//! and every instance lists the same upstream tools as long as the upstreams list the same.
//! An upstream that keeps per-caller state must itself be shared, or sit behind one instance.
//! `docs/DEPLOYMENT.md` says more.

use std::time::Duration;

use clap::Parser;
use mcp_server::mount::{Client, Mount, Restart, ServerCommand};
use mcp_server::{HttpConfig, McpServer, Revision};
use tokio_util::sync::CancellationToken;

// The flags and set-up the gateway shares with `everything`; parts of them only `everything`
// uses.
#[allow(dead_code)]
#[path = "everything/auth.rs"]
mod auth;
#[allow(dead_code)]
#[path = "everything/metrics.rs"]
mod metrics;
#[allow(dead_code)]
#[path = "everything/ratelimit.rs"]
mod ratelimit;
#[allow(dead_code)]
#[path = "everything/scope_fixture.rs"]
mod scope_fixture;
#[allow(dead_code)]
#[path = "everything/shared.rs"]
mod shared;

#[derive(Parser, Debug)]
#[command(about = "Serves other MCP servers over Streamable HTTP, every revision")]
struct Args {
    /// Address to serve on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to serve on; 0 picks a free port.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Mounts a server under a prefix: NAME=COMMAND (a command line) or NAME=http://… .
    #[arg(long = "mount", value_name = "NAME=CMD|URL")]
    mounts: Vec<String>,
    /// Mounts a server keeping its names: a command line or an http:// URL.
    #[arg(long = "mount-flat", value_name = "CMD|URL")]
    flat: Vec<String>,
    /// Speaks only this revision to every upstream (default: discover each one's era).
    #[arg(long, value_name = "REVISION")]
    upstream_revision: Option<String>,
    /// A bearer token sent to every HTTP upstream.
    #[arg(long, value_name = "TOKEN")]
    upstream_bearer: Option<String>,
    /// On Ctrl-C or SIGTERM, how long the calls in flight get to finish.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    shutdown_grace_ms: u64,
    #[command(flatten)]
    auth: auth::AuthArgs,
    #[command(flatten)]
    shared: shared::SharedArgs,
    #[command(flatten)]
    rate_limit: ratelimit::RateLimitArgs,
    #[command(flatten)]
    metrics: metrics::MetricsArgs,
}

/// How the gateway speaks to every upstream.
struct Upstreams {
    revision: Option<Revision>,
    bearer: Option<String>,
}

/// Connects to one upstream: a URL over HTTP, anything else a command over stdio.
async fn upstream(target: &str, how: &Upstreams) -> Result<Client, Box<dyn std::error::Error>> {
    // The upstream may ask whatever the gateway's callers can answer.
    let mut b = Client::builder()
        .name("mcp-rs-gateway")
        .version(env!("CARGO_PKG_VERSION"))
        .relay();
    if let Some(revision) = how.revision {
        b = b.revision(revision);
    }
    let client = if target.starts_with("http://") || target.starts_with("https://") {
        if let Some(token) = &how.bearer {
            b = b.bearer(token)?;
        }
        b.http(target).await?
    } else {
        b.restart(Restart::default())
            .stdio(ServerCommand::parse(target)?)
            .await?
    };
    Ok(client)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let Args {
        host,
        port,
        mounts,
        flat,
        upstream_revision,
        upstream_bearer,
        shutdown_grace_ms,
        auth,
        shared,
        rate_limit,
        metrics,
    } = Args::parse();
    if mounts.is_empty() && flat.is_empty() {
        return Err("nothing to serve: give --mount NAME=CMD|URL or --mount-flat CMD|URL".into());
    }
    let how = Upstreams {
        revision: match upstream_revision {
            Some(r) => Some(Revision::parse(&r).ok_or_else(|| format!("--upstream-revision: unknown revision {r:?}"))?),
            None => None,
        },
        bearer: upstream_bearer,
    };
    // Every provider is built before anything starts: a bad set-up starts nothing.
    let plan = auth.plan(false).unwrap_or_else(|e| auth::exit(&e));
    let metrics = metrics.serve().await?;
    let b = McpServer::builder()
        .name("mcp-rs-gateway")
        .version(env!("CARGO_PKG_VERSION"))
        .logging(true);
    let (b, seams) = shared.apply(b).await?;
    let server = rate_limit.apply(b).build()?;
    for m in &mounts {
        let (name, target) = m
            .split_once('=')
            .ok_or_else(|| format!("--mount {m:?}: NAME=CMD|URL"))?;
        let client = upstream(target, &how)
            .await
            .map_err(|e| format!("--mount {name}: {e}"))?;
        server.mount(Mount::prefixed(name, client)).await?;
    }
    for target in &flat {
        let client = upstream(target, &how)
            .await
            .map_err(|e| format!("--mount-flat {target}: {e}"))?;
        server.mount(Mount::flat(client)).await?;
    }
    let listener = tokio::net::TcpListener::bind((host.as_str(), port)).await?;
    let local = listener.local_addr()?;
    let endpoint = format!("http://{local}/mcp");
    let config = HttpConfig::default().shutdown_grace(Duration::from_millis(shutdown_grace_ms));
    let config = plan
        .apply(config, &endpoint, local.ip().is_loopback(), seams.map(|s| s.replay))
        .unwrap_or_else(|e| auth::exit(&e));
    // The first stdout line says where to connect.
    println!("listening on {endpoint}");
    if let Some(addr) = metrics {
        println!("metrics on http://{addr}/metrics");
    }
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let signal = mcp_server::shutdown_signal();
    tokio::spawn(async move {
        signal.await;
        stop.cancel();
    });
    server.serve_http_on(listener, config, shutdown).await?;
    Ok(())
}
