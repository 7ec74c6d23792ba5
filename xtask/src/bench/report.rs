//! The bench report: ratios, the targets, the table printed (Markdown, ready for
//! `docs/BENCHMARKS.md`) and `target/bench/report.json`.
//!
//! The JSON holds `machine` (`nproc`, CPU model), `pinning`, `plan` (clients, durations, counts),
//! `workloads` (per row: each target's outcome as the load generator printed it — `rps`,
//! `p50_ms`, `p99_ms`, `peak_rss_kb`, `server_cpu_us_per_request` (the server's CPU over the
//! measured window per request), `errors`… — with `rounds_rps`, every round's rate; `ratios`:
//! `ours_rmcp` and `ours_floor` of operations per second, `p99_ours_rmcp`; and, when a disturbed
//! cell decided a target, `rerun`: how often the row was measured again, which cells were
//! disturbed before each rerun and which stayed so, see [`super::rerun`]), `scaleout` (per S
//! cell: `single`, the W row's `ours`
//! outcome; `shared`, the two instances on Redis, with `redis_commands` of its median round;
//! `floor`, the round-trip floor (one in-memory instance making one bare Redis round trip before
//! each message, on the same CPU as Redis, with its `redis_commands`); `ratios`: `shared_single`
//! and `floor_single` of operations per second, `p99_shared_single`; `redis`: `commands`,
//! the commands Redis executed (`INFO commandstats`), and `round_trips`, the requests the
//! instances sent it (a script or a transaction once, from the `MONITOR` counting run), each as
//! `total`, `requests` (what the generator sent), `per_request`, `per_op` and `by_command` per
//! request), `allocations` (per W1…W3: the counting run's `allocs_per_request`,
//! `bytes_per_request`, `allocs_per_op`, and the `requests`, `allocs` and `bytes` counted, see
//! [`super::allocs`]), `memory` (per target: `idle_rss_kb`,
//! `bytes_per_session`, `bytes_per_connection`, `bytes_per_stream` (HTTP/1.1, one stream per
//! connection), `bytes_per_stream_h2c` (h2c, `h2_streams_per_connection` streams per connection),
//! `peak_rss_kb`), `peers` (how each target is set up) and `targets` (each goal of issue 25, its
//! value, whether it is met, the cells that decide it and how their rounds went, see
//! [`super::targets`]).
//!
//! The Markdown the run prints is rendered from that JSON alone ([`markdown`]), so that
//! `cargo xtask bench --readme` prints the same tables from a saved `report.json`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{COUNT_RUN_MS, TARGETS, allocs, disturbed, rerun, targets};
use crate::util::{Result, round};

/// Everything one run measured.
pub(super) struct Report {
    /// Whether this was `--quick`.
    pub(super) quick: bool,
    /// Durations and counts.
    pub(super) plan: Value,
    /// How processes were pinned.
    pub(super) pinning: Value,
    /// One row per workload (from [`row`]).
    pub(super) rows: Vec<Value>,
    /// One row per S cell (from [`shared_row`]).
    pub(super) shared: Vec<Value>,
    /// The counting runs' allocations per request, by row (W1…W3).
    pub(super) allocations: Value,
    /// M1 per target.
    pub(super) memory: Value,
    /// Wall time of the measuring.
    pub(super) elapsed: Duration,
}

/// A workload's row: each target's outcome and the ratios.
pub(super) fn row(id: &str, title: &str, results: Map<String, Value>) -> Value {
    let rps = |t: &str| results.get(t).and_then(|r| r["rps"].as_f64());
    let p99 = |t: &str| results.get(t).and_then(|r| r["p99_ms"].as_f64());
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => json!(round(a / b, 3)),
        _ => Value::Null,
    };
    let mut ratios = json!({
        "ours_rmcp": ratio(rps("ours"), rps("rmcp")),
        "ours_floor": ratio(rps("ours"), rps("floor")),
        "p99_ours_rmcp": ratio(p99("ours"), p99("rmcp")),
    });
    if results.contains_key("baseline") {
        ratios["ours_baseline"] = ratio(rps("ours"), rps("baseline"));
        ratios["p99_ours_baseline"] = ratio(p99("ours"), p99("baseline"));
    }
    if results.contains_key("limited") {
        ratios["limited_ours"] = ratio(rps("limited"), rps("ours"));
        ratios["p99_limited_ours"] = ratio(p99("limited"), p99("ours"));
    }
    json!({
        "id": id,
        "title": title,
        "targets": results,
        "ratios": ratios,
    })
}

/// The measured outcomes of an S cell (each the median of its rounds).
pub(super) struct SharedRuns {
    /// The W row's one in-memory instance (`ours`).
    pub single: Value,
    /// Two instances on Redis.
    pub shared: Value,
    /// The round-trip floor: one in-memory instance, a bare Redis round trip per message.
    pub floor: Value,
    /// Two instances of the `--baseline` commit on Redis, when asked for.
    pub baseline: Option<Value>,
}

/// An S cell's row: `workload`'s one in-memory instance against two instances on Redis and
/// against the round-trip floor, and the Redis figures.
pub(super) fn shared_row(id: &str, title: &str, workload: &str, runs: SharedRuns, round_trips: Value) -> Value {
    let SharedRuns {
        single,
        shared,
        floor,
        baseline,
    } = runs;
    let ratio = |of: &Value, key: &str| match (of[key].as_f64(), single[key].as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => json!(round(a / b, 3)),
        _ => Value::Null,
    };
    let mut ratios = json!({
        "shared_single": ratio(&shared, "rps"),
        "p99_shared_single": ratio(&shared, "p99_ms"),
        "floor_single": ratio(&floor, "rps"),
    });
    if let Some(b) = &baseline {
        let versus = |key: &str| match (shared[key].as_f64(), b[key].as_f64()) {
            (Some(a), Some(b)) if b > 0.0 => json!(round(a / b, 3)),
            _ => Value::Null,
        };
        ratios["shared_baseline"] = versus("rps");
        ratios["p99_shared_baseline"] = versus("p99_ms");
    }
    let commands = shared.get("redis_commands").cloned().unwrap_or(Value::Null);
    json!({
        "id": id,
        "title": title,
        "workload": workload,
        "single": single,
        "shared": shared,
        "floor": floor,
        "baseline": baseline.unwrap_or(Value::Null),
        "ratios": ratios,
        "redis": {"commands": commands, "round_trips": round_trips},
    })
}

/// `nproc` and the CPU model (from `/proc/cpuinfo`).
fn machine() -> Value {
    let nproc = std::thread::available_parallelism().map_or(1, usize::from);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, v)| v.trim().to_owned())
            })
        })
        .unwrap_or_else(|| "unknown".to_owned());
    json!({"nproc": nproc, "cpu": cpu})
}

impl Report {
    /// The whole report as JSON.
    fn json(&self) -> Value {
        let mut report = json!({
            "generated_by": if self.quick { "cargo xtask bench --quick" } else { "cargo xtask bench" },
            "unix_time": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            "elapsed_s": round(self.elapsed.as_secs_f64(), 1),
            "machine": machine(),
            "pinning": self.pinning,
            "plan": self.plan,
            "workloads": self.rows,
            "scaleout": self.shared,
            "allocations": self.allocations,
            "memory": self.memory,
            "peers": peers(),
        });
        report["targets"] = json!(targets::evaluate(&report));
        report
    }

    /// Writes the JSON report to `path` (creating its directory).
    pub(super) fn write(&self, path: &Path) -> Result {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(&self.json()).map_err(|e| format!("report: {e}"))?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The tables (Markdown) and the targets, as printed and as `docs/BENCHMARKS.md` shows them.
    pub(super) fn table(&self) -> String {
        markdown(&self.json())
    }
}

/// How each target is set up, as the report states it.
fn peers() -> Value {
    json!({
        "every peer": "built in release with fat LTO and one codegen unit (the profile of a \
                       deployed server), unwinding panics",
        "ours": "this library built with the mcp-server features the workloads use (http, http2, \
                 stdio, schema-validation: tool inputs checked against their schemas; no TLS, \
                 JWT, skills or shared store), its defaults (ServerConfig::default() but the \
                 session and listen caps raised for M1, HttpConfig::default(), page size 50), \
                 TCP_NODELAY; the S cells' instances are the same built with --features shared \
                 (the shared store, on Redis); W1's seam targets are ours with one pass-through \
                 middleware layer (layered), with the rate limiter on tools/call under a \
                 million calls a second per caller (limited), and built with --features otel, recording \
                 its spans with the OpenTelemetry SDK's tracer given to the server \
                 (McpServerBuilder::tracer) over the SDK's batch processor, to an exporter that \
                 drops them (traced)",
        "rmcp": "rmcp 3.11 (the official Rust SDK): StreamableHttpService with json_response, \
                 LocalSessionManager, TCP_NODELAY; stdio through stdio_pipes(); tools/list \
                 unpaged (all tools in one answer)",
        "floor": "no MCP: a bare axum endpoint answering every request with one fixed JSON-RPC \
                  result of the server's answer size, without parsing the body (stdio: a \
                  blocking line loop); TCP_NODELAY",
        "ours, counting": "ours built with --features count-allocs (a global allocator counting \
                           every allocation), for the counting runs of allocations per request \
                           only; never in a measured round",
    })
}

/// The tables (Markdown), the peers' setups and the targets, from a report's JSON.
pub(super) fn markdown(report: &Value) -> String {
    let machine = &report["machine"];
    let plan = &report["plan"];
    let pinning = &report["pinning"];
    let mut t = String::new();
    let pinned = if pinning["pinned"] == true {
        "server on CPU 1, load generator on CPU 0 (taskset)".to_owned()
    } else {
        format!("not pinned ({})", pinning["why"].as_str().unwrap_or("?"))
    };
    let quick = report["generated_by"].as_str().is_some_and(|g| g.ends_with("--quick"));
    let _ = writeln!(
        t,
        "Machine: {} × {}; {pinned}. {} clients; per cell the median of {} round(s) of {} ms warm-up \
         and {} ms measured, targets interleaved{}.\n",
        machine["nproc"],
        machine["cpu"].as_str().unwrap_or("?"),
        plan["clients"],
        plan["rounds"],
        plan["warmup_ms"],
        plan["duration_ms"],
        if quick { " (--quick)" } else { "" }
    );
    t.push_str(concat!(
        "| workload | ours ops/s | rmcp ops/s | floor ops/s | ours/rmcp | ours/floor | p99 ours/rmcp ",
        "| p50 ms ours / rmcp / floor | p99 ms ours / rmcp / floor | peak RSS MiB ours / rmcp / floor ",
        "| server CPU µs per request ours / rmcp / floor |\n"
    ));
    t.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in report["workloads"].as_array().into_iter().flatten() {
        let cell = |target: &str, key: &str| -> String {
            let r = &row["targets"][target];
            if r.get("error").is_some() {
                return "error".to_owned();
            }
            match (key, r[key].as_f64()) {
                ("rps", Some(v)) => format!("{v:.0}"),
                ("peak_rss_kb", Some(v)) => format!("{:.1}", v / 1024.0),
                ("server_cpu_us_per_request", Some(v)) => format!("{v:.1}"),
                (_, Some(v)) => format!("{v:.3}"),
                (_, None) => "–".to_owned(),
            }
        };
        let three = |key: &str| TARGETS.map(|target| cell(target, key)).join(" / ");
        let ratio = |key: &str| {
            row["ratios"][key]
                .as_f64()
                .map_or("–".to_owned(), |v| format!("{v:.2}"))
        };
        let _ = writeln!(
            t,
            "| {} {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row["id"].as_str().unwrap_or_default(),
            row["title"].as_str().unwrap_or_default(),
            cell("ours", "rps"),
            cell("rmcp", "rps"),
            cell("floor", "rps"),
            ratio("ours_rmcp"),
            ratio("ours_floor"),
            ratio("p99_ours_rmcp"),
            three("p50_ms"),
            three("p99_ms"),
            three("peak_rss_kb"),
            three("server_cpu_us_per_request"),
        );
    }
    let rows = report["workloads"].as_array().map_or(&[][..], Vec::as_slice);
    let disturbed = disturbed::cells(rows, &TARGETS);
    if !disturbed.is_empty() {
        let _ = writeln!(
            t,
            "\nDisturbed cells (their fastest round over {}× their slowest: load from elsewhere on \
             the machine; read their ratios with care): {}.",
            disturbed::SPREAD,
            disturbed.join(", ")
        );
    }
    t.push_str(&rerun::markdown(rows));
    let _ = writeln!(
        t,
        "\nServer CPU: the server process's user and system time (`/proc/PID/stat`, every thread) read by \
         the load generator when the measured window opens and when it closes, over the requests measured \
         in the window (operations that ended in it; W3's four requests each), in the median round."
    );
    t.push_str(&allocs::markdown(&report["allocations"], plan, COUNT_RUN_MS));
    t.push_str(&shared_table(
        report["scaleout"].as_array().map_or(&[][..], Vec::as_slice),
    ));
    t.push_str(&versus_table(report, "baseline", "against the baseline"));
    for (seam, title) in [
        ("layered", "with one pass-through layer (layered)"),
        ("limited", "with the rate limiter (limited)"),
        ("traced", "with OpenTelemetry (traced)"),
    ] {
        t.push_str(&versus_table(report, seam, title));
    }
    // `--only` without M1 measured no memory.
    if report["memory"].as_object().is_some_and(|m| !m.is_empty()) {
        t.push_str(&memory_table(&report["memory"], plan));
    }
    t.push_str("\nThe peers:\n\n");
    // A report written before `peers` was recorded gets today's description.
    let peers = match &report["peers"] {
        Value::Object(_) => report["peers"].clone(),
        _ => peers(),
    };
    for (name, setup) in peers.as_object().into_iter().flatten() {
        let _ = writeln!(t, "- {name}: {}", setup.as_str().unwrap_or_default());
    }
    t.push_str(&targets::markdown(report));
    t
}

/// `ours` against another build or setting of itself, W and S cells (empty when `other` was
/// not measured): the `--baseline` commit's `ours` (`baseline`), `ours` with a seam in use
/// (`layered`, `limited`, `traced`: W1 only).
fn versus_table(report: &Value, other: &str, title: &str) -> String {
    let rows = report["workloads"].as_array().map_or(&[][..], Vec::as_slice);
    let shared = report["scaleout"].as_array().map_or(&[][..], Vec::as_slice);
    if !rows.iter().any(|r| r["targets"].get(other).is_some()) {
        return String::new();
    }
    let mut t = format!(
        "\n| {title} | ours ops/s | {other} ops/s | ours/{other} | p99 ms ours / {other} \
         | rounds ops/s ours | rounds ops/s {other} |\n|---|---:|---:|---:|---:|---|---|\n"
    );
    let num =
        |v: &Value, key: &str, digits: usize| v[key].as_f64().map_or("–".to_owned(), |x| format!("{x:.digits$}"));
    let rounds = |v: &Value| {
        v["rounds_rps"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_f64)
                    .map(|x| format!("{x:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let mut line = |id: &str, ours: &Value, base: &Value| {
        let ratio = match (ours["rps"].as_f64(), base["rps"].as_f64()) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            t,
            "| {id} | {} | {} | {ratio} | {} / {} | {} | {} |",
            num(ours, "rps", 0),
            num(base, "rps", 0),
            num(ours, "p99_ms", 3),
            num(base, "p99_ms", 3),
            rounds(ours),
            rounds(base),
        );
    };
    for row in rows {
        if let Some(base) = row["targets"].get(other) {
            line(row["id"].as_str().unwrap_or_default(), &row["targets"]["ours"], base);
        }
    }
    for row in shared {
        if row[other].is_object() {
            line(row["id"].as_str().unwrap_or_default(), &row["shared"], &row[other]);
        }
    }
    t
}

/// The S cells: one in-memory instance against two on Redis, and Redis's work per request.
fn shared_table(shared: &[Value]) -> String {
    if shared.is_empty() {
        return String::new();
    }
    let mut t = String::from(concat!(
        "\n| scale-out | one in-memory ops/s | two on Redis ops/s | shared/single ",
        "| round-trip floor ops/s (/single) | its PINGs per op ",
        "| p50 ms single / shared | p99 ms single / shared | Redis round trips per request (per op) ",
        "| round trips by kind per request | Redis commands per request (per op) | top commands per request |\n",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n"
    ));
    for row in shared {
        let cell = |side: &str, key: &str| -> String {
            let r = &row[side];
            if r.get("error").is_some() {
                return "error".to_owned();
            }
            match (key, r[key].as_f64()) {
                ("rps", Some(v)) => format!("{v:.0}"),
                (_, Some(v)) => format!("{v:.3}"),
                (_, None) => "–".to_owned(),
            }
        };
        let both = |key: &str| format!("{} / {}", cell("single", key), cell("shared", key));
        let per = |v: &Value| match (v["per_request"].as_f64(), v["per_op"].as_f64()) {
            (Some(r), Some(o)) => format!("{r:.3} ({o:.2})"),
            _ if v.get("error").is_some() => "error".to_owned(),
            _ => "–".to_owned(),
        };
        let top = |v: &Value| {
            v["by_command"].as_object().map_or("–".to_owned(), |m| {
                m.iter()
                    .take(5)
                    .map(|(name, v)| format!("{name} {:.3}", v.as_f64().unwrap_or(0.0)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
        };
        let commands = &row["redis"]["commands"];
        let round_trips = &row["redis"]["round_trips"];
        let ratio = |key: &str| {
            row["ratios"][key]
                .as_f64()
                .map_or("–".to_owned(), |v| format!("{v:.2}"))
        };
        let floor = &row["floor"]["redis_commands"];
        let pings = match (
            floor["by_command"]["ping"].as_f64(),
            floor["per_request"].as_f64(),
            floor["per_op"].as_f64(),
        ) {
            // `by_command` is per request: scaled to the op as `per_op` is.
            (Some(ping), Some(request), Some(op)) if request > 0.0 => format!("{:.2}", ping * op / request),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            t,
            "| {} {} | {} | {} | {} | {} ({}) | {pings} | {} | {} | {} | {} | {} | {} |",
            row["id"].as_str().unwrap_or_default(),
            row["title"].as_str().unwrap_or_default(),
            cell("single", "rps"),
            cell("shared", "rps"),
            ratio("shared_single"),
            cell("floor", "rps"),
            ratio("floor_single"),
            both("p50_ms"),
            both("p99_ms"),
            per(round_trips),
            top(round_trips),
            per(commands),
            top(commands),
        );
    }
    t.push_str(concat!(
        "\nS cells: the W workload sent in turn to two `ours --redis` instances (client-side round robin), ",
        "both and `redis-server` on the server CPU, against the W row's one in-memory instance. ",
        "Redis commands: `INFO commandstats` around the median round (commands run by scripts and ",
        "MULTI/EXEC counted one by one); round trips: the requests the instances sent Redis during a separate ",
        "counting run with a MONITOR tap (a script or a MULTI/EXEC counts once; PUBLISH is pipelined by a ",
        "background task, off the request path), both divided by every request the generator sent. ",
        "Round-trip floor: one `ours --round-trip-via` instance, its state in memory, making one bare round ",
        "trip (`PING`) to the same Redis before each message it handles, pinned with Redis: the most a server ",
        "could do that asked Redis anything per message (W3 passes three messages per op through it; DELETE ",
        "is not a message).\n"
    ));
    t
}

fn memory_table(memory: &Value, plan: &Value) -> String {
    let mut t = String::from("\n| M1 memory | ours | rmcp | floor |\n|---|---:|---:|---:|\n");
    let cell = |target: &str, key: &str| -> String {
        let m = &memory[target];
        if m.get("error").is_some() {
            return "error".to_owned();
        }
        match (key, m[key].as_f64()) {
            ("idle_rss_kb" | "peak_rss_kb", Some(v)) => format!("{:.1} MiB", v / 1024.0),
            (_, Some(v)) => format!("{v:.0} B"),
            ("bytes_per_stream" | "bytes_per_stream_h2c", None) if target == "rmcp" => {
                "n/a (no subscriptions/listen)".to_owned()
            }
            (_, None) => "n/a".to_owned(),
        }
    };
    let sessions = &plan["sessions"];
    let streams = &plan["streams"];
    let per_h2 = memory["ours"]["h2_streams_per_connection"].as_u64().unwrap_or(100);
    for (label, key) in [
        ("idle resident size".to_owned(), "idle_rss_kb"),
        (format!("per idle legacy session ({sessions})"), "bytes_per_session"),
        (
            format!("per idle keep-alive connection ({streams})"),
            "bytes_per_connection",
        ),
        (
            format!("per open listen stream over HTTP/1.1 ({streams}, its connection included)"),
            "bytes_per_stream",
        ),
        (
            format!("per open listen stream over h2c ({streams}, {per_h2} per connection)"),
            "bytes_per_stream_h2c",
        ),
        ("peak resident size".to_owned(), "peak_rss_kb"),
    ] {
        let _ = writeln!(
            t,
            "| {label} | {} | {} | {} |",
            cell("ours", key),
            cell("rmcp", key),
            cell("floor", key)
        );
    }
    let ours = &memory["ours"];
    if let (Some(stream), Some(conn)) = (ours["bytes_per_stream"].as_f64(), ours["bytes_per_connection"].as_f64()) {
        let _ = writeln!(
            t,
            "| per open HTTP/1.1 listen stream beyond an idle connection's | {:.0} B | n/a | n/a |",
            stream - conn
        );
    }
    t
}
