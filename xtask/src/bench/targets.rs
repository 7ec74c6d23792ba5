//! The targets of issue 25, each rule once ([`goals`]): what value of the report it reads, the
//! bound it must meet, which measured cells decide it (watched for disturbance, and rerun when
//! disturbed, see [`super::rerun`]) and, where it tells, what the floor itself reaches on the
//! same measure. [`evaluate`] judges a report's JSON by them and [`markdown`] prints the table
//! "Targets (issue 25)".

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::disturbed;
use crate::util::round;

/// How a value must compare with its bound.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmp {
    AtLeast,
    AtMost,
}

/// How a value and its bound read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    /// A ratio of two targets' figures.
    Ratio,
    /// A count per request.
    Count,
    /// Microseconds.
    Micros,
    /// Bytes.
    Bytes,
    /// KiB, shown in MiB.
    KiB,
    /// A difference in KiB, shown signed in MiB.
    KiBDelta,
}

impl Unit {
    fn show(self, v: f64) -> String {
        match self {
            Unit::Ratio => format!("{v:.3}"),
            Unit::Count => format!("{v:.1}"),
            Unit::Micros => format!("{v:.1} µs"),
            Unit::Bytes => format!("{v:.0} B"),
            Unit::KiB => format!("{:.1} MiB", v / 1024.0),
            Unit::KiBDelta => format!("{:+.1} MiB", v / 1024.0),
        }
    }

    fn show_bound(self, v: f64) -> String {
        match self {
            Unit::Ratio | Unit::Count => format!("{v}"),
            Unit::Micros => format!("{v} µs"),
            Unit::Bytes => format!("{v} B"),
            Unit::KiB => format!("{} MiB", v / 1024.0),
            Unit::KiBDelta => format!("+{} MiB", v / 1024.0),
        }
    }
}

/// Where a value is in the report's JSON.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// `a`'s `key` over `b`'s in the workload row `row` (the median rounds).
    Ratio {
        row: &'static str,
        a: &'static str,
        b: &'static str,
        key: &'static str,
    },
    /// `a`'s `key` minus `b`'s in the workload row `row`.
    Excess {
        row: &'static str,
        a: &'static str,
        b: &'static str,
        key: &'static str,
    },
    /// `peer`'s `key` in the workload row `row`.
    Cell {
        row: &'static str,
        peer: &'static str,
        key: &'static str,
    },
    /// `key` of the counting run of `row` (`allocations`).
    Allocs { row: &'static str, key: &'static str },
    /// `peer`'s `key` in M1 (`memory`).
    Memory { peer: &'static str, key: &'static str },
    /// `peer`'s `key` minus its `minus` in M1.
    MemoryBeyond {
        peer: &'static str,
        key: &'static str,
        minus: &'static str,
    },
}

/// The workload row `id` of a report.
fn row<'a>(report: &'a Value, id: &str) -> Option<&'a Value> {
    report["workloads"].as_array()?.iter().find(|r| r["id"] == id)
}

impl Source {
    /// The value in `report`, if measured.
    fn value(self, report: &Value) -> Option<f64> {
        let cell = |id: &str, peer: &str, key: &str| row(report, id)?["targets"][peer][key].as_f64();
        match self {
            Source::Ratio { row, a, b, key } => {
                let (a, b) = (cell(row, a, key)?, cell(row, b, key)?);
                (b > 0.0).then(|| a / b)
            }
            Source::Excess { row, a, b, key } => Some(cell(row, a, key)? - cell(row, b, key)?),
            Source::Cell { row, peer, key } => cell(row, peer, key),
            Source::Allocs { row, key } => report["allocations"][row][key].as_f64(),
            Source::Memory { peer, key } => report["memory"][peer][key].as_f64(),
            Source::MemoryBeyond { peer, key, minus } => {
                Some(report["memory"][peer][key].as_f64()? - report["memory"][peer][minus].as_f64()?)
            }
        }
    }

    /// The measured cells (row, target) the value comes from: those whose rounds decide it
    /// (none for a separate run: M1, the counting runs).
    fn cells(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Source::Ratio { row, a, b, .. } | Source::Excess { row, a, b, .. } => vec![(row, a), (row, b)],
            Source::Cell { row, peer, .. } => vec![(row, peer)],
            Source::Allocs { .. } | Source::Memory { .. } | Source::MemoryBeyond { .. } => Vec::new(),
        }
    }
}

/// One target of issue 25.
#[derive(Debug, Clone)]
pub(super) struct Goal {
    /// What it measures, as the table says it.
    what: String,
    cmp: Cmp,
    bound: f64,
    unit: Unit,
    source: Source,
    /// What the floor itself reaches on the same measure, where that tells.
    floor: Option<Source>,
}

impl Goal {
    fn new(what: impl Into<String>, cmp: Cmp, bound: f64, unit: Unit, source: Source) -> Goal {
        Goal {
            what: what.into(),
            cmp,
            bound,
            unit,
            source,
            floor: None,
        }
    }

    fn floor(mut self, floor: Source) -> Goal {
        self.floor = Some(floor);
        self
    }

    /// Whether `v` meets the goal.
    fn met(&self, v: f64) -> bool {
        match self.cmp {
            Cmp::AtLeast => v >= self.bound,
            Cmp::AtMost => v <= self.bound,
        }
    }

    /// The goal as the table says it (`≥ 0.6`).
    fn goal_text(&self) -> String {
        let op = if self.cmp == Cmp::AtLeast { "≥" } else { "≤" };
        format!("{op} {}", self.unit.show_bound(self.bound))
    }
}

/// The targets of issue 25, in its order.
pub(super) fn goals() -> Vec<Goal> {
    use Cmp::{AtLeast, AtMost};
    let ratio = |row, a, b, key| Source::Ratio { row, a, b, key };
    let mut goals = Vec::new();
    for id in ["W1", "W2", "W3"] {
        goals.push(Goal::new(
            format!("{id} ours/floor ops/s"),
            AtLeast,
            0.6,
            Unit::Ratio,
            ratio(id, "ours", "floor", "rps"),
        ));
    }
    for id in ["W1", "W2", "W3"] {
        goals.push(Goal::new(
            format!("{id} p99 ours/rmcp"),
            AtMost,
            1.0,
            Unit::Ratio,
            ratio(id, "ours", "rmcp", "p99_ms"),
        ));
    }
    let cpu = |peer| Source::Cell {
        row: "W1",
        peer,
        key: "server_cpu_us_per_request",
    };
    let memory = |peer, key| Source::Memory { peer, key };
    goals.extend([
        Goal::new(
            "W1 allocations per request (ours, counting build)",
            AtMost,
            40.0,
            Unit::Count,
            Source::Allocs {
                row: "W1",
                key: "allocs_per_request",
            },
        ),
        Goal::new(
            "W1 server CPU per request (ours)",
            AtMost,
            16.0,
            Unit::Micros,
            cpu("ours"),
        )
        .floor(cpu("floor")),
        Goal::new(
            "W5a ours/rmcp round trips/s",
            AtLeast,
            1.0,
            Unit::Ratio,
            ratio("W5a", "ours", "rmcp", "rps"),
        )
        .floor(ratio("W5a", "floor", "rmcp", "rps")),
        Goal::new(
            "W5a ours/floor round trips/s (the stdio floor: a blocking line loop)",
            AtLeast,
            0.95,
            Unit::Ratio,
            ratio("W5a", "ours", "floor", "rps"),
        ),
        Goal::new(
            "W5b ours/rmcp round trips/s",
            AtLeast,
            1.5,
            Unit::Ratio,
            ratio("W5b", "ours", "rmcp", "rps"),
        )
        .floor(ratio("W5b", "floor", "rmcp", "rps")),
        Goal::new(
            "M1 idle resident size of a fresh server (ours)",
            AtMost,
            8192.0,
            Unit::KiB,
            memory("ours", "idle_rss_kb"),
        )
        .floor(memory("floor", "idle_rss_kb")),
        Goal::new(
            "W1 peak resident size, ours − rmcp",
            AtMost,
            2048.0,
            Unit::KiBDelta,
            Source::Excess {
                row: "W1",
                a: "ours",
                b: "rmcp",
                key: "peak_rss_kb",
            },
        ),
        // Beyond its connection: an idle HTTP/1.1 connection alone holds more than the goal in
        // the floor too (a bare axum connection), so the goal can only be the stream's own part.
        Goal::new(
            "M1 per open listen stream over HTTP/1.1, beyond an idle keep-alive connection's",
            AtMost,
            2048.0,
            Unit::Bytes,
            Source::MemoryBeyond {
                peer: "ours",
                key: "bytes_per_stream",
                minus: "bytes_per_connection",
            },
        ),
        Goal::new(
            "M1 per open listen stream over h2c (its share of the connection included)",
            AtMost,
            2048.0,
            Unit::Bytes,
            memory("ours", "bytes_per_stream_h2c"),
        ),
        Goal::new(
            "M1 per idle legacy session",
            AtMost,
            2048.0,
            Unit::Bytes,
            memory("ours", "bytes_per_session"),
        ),
    ]);
    // What each seam costs: at most 5% of W1's rate.
    for (seam, what) in [
        ("layered", "one pass-through middleware layer"),
        ("limited", "the rate limiter on, under a quota never reached"),
        ("traced", "OpenTelemetry on, every span recorded"),
    ] {
        goals.push(Goal::new(
            format!("W1 {seam}/ours ops/s ({what})"),
            AtLeast,
            0.95,
            Unit::Ratio,
            ratio("W1", seam, "ours", "rps"),
        ));
    }
    goals
}

/// The targets (`ours`, `rmcp`…) of workload row `id` whose rounds decide a goal.
pub(super) fn deciding_peers(id: &str) -> Vec<&'static str> {
    let mut peers = Vec::new();
    for goal in goals() {
        for (row, peer) in goal.source.cells() {
            if row == id && !peers.contains(&peer) {
                peers.push(peer);
            }
        }
    }
    peers
}

/// How the rounds of a goal's cells went: `–` for a goal from a separate run or not measured,
/// else whether its rows were rerun and whether a cell stayed disturbed (`one round`: a single
/// round, whose spread cannot be judged).
fn rounds_status(report: &Value, goal: &Goal) -> String {
    let cells = goal.source.cells();
    if cells.is_empty() || goal.source.value(report).is_none() {
        return "–".to_owned();
    }
    let mut notes = Vec::new();
    let mut rows: Vec<&str> = cells.iter().map(|(r, _)| *r).collect();
    rows.dedup();
    for id in rows {
        if let Some(times) = row(report, id).and_then(|r| r["rerun"]["times"].as_u64()) {
            notes.push(format!("{id} rerun {times}×"));
        }
    }
    let disturbed: Vec<String> = cells
        .iter()
        .filter_map(|(id, peer)| disturbed::label(row(report, id)?, peer))
        .collect();
    let judged = cells
        .iter()
        .all(|(id, peer)| row(report, id).is_some_and(|r| disturbed::spread(r, peer).is_some()));
    match (disturbed.is_empty(), notes.is_empty(), judged) {
        (false, _, _) => notes.push(format!("disturbed: {}", disturbed.join(", "))),
        (true, true, true) => notes.push("steady".to_owned()),
        (true, _, false) => notes.push("one round".to_owned()),
        (true, false, true) => notes.push("then steady".to_owned()),
    }
    notes.join("; ")
}

/// Every goal judged on `report` (a report's JSON): `what`, `value`, `goal`, `met` (`null`: not
/// measured), `cells` (the measured cells that decide it), `rounds` (see [`rounds_status`]) and,
/// where it tells, `floor`.
pub(super) fn evaluate(report: &Value) -> Vec<Value> {
    goals()
        .iter()
        .map(|goal| {
            let value = goal.source.value(report);
            let mut v = json!({
                "what": goal.what,
                "value": value.map(|v| round(v, 3)),
                "shown": value.map(|v| goal.unit.show(v)),
                "goal": goal.goal_text(),
                "met": value.map(|v| goal.met(v)),
                "cells": goal.source.cells().iter().map(|(r, p)| format!("{r} {p}")).collect::<Vec<_>>(),
                "rounds": rounds_status(report, goal),
            });
            if let Some(f) = goal.floor.and_then(|f| f.value(report)) {
                v["floor"] = json!(round(f, 3));
                v["floor_shown"] = json!(goal.unit.show(f));
            }
            v
        })
        .collect()
}

/// The table "Targets (issue 25)" of a report's JSON (judged anew, so that an older report is
/// judged by the same rules).
pub(super) fn markdown(report: &Value) -> String {
    let mut t = String::from(concat!(
        "\nTargets (issue 25):\n\n",
        "| target | measured | goal | verdict | the floor itself | rounds of its cells |\n",
        "|---|---:|---:|---|---:|---|\n"
    ));
    for goal in evaluate(report) {
        let verdict = match goal["met"].as_bool() {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {verdict} | {} | {} |",
            goal["what"].as_str().unwrap_or_default(),
            goal["shown"].as_str().unwrap_or("–"),
            goal["goal"].as_str().unwrap_or_default(),
            goal["floor_shown"].as_str().unwrap_or("–"),
            goal["rounds"].as_str().unwrap_or_default(),
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Value {
        json!({
            "workloads": [
                {"id": "W1", "targets": {
                    "ours": {"rps": 30.0, "p99_ms": 1.0, "server_cpu_us_per_request": 12.0,
                             "peak_rss_kb": 13_000.0, "rounds_rps": [30.0, 50.0]},
                    "rmcp": {"rps": 15.0, "p99_ms": 2.0, "peak_rss_kb": 10_000.0, "rounds_rps": [15.0, 16.0]},
                    "floor": {"rps": 60.0, "p99_ms": 0.5, "server_cpu_us_per_request": 5.0,
                              "rounds_rps": [60.0, 61.0]},
                }, "rerun": {"times": 2}},
            ],
            "allocations": {"W1": {"allocs_per_request": 41.0}},
            "memory": {"ours": {"idle_rss_kb": 8192.0, "bytes_per_stream": 21_000.0, "bytes_per_connection": 19_000.0}},
        })
    }

    fn judged<'a>(goals: &'a [Value], what: &str) -> &'a Value {
        goals.iter().find(|g| g["what"] == what).expect("the goal")
    }

    #[test]
    fn goals_are_judged() {
        let all = evaluate(&report());
        assert_eq!(all.len(), goals().len());
        let floor = judged(&all, "W1 ours/floor ops/s");
        assert_eq!(
            (floor["value"].as_f64(), floor["met"].as_bool()),
            (Some(0.5), Some(false))
        );
        assert_eq!(floor["rounds"], "W1 rerun 2×; disturbed: W1 ours (1.7×)");
        let p99 = judged(&all, "W1 p99 ours/rmcp");
        assert_eq!(p99["met"], true);
        let cpu = judged(&all, "W1 server CPU per request (ours)");
        assert_eq!((cpu["met"].as_bool(), cpu["floor"].as_f64()), (Some(true), Some(5.0)));
        assert_eq!(
            judged(&all, "W1 allocations per request (ours, counting build)")["met"],
            false
        );
        let idle = judged(&all, "M1 idle resident size of a fresh server (ours)");
        assert_eq!(
            (idle["met"].as_bool(), idle["shown"].as_str()),
            (Some(true), Some("8.0 MiB"))
        );
        let excess = judged(&all, "W1 peak resident size, ours − rmcp");
        assert_eq!(excess["shown"], "+2.9 MiB");
        assert_eq!(excess["met"], false);
        assert_eq!(judged(&all, "W2 ours/floor ops/s")["met"], Value::Null);
        assert_eq!(judged(&all, "M1 per idle legacy session")["rounds"], "–");
        let stream = judged(
            &all,
            "M1 per open listen stream over HTTP/1.1, beyond an idle keep-alive connection's",
        );
        assert_eq!(
            (stream["value"].as_f64(), stream["met"].as_bool()),
            (Some(2000.0), Some(true))
        );
        assert!(markdown(&report()).contains("| W2 ours/floor ops/s | – | ≥ 0.6 | not measured | – | – |"));
    }

    #[test]
    fn deciding_cells() {
        assert_eq!(
            deciding_peers("W1"),
            vec!["ours", "floor", "rmcp", "layered", "limited", "traced"]
        );
        assert_eq!(deciding_peers("W5b"), vec!["ours", "rmcp"]);
        assert!(deciding_peers("W4").is_empty());
    }
}
