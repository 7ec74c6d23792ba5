//! The checks of a soak, the table it prints and the JSON report it writes.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::FD_MARGIN;
use crate::load::{Plan, StreamLife, TriggerTime};
use crate::tally::{Kind, Tally};

/// Largest growth of resident memory from the first sample after the warm-up to the last.
const MAX_RSS_GROWTH: f64 = 0.10;
/// Time a list change is given to reach every listener.
const NOTIFY_SLACK: Duration = Duration::from_secs(2);

/// One sample of the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Seconds since the load started.
    pub(crate) at_s: f64,
    /// `VmRSS`, KiB.
    pub(crate) rss_kb: u64,
    /// Open descriptors.
    pub(crate) fds: usize,
    /// Listen streams open (as the driver counts them).
    pub(crate) streams: usize,
}

/// Everything a soak measured besides the tally.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The endpoint.
    pub(crate) args_url: String,
    /// The plan.
    pub(crate) plan: Plan,
    /// How long the load ran.
    pub(crate) duration: Duration,
    /// The warm-up.
    pub(crate) warmup: Duration,
    /// `VmRSS` before the load, KiB.
    pub(crate) idle_rss_kb: u64,
    /// Descriptors before the load.
    pub(crate) baseline_fds: usize,
    /// Descriptors once the load stopped and every connection closed.
    pub(crate) fds_after: Option<usize>,
    /// `VmRSS` then, KiB.
    pub(crate) rss_after_kb: Option<u64>,
    /// The samples taken during the load.
    pub(crate) samples: Vec<Sample>,
    /// Every listen stream's life.
    pub(crate) lives: Vec<StreamLife>,
    /// Every answered tool-list change.
    pub(crate) triggers: Vec<TriggerTime>,
    /// Most listen streams open at once.
    pub(crate) peak_streams: usize,
    /// Whether every worker finished after the stop.
    pub(crate) drained: bool,
    /// How long they took.
    pub(crate) drain_ms: u64,
    /// Whether the server still runs.
    pub(crate) alive: bool,
}

/// One check: its name, whether it passed, and what was measured.
struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
}

impl Outcome {
    fn measured(&self) -> Vec<Sample> {
        let from = self.warmup.as_secs_f64();
        self.samples.iter().copied().filter(|s| s.at_s >= from).collect()
    }

    /// Listen streams that should have seen a list change and saw none.
    fn missed_changes(&self) -> (usize, usize) {
        let mut due = 0;
        let mut missed = 0;
        for life in &self.lives {
            let expects = self
                .triggers
                .iter()
                .any(|t| t.sent > life.opened && t.answered + NOTIFY_SLACK < life.closed);
            if expects {
                due += 1;
                if life.notifications == 0 {
                    missed += 1;
                }
            }
        }
        (due, missed)
    }

    fn checks(&self, tally: &Tally) -> Vec<Check> {
        let t = tally.totals();
        let measured = self.measured();
        let mut checks = vec![
            Check {
                name: "replies lost",
                ok: t.lost == 0,
                detail: format!("{} of {} requests", t.lost, t.sent - t.abandoned),
            },
            Check {
                name: "wrong answers",
                ok: t.wrong == 0,
                detail: t.wrong.to_string(),
            },
            Check {
                name: "unexpected 5xx",
                ok: t.unexpected_5xx == 0,
                detail: format!("{} (declared overload: {})", t.unexpected_5xx, t.overload),
            },
        ];
        let dropped = self.lives.iter().filter(|l| l.ended_by_server).count();
        checks.push(Check {
            name: "listen streams ended by the server",
            ok: dropped == 0,
            detail: dropped.to_string(),
        });
        let (due, missed) = self.missed_changes();
        checks.push(Check {
            name: "listen streams that missed a list change",
            ok: missed == 0,
            detail: format!("{missed} of {due}"),
        });
        checks.push(match (measured.first(), measured.last()) {
            (Some(first), Some(last)) if measured.len() >= 2 && first.rss_kb > 0 => {
                let growth = last.rss_kb as f64 / first.rss_kb as f64 - 1.0;
                Check {
                    name: "RSS flat after warm-up",
                    ok: growth <= MAX_RSS_GROWTH,
                    detail: format!(
                        "{:.1} → {:.1} MiB ({:+.1} %, at most +{:.0} %)",
                        first.rss_kb as f64 / 1024.0,
                        last.rss_kb as f64 / 1024.0,
                        growth * 100.0,
                        MAX_RSS_GROWTH * 100.0
                    ),
                }
            }
            _ => Check {
                name: "RSS flat after warm-up",
                ok: false,
                detail: "fewer than two samples after the warm-up".to_owned(),
            },
        });
        checks.push(match self.fds_after {
            Some(after) => Check {
                name: "fds back to baseline",
                ok: after <= self.baseline_fds + FD_MARGIN,
                detail: format!("{after} (baseline {}, margin {FD_MARGIN})", self.baseline_fds),
            },
            None => Check {
                name: "fds back to baseline",
                ok: false,
                detail: "cannot read the server's descriptors".to_owned(),
            },
        });
        checks.push(Check {
            name: "workers drained after the stop",
            ok: self.drained,
            detail: format!("{} ms", self.drain_ms),
        });
        checks.push(Check {
            name: "server still running",
            ok: self.alive,
            detail: if self.alive { "yes" } else { "no" }.to_owned(),
        });
        checks
    }

    fn streams_json(&self, tally: &Tally) -> Value {
        let measured = self.measured();
        let rows = tally.rows();
        let refused = rows
            .iter()
            .find(|(k, _, _)| *k == Kind::Listen)
            .map_or(0, |(_, n, _)| n[2]);
        let (due, missed) = self.missed_changes();
        json!({
            "target": self.plan.listeners,
            "peak_open": self.peak_streams,
            "min_open_after_warmup": measured.iter().map(|s| s.streams).min(),
            "open_at_stop": self.samples.last().map(|s| s.streams),
            "refused_declared_overload": refused,
            "ended_by_server": self.lives.iter().filter(|l| l.ended_by_server).count(),
            "list_changes_sent": self.triggers.len(),
            "list_changes_received": self.lives.iter().map(|l| l.notifications).sum::<u64>(),
            "streams_due_a_change": due,
            "streams_that_missed_one": missed,
        })
    }
}

/// Prints the table, writes the report to `path` and says whether every check passed.
pub(crate) fn finish(outcome: &Outcome, tally: &Tally, path: Option<&Path>) -> Result<bool, String> {
    let checks = outcome.checks(tally);
    let ok = checks.iter().all(|c| c.ok);
    print_table(outcome, tally, &checks);
    let measured = outcome.measured();
    let totals = tally.totals();
    let report = json!({
        "ok": ok,
        "url": outcome.args_url,
        "plan": {
            "seconds": outcome.duration.as_secs(),
            "warmup_seconds": outcome.warmup.as_secs(),
            "listeners": outcome.plan.listeners,
            "legacy_callers": outcome.plan.legacy_callers,
            "modern_callers": outcome.plan.modern_callers,
            "caller_rate_per_s": outcome.plan.rate,
            "max_body_bytes": outcome.plan.max_body_bytes,
            "hang_timeout_ms": outcome.plan.hang_timeout.as_millis() as u64,
        },
        "requests": tally.json(),
        "totals": {
            "sent": totals.sent,
            "answered": totals.answered,
            "declared_overload": totals.overload,
            "lost": totals.lost,
            "wrong": totals.wrong,
            "unexpected_5xx": totals.unexpected_5xx,
            "abandoned_on_purpose": totals.abandoned,
            "per_second": totals.sent as f64 / outcome.duration.as_secs_f64().max(1.0),
        },
        "listen_streams": outcome.streams_json(tally),
        "rss_kb": {
            "idle": outcome.idle_rss_kb,
            "first_after_warmup": measured.first().map(|s| s.rss_kb),
            "last": measured.last().map(|s| s.rss_kb),
            "max": outcome.samples.iter().map(|s| s.rss_kb).max(),
            "after_stop": outcome.rss_after_kb,
        },
        "fds": {
            "baseline": outcome.baseline_fds,
            "peak": outcome.samples.iter().map(|s| s.fds).max(),
            "after_close": outcome.fds_after,
            "margin": FD_MARGIN,
        },
        "drain_ms": outcome.drain_ms,
        "samples": outcome.samples.iter().map(|s| json!([
            (s.at_s * 10.0).round() / 10.0, s.rss_kb, s.fds, s.streams
        ])).collect::<Vec<_>>(),
        "samples_columns": ["at_s", "rss_kb", "fds", "listen_streams"],
        "checks": checks.iter().map(|c| json!({"name": c.name, "ok": c.ok, "detail": c.detail})).collect::<Vec<_>>(),
        "failure_samples": tally.samples(),
    });
    if let Some(path) = path {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(&report).map_err(|e| format!("report: {e}"))?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        println!("soak: report written to {}", path.display());
    }
    if !ok {
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect();
        eprintln!("soak: FAILED: {}", failed.join("; "));
    }
    Ok(ok)
}

fn print_table(outcome: &Outcome, tally: &Tally, checks: &[Check]) {
    println!();
    println!(
        "{:<22} {:>8} {:>8} {:>8} {:>6} {:>6} {:>5} {:>9} {:>8}",
        "kind", "sent", "answered", "overload", "lost", "wrong", "5xx", "abandoned", "max ms"
    );
    for (kind, n, max_ms) in tally.rows() {
        println!(
            "{:<22} {:>8} {:>8} {:>8} {:>6} {:>6} {:>5} {:>9} {:>8.1}",
            kind.name(),
            n[0],
            n[1],
            n[2],
            n[3],
            n[4],
            n[5],
            n[6],
            max_ms
        );
    }
    let t = tally.totals();
    println!(
        "{:<22} {:>8} {:>8} {:>8} {:>6} {:>6} {:>5} {:>9}",
        "total", t.sent, t.answered, t.overload, t.lost, t.wrong, t.unexpected_5xx, t.abandoned
    );
    let s = outcome.streams_json(tally);
    println!(
        "\nlisten streams: target {}, peak open {}, min open after warm-up {}, open at stop {}; refused as declared overload {}; list changes {} sent, {} received",
        s["target"],
        s["peak_open"],
        s["min_open_after_warmup"],
        s["open_at_stop"],
        s["refused_declared_overload"],
        s["list_changes_sent"],
        s["list_changes_received"],
    );
    let measured = outcome.measured();
    let mib = |kb: Option<u64>| kb.map_or("?".to_owned(), |kb| format!("{:.1}", kb as f64 / 1024.0));
    println!(
        "RSS MiB: idle {}, first after warm-up {}, last {}, max {}, after stop {}",
        mib(Some(outcome.idle_rss_kb)),
        mib(measured.first().map(|s| s.rss_kb)),
        mib(measured.last().map(|s| s.rss_kb)),
        mib(outcome.samples.iter().map(|s| s.rss_kb).max()),
        mib(outcome.rss_after_kb),
    );
    println!(
        "fds: baseline {}, peak {}, after close {}",
        outcome.baseline_fds,
        outcome.samples.iter().map(|s| s.fds).max().unwrap_or(0),
        outcome.fds_after.map_or("?".to_owned(), |n| n.to_string()),
    );
    println!("\nchecks:");
    for c in checks {
        println!("  {}  {:<42} {}", if c.ok { "ok  " } else { "FAIL" }, c.name, c.detail);
    }
}
