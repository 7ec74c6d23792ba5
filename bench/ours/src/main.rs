//! `ours`: the bench target built on this repository's library (`mcp_server::McpServer`).
//!
//! It exposes the `echo` tool (input `{"text": string}`, output one text block with the same
//! text) and, with `--tools N`, `N - 1` more tools of the same shape (`echo_1` …), for the
//! `tools/list` workload.
//!
//! ```text
//! ours --http PORT [--tools N]    # Streamable HTTP on 127.0.0.1:PORT/mcp, HttpConfig::default() (stream budget raised)
//! ours --stdio [--tools N]        # newline-delimited JSON-RPC on stdin/stdout
//! ours --stdio-pipes              # the same through epoll-driven pipes (an experiment)
//! ours --http PORT --redis URL [--redis-prefix P]   # one instance of a server shared via Redis
//! ours --http PORT --rate-limit RATE[:BURST]        # tools/call rate-limited per caller
//! ours --http PORT --layer                          # one pass-through middleware layer
//! ours --http PORT --otel                           # spans to OpenTelemetry (built with `otel`)
//! ours --http PORT --round-trip-via URL             # in memory, one Redis PING per message
//! ```
//!
//! The last three measure what the runtime's seams cost (the bench's W1 seam rows):
//!
//! - `--rate-limit` adds the library's `RateLimit` layer (`tools/call`, RATE per second per
//!   caller, BURST at once; the buckets in Redis with `--redis`). To measure what the limiter
//!   costs rather than what it refuses, give a rate no workload reaches (`--rate-limit
//!   1000000`: the most a quota takes).
//! - `--layer` adds one middleware layer that passes every message on (`next.run(request)`):
//!   the chain's own cost, which a server with no layer skips.
//! - `--otel` (the `otel` feature, built apart so that the measured `ours` carries none of its
//!   code) gives the server an OpenTelemetry SDK tracer (`McpServerBuilder::tracer`): every
//!   request's span (OpenTelemetry's MCP conventions, recorded by the library) built, batched
//!   and handed to an exporter, which drops them (see `otel.rs`). `--otel-tracing` records the
//!   same spans through `tracing-opentelemetry` instead (for comparison; the bench uses
//!   `--otel`).
//!
//! Built with `--features count-allocs` it counts every allocation and prints the totals on
//! stderr at each `SIGUSR1` (see `count.rs`): allocations per request are the difference of two
//! readings divided by the requests sent between them.
//!
//! `--stdio` is `McpServer::serve_stdio`, which the bench measures. `--stdio-pipes` is an
//! experiment for issue 7's W5 finding: the same transport (`mcp_transport_stdio::serve_io`)
//! given stdin and stdout as tokio `unix::pipe` ends (non-blocking, driven by epoll) instead of
//! `tokio::io::stdin()`/`stdout()`, which do every read and write on tokio's blocking thread
//! pool. It needs stdin and stdout to be pipes.
//!
//! Over HTTP it prints `listening on http://127.0.0.1:PORT/mcp` once bound, then serves until
//! killed. The server configuration is the library's default except the session and listen-stream
//! bounds (raised so that the memory workload can hold 10,000 sessions and 2,000 anonymous
//! `subscriptions/listen` streams from one address) and, with `--page-size`, the page size of the
//! catalog lists.
//!
//! With `--redis URL` (built with the `shared` feature) the instance keeps its shared state (legacy sessions, stream events, tasks,
//! the bus, membership) in Redis (`mcp_store_redis::RedisStore`, keys under `--redis-prefix`) and
//! seals request states with a fixed key ([`SHARED_STATE_KEY`]) instead of a random one: two
//! processes given the same URL and prefix are one logical server, each answering requests and
//! sessions begun on the other (the bench's S cells).
//!
//! With `--round-trip-via URL` (the `shared` build) the instance keeps every state in its own
//! memory, as without `--redis`, but makes one bare round trip to that Redis before each message
//! it handles (`Store::check`: a `PING` on the store's command connection). It is the S cells'
//! round-trip floor: what the cheapest server that shares anything through Redis could do, one
//! round trip per message and nothing else, on the same core as the Redis it asks.

#[cfg(feature = "count-allocs")]
mod count;
#[cfg(feature = "otel")]
mod otel;

#[cfg(feature = "count-allocs")]
#[global_allocator]
static GLOBAL: count::Counting = count::Counting;

use clap::Parser;
use mcp_server::prelude::*;
#[cfg(feature = "shared")]
use mcp_server::protocol::request_state::StateKey;
use mcp_server::store::{Quota, Store};
use mcp_server::{Inbound, Next, RateLimit, ServerConfig};
#[cfg(feature = "shared")]
use mcp_store_redis::{RedisOptions, RedisStore};
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
#[command(about = "The bench target on our library")]
struct Args {
    /// Serve Streamable HTTP on 127.0.0.1:PORT (0 picks a free port).
    #[arg(long, conflicts_with = "stdio")]
    http: Option<u16>,
    /// Serve newline-delimited JSON-RPC on stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Like `--stdio`, through epoll-driven pipes (stdin and stdout must be pipes).
    #[arg(long, conflicts_with_all = ["stdio", "http"])]
    stdio_pipes: bool,
    /// How many tools to register (the first is `echo`).
    #[arg(long, default_value_t = 1)]
    tools: usize,
    /// Page size of `tools/list` (default: the library's default; 0 means no paging).
    #[arg(long)]
    page_size: Option<usize>,
    /// Share state with every instance given the same Redis URL (`redis://127.0.0.1:PORT/`).
    #[arg(long, value_name = "URL", requires = "http")]
    redis: Option<String>,
    /// The key prefix in Redis (instances of one server use the same one).
    #[arg(long, value_name = "P", default_value = "bench", requires = "redis")]
    redis_prefix: String,
    /// State in memory, but one bare round trip (`PING`) to this Redis before every message.
    #[arg(long, value_name = "URL", requires = "http", conflicts_with = "redis")]
    round_trip_via: Option<String>,
    /// Rate-limit `tools/call`: RATE requests per second per caller, BURST at once.
    #[arg(long, value_name = "RATE[:BURST]")]
    rate_limit: Option<Quota>,
    /// Add one middleware layer that passes every message on.
    #[arg(long)]
    layer: bool,
    /// Record spans with OpenTelemetry, the server's own tracer (the `otel` feature).
    #[arg(long)]
    otel: bool,
    /// Record spans with OpenTelemetry through `tracing-opentelemetry` (the `otel` feature).
    #[arg(long)]
    otel_tracing: bool,
}

/// The seams a run measures: the layers of the server.
#[derive(Debug, Clone, Default)]
struct Seams {
    rate_limit: Option<Quota>,
    layer: bool,
    /// The store whose backend every message makes one round trip to (`--round-trip-via`).
    round_trip: Option<Store>,
    /// The OpenTelemetry tracer the server records its spans with.
    #[cfg(feature = "otel")]
    tracer: Option<opentelemetry_sdk::trace::SdkTracer>,
}

/// The request-state key of every instance started with `--redis` (a bench constant, not a
/// secret: the instances must open each other's request states).
#[cfg(feature = "shared")]
const SHARED_STATE_KEY: [u8; 32] = [7u8; 32];

/// The echo tool's input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

/// A tool of the echo shape named `name`.
fn echo_tool(name: String) -> Tool {
    Tool::typed(
        name,
        "Echoes the text back",
        |input: Echo, _ctx| async move { input.text },
    )
}

/// The HTTP configuration: the defaults, but for the stream budget, which M1's 2,000 listen
/// streams from one address would pass (its defaults protect clients from each other).
fn http_config() -> HttpConfig {
    HttpConfig::default().max_streams(100_000, 100_000)
}

/// The server: `tools` tools of the echo shape, the first named `echo`; its state in `store`
/// (with the shared request-state key) when given; `tools/call` limited to `seams.rate_limit`
/// when given, and a pass-through layer when `seams.layer`.
fn server(
    tools: usize,
    page_size: Option<usize>,
    store: Option<Store>,
    seams: Seams,
) -> Result<McpServer, Box<dyn std::error::Error>> {
    let mut config = ServerConfig::default();
    // M1 opens 10,000 sessions and 2,000 listen streams from one address, as one principal:
    // raise the bounds that would refuse them (their defaults protect clients from each other).
    config.max_listeners_per_principal = 100_000;
    config.max_listeners_per_peer = 100_000;
    config.max_listeners = 100_000;
    config.max_sessions = 100_000;
    config.max_sessions_per_principal = 100_000;
    if let Some(size) = page_size {
        config.page_size = size;
    }
    let mut builder = McpServer::builder().config(config).name("bench-ours").version("1.0.0");
    #[cfg(not(feature = "shared"))]
    let _: Option<Store> = store;
    #[cfg(feature = "shared")]
    if let Some(store) = store {
        builder = builder
            .store(store)
            .request_state_key(StateKey::new(&SHARED_STATE_KEY).map_err(|e| format!("state key: {e}"))?);
    }
    if let Some(quota) = seams.rate_limit {
        builder = builder.rate_limit(RateLimit::new(quota));
    }
    if seams.layer {
        builder = builder.middleware(|request: Inbound, next: Next| next.run(request));
    }
    if let Some(store) = seams.round_trip {
        builder = builder.middleware(move |request: Inbound, next: Next| {
            let store = store.clone();
            async move {
                if let Err(e) = store.check().await {
                    // The floor means nothing without its round trips: end the run loudly.
                    eprintln!("--round-trip-via: {e}");
                    std::process::exit(70);
                }
                next.run(request).await
            }
        });
    }
    #[cfg(feature = "otel")]
    if let Some(tracer) = seams.tracer {
        builder = builder.tracer(tracer);
    }
    for i in 0..tools.max(1) {
        let name = if i == 0 { "echo".to_owned() } else { format!("echo_{i}") };
        builder = builder.tool(echo_tool(name));
    }
    Ok(builder.build()?)
}

/// The store `--redis` names (`None` without it).
#[cfg(feature = "shared")]
async fn shared_store(args: &Args) -> Result<Option<Store>, Box<dyn std::error::Error>> {
    let Some(url) = &args.redis else {
        return Ok(None);
    };
    let options = RedisOptions {
        prefix: args.redis_prefix.clone(),
        ..RedisOptions::default()
    };
    let store = RedisStore::connect_with(url, options)
        .await
        .map_err(|e| format!("--redis {url}: {e}"))?;
    Ok(Some(store.into_store()))
}

/// The store `--round-trip-via` names (`None` without it): connected, never given the server.
#[cfg(feature = "shared")]
async fn round_trip_store(args: &Args) -> Result<Option<Store>, Box<dyn std::error::Error>> {
    let Some(url) = &args.round_trip_via else {
        return Ok(None);
    };
    let store = RedisStore::connect(url)
        .await
        .map_err(|e| format!("--round-trip-via {url}: {e}"))?;
    Ok(Some(store.into_store()))
}

/// `--round-trip-via` needs the `shared` feature.
#[cfg(not(feature = "shared"))]
async fn round_trip_store(args: &Args) -> Result<Option<Store>, Box<dyn std::error::Error>> {
    match &args.round_trip_via {
        Some(_) => Err("--round-trip-via: this build has no Redis (build with --features shared)".into()),
        None => Ok(None),
    }
}

/// `--redis` needs the `shared` feature.
#[cfg(not(feature = "shared"))]
async fn shared_store(args: &Args) -> Result<Option<Store>, Box<dyn std::error::Error>> {
    match &args.redis {
        Some(_) => Err("--redis: this build has no shared store (build with --features shared)".into()),
        None => Ok(None),
    }
}

/// `--stdio-pipes`: the stdio transport on non-blocking pipe ends of duplicates of fds 0 and 1.
async fn serve_pipes(server: McpServer) -> Result<(), Box<dyn std::error::Error>> {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let stdin = pipe::Receiver::from_owned_fd(std::io::stdin().as_fd().try_clone_to_owned()?)?;
    let stdout = pipe::Sender::from_owned_fd(std::io::stdout().as_fd().try_clone_to_owned()?)?;
    let config = mcp_transport_stdio::StdioConfig::default();
    if let Some(driver) = server.driver() {
        tokio::spawn(std::future::IntoFuture::into_future(driver));
    }
    mcp_transport_stdio::serve_io(server.engine().clone(), config, stdin, stdout).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    #[cfg(feature = "count-allocs")]
    count::report_on_signal()?;
    #[cfg(not(feature = "otel"))]
    if args.otel || args.otel_tracing {
        return Err("--otel: this build has no OpenTelemetry (build with --features otel)".into());
    }
    #[cfg(feature = "otel")]
    if args.otel_tracing {
        otel::install_tracing();
    }
    let store = shared_store(&args).await?;
    let seams = Seams {
        rate_limit: args.rate_limit,
        layer: args.layer,
        round_trip: round_trip_store(&args).await?,
        #[cfg(feature = "otel")]
        tracer: args.otel.then(otel::tracer),
    };
    let server = server(args.tools, args.page_size, store, seams)?;
    if args.stdio {
        server.serve_stdio().await?;
        return Ok(());
    }
    if args.stdio_pipes {
        return serve_pipes(server).await;
    }
    let Some(port) = args.http else {
        return Err("give --http PORT or --stdio".into());
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    server
        .serve_http_on(listener, http_config(), CancellationToken::new())
        .await?;
    Ok(())
}
