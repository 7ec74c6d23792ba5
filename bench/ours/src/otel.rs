//! `--otel`: the library's spans recorded with OpenTelemetry, as a server exporting its traces
//! would have them, except that the exporter drops each batch instead of sending it (the bench
//! measures what recording, batching and handing spans over costs the server, not a collector).
//!
//! Both ways use an `SdkTracerProvider` with the SDK's batch processor (its own thread) and the
//! default sampler (every span):
//!
//! - `--otel` ([`tracer`]): the server's own tracer (`McpServerBuilder::tracer`), which builds
//!   each request's span straight from what the engine holds; no `tracing` subscriber.
//! - `--otel-tracing` ([`install_tracing`]): `tracing-opentelemetry`'s layer alone at `INFO`
//!   (the level of the library's request spans), set up as a server that cares for its cost
//!   sets it up: without the source location and thread attributes of every span, and without
//!   busy and idle time (two clock readings each time a span is entered or left).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// An exporter that drops every batch.
#[derive(Debug)]
struct Dropping;

impl SpanExporter for Dropping {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        drop(batch);
        Ok(())
    }
}

/// A tracer over the batch processor and the dropping exporter (the provider lives as long as
/// the process).
pub(crate) fn tracer() -> opentelemetry_sdk::trace::SdkTracer {
    let provider = SdkTracerProvider::builder().with_batch_exporter(Dropping).build();
    let tracer = provider.tracer("bench-ours");
    std::mem::forget(provider);
    tracer
}

/// Installs the OpenTelemetry layer as the global subscriber.
pub(crate) fn install_tracing() {
    let provider = SdkTracerProvider::builder().with_batch_exporter(Dropping).build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("bench-ours"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false);
    tracing_subscriber::registry()
        .with(layer.with_filter(tracing_subscriber::filter::LevelFilter::INFO))
        .init();
    // The provider lives as long as the process (its batch thread exports until then).
    std::mem::forget(provider);
}
