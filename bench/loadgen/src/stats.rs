//! Measurements: per-client counts and latency histograms, merged into the JSON outcome one run
//! prints.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::client::Result;

/// What one client (or one in-flight slot) measured.
pub(crate) struct Measure {
    /// Operations completed in the measured window.
    pub(crate) ops: u64,
    /// Requests those operations took (W3 takes four, a paged W4 more than one).
    pub(crate) requests: u64,
    /// Failed operations in the measured window.
    pub(crate) errors: u64,
    /// Every request sent, warm-up and handshakes included.
    pub(crate) sent: u64,
    /// The first failure (warm-up included).
    pub(crate) first_error: Option<String>,
    /// Whether the client stopped early on repeated failures.
    pub(crate) gave_up: bool,
    /// Size of the last answer body of an operation (the call's, or a list page's), bytes.
    pub(crate) body_bytes: usize,
    /// Latency of each measured operation, in microseconds.
    pub(crate) hist: Histogram<u64>,
}

impl Default for Measure {
    fn default() -> Self {
        Measure {
            ops: 0,
            requests: 0,
            errors: 0,
            sent: 0,
            first_error: None,
            gave_up: false,
            body_bytes: 0,
            hist: histogram(),
        }
    }
}

/// A latency histogram: 1 µs to 60 s, three significant figures.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// The outcome of one run, printed as one line of JSON.
#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    /// Operations measured.
    pub(crate) ops: u64,
    /// Requests those operations took.
    pub(crate) requests: u64,
    /// Failed operations.
    pub(crate) errors: u64,
    /// Every request sent by the run, the warm-up, the clients' handshakes and the probe
    /// included: what the target served in all (to divide a server-side count by).
    pub(crate) requests_sent: u64,
    /// The instances loaded (requests sent to each in turn).
    pub(crate) instances: usize,
    /// The first failure, if any.
    pub(crate) first_error: Option<String>,
    /// Seconds measured.
    pub(crate) seconds: f64,
    /// Operations per second.
    pub(crate) rps: f64,
    /// Median latency, milliseconds.
    pub(crate) p50_ms: f64,
    /// 90th percentile latency, milliseconds.
    pub(crate) p90_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub(crate) p99_ms: f64,
    /// Largest latency, milliseconds.
    pub(crate) max_ms: f64,
    /// Clients that stopped early on repeated failures.
    pub(crate) clients_gave_up: u64,
    /// Size of the answer body of an operation (the call's, or a list page's), bytes.
    pub(crate) body_bytes: usize,
    /// Peak resident size of the server (`VmHWM`), KiB, when its pid is known.
    pub(crate) peak_rss_kb: Option<u64>,
    /// CPU the server spent in the measured window (user and system, every thread; summed over
    /// the servers given), milliseconds, when its pid is known.
    pub(crate) server_cpu_ms: Option<f64>,
    /// That CPU per request measured, microseconds.
    pub(crate) server_cpu_us_per_request: Option<f64>,
    /// With `--hold`: the requests sent between the two holds (every one answered by then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) held_requests: Option<u64>,
    #[serde(skip)]
    hist: Histogram<u64>,
}

impl Outcome {
    /// An empty outcome over `duration`.
    pub(crate) fn new(duration: Duration) -> Outcome {
        Outcome {
            ops: 0,
            requests: 0,
            errors: 0,
            requests_sent: 0,
            instances: 1,
            first_error: None,
            seconds: duration.as_secs_f64(),
            rps: 0.0,
            p50_ms: 0.0,
            p90_ms: 0.0,
            p99_ms: 0.0,
            max_ms: 0.0,
            clients_gave_up: 0,
            body_bytes: 0,
            peak_rss_kb: None,
            server_cpu_ms: None,
            server_cpu_us_per_request: None,
            held_requests: None,
            hist: histogram(),
        }
    }

    /// Adds one client's measure and recomputes the figures.
    pub(crate) fn add(&mut self, m: Measure) -> Result<()> {
        self.ops += m.ops;
        self.requests += m.requests;
        self.errors += m.errors;
        self.requests_sent += m.sent;
        self.clients_gave_up += u64::from(m.gave_up);
        self.body_bytes = self.body_bytes.max(m.body_bytes);
        if self.first_error.is_none() {
            self.first_error = m.first_error;
        }
        self.hist.add(&m.hist).map_err(|e| format!("histogram: {e}"))?;
        let ms = |q: f64| self.hist.value_at_quantile(q) as f64 / 1000.0;
        self.p50_ms = ms(0.5);
        self.p90_ms = ms(0.9);
        self.p99_ms = ms(0.99);
        self.max_ms = self.hist.max() as f64 / 1000.0;
        self.rps = self.ops as f64 / self.seconds;
        Ok(())
    }

    /// Records the servers' CPU over the measured window.
    pub(crate) fn set_cpu(&mut self, spent: Option<crate::cpu::Spent>) {
        self.server_cpu_ms = spent.map(|s| s.ms);
        self.server_cpu_us_per_request = spent.and_then(|s| s.us_per_request);
    }
}

/// A field of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
pub(crate) fn proc_status_kb(pid: u32, field: &str) -> Result<u64> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("/proc/{pid}/status has no {field}"))
}
