//! Allocations per request of `ours` under W1, W2 and W3: a counting run apart from the
//! measured rounds, against `ours` built with its counting allocator (`--features
//! count-allocs`, which prints `allocs: CALLS bytes: BYTES` on stderr at each `SIGUSR1`).
//!
//! The load generator runs with `--hold`. After the warm-up every client is idle and the
//! generator waits: xtask leaves the server [`SETTLE`] to finish what it does after an answer,
//! signals it and reads its counters. The generator then runs the counted part and waits again,
//! every client idle (every request answered): xtask reads the counters again. The difference is
//! over exactly the requests sent between the two holds (`held_requests`): neither the warm-up,
//! nor the clients' connections and sessions opened before it, nor their closing is counted.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Bench, COUNT_RUN_MS, ensure_alive, requests_per_op};
use crate::util::round;
use crate::util::{self, ChildGuard, Result};

/// How long the server is left before each reading, for what it does after an answer is sent.
const SETTLE: Duration = Duration::from_millis(200);
/// How long a reading may take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The lines of a child's pipe as they come; the channel ends when the pipe closes.
fn lines_of(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(std::result::Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The counting server's totals so far.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counters {
    allocs: u64,
    bytes: u64,
}

/// `allocs: CALLS bytes: BYTES`.
fn parse_counters(line: &str) -> Option<Counters> {
    let (allocs, bytes) = line.trim().strip_prefix("allocs: ")?.split_once(" bytes: ")?;
    Some(Counters {
        allocs: allocs.parse().ok()?,
        bytes: bytes.parse().ok()?,
    })
}

/// Lets the server settle, signals it (`SIGUSR1`) and reads the counters it prints on
/// `stderr`.
fn read_counters(pid: u32, stderr: &Receiver<String>) -> Result<Counters> {
    thread::sleep(SETTLE);
    // Whatever the server printed before is not this reading.
    while stderr.try_recv().is_ok() {}
    let status = Command::new("kill")
        .args(["-USR1", &pid.to_string()])
        .status()
        .map_err(|e| format!("kill: {e}"))?;
    if !status.success() {
        return Err(format!("`kill -USR1 {pid}` failed"));
    }
    let deadline = Instant::now() + READ_TIMEOUT;
    loop {
        match stderr.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                if let Some(counters) = parse_counters(&line) {
                    return Ok(counters);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "the counting server printed no counters within {} s of SIGUSR1 (built without count-allocs?)",
                    READ_TIMEOUT.as_secs()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => return Err("the counting server closed its stderr".to_owned()),
        }
    }
}

/// Waits for the generator's next hold (`held`, `held N`); any other line it printed is the
/// reason it ended.
fn wait_held(marks: &Receiver<String>, timeout: Duration) -> Result {
    let deadline = Instant::now() + timeout;
    let mut other = Vec::new();
    loop {
        match marks.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line == "held" || line.starts_with("held ") => return Ok(()),
            Ok(line) => other.push(line),
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "the load generator did not hold within {} s",
                    timeout.as_secs()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(format!(
                    "the load generator ended before its hold: {}",
                    other.join(" / ")
                ));
            }
        }
    }
}

impl Bench {
    /// The counting run of `workload` (`w1`…) against the counting `ours` at `program`:
    /// allocations and bytes per request between the holds.
    pub(super) fn count_allocs(&self, program: &Path, workload: &str) -> Result<Value> {
        let mut server = self.serve(program, Vec::new(), Stdio::piped())?;
        let pid = server.child.id();
        let counters = lines_of(server.child.take_stderr().ok_or("no server stderr")?);
        let mut args = self.http_args(&[&server], workload);
        args.extend([
            "--warmup-ms".to_owned(),
            self.plan.warmup_ms.to_string(),
            "--duration-ms".to_owned(),
            COUNT_RUN_MS.to_string(),
            "--hold".to_owned(),
        ]);
        let mut cmd = self.command(&self.loadgen_pin, &self.bin.join("loadgen"), &args);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let line = util::display(&cmd);
        let mut generator = ChildGuard::spawn(&mut cmd)?;
        let mut go = generator.take_stdin().ok_or("no loadgen stdin")?;
        let marks = lines_of(generator.take_stderr().ok_or("no loadgen stderr")?);
        let mut stdout = generator.take_stdout().ok_or("no loadgen stdout")?;
        let reader = thread::spawn(move || {
            let mut out = String::new();
            let _ = stdout.read_to_string(&mut out);
            out
        });
        let timeout = self.run_timeout();
        let mut go_on = || writeln!(go).map_err(|e| format!("loadgen stdin: {e}"));
        wait_held(&marks, timeout)?;
        let before = read_counters(pid, &counters)?;
        go_on()?;
        wait_held(&marks, timeout)?;
        let after = read_counters(pid, &counters)?;
        go_on()?;
        let status = generator.wait_timeout(timeout)?;
        let out = reader.join().unwrap_or_default();
        if !status.success() {
            return Err(format!("`{line}` failed ({})", util::describe(status)));
        }
        ensure_alive(&mut server.child, "ours (counting)")?;
        let outcome: Value =
            serde_json::from_str(out.trim()).map_err(|e| format!("`{line}` printed no JSON ({e}): {out}"))?;
        // A failed request may not have been served to its end: the count would not be exact.
        if outcome["errors"].as_u64() != Some(0) || outcome["clients_gave_up"].as_u64() != Some(0) {
            return Err(format!("`{line}` saw failures during the counting run: {out}"));
        }
        let requests = outcome["held_requests"]
            .as_u64()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("`{line}` counted no request between its holds: {out}"))?;
        Ok(per_request(before, after, requests, requests_per_op(&outcome)))
    }
}

/// The counts between two readings over `requests` requests of `requests_per_op` each.
fn per_request(before: Counters, after: Counters, requests: u64, requests_per_op: f64) -> Value {
    let allocs = after.allocs.saturating_sub(before.allocs);
    let bytes = after.bytes.saturating_sub(before.bytes);
    let per = |n: u64| n as f64 / requests as f64;
    json!({
        "requests": requests,
        "allocs": allocs,
        "bytes": bytes,
        "allocs_per_request": round(per(allocs), 2),
        "bytes_per_request": round(per(bytes), 0),
        "allocs_per_op": round(per(allocs) * requests_per_op, 2),
    })
}

/// The table of the counting runs (empty when none ran), from the report's `allocations` and
/// `plan`; `count_ms`: the counted part's duration.
pub(super) fn markdown(allocations: &Value, plan: &Value, count_ms: u64) -> String {
    let Some(rows) = allocations.as_object().filter(|m| !m.is_empty()) else {
        return String::new();
    };
    let mut t = String::from(concat!(
        "\n| allocations (ours, counting build) | allocations per request | bytes per request ",
        "| allocations per operation | requests counted |\n|---|---:|---:|---:|---:|\n"
    ));
    for (id, v) in rows {
        if v.get("error").is_some() {
            let _ = writeln!(t, "| {id} | error | error | error | – |");
            continue;
        }
        let num = |key: &str, digits: usize| v[key].as_f64().map_or("–".to_owned(), |x| format!("{x:.digits$}"));
        let _ = writeln!(
            t,
            "| {id} | {} | {} | {} | {} |",
            num("allocs_per_request", 1),
            num("bytes_per_request", 0),
            num("allocs_per_op", 1),
            num("requests", 0),
        );
    }
    let _ = writeln!(
        t,
        "\nAllocations: per workload a separate run (not a measured round) against ours built with \
         `--features count-allocs`: {} ms of warm-up, then, every client idle, a reading of the \
         server's counters (SIGUSR1), {count_ms} ms of load, every client idle again (every request \
         answered), a second reading; the difference over the requests sent between the two readings. \
         A reallocation counts as an allocation; bytes are the sizes asked for.",
        plan["warmup_ms"]
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_their_difference() {
        let before = parse_counters("allocs: 1000 bytes: 64000\n").expect("a reading");
        assert_eq!(
            before,
            Counters {
                allocs: 1000,
                bytes: 64000
            }
        );
        assert_eq!(parse_counters("listening on http://127.0.0.1:1/mcp"), None);
        let after = Counters {
            allocs: 5000,
            bytes: 464_000,
        };
        let v = per_request(before, after, 100, 4.0);
        assert_eq!(v["allocs_per_request"], 40.0);
        assert_eq!(v["bytes_per_request"], 4000.0);
        assert_eq!(v["allocs_per_op"], 160.0);
        let table = markdown(
            &json!({"W1": v, "W2": {"error": "failed"}}),
            &json!({"warmup_ms": 1000}),
            1000,
        );
        assert!(table.contains("| W1 | 40.0 | 4000 | 160.0 | 100 |"), "{table}");
        assert!(table.contains("| W2 | error |"), "{table}");
        assert!(markdown(&json!({}), &json!({}), 1000).is_empty());
    }
}
