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
//! stderr, and on Ctrl-C or SIGTERM stops, then flushes what is left to export. The spans reach
//! OpenTelemetry through `tracing-opentelemetry`; a client's trace context in `_meta` becomes the
//! parent of its request's span (the hook below); the `metrics` facade's histograms are handed to
//! an OpenTelemetry meter by a small recorder (`bridge.rs`) with the conventions' bucket
//! boundaries.

mod bridge;

use std::collections::HashMap;

use mcp_server::observe::set_trace_context_hook;
use mcp_server::prelude::*;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tokio_util::sync::CancellationToken;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// What the example serves.
fn server() -> Result<McpServer, ServerError> {
    McpServer::builder()
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

    // Traces: `tracing` spans, exported in batches.
    let spans = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()?;
    let tracer_provider = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(tracing_opentelemetry::layer().with_tracer(tracer_provider.tracer("mcp-otel-example")))
        .init();
    // The caller's W3C trace context (from `_meta`) as the parent of its request's span.
    set_trace_context_hook(|span, trace| {
        let mut carrier = HashMap::new();
        carrier.insert("traceparent".to_owned(), trace.traceparent.to_owned());
        if let Some(state) = trace.tracestate {
            carrier.insert("tracestate".to_owned(), state.to_owned());
        }
        let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
    });

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
    server()?
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
