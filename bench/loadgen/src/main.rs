//! `loadgen`: the bench's load generator, the same client for every target (issue 7).
//!
//! ```text
//! loadgen http  --url URL [--url URL]… --workload w1|w2|w3|w4 [--clients N] [--warmup-ms MS]
//!               [--duration-ms MS] [--pid PID]… [--tools N] [--lenient] [--hold]
//! loadgen stdio [--inflight K] [--warmup-ms MS] [--duration-ms MS] [--lenient] -- SERVER ARGS…
//! loadgen mem   --url URL --pid PID [--sessions N] [--connections N] [--streams N]
//!               [--h2-streams N]
//! ```
//!
//! Each command prints one line of JSON on stdout (see `stats::Outcome` and `mem::Memory`)
//! and exits non-zero with a one-line reason on stderr if the target does not answer as the
//! workload expects. Before measuring, one operation is checked in full (every answer parsed;
//! `--lenient` skips that, for the floor, whose answers are fixed). HTTP load runs on a
//! single-threaded runtime (the bench pins the generator to one core): `--clients` tasks, each
//! with its own keep-alive connection, one operation after the other. Given `--url` more than
//! once (instances of one server sharing their state), each client keeps one connection per URL
//! and sends each request to the next URL in turn (see `run`). Only loopback URLs are accepted.
//!
//! Given `--pid`, `http` and `stdio` (whose server it spawns) also read the server's CPU over the
//! measured window (`server_cpu_ms`, `server_cpu_us_per_request`; see `cpu`). `http --hold`
//! stops after the warm-up and after the measured duration until a line comes on stdin (see
//! `hold`), for readings of a server-side counter that bracket exactly `held_requests`.

mod client;
mod cpu;
mod hold;
mod mcp;
mod mem;
mod run;
mod stats;
mod stdio;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::client::{Result, Target};
use crate::run::{LoadOpts, Workload};

#[derive(Parser, Debug)]
#[command(about = "The bench's load generator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Durations and concurrency shared by the load commands.
#[derive(clap::Args, Debug)]
struct Timing {
    /// Time run before measuring, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    warmup_ms: u64,
    /// Time measured, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    duration_ms: u64,
    /// Skip the full check of one operation before the run (for the floor).
    #[arg(long)]
    lenient: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load an HTTP endpoint with one workload.
    Http {
        /// The endpoint (`http://127.0.0.1:PORT/mcp`); several: instances taken in turn, one
        /// request each.
        #[arg(long, required = true)]
        url: Vec<String>,
        /// The workload.
        #[arg(long, value_enum)]
        workload: Workload,
        /// Concurrent clients, one keep-alive connection each.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// The server's pid, to report its peak resident size (several: the largest).
        #[arg(long)]
        pid: Vec<u32>,
        /// Tools `tools/list` must return in all (W4's full check).
        #[arg(long, default_value_t = 200)]
        tools: usize,
        /// Hold after the warm-up and after the measured duration: print `held` (then `held
        /// N`) on stderr and wait for a line on stdin.
        #[arg(long)]
        hold: bool,
        #[command(flatten)]
        timing: Timing,
    },
    /// Spawn a server on stdio and measure round trips.
    Stdio {
        /// Requests in flight at once (1: sequential).
        #[arg(long, default_value_t = 1)]
        inflight: usize,
        #[command(flatten)]
        timing: Timing,
        /// The server command line.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Measure the resident memory of a server: idle, per session, per connection, per listen
    /// stream.
    Mem {
        /// The endpoint (`http://127.0.0.1:PORT/mcp`).
        #[arg(long)]
        url: String,
        /// The server's pid.
        #[arg(long)]
        pid: u32,
        /// Idle legacy sessions to open (0: skip).
        #[arg(long, default_value_t = 10_000)]
        sessions: usize,
        /// Idle keep-alive connections to hold open (0: skip).
        #[arg(long, default_value_t = 2_000)]
        connections: usize,
        /// `subscriptions/listen` streams to hold open (0: skip).
        #[arg(long, default_value_t = 2_000)]
        streams: usize,
        /// `subscriptions/listen` streams to hold open over h2c, 100 per connection (0: skip).
        #[arg(long, default_value_t = 0)]
        h2_streams: usize,
    },
}

impl Timing {
    fn opts(&self, clients: usize) -> LoadOpts {
        LoadOpts {
            clients,
            warmup: Duration::from_millis(self.warmup_ms),
            duration: Duration::from_millis(self.duration_ms),
            pids: Vec::new(),
            hold: false,
        }
    }
}

async fn execute(cli: Cli) -> Result<String> {
    let json = |v: serde_json::Result<String>| v.map_err(|e| format!("JSON: {e}"));
    match cli.command {
        Command::Http {
            url,
            workload,
            clients,
            pid,
            tools,
            hold,
            timing,
        } => {
            let targets = url.iter().map(|u| Target::parse(u)).collect::<Result<Vec<_>>>()?;
            let probed = if timing.lenient {
                0
            } else {
                run::probe(&targets, workload, tools).await?
            };
            let opts = LoadOpts {
                pids: pid.clone(),
                hold,
                ..timing.opts(clients)
            };
            let mut outcome = run::run(&targets, workload, &opts).await?;
            outcome.requests_sent += probed;
            for pid in pid {
                let peak = stats::proc_status_kb(pid, "VmHWM")?;
                outcome.peak_rss_kb = Some(outcome.peak_rss_kb.map_or(peak, |p| p.max(peak)));
            }
            json(serde_json::to_string(&outcome))
        }
        Command::Stdio {
            inflight,
            timing,
            command,
        } => {
            let outcome = stdio::run(&command, inflight, &timing.opts(inflight), !timing.lenient).await?;
            json(serde_json::to_string(&outcome))
        }
        Command::Mem {
            url,
            pid,
            sessions,
            connections,
            streams,
            h2_streams,
        } => {
            let target = Target::parse(&url)?;
            let counts = mem::Counts {
                sessions,
                connections,
                streams,
                h2_streams,
            };
            let memory = mem::measure(&target, pid, counts).await?;
            json(serde_json::to_string(&memory))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadgen: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = tokio::task::LocalSet::new();
    match local.block_on(&runtime, execute(cli)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}
