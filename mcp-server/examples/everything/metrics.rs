//! `--metrics HOST:PORT`: serves the server's metrics in the Prometheus text format at
//! `http://HOST:PORT/metrics` (`metrics-exporter-prometheus`'s recorder, rendered by a route of
//! this process), with the bucket boundaries OpenTelemetry's MCP conventions advise for the
//! duration histograms (`mcp_server_operation_duration_seconds`,
//! `mcp_server_session_duration_seconds`). Without the flag no recorder is installed.
//!
//! ```text
//! everything --port 3000 --metrics 127.0.0.1:9464   # curl http://127.0.0.1:9464/metrics
//! ```

use std::net::SocketAddr;

use axum::Router;
use axum::routing::get;
use mcp_server::observe::DURATION_BUCKETS;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// Where the Prometheus text is served.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct MetricsArgs {
    /// Serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks a free one).
    #[arg(long, value_name = "HOST:PORT")]
    metrics: Option<SocketAddr>,
}

impl MetricsArgs {
    /// Installs the Prometheus recorder and serves `/metrics`, if asked: the address it serves.
    pub(crate) async fn serve(&self) -> Result<Option<SocketAddr>, Box<dyn std::error::Error>> {
        let Some(addr) = self.metrics else {
            return Ok(None);
        };
        let handle = PrometheusBuilder::new()
            .with_recommended_naming(true)
            .set_buckets_for_metric(Matcher::Prefix("mcp.server.".into()), &DURATION_BUCKETS)?
            .install_recorder()?;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let app = Router::new().route(
            "/metrics",
            get(move || {
                let handle = handle.clone();
                async move {
                    handle.run_upkeep();
                    handle.render()
                }
            }),
        );
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the metrics endpoint stopped");
            }
        });
        Ok(Some(local))
    }
}
