//! `cargo xtask bench [--quick] [--skip-build] [--readme] [--only ID]…`: our server against rmcp
//! and against the floor, in one run (issue 7); `--readme` measures nothing and prints the
//! Markdown tables of the saved `target/bench/report.json` (for `docs/BENCHMARKS.md`). `--only W5a` (and
//! so on, repeatable: `W1` … `W4`, `W5a`, `W5b`, `M1`) measures only those rows, for working on
//! one workload, and writes `target/bench/report-only.json` instead, so that the full run's
//! report stays.
//!
//! It builds the bench workspace (`bench/`, its own workspace, into `target/bench-build`) in
//! release, then for each workload starts each target afresh (`ours`, `rmcp-peer`, `floor`) and
//! runs the same load generator (`loadgen`) against it, with the server and the generator pinned
//! to different cores when the machine has two or more (`taskset`). The full run measures each
//! (workload, target) cell in three rounds of 5 s, interleaved across the targets, and keeps the
//! median round, so that a burst of load from elsewhere on a shared machine skews one round
//! rather than one target; `--quick` measures one round of 2 s, and `--rounds N` sets the number
//! of rounds (an odd number keeps the median a measured round). It prints a table and writes
//! `target/bench/report.json` (see [`report`]).
//!
//! Besides rates and latencies, each measured round reports the server's CPU per request: the
//! load generator reads the server process's `utime + stime` (`/proc/PID/stat`, every thread)
//! when the measured window opens and when it closes. For W1, W2 and W3 a separate counting run
//! (not a measured round) against `ours` built with `--features count-allocs` (in
//! `target/bench-build/count-allocs`, so that the measured binary stays uncounted) gives the
//! allocations and bytes per request, read by `SIGUSR1` while the generator holds every client
//! idle before and after the counted part (see [`allocs`]).
//!
//! The report ends with the targets of issue 25, each met, missed or not measured by this run
//! (see [`targets`]). A cell whose rounds spread past 1.5× is disturbed ([`disturbed`]); when a
//! disturbed cell decides a target, the row's rounds are measured again, every target
//! interleaved as before, up to twice, and the report says which rows were rerun and which
//! cells stayed disturbed (see [`rerun`]).
//!
//! Workloads: W1 modern stateless `tools/call`, W2 legacy session `tools/call`, W3 session
//! churn, W4 `tools/list` of 200 tools, W5 stdio round trips (sequential and 8 in flight), M1
//! resident memory (idle, per idle legacy session, per idle keep-alive connection, per open
//! `subscriptions/listen` stream over HTTP/1.1 and over h2c).
//!
//! S cells (scale-out): W1, W2 and W3 through two `ours` instances sharing their state on one
//! `redis-server` (started for the run, [`crate::redis::RedisServer`]), the generator sending
//! each request to the other instance in turn (client-side round robin: no proxy), against the
//! one in-memory `ours` instance of the W row, measured as a fourth target in the same
//! interleaved rounds. Both instances and Redis share the server core. Around each measured round
//! xtask reads Redis's `INFO commandstats` (commands executed, script and transaction bodies
//! counted one by one) and divides by the requests the generator sent; after the rounds, a
//! separate short run with a `MONITOR` tap counts the requests the instances sent Redis (a script
//! or a `MULTI`/`EXEC` once: one round trip each; see [`shared`]). Each round also measures the
//! cell's round-trip floor, a fifth target: one `ours --round-trip-via` instance, its state in
//! memory, making one bare round trip (`PING`) to the same Redis before every message, pinned
//! with it; no server that asks Redis anything per message can do better.
//! Seam cells: W1 measures three more targets in the same interleaved rounds, `ours` with one of
//! the runtime's seams in use, each judged by its ratio to `ours` (issue 25: each costs at most
//! 5%): `layered`, one middleware layer that passes every message on; `limited`, the built-in
//! rate limiter on `tools/call` under a quota no run reaches ([`SEAM_QUOTA`]: what it measures
//! is the limiter's bookkeeping, not its refusals); `traced`, the library's spans recorded with
//! OpenTelemetry (ours built apart with its `otel` feature, the server given the SDK's tracer,
//! `McpServerBuilder::tracer`, over the SDK's batch processor, an exporter dropping the batches).
//!
//! `--baseline REV` adds a fourth target, `baseline`: this repository's `ours` as it was at
//! commit REV (checked out in a worktree under `target/bench-baseline/src`, built into
//! `target/bench-baseline/build`), measured in the same interleaved rounds as the others, W and
//! S cells alike, so that a change is judged against what it changed (`ours/baseline`) in one
//! run, beside the peers.
//!
//! Every server listens on 127.0.0.1 only; every run is bounded in count and duration.

mod allocs;
mod build;
mod disturbed;
mod report;
mod rerun;
mod shared;
mod targets;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::redis::RedisServer;
use crate::util::{self, ChildGuard, Result};

/// The options of `cargo xtask bench`.
#[derive(Debug, Default)]
pub(crate) struct Options {
    /// Short durations and fewer sessions: under two minutes once built.
    pub(crate) quick: bool,
    /// `--rounds N`: measure each cell in N interleaved rounds (the median is kept) instead of
    /// the plan's 3 (1 with `--quick`), for a cell whose rounds spread more than the change
    /// being judged.
    pub(crate) rounds: Option<usize>,
    /// Use the binaries already in `target/bench-build/release`.
    pub(crate) skip_build: bool,
    /// Measure nothing: print the Markdown tables of the saved `target/bench/report.json`.
    pub(crate) readme: bool,
    /// Measure only these rows (`W1` … `W5b`, `M1`); empty: every row.
    pub(crate) only: Vec<String>,
    /// A commit whose `ours` is measured too, as the target `baseline`.
    pub(crate) baseline: Option<String>,
}

impl Options {
    /// Whether the row `id` is measured.
    fn wants(&self, id: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o.eq_ignore_ascii_case(id))
    }
}

/// The ids `--only` accepts.
pub(crate) const ROW_IDS: [&str; 7] = ["W1", "W2", "W3", "W4", "W5a", "W5b", "M1"];

/// Durations and counts of one run.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// Runs of each (workload, target) cell, interleaved across targets; the median is kept.
    rounds: usize,
    clients: usize,
    warmup_ms: u64,
    duration_ms: u64,
    sessions: usize,
    streams: usize,
    tools: usize,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                rounds: 1,
                clients: 16,
                warmup_ms: 500,
                duration_ms: 2_000,
                sessions: 1_000,
                streams: 200,
                tools: 200,
            }
        } else {
            Plan {
                rounds: 3,
                clients: 16,
                warmup_ms: 1_000,
                duration_ms: 5_000,
                sessions: 10_000,
                streams: 2_000,
                tools: 200,
            }
        }
    }

    fn json(&self) -> Value {
        json!({
            "rounds": self.rounds,
            "clients": self.clients,
            "warmup_ms": self.warmup_ms,
            "duration_ms": self.duration_ms,
            "sessions": self.sessions,
            "streams": self.streams,
            "tools": self.tools,
        })
    }
}

/// The three targets, in the order they run.
pub(crate) const TARGETS: [&str; 3] = ["ours", "rmcp", "floor"];

/// The S cell of a W workload: its id and title.
fn shared_cell(workload: &str) -> Option<(&'static str, &'static str)> {
    match workload {
        "W1" => Some(("S1", "modern tools/call through two instances on Redis")),
        "W2" => Some(("S2", "legacy tools/call through two instances on Redis")),
        "W3" => Some(("S3", "session churn through two instances on Redis")),
        _ => None,
    }
}

/// The counting run of an S cell (with the `MONITOR` tap, which slows Redis: not measured).
const COUNT_RUN_MS: u64 = 1_000;

/// The target that is `ours` at the `--baseline` commit.
const BASELINE: &str = "baseline";
/// The seam target: `ours` with one pass-through middleware layer.
const LAYERED: &str = "layered";
/// The seam target: `ours` with the rate limiter on `tools/call` under [`SEAM_QUOTA`].
const LIMITED: &str = "limited";
/// The seam target: `ours` recording its spans with OpenTelemetry (its `otel` build).
const TRACED: &str = "traced";
/// The seam targets, measured in W1 only.
pub(crate) const SEAMS: [&str; 3] = [LAYERED, LIMITED, TRACED];
/// The rate limit of `limited`: a million calls a second per caller (the most a quota takes),
/// which no run reaches.
const SEAM_QUOTA: &str = "1000000";

/// The binary of a target.
fn binary_name(target: &str) -> &'static str {
    match target {
        "ours" | BASELINE | LAYERED | LIMITED | TRACED => "ours",
        "rmcp" => "rmcp-peer",
        _ => "floor",
    }
}

/// Where the bench binaries are and how processes are pinned.
struct Bench {
    bin: PathBuf,
    /// `ours` built with a shared store (the S cells' instances).
    shared_bin: PathBuf,
    /// The release directory of the `--baseline` build, if any.
    baseline: Option<PathBuf>,
    /// The `--baseline` build the S cells run as instances, if any.
    baseline_shared: Option<PathBuf>,
    /// `ours` built with OpenTelemetry (the seam target `traced`), if that build succeeded.
    traced_bin: Option<PathBuf>,
    /// `taskset -c N` prefixes for the server and the generator (empty when not pinning).
    server_pin: Vec<String>,
    loadgen_pin: Vec<String>,
    plan: Plan,
}

/// Runs the bench.
pub(crate) fn run(opts: &Options) -> Result {
    let path = util::target_dir().join("bench/report.json");
    if let Some(bad) = opts
        .only
        .iter()
        .find(|o| !ROW_IDS.iter().any(|id| id.eq_ignore_ascii_case(o)))
    {
        return Err(format!("bench: --only {bad}: expected one of {}", ROW_IDS.join(", ")));
    }
    if opts.readme {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e} (run `cargo xtask bench` first)", path.display()))?;
        let report: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("{}", report::markdown(&report));
        return Ok(());
    }
    let mut plan = Plan::new(opts.quick);
    if let Some(rounds) = opts.rounds {
        plan.rounds = rounds.max(1);
    }
    let build_dir = util::target_dir().join("bench-build");
    if !opts.skip_build {
        build::workspace(&build_dir)?;
    }
    let (baseline, baseline_shared) = match &opts.baseline {
        Some(rev) => {
            let b = build::baseline(rev, opts.skip_build)?;
            (Some(b.release), Some(b.shared))
        }
        None => (None, None),
    };
    let mut failures = Vec::new();
    // The counting build, for the allocations per request of W1…W3.
    let counted = if COUNTED.iter().any(|id| opts.wants(id)) {
        build::counted(&build_dir, opts.skip_build)
            .map_err(|e| failures.push(format!("counting build: {e}")))
            .ok()
    } else {
        None
    };
    let bin = build_dir.join("release");
    for target in TARGETS.iter().map(|t| binary_name(t)).chain(["loadgen"]) {
        if !bin.join(target).is_file() {
            return Err(format!(
                "{} does not exist: run without --skip-build",
                bin.join(target).display()
            ));
        }
    }
    // The OpenTelemetry build, for the seam target `traced` of W1.
    let traced_bin = if opts.wants("W1") {
        build::traced(&build_dir, opts.skip_build)
            .map_err(|e| failures.push(format!("OpenTelemetry build: {e}")))
            .ok()
    } else {
        None
    };
    let (server_pin, loadgen_pin, pinning) = pinning();
    let bench = Bench {
        shared_bin: build_dir.join("shared/release/ours"),
        bin,
        baseline,
        baseline_shared,
        traced_bin,
        server_pin,
        loadgen_pin,
        plan,
    };
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut shared_rows = Vec::new();
    let mut allocations = Map::new();

    let mut redis = None;
    if ["W1", "W2", "W3"].iter().any(|id| opts.wants(id)) {
        util::banner("redis-server for the S cells");
        match build::shared(&build_dir, opts.skip_build).and_then(|_| bench.start_redis()) {
            Ok(r) => redis = Some(r),
            Err(e) => {
                eprintln!("xtask: S cells: {e}");
                failures.push(format!("S cells: {e}"));
            }
        }
    }

    let workloads = [
        ("W1", Load::Http("w1"), "modern tools/call (2026-07-28, stateless)"),
        ("W2", Load::Http("w2"), "legacy tools/call (one session per client)"),
        (
            "W3",
            Load::Http("w3"),
            "session churn (initialize, initialized, call, DELETE)",
        ),
        ("W4", Load::Http("w4"), "tools/list of 200 tools (every page)"),
        ("W5a", Load::Stdio(1), "stdio round trips, sequential"),
        ("W5b", Load::Stdio(8), "stdio round trips, 8 in flight"),
    ];
    for (id, load, title) in workloads.into_iter().filter(|(id, _, _)| opts.wants(id)) {
        util::banner(&format!("{id}: {title}"));
        let shared = match load {
            Load::Http(_) => shared_cell(id),
            Load::Stdio(_) => None,
        };
        let targets = bench.targets_for(id);
        let mut runs: Vec<Vec<Value>> = vec![Vec::new(); targets.len()];
        let mut shared_runs = Vec::new();
        let mut floor_runs = Vec::new();
        let mut baseline_shared_runs = Vec::new();
        let mut body_bytes = 0;
        for round in 1..=plan.rounds {
            let what = format!("{id} round {round}/{}", plan.rounds);
            let outcomes = bench.round(load, &targets, &mut body_bytes, &what, &mut failures);
            for (runs, outcome) in runs.iter_mut().zip(outcomes) {
                runs.extend(outcome);
            }
            if let (Some((sid, _)), Load::Http(workload), Some(redis)) = (shared, load, redis.as_mut()) {
                let prefix = format!("bench-{}-r{round}", sid.to_ascii_lowercase());
                let outcome = bench.shared_run(redis, workload, &prefix, "ours");
                if let Some(v) = record(
                    SHARED_TARGET,
                    &format!("{sid} round {round}/{}", plan.rounds),
                    outcome,
                    &mut failures,
                ) {
                    shared_runs.push(v);
                }
                let outcome = bench.floor_run(redis, workload);
                let what = format!("{sid} round-trip floor round {round}/{}", plan.rounds);
                if let Some(v) = record(FLOOR_TARGET, &what, outcome, &mut failures) {
                    floor_runs.push(v);
                }
                if bench.baseline.is_some() {
                    let prefix = format!("bench-{}-b{round}", sid.to_ascii_lowercase());
                    let outcome = bench.shared_run(redis, workload, &prefix, BASELINE);
                    if let Some(v) = record(
                        "baseline×2+redis",
                        &format!("{sid} baseline round {round}/{}", plan.rounds),
                        outcome,
                        &mut failures,
                    ) {
                        baseline_shared_runs.push(v);
                    }
                }
            }
        }
        let mut results = medians(&targets, runs);
        // A disturbed cell that decides a target is measured again (the S cells are not).
        let row = rerun::settle(report::row(id, title, results.clone()), |attempt| {
            util::banner(&format!("{id}: a disturbed cell decides a target: rerun {attempt}"));
            let what = format!("{id} rerun {attempt}");
            report::row(
                id,
                title,
                bench.rounds(load, &targets, &mut body_bytes, &what, &mut failures),
            )
        });
        rows.push(row);
        if let (Load::Http(workload), Some(program), true) = (load, counted.as_deref(), COUNTED.contains(&id)) {
            let outcome = bench.count_allocs(program, workload);
            let value = record("ours (counting)", &format!("{id} allocations"), outcome, &mut failures);
            allocations.insert(id.to_owned(), value.unwrap_or_else(|| json!({"error": "failed"})));
        }
        if let (Some((sid, stitle)), Load::Http(workload)) = (shared, load) {
            let round_trips = match redis.as_mut() {
                Some(redis) => {
                    let prefix = format!("bench-{}-count", sid.to_ascii_lowercase());
                    let outcome = bench.shared_count(redis, workload, &prefix);
                    record(SHARED_TARGET, &format!("{sid} counting run"), outcome, &mut failures)
                        .unwrap_or_else(|| json!({"error": "failed"}))
                }
                None => json!({"error": "no redis-server"}),
            };
            let single = results.remove("ours").unwrap_or_else(|| json!({"error": "failed"}));
            let baseline = bench.baseline.is_some().then(|| median(baseline_shared_runs));
            let runs = report::SharedRuns {
                single,
                shared: median(shared_runs),
                floor: median(floor_runs),
                baseline,
            };
            shared_rows.push(report::shared_row(sid, stitle, id, runs, round_trips));
        }
    }
    drop(redis);

    let mut memory = serde_json::Map::new();
    if opts.wants("M1") {
        util::banner("M1: resident memory");
    }
    for target in bench.targets().into_iter().filter(|_| opts.wants("M1")) {
        let outcome = bench.memory(target);
        let value = record(target, "M1", outcome, &mut failures);
        memory.insert(target.to_owned(), value.unwrap_or_else(|| json!({"error": "failed"})));
    }

    let report = report::Report {
        quick: opts.quick,
        plan: plan.json(),
        pinning,
        rows,
        shared: shared_rows,
        allocations: Value::Object(allocations),
        memory: Value::Object(memory),
        elapsed: started.elapsed(),
    };
    let path = if opts.only.is_empty() {
        path
    } else {
        path.with_file_name("report-only.json")
    };
    report.write(&path)?;
    println!("\n{}", report.table());
    println!("report: {}", path.display());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} run(s) failed: {}", failures.len(), failures.join("; ")))
    }
}

/// How the S cells' runs are named in the output.
const SHARED_TARGET: &str = "ours×2+redis";
/// How the S cells' round-trip floor runs are named in the output.
const FLOOR_TARGET: &str = "ours+PING/message";

/// The JSON of one run, printed; a failure is printed and remembered in `failures`.
fn record(target: &str, what: &str, outcome: Result<Value>, failures: &mut Vec<String>) -> Option<Value> {
    match outcome {
        Ok(v) => {
            println!("{target:>5}: {v}");
            Some(v)
        }
        Err(e) => {
            eprintln!("xtask: {what} {target}: {e}");
            failures.push(format!("{what} {target}: {e}"));
            None
        }
    }
}

/// The run of median throughput among a target's rounds, with every round's `rps` in `rounds`
/// (`{"error": …}` when no round succeeded).
fn median(mut runs: Vec<Value>) -> Value {
    if runs.is_empty() {
        return json!({"error": "every round failed"});
    }
    let rps = |v: &Value| v["rps"].as_f64().unwrap_or(0.0);
    runs.sort_by(|a, b| rps(a).total_cmp(&rps(b)));
    let all: Vec<f64> = runs.iter().map(rps).collect();
    let mut chosen = runs.swap_remove(runs.len() / 2);
    chosen["rounds_rps"] = json!(all);
    chosen
}

/// Each target's median run, by name (`runs[i]` are the runs of `targets[i]`).
fn medians(targets: &[&str], runs: Vec<Vec<Value>>) -> Map<String, Value> {
    targets
        .iter()
        .zip(runs)
        .map(|(target, runs)| ((*target).to_owned(), median(runs)))
        .collect()
}

/// The rows whose allocations per request are counted (with the counting build).
const COUNTED: [&str; 3] = ["W1", "W2", "W3"];

/// How a workload loads its target.
#[derive(Debug, Clone, Copy)]
enum Load {
    /// `loadgen http --workload W` against a server started here.
    Http(&'static str),
    /// `loadgen stdio --inflight K`, which spawns the server.
    Stdio(usize),
}

/// `taskset` prefixes that pin the server to core 1 and the generator to core 0, when the
/// machine has two cores or more and `taskset` (util-linux) is there; and their description.
fn pinning() -> (Vec<String>, Vec<String>, Value) {
    let cores = thread::available_parallelism().map_or(1, usize::from);
    let taskset = Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if cores >= 2 && taskset {
        let pin = |core: &str| vec!["taskset".to_owned(), "-c".to_owned(), core.to_owned()];
        let note = json!({"pinned": true, "server_cpu": 1, "loadgen_cpu": 0, "cores": cores});
        (pin("1"), pin("0"), note)
    } else {
        let why = if cores < 2 { "one core" } else { "no taskset" };
        (
            Vec::new(),
            Vec::new(),
            json!({"pinned": false, "why": why, "cores": cores}),
        )
    }
}

/// A server started for one run, killed when dropped.
struct Server {
    child: ChildGuard,
    url: String,
}

impl Bench {
    /// The targets of this run, in the order they run (the seams aside).
    fn targets(&self) -> Vec<&'static str> {
        let mut targets = TARGETS.to_vec();
        if self.baseline.is_some() {
            targets.push(BASELINE);
        }
        targets
    }

    /// The targets of workload row `id`: the run's, and in W1 the seams (`traced` when its
    /// build succeeded).
    fn targets_for(&self, id: &str) -> Vec<&'static str> {
        let mut targets = self.targets();
        if id == "W1" {
            let built = |t: &&'static str| *t != TRACED || self.traced_bin.is_some();
            targets.extend(SEAMS.into_iter().filter(built));
        }
        targets
    }

    /// The binary of a target.
    fn binary(&self, target: &str) -> PathBuf {
        match (target, &self.baseline, &self.traced_bin) {
            (BASELINE, Some(dir), _) => dir.join(binary_name(target)),
            (TRACED, _, Some(traced)) => traced.clone(),
            _ => self.bin.join(binary_name(target)),
        }
    }

    /// The command line `pin… binary args…`.
    fn command(&self, pin: &[String], program: &Path, args: &[String]) -> Command {
        let mut cmd = match pin.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(program);
                c
            }
            None => Command::new(program),
        };
        cmd.args(args).current_dir(util::root());
        cmd
    }

    /// The server arguments of a target (`--tools`, the floor's `--body-bytes`).
    fn server_args(&self, target: &str, tools: bool, body_bytes: u64) -> Vec<String> {
        let mut args = Vec::new();
        if target == "floor" {
            if body_bytes > 0 {
                args.extend(["--body-bytes".to_owned(), body_bytes.to_string()]);
            }
        } else if tools {
            args.extend(["--tools".to_owned(), self.plan.tools.to_string()]);
        }
        match target {
            LAYERED => args.push("--layer".to_owned()),
            LIMITED => args.extend(["--rate-limit".to_owned(), SEAM_QUOTA.to_owned()]),
            TRACED => args.push("--otel".to_owned()),
            _ => {}
        }
        args
    }

    /// Starts a target over HTTP on a free loopback port and waits for its `listening on URL`.
    fn start(&self, target: &str, extra: Vec<String>) -> Result<Server> {
        self.serve(&self.binary(target), extra, Stdio::inherit())
    }

    /// Starts `program` (a server binary) over HTTP on a free loopback port, pinned, its stderr
    /// to `stderr`, and waits for its `listening on URL`.
    fn serve(&self, program: &Path, extra: Vec<String>, stderr: Stdio) -> Result<Server> {
        let port = util::free_port()?;
        let mut args = vec!["--http".to_owned(), port.to_string()];
        args.extend(extra);
        let mut cmd = self.command(&self.server_pin, program, &args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr);
        let line = util::display(&cmd);
        let mut child = ChildGuard::spawn(&mut cmd)?;
        let stdout = child.take_stdout().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            for _ in lines.map_while(std::result::Result::ok) {}
        });
        let first = rx.recv_timeout(Duration::from_secs(30)).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => format!("`{line}` did not print `listening on …` within 30 s"),
            mpsc::RecvTimeoutError::Disconnected => {
                format!("`{line}` closed its stdout (exited?) before printing `listening on …`")
            }
        })?;
        let url = first
            .strip_prefix("listening on ")
            .filter(|u| u.starts_with("http://127.0.0.1:"))
            .ok_or_else(|| format!("`{line}` printed `{first}`"))?
            .to_owned();
        Ok(Server { child, url })
    }

    /// Runs `loadgen ARGS` pinned, within `timeout`, and parses the JSON line it prints.
    fn loadgen(&self, args: &[String], timeout: Duration) -> Result<Value> {
        let mut cmd = self.command(&self.loadgen_pin, &self.bin.join("loadgen"), args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let line = util::display(&cmd);
        let mut child = ChildGuard::spawn(&mut cmd)?;
        let mut stdout = child.take_stdout().ok_or("no stdout")?;
        let reader = thread::spawn(move || {
            let mut out = String::new();
            let _ = stdout.read_to_string(&mut out);
            out
        });
        let status = child.wait_timeout(timeout)?;
        let out = reader.join().unwrap_or_default();
        if !status.success() {
            return Err(format!("`{line}` failed ({})", util::describe(status)));
        }
        serde_json::from_str(out.trim()).map_err(|e| format!("`{line}` printed no JSON ({e}): {out}"))
    }

    fn timing(&self) -> Vec<String> {
        vec![
            "--warmup-ms".to_owned(),
            self.plan.warmup_ms.to_string(),
            "--duration-ms".to_owned(),
            self.plan.duration_ms.to_string(),
        ]
    }

    fn run_timeout(&self) -> Duration {
        Duration::from_millis(self.plan.warmup_ms + self.plan.duration_ms) + Duration::from_secs(60)
    }

    /// The `loadgen http` arguments of `workload` against `servers` (each request to the next
    /// one in turn), without the timing.
    fn http_args(&self, servers: &[&Server], workload: &str) -> Vec<String> {
        let tools = workload == "w4";
        let mut args = vec!["http".to_owned()];
        for server in servers {
            args.extend(["--url".to_owned(), server.url.clone()]);
            args.extend(["--pid".to_owned(), server.child.id().to_string()]);
        }
        args.extend([
            "--workload".to_owned(),
            workload.to_owned(),
            "--clients".to_owned(),
            self.plan.clients.to_string(),
            "--tools".to_owned(),
            (if tools { self.plan.tools } else { 1 }).to_string(),
        ]);
        args
    }

    /// One round of a row's cells: each of `targets` once, in order, each outcome printed (a
    /// failure remembered in `failures`). `body_bytes`, the size of ours' answer (the floor's
    /// padding), is learnt from ours' first run.
    fn round(
        &self,
        load: Load,
        targets: &[&str],
        body_bytes: &mut u64,
        what: &str,
        failures: &mut Vec<String>,
    ) -> Vec<Option<Value>> {
        let mut out = Vec::with_capacity(targets.len());
        for target in targets.iter().copied() {
            let outcome = match load {
                Load::Http(workload) => self.http_run(target, workload, *body_bytes),
                Load::Stdio(inflight) => self.stdio_run(target, inflight, *body_bytes),
            };
            if target == "ours" && *body_bytes == 0 {
                *body_bytes = outcome.as_ref().map_or(0, |o| o["body_bytes"].as_u64().unwrap_or(0));
            }
            out.push(record(target, what, outcome, failures));
        }
        out
    }

    /// The plan's rounds of a row's cells alone (no S cell), interleaved as [`Bench::round`]
    /// does: each target's median run, by name.
    fn rounds(
        &self,
        load: Load,
        targets: &[&str],
        body_bytes: &mut u64,
        what: &str,
        failures: &mut Vec<String>,
    ) -> Map<String, Value> {
        let mut runs: Vec<Vec<Value>> = vec![Vec::new(); targets.len()];
        for round in 1..=self.plan.rounds {
            let what = format!("{what} round {round}/{}", self.plan.rounds);
            for (runs, outcome) in runs
                .iter_mut()
                .zip(self.round(load, targets, body_bytes, &what, failures))
            {
                runs.extend(outcome);
            }
        }
        medians(targets, runs)
    }

    /// One HTTP workload against one target, on a fresh server.
    fn http_run(&self, target: &str, workload: &str, body_bytes: u64) -> Result<Value> {
        let tools = workload == "w4";
        let mut server = self.start(target, self.server_args(target, tools, body_bytes))?;
        let mut args = self.http_args(&[&server], workload);
        args.extend(self.timing());
        if target == "floor" {
            args.push("--lenient".to_owned());
        }
        let outcome = self.loadgen(&args, self.run_timeout());
        ensure_alive(&mut server.child, target)?;
        outcome
    }

    /// A `redis-server` for the S cells, pinned with the servers.
    fn start_redis(&self) -> Result<RedisServer> {
        let redis = RedisServer::start()?;
        if let Some(cpu) = self.server_pin.last() {
            shared::pin(shared::port_of(&redis.url())?, cpu)?;
        }
        Ok(redis)
    }

    /// Two instances of `target` (`ours` or the baseline) on `redis`, keys under `prefix` (a
    /// fresh logical server).
    fn start_pair(&self, redis: &RedisServer, prefix: &str, target: &str) -> Result<[Server; 2]> {
        let args = vec![
            "--redis".to_owned(),
            redis.url(),
            "--redis-prefix".to_owned(),
            prefix.to_owned(),
        ];
        // Each has its shared store in a build of its own (a baseline from before that split,
        // in its measured `ours`).
        let program = match (target, &self.baseline_shared) {
            (BASELINE, Some(shared)) => shared.clone(),
            (BASELINE, None) => self.binary(target),
            _ => self.shared_bin.clone(),
        };
        Ok([
            self.serve(&program, args.clone(), Stdio::inherit())?,
            self.serve(&program, args, Stdio::inherit())?,
        ])
    }

    /// Fails if any of `servers` (named `target`) or Redis died during the run.
    fn ensure_alive_on(servers: &mut [Server], target: &str, redis: &mut RedisServer) -> Result {
        for server in servers.iter_mut() {
            ensure_alive(&mut server.child, target)?;
        }
        redis.ensure_running()
    }

    /// An S cell's measured round: `workload` through two fresh instances on `redis`.
    fn shared_run(&self, redis: &mut RedisServer, workload: &str, prefix: &str, target: &str) -> Result<Value> {
        let mut pair = self.start_pair(redis, prefix, target)?;
        self.measure_on(redis, &mut pair, workload, SHARED_TARGET)
    }

    /// An S cell's round-trip floor: `workload` through one instance that keeps its state in
    /// memory and makes one bare round trip to `redis` (`PING`) before each message, pinned
    /// with it (`ours --round-trip-via`). No server that shares its state through Redis can
    /// make fewer round trips per message, or cheaper ones.
    fn floor_run(&self, redis: &mut RedisServer, workload: &str) -> Result<Value> {
        let args = vec!["--round-trip-via".to_owned(), redis.url()];
        let mut server = [self.serve(&self.shared_bin, args, Stdio::inherit())?];
        self.measure_on(redis, &mut server, workload, FLOOR_TARGET)
    }

    /// One measured run of `workload` through `servers` (named `target`) on `redis`, with the
    /// Redis commands executed meanwhile (`INFO commandstats` before and after) per request
    /// sent, in `redis_commands`.
    fn measure_on(
        &self,
        redis: &mut RedisServer,
        servers: &mut [Server],
        workload: &str,
        target: &str,
    ) -> Result<Value> {
        let port = shared::port_of(&redis.url())?;
        let mut args = self.http_args(&servers.iter().collect::<Vec<_>>(), workload);
        args.extend(self.timing());
        let before = shared::commandstats(port)?;
        let outcome = self.loadgen(&args, self.run_timeout());
        let after = shared::commandstats(port);
        Self::ensure_alive_on(servers, target, redis)?;
        let mut outcome = outcome?;
        let commands = shared::delta(&before, &after?);
        let sent = outcome["requests_sent"].as_u64().unwrap_or(0);
        outcome["redis_commands"] = shared::per_request(&commands, sent, requests_per_op(&outcome));
        Ok(outcome)
    }

    /// An S cell's counting run (not measured: `MONITOR` slows Redis): the requests the
    /// instances sent Redis per request of the generator, a script or a transaction counted
    /// once.
    fn shared_count(&self, redis: &mut RedisServer, workload: &str, prefix: &str) -> Result<Value> {
        let port = shared::port_of(&redis.url())?;
        let mut pair = self.start_pair(redis, prefix, "ours")?;
        let mut args = self.http_args(&[&pair[0], &pair[1]], workload);
        args.extend([
            "--warmup-ms".to_owned(),
            "0".to_owned(),
            "--duration-ms".to_owned(),
            COUNT_RUN_MS.to_string(),
        ]);
        let tap = shared::Tap::start(port)?;
        let outcome = self.loadgen(&args, self.run_timeout());
        let counts = tap.finish();
        Self::ensure_alive_on(&mut pair, SHARED_TARGET, redis)?;
        let outcome = outcome?;
        let sent = outcome["requests_sent"].as_u64().unwrap_or(0);
        let mut v = shared::per_request(&counts?, sent, requests_per_op(&outcome));
        v["how"] = json!(format!(
            "MONITOR during a separate {COUNT_RUN_MS} ms run: a script or a MULTI/EXEC counts once, commands run by scripts not at all"
        ));
        Ok(v)
    }

    /// W5 against one target: the generator spawns the server on stdio (pinned).
    fn stdio_run(&self, target: &str, inflight: usize, body_bytes: u64) -> Result<Value> {
        let mut args = vec!["stdio".to_owned(), "--inflight".to_owned(), inflight.to_string()];
        args.extend(self.timing());
        if target == "floor" {
            args.push("--lenient".to_owned());
        }
        args.push("--".to_owned());
        args.extend(self.server_pin.iter().cloned());
        args.push(self.binary(target).display().to_string());
        args.push("--stdio".to_owned());
        args.extend(self.server_args(target, false, body_bytes));
        self.loadgen(&args, self.run_timeout())
    }

    /// M1 against one target: idle size; sessions (not the floor's); idle keep-alive connections
    /// (as many as streams: the part of a stream's figure that is its connection); listen
    /// streams over HTTP/1.1, one per connection, and over h2c, 100 per connection (ours only:
    /// rmcp has no `subscriptions/listen`).
    fn memory(&self, target: &str) -> Result<Value> {
        let mut server = self.start(target, Vec::new())?;
        let sessions = if target == "floor" { 0 } else { self.plan.sessions };
        let streams = if matches!(target, "ours" | BASELINE) {
            self.plan.streams
        } else {
            0
        };
        let args = vec![
            "mem".to_owned(),
            "--url".to_owned(),
            server.url.clone(),
            "--pid".to_owned(),
            server.child.id().to_string(),
            "--sessions".to_owned(),
            sessions.to_string(),
            "--connections".to_owned(),
            self.plan.streams.to_string(),
            "--streams".to_owned(),
            streams.to_string(),
            "--h2-streams".to_owned(),
            streams.to_string(),
        ];
        let outcome = self.loadgen(&args, Duration::from_secs(300));
        ensure_alive(&mut server.child, target)?;
        outcome
    }
}

/// Requests per measured operation (1 for a call, 4 for W3's session).
fn requests_per_op(outcome: &Value) -> f64 {
    match (outcome["requests"].as_f64(), outcome["ops"].as_f64()) {
        (Some(requests), Some(ops)) if ops > 0.0 => requests / ops,
        _ => 1.0,
    }
}

/// Fails if the server died during its run.
fn ensure_alive(child: &mut ChildGuard, target: &str) -> Result {
    match child.try_wait()? {
        None => Ok(()),
        Some(status) => Err(format!("the {target} server exited ({})", util::describe(status))),
    }
}
