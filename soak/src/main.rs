//! The soak driver of `cargo xtask soak`: a bounded load-and-fault run against a server that is
//! already listening on loopback (the `everything` example with `--soak`), and the checks that
//! nothing was lost.
//!
//! For `--seconds` it keeps, all at once: `--listeners` open `subscriptions/listen` streams
//! (each on its own connection; a refusal with 429/503 counts as declared overload and is tried
//! again), legacy callers with session churn (`initialize`, `notifications/initialized`, a few
//! `tools/call`s, DELETE) and modern stateless callers, paced to `--rate` requests per second
//! together; slow calls whose client disconnects mid-call; calls of a hanging tool given up
//! after `--hang-timeout-ms`; calls of a panicking tool; bodies over `--max-body-bytes`; bad
//! JSON, a JSON value that is not a request, a wrong `Content-Type` and a missing `Accept`; and
//! a tool-list change every few seconds that every listener must see.
//!
//! It samples the server's `VmRSS` and open descriptors (`/proc/<pid>`), then stops the load,
//! closes every connection and checks: no reply lost, no wrong answer, no 5xx but declared
//! overload (503/429 with -32603), no listen stream ended by the server, no listener missed a
//! list change, resident memory after the warm-up flat within 10 %, descriptors back to the
//! baseline, and the server still running. It prints a table, writes the JSON report to
//! `--report` and exits 1 when a check fails (2 when it cannot run).

mod client;
mod load;
mod mcp;
mod procfs;
mod report;
mod tally;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::client::Target;
use crate::load::{Plan, Shared, StreamLife};
use crate::report::{Outcome, Sample};

/// Descriptors the driver needs besides one per listen stream.
const SPARE_FDS: u64 = 512;

#[derive(Parser, Debug)]
#[command(about = "Soak a running MCP server on loopback with load and faults, and check that nothing is lost")]
struct Args {
    /// The server's endpoint, `http://127.0.0.1:PORT/mcp`.
    #[arg(long)]
    url: String,
    /// The server's process id (its memory and descriptors are read from `/proc`).
    #[arg(long)]
    pid: u32,
    /// How long the load runs, warm-up included.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// The warm-up: memory is compared from the first sample after it.
    #[arg(long, default_value_t = 20)]
    warmup_seconds: u64,
    /// Listen streams held open.
    #[arg(long, default_value_t = 2_000)]
    listeners: usize,
    /// Legacy callers (session churn).
    #[arg(long, default_value_t = 16)]
    legacy_callers: usize,
    /// Modern callers (stateless).
    #[arg(long, default_value_t = 16)]
    modern_callers: usize,
    /// Requests per second of all callers together.
    #[arg(long, default_value_t = 400.0)]
    rate: f64,
    /// The server's `max_body_bytes`; the oversize bodies are larger.
    #[arg(long, default_value_t = 65_536)]
    max_body_bytes: usize,
    /// How long the hanging tool is waited for before the client gives up.
    #[arg(long, default_value_t = 300)]
    hang_timeout_ms: u64,
    /// Interval of the memory and descriptor samples.
    #[arg(long, default_value_t = 2_000)]
    sample_every_ms: u64,
    /// Where the JSON report is written.
    #[arg(long)]
    report: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("soak: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the soak; `Ok(false)` when a check failed.
async fn run(args: Args) -> Result<bool, String> {
    let target = Target::parse(&args.url)?;
    let pid = args.pid;
    if !procfs::alive(pid) {
        return Err(format!("no server process {pid}"));
    }
    let needed = args.listeners as u64 + SPARE_FDS;
    for (who, limit) in [
        ("this driver", procfs::open_files_limit("self")),
        ("the server", procfs::open_files_limit(&pid.to_string())),
    ] {
        if let Some(limit) = limit.filter(|l| *l < needed) {
            return Err(format!(
                "{who} may open {limit} files, {needed} are needed for {} listen streams: raise `ulimit -n` or pass fewer --listeners",
                args.listeners
            ));
        }
    }
    let duration = Duration::from_secs(args.seconds.max(1));
    let warmup = Duration::from_secs(args.warmup_seconds).min(duration / 2);
    let plan = Plan {
        listeners: args.listeners,
        listen_ramp_per_s: 250,
        legacy_callers: args.legacy_callers,
        modern_callers: args.modern_callers,
        rate: args.rate,
        max_body_bytes: args.max_body_bytes,
        hang_timeout: Duration::from_millis(args.hang_timeout_ms),
        trigger_every: Duration::from_secs(5),
        disconnect_every: Duration::from_millis(250),
        hang_every: Duration::from_millis(1_000),
        oversize_every: Duration::from_millis(500),
        malformed_every: Duration::from_millis(150),
    };

    // The baseline: the server idle, before any connection of ours.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline_fds = procfs::fd_count(pid)?;
    let idle_rss_kb = procfs::rss_kb(pid)?;
    println!(
        "soak: {} s ({} s warm-up) against {}: {} listen streams, {}+{} callers at {} req/s; server pid {pid}, {baseline_fds} fds, {} MiB idle",
        duration.as_secs(),
        warmup.as_secs(),
        args.url,
        plan.listeners,
        plan.legacy_callers,
        plan.modern_callers,
        plan.rate,
        idle_rss_kb / 1024,
    );

    let shared = Shared::new(target, plan.clone());
    let started = Instant::now();
    let mut holders = Vec::with_capacity(plan.listeners);
    for i in 0..plan.listeners {
        let delay = Duration::from_secs_f64(i as f64 / plan.listen_ramp_per_s.max(1) as f64);
        holders.push(tokio::spawn(load::listen_holder(shared.clone(), delay)));
    }
    let mut workers = Vec::new();
    for i in 0..plan.legacy_callers {
        workers.push(tokio::spawn(load::legacy_caller(shared.clone(), 1_000 + i as u64)));
    }
    for i in 0..plan.modern_callers {
        workers.push(tokio::spawn(load::modern_caller(shared.clone(), 2_000 + i as u64)));
    }
    workers.push(tokio::spawn(load::modern_faults(shared.clone(), 3, false)));
    workers.push(tokio::spawn(load::modern_faults(shared.clone(), 4, true)));
    workers.push(tokio::spawn(load::oversize(shared.clone())));
    workers.push(tokio::spawn(load::malformed(shared.clone())));
    workers.push(tokio::spawn(load::trigger(shared.clone())));

    let samples = sample(
        &shared,
        pid,
        started,
        duration,
        Duration::from_millis(args.sample_every_ms),
    )
    .await;

    // Stop: every worker finishes its request in flight (bounded by its timeout) and closes.
    shared.stop.cancel();
    let stopped = Instant::now();
    let drain = load::REQUEST_TIMEOUT + Duration::from_secs(15);
    let joined = tokio::time::timeout(drain, async {
        let mut lives: Vec<StreamLife> = Vec::new();
        for h in holders {
            lives.extend(h.await.unwrap_or_default());
        }
        for w in workers {
            let _ = w.await;
        }
        lives
    })
    .await;
    let (lives, drained) = match joined {
        Ok(lives) => (lives, true),
        Err(_) => (Vec::new(), false),
    };
    let drain_ms = stopped.elapsed().as_millis() as u64;

    // Descriptors back to the baseline once every connection closed.
    let fds_after = settle_fds(pid, baseline_fds).await;
    let rss_after_kb = procfs::rss_kb(pid).ok();
    let outcome = Outcome {
        args_url: args.url.clone(),
        plan,
        duration,
        warmup,
        idle_rss_kb,
        baseline_fds,
        fds_after,
        rss_after_kb,
        samples,
        lives,
        triggers: shared.triggers.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        peak_streams: shared.peak_streams.load(Ordering::Relaxed),
        drained,
        drain_ms,
        alive: procfs::alive(pid),
    };
    let ok = report::finish(&outcome, &shared.tally, args.report.as_deref())?;
    Ok(ok)
}

/// Samples the server every `every` until `duration` has passed since `started`, printing a
/// progress line every ten seconds or so.
async fn sample(shared: &Arc<Shared>, pid: u32, started: Instant, duration: Duration, every: Duration) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut ticker = tokio::time::interval(every.max(Duration::from_millis(200)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_print = Instant::now();
    loop {
        ticker.tick().await;
        let at = started.elapsed();
        if at >= duration {
            break;
        }
        let s = Sample {
            at_s: at.as_secs_f64(),
            rss_kb: procfs::rss_kb(pid).unwrap_or(0),
            fds: procfs::fd_count(pid).unwrap_or(0),
            streams: shared.open_streams.load(Ordering::Relaxed),
        };
        if last_print.elapsed() >= Duration::from_secs(10) {
            last_print = Instant::now();
            let t = shared.tally.totals();
            println!(
                "soak: {:>4.0} s  rss {:>6.1} MiB  fds {:>5}  streams {:>5}  sent {:>7}  lost {}  wrong {}  5xx {}",
                s.at_s,
                s.rss_kb as f64 / 1024.0,
                s.fds,
                s.streams,
                t.sent,
                t.lost,
                t.wrong,
                t.unexpected_5xx
            );
        }
        samples.push(s);
    }
    samples
}

/// Descriptors above the baseline tolerated once every connection closed.
pub(crate) const FD_MARGIN: usize = 8;

/// Waits (up to 20 s) for the server's descriptors to come back within [`FD_MARGIN`] of
/// `baseline`; returns the last count.
async fn settle_fds(pid: u32, baseline: usize) -> Option<usize> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let fds = procfs::fd_count(pid).ok();
        if fds.is_none_or(|n| n <= baseline + FD_MARGIN) || Instant::now() >= deadline {
            return fds;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
