//! The MCP endpoint inside an axum application, behind an API key.
//!
//! ```sh
//! MCP_API_KEY=a-long-random-key cargo run --example axum_auth              # 127.0.0.1:8080
//! MCP_API_KEY=a-long-random-key cargo run --example axum_auth -- 127.0.0.1:0
//! curl http://127.0.0.1:8080/health                                         # ok, no key needed
//! ```
//!
//! - `GET /health` answers `ok` (no authentication: the application's own route);
//! - `/v1/mcp` is the MCP endpoint (both eras), nested under `/v1`; every request to it must
//!   carry `x-api-key: <MCP_API_KEY>` (or `Authorization: ApiKey <key>`), else 401;
//! - `/v1/livez` and `/v1/readyz` are the endpoint's probes, nested with it (no key needed;
//!   `/v1/readyz` answers 503 once the shutdown has begun);
//! - a tower layer (axum's `middleware::from_fn`) logs every request with its status and
//!   duration, and another adds a `server` header;
//! - accepted sockets get `TCP_NODELAY` (axum leaves it off);
//! - Ctrl-C or `SIGTERM` shuts down gracefully: the MCP streams end, calls in flight get
//!   `HttpConfig::shutdown_grace` to finish, then the server stops.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::serve::ListenerExt;
use mcp_server::auth::{ApiKey, ApiKeyAuth};
use mcp_server::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

fn mcp_server() -> Result<McpServer, ServerError> {
    McpServer::builder()
        .name("axum-auth")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(Tool::typed(
            "greet",
            "Greets someone, as the caller",
            |g: Greet, ctx| async move { format!("Hello, {}! (asked by {})", g.name, ctx.principal()) },
        ))
        .build()
}

/// A tower layer: one log line per request.
async fn log_requests(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::info!(%method, path, status = response.status().as_u16(), elapsed = ?started.elapsed(), "request");
    response
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let key = std::env::var("MCP_API_KEY").unwrap_or_else(|_| {
        tracing::warn!("MCP_API_KEY is not set: the key is `change-me-please`");
        "change-me-please".to_owned()
    });

    // The provider is built (and checked) before anything is bound.
    let auth = ApiKeyAuth::builder().key(ApiKey::plain(key, "api-client")).build()?;
    let config = HttpConfig::default().auth(Arc::new(auth));
    let (mcp, handle) = mcp_server()?.router(config)?.into_parts();

    let app = axum::Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest("/v1", mcp)
        .layer(middleware::from_fn(log_requests))
        .layer(middleware::map_response(|mut response: Response| async move {
            response
                .headers_mut()
                .insert("server", HeaderValue::from_static("axum-auth-example"));
            response
        }));

    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    // The endpoint's probes are nested with it: /v1/livez and /v1/readyz (503 while draining).
    tracing::info!(
        "listening on http://{local}/v1/mcp (health: http://{local}/health, readiness: http://{local}/v1/readyz)"
    );

    let stop = handle.clone();
    // Ctrl-C or SIGTERM: /readyz answers 503, then the streams end and the calls drain.
    let signal = mcp_server::shutdown_signal();
    tokio::spawn(async move {
        signal.await;
        tracing::info!("shutting down");
        stop.trigger();
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(handle.triggered())
        .await?;
    handle.shutdown().await;
    Ok(())
}
