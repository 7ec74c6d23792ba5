//! `cargo xtask chaos [--skip-build] [--redis-cluster]`: tasks that outlive their instance,
//! checked from outside (issue #43). Each pass starts a fresh Redis (then, in a second pass, a
//! six-node Redis Cluster), two `everything --role front` instances behind nginx and two
//! `everything --role worker` instances, all on that store with a task key, a lease of
//! [`LEASE_MS`] and a drain grace of [`GRACE_MS`]. The Python SDK client `interop/chaos.py`
//! starts [`RESUMABLE`] resumable tasks (`test_resumable_count`, [`STEPS`] steps of
//! [`STEP_MS`] ms, a checkpoint per step) and [`PLAIN`] tasks that are not resumable
//! (`slow_compute`, [`PLAIN_SECONDS`] s), half from a 2025-11-25 client and half from a
//! 2026-07-28 one, through nginx. While they run, the first worker is killed with `SIGKILL`
//! and the second stopped with `SIGTERM` (it drains: [`GRACE_MS`], then hands its tasks back),
//! then started again.
//!
//! The pass fails unless:
//! - every resumable task completed, once, counting all its steps (`counted 60 steps in N
//!   attempts, from step K`), and some of them ran again;
//! - every task that is not resumable completed, or failed with the message that its instance
//!   stopped within 10 s of the kill;
//! - no task was lost otherwise (every one ended within the client's timeout), and the fronts,
//!   the remaining worker, Redis and nginx kept running.
//!
//! It prints the counts: tasks by outcome, attempts, the time from the kill to the last
//! "stopped" failure.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::balancer::{Balancer, RunningBalancer};
use crate::redis::SharedRedis;
use crate::tools;
use crate::util::{self, ChildGuard, HttpServer, Result};

/// Resumable tasks started per pass.
const RESUMABLE: usize = 300;
/// Tasks that are not resumable started per pass.
const PLAIN: usize = 60;
/// Steps of each resumable task.
const STEPS: u64 = 60;
/// Milliseconds per step (a resumable task runs 12 s undisturbed).
const STEP_MS: u64 = 200;
/// How long a task that is not resumable runs.
const PLAIN_SECONDS: f64 = 5.0;
/// The lease of a running task (`--task-lease-ms`): a killed worker's tasks are claimed again
/// this long after its last heartbeat.
const LEASE_MS: u64 = 2_000;
/// The drain grace of a stopping worker (`--shutdown-grace-ms`).
const GRACE_MS: u64 = 2_000;
/// How many tasks a worker runs at once (`--max-running-tasks`): one worker can hold them all.
const MAX_RUNNING: usize = 400;
/// The longest a task that is not resumable may take to fail once its worker was killed.
const STOPPED_WITHIN: Duration = Duration::from_secs(10);
/// How long the client follows the tasks.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(240);

/// Options of `cargo xtask chaos`.
pub(crate) struct Options {
    /// Use the existing release `everything` build.
    pub(crate) skip_build: bool,
    /// The passes: `false` on one `redis-server`, `true` on a Redis Cluster.
    pub(crate) clusters: Vec<bool>,
}

/// Runs every pass and fails if one failed.
pub(crate) fn run(opts: &Options) -> Result {
    let everything = if opts.skip_build {
        util::existing_everything()?
    } else {
        util::build_everything()?
    };
    let nginx = Balancer::Nginx.prepare(opts.skip_build)?;
    let python = tools::ensure_venv()?;
    let mut failed = Vec::new();
    let mut summary = Vec::new();
    for &cluster in &opts.clusters {
        let name = if cluster { "Redis Cluster" } else { "Redis" };
        let started = Instant::now();
        match run_pass(cluster, &everything, &nginx, &python) {
            Ok(counts) => summary.push(format!(
                "chaos: {name}: passed in {} s: {counts}",
                started.elapsed().as_secs()
            )),
            Err(why) => {
                summary.push(format!("chaos: {name}: FAILED: {why}"));
                failed.push(name);
            }
        }
    }
    util::banner("chaos: summary");
    for line in &summary {
        println!("{line}");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("chaos failed on {}", failed.join(", ")))
    }
}

/// A worker: `everything --role worker`, killed when dropped.
struct Worker {
    child: ChildGuard,
}

impl Worker {
    fn start(everything: &Path, flags: &[&str]) -> Result<Self> {
        let mut cmd = Command::new(everything);
        cmd.args(["--role", "worker"])
            .args(flags)
            .current_dir(util::root())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        let (child, first, _) = util::spawn_first_line(&mut cmd, Duration::from_secs(30), "`worker running`")?;
        if first.trim_end() != "worker running" {
            return Err(format!("a worker printed `{first}` instead of `worker running`"));
        }
        Ok(Worker { child })
    }

    /// Sends `signal` (`KILL`, `TERM`) to the worker.
    fn signal(&self, signal: &str) -> Result {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .map_err(|e| format!("kill -{signal}: {e}"))?;
        util::check_status(&format!("kill -{signal} {}", self.child.id()), status)
    }
}

/// How one task ended, as the client printed it.
#[derive(Debug)]
struct Ended {
    era: String,
    kind: String,
    status: String,
    message: Option<String>,
    text: Option<String>,
    updated: Option<String>,
}

impl Ended {
    /// A record of the client's (a JSON object of strings).
    fn parse(line: &str) -> Option<Ended> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let text = |k: &str| v.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
        Some(Ended {
            era: text("era")?,
            kind: text("kind")?,
            status: text("status")?,
            message: text("message"),
            text: text("text"),
            updated: text("updated"),
        })
    }
}

fn run_pass(cluster: bool, everything: &Path, nginx: &Path, python: &Path) -> Result<String> {
    let name = if cluster { "Redis Cluster" } else { "Redis" };
    util::banner(&format!("chaos: {name}: 2 fronts behind nginx, 2 workers"));
    let mut redis = SharedRedis::start(cluster)?;
    let (redis_flag, redis_url) = redis.flag();
    let prefix = format!("chaos-{}", &util::random_hex()[..16]);
    let (state_key, task_key) = (util::random_hex(), util::random_hex());
    let (lease, grace, running) = (LEASE_MS.to_string(), GRACE_MS.to_string(), MAX_RUNNING.to_string());
    let flags = [
        redis_flag,
        redis_url.as_str(),
        "--redis-prefix",
        prefix.as_str(),
        "--state-key",
        state_key.as_str(),
        "--task-key",
        task_key.as_str(),
        "--task-lease-ms",
        lease.as_str(),
        "--shutdown-grace-ms",
        grace.as_str(),
        "--max-running-tasks",
        running.as_str(),
    ];
    let front_flags: Vec<&str> = flags.iter().copied().chain(["--role", "front"]).collect();
    let mut fronts = vec![
        HttpServer::start(everything, &front_flags)?,
        HttpServer::start(everything, &front_flags)?,
    ];
    let ports: Vec<u16> = fronts.iter().map(|f| f.port).collect();
    let mut balancer = RunningBalancer::start(Balancer::Nginx, nginx, &ports)?;
    let killed = Worker::start(everything, &flags)?;
    let stopped = Worker::start(everything, &flags)?;
    let url = format!("{}/mcp", balancer.base_url());

    let out = util::target_dir().join("chaos").join(format!("{prefix}.jsonl"));
    std::fs::create_dir_all(out.parent().ok_or("target/chaos")?).map_err(|e| format!("target/chaos: {e}"))?;
    let mut client = Command::new(python);
    client
        .arg(util::root().join("interop/chaos.py"))
        .args(["--url", &url])
        .arg("--out")
        .arg(&out)
        .args(["--resumable", &RESUMABLE.to_string(), "--plain", &PLAIN.to_string()])
        .args(["--steps", &STEPS.to_string(), "--step-ms", &STEP_MS.to_string()])
        .args(["--plain-seconds", &PLAIN_SECONDS.to_string()])
        .args(["--timeout", &CLIENT_TIMEOUT.as_secs().to_string()])
        .current_dir(util::root())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    let (mut client, first, lines) = util::spawn_first_line(&mut client, Duration::from_secs(120), "`started N`")?;
    let expected = RESUMABLE + PLAIN;
    if first.trim_end() != format!("started {expected}") {
        return Err(format!("the client printed `{first}`, not `started {expected}`"));
    }
    println!("chaos: {name}: {expected} tasks started");

    // The chaos: one worker killed, the other drained and started again, the tasks running.
    thread::sleep(Duration::from_secs(2));
    let kill_ms = now_ms();
    killed.signal("KILL")?;
    println!("chaos: {name}: worker 1 killed (SIGKILL)");
    thread::sleep(Duration::from_secs(4));
    stopped.signal("TERM")?;
    println!("chaos: {name}: worker 2 stopping (SIGTERM)");
    let mut stopped = stopped;
    let status = stopped
        .child
        .wait_timeout(Duration::from_millis(GRACE_MS) + Duration::from_secs(15))?;
    println!(
        "chaos: {name}: worker 2 drained and exited ({})",
        util::describe(status)
    );
    let mut restarted = Worker::start(everything, &flags)?;
    println!("chaos: {name}: worker 2 started again");

    let status = client.wait_timeout(CLIENT_TIMEOUT + Duration::from_secs(30))?;
    drop(lines);
    let ended = read_ended(&out)?;
    redis.ensure_running()?;
    for front in &mut fronts {
        front.ensure_running()?;
    }
    balancer.ensure_running()?;
    if restarted.child.try_wait()?.is_some() {
        return Err("the restarted worker exited".into());
    }
    util::check_status("chaos.py", status)?;
    judge(&ended, kill_ms)
}

/// The client's records: one JSON line per task in `out`.
fn read_ended(out: &Path) -> Result<Vec<Ended>> {
    let text = std::fs::read_to_string(out).map_err(|e| format!("{}: {e}", out.display()))?;
    text.lines()
        .map(|line| Ended::parse(line).ok_or_else(|| format!("the client wrote `{line}`")))
        .collect()
}

/// The checks of the module docs, and the counts.
fn judge(ended: &[Ended], kill_ms: u64) -> Result<String> {
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut attempts: BTreeMap<u64, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut last_stopped_ms = 0;
    for e in ended {
        *outcomes
            .entry(format!("{} {} {}", e.kind, e.era, e.status))
            .or_default() += 1;
        match (e.kind.as_str(), e.status.as_str()) {
            ("resumable", "completed") => match e.text.as_deref().and_then(counted) {
                Some((STEPS, n)) => *attempts.entry(n).or_default() += 1,
                _ => problems.push(format!("a resumable task counted wrong: {:?}", e.text)),
            },
            ("plain", "completed") => {}
            ("plain", "failed") if e.message.as_deref().is_some_and(|m| m.contains("stopped")) => {
                let at = e.updated.as_deref().and_then(iso_ms).unwrap_or(u64::MAX);
                last_stopped_ms = last_stopped_ms.max(at.saturating_sub(kill_ms));
            }
            _ => problems.push(format!(
                "a {} {} task ended {} ({:?})",
                e.era, e.kind, e.status, e.message
            )),
        }
    }
    if ended.len() != RESUMABLE + PLAIN {
        problems.push(format!("{} tasks ended of {}", ended.len(), RESUMABLE + PLAIN));
    }
    if attempts.keys().all(|n| *n < 2) {
        problems.push("no resumable task ran again: the chaos missed them".into());
    }
    if Duration::from_millis(last_stopped_ms) > STOPPED_WITHIN {
        problems.push(format!(
            "a task that is not resumable failed {last_stopped_ms} ms after the kill (at most {} s)",
            STOPPED_WITHIN.as_secs()
        ));
    }
    let counts = format!(
        "outcomes {outcomes:?}; resumable tasks by attempts {attempts:?}; last \"stopped\" failure {} ms after the kill",
        last_stopped_ms
    );
    println!("chaos: {counts}");
    if problems.is_empty() {
        Ok(counts)
    } else {
        problems.truncate(10);
        Err(problems.join("; "))
    }
}

/// `counted S steps in N attempts, from step K`: (S, N).
fn counted(text: &str) -> Option<(u64, u64)> {
    let rest = text.strip_prefix("counted ")?;
    let (steps, rest) = rest.split_once(" steps in ")?;
    let (attempts, _) = rest.split_once(" attempts, from step ")?;
    Some((steps.parse().ok()?, attempts.parse().ok()?))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Milliseconds since the epoch of an RFC 3339 UTC time as tasks carry it
/// (`2026-12-07T22:31:36.620Z`).
fn iso_ms(text: &str) -> Option<u64> {
    let (date, time) = text.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next()??);
    let ms: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(((days * 24 + h) * 60 + min) * 60_000 + s * 1000 + ms).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_counts_read_back() {
        assert_eq!(iso_ms("1970-01-01T00:00:01.500Z"), Some(1_500));
        assert_eq!(iso_ms("2026-12-07T22:31:36.620Z"), Some(1_796_682_696_620));
        assert_eq!(counted("counted 60 steps in 2 attempts, from step 17"), Some((60, 2)));
        assert_eq!(counted("Computed x after 5s"), None);
    }
}
