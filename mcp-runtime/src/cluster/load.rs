//! Session bounds across instances: each instance reports, with its heartbeat, how many
//! sessions it started and which clients hold many of them; an instance admitting a session
//! counts the others' latest reports with its own.
//!
//! The count is approximate, by design (no round trip on `initialize`):
//! - a report is at most one heartbeat old (2 s), so instances admitting at once may pass a
//!   bound by what they admitted in that time;
//! - a client is reported only from `max_sessions_per_principal / 16` sessions on (the 256
//!   largest), so a client spread thinly may hold up to that many more per other instance;
//! - a report older than three heartbeats (an instance that stopped) counts for nothing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::session::store::{Elsewhere, StartedHere};

/// How many clients one report names at most.
pub(super) const REPORT_MOST: usize = 256;

/// One instance's latest report.
#[derive(Debug)]
struct Report {
    at: Instant,
    total: usize,
    heavy: HashMap<String, usize>,
}

/// The other instances' latest reports.
#[derive(Debug, Default)]
pub(super) struct Loads {
    reports: Mutex<HashMap<String, Report>>,
    /// Instances the store said were alive, and when (until their first report is heard).
    confirmed: Mutex<HashMap<String, Instant>>,
}

impl Loads {
    /// Keeps `from`'s report (the latest replaces the one before).
    pub(super) fn record(&self, from: &str, report: StartedHere) {
        let mut reports = self.reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        reports.insert(
            from.to_owned(),
            Report {
                at: Instant::now(),
                total: report.total,
                heavy: report.heavy.into_iter().collect(),
            },
        );
    }

    /// Whether `from` reported (or was [`Loads::confirm`]ed) within `stale` (`None`: never
    /// heard from, or not for so long that its report was dropped).
    pub(super) fn heard(&self, from: &str, stale: Duration) -> Option<bool> {
        let reported = {
            let reports = self.reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            reports.get(from).map(|r| r.at)
        };
        let confirmed = {
            let mut confirmed = self.confirmed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            confirmed.retain(|_, at| at.elapsed() < stale);
            confirmed.get(from).copied()
        };
        reported.max(confirmed).map(|at| at.elapsed() < stale)
    }

    /// Records that the store said `from` is alive (an instance not heard from yet).
    pub(super) fn confirm(&self, from: &str) {
        let mut confirmed = self.confirmed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if confirmed.len() < 1024 {
            confirmed.insert(from.to_owned(), Instant::now());
        }
    }

    /// The sessions the other instances started, in all and `client`'s (its store key), from
    /// reports younger than `stale` (older ones are dropped).
    pub(super) fn elsewhere(&self, client: &str, stale: Duration) -> Elsewhere {
        let now = Instant::now();
        let mut reports = self.reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        reports.retain(|_, r| now.duration_since(r.at) < stale);
        reports.values().fold(Elsewhere::default(), |sum, r| Elsewhere {
            total: sum.total + r.total,
            client: sum.client + r.heavy.get(client).copied().unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn reports_add_up_until_they_go_stale() {
        let loads = Loads::default();
        let stale = Duration::from_secs(6);
        loads.record(
            "a",
            StartedHere {
                total: 5,
                heavy: vec![("p5:alice".into(), 3)],
            },
        );
        loads.record(
            "b",
            StartedHere {
                total: 2,
                heavy: vec![],
            },
        );
        assert_eq!(loads.elsewhere("p5:alice", stale), Elsewhere { total: 7, client: 3 });
        loads.record(
            "a",
            StartedHere {
                total: 1,
                heavy: vec![],
            },
        );
        assert_eq!(
            loads.elsewhere("p5:alice", stale),
            Elsewhere { total: 3, client: 0 },
            "the latest counts"
        );
        tokio::time::advance(Duration::from_secs(7)).await;
        assert_eq!(
            loads.elsewhere("p5:alice", stale),
            Elsewhere::default(),
            "a silent instance counts for nothing"
        );
    }
}
