//! An MCP server that exports its telemetry over OTLP/HTTP (protobuf): the request spans and the
//! duration histograms of OpenTelemetry's semantic conventions for MCP, to the collector named
//! by the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, default `http://localhost:4318`;
//! `OTEL_SERVICE_NAME`, …).
//!
//! ```sh
//! # a collector (or Jaeger, Grafana's LGTM image, …) listening for OTLP/HTTP on :4318
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run -p mcp-example-otel
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run -p mcp-example-otel -- 127.0.0.1:3000
//! ```
//!
//! It serves Streamable HTTP on the address given (default `127.0.0.1:8080`, `/mcp`), prints it on
//! stderr, and on Ctrl-C or SIGTERM stops, then flushes what is left to export. The server
//! records its request spans with the SDK's tracer itself (`McpServerBuilder::tracer`, the
//! `otel` feature): a client's trace context in `_meta` (or a `traceparent` header) becomes the
//! parent of its request's span, and a handler runs with that span's context current. The logs
//! go to stderr through `tracing`. The `metrics` facade's histograms are handed to an
//! OpenTelemetry meter by a small recorder (`bridge.rs`) with the conventions' bucket
//! boundaries.
//!
//! (`tracing-opentelemetry` records the same spans from the library's `tracing` ones, with the
//! trace context handed over by `observe::set_trace_context_hook`; the observability guide
//! shows it. It costs the server several times more per request.)

mod bridge;

use mcp_server::prelude::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tokio_util::sync::CancellationToken;

/// What the example serves, its request spans recorded with `tracer`.
fn server(tracer: SdkTracer) -> Result<McpServer, ServerError> {
    McpServer::builder()
        .tracer(tracer)
        .name("otel-example")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(Tool::new(
            "add",
            "Adds the integers `a` and `b`",
            |args: serde_json::Map<String, serde_json::Value>, _ctx| async move {
                let int = |k: &str| args.get(k).and_then(serde_json::Value::as_i64).unwrap_or(0);
                (int("a") + int("b")).to_string()
            },
        ))
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let resource = Resource::builder().with_service_name("mcp-otel-example").build();

    // Traces: the server's request spans, exported in batches.
    let spans = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()?;
    let tracer_provider = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let tracer = tracer_provider.tracer("mcp-otel-example");
    // Logs: to stderr.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();

    // Metrics: the facade's histograms, read and exported periodically.
    let metrics = MetricExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()?;
    let meter_provider = SdkMeterProvider::builder()
        .with_periodic_exporter(metrics)
        .with_resource(resource)
        .build();
    bridge::install(opentelemetry::metrics::MeterProvider::meter(
        &meter_provider,
        "mcp-otel-example",
    ))?;

    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    // The handlers are installed here, before the address is printed: a signal sent as soon as
    // it is known is not missed.
    let signal = mcp_server::shutdown_signal();
    tracing::info!("listening on http://{}/mcp", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        signal.await;
        stop.cancel();
    });
    server(tracer)?
        .serve_http_on(listener, HttpConfig::default(), shutdown)
        .await?;

    // What is left to export (the SDK's export threads block: not on the async runtime).
    tokio::task::spawn_blocking(move || {
        if let Err(e) = tracer_provider.shutdown() {
            eprintln!("traces not flushed: {e}");
        }
        if let Err(e) = meter_provider.shutdown() {
            eprintln!("metrics not flushed: {e}");
        }
    })
    .await?;
    Ok(())
}
