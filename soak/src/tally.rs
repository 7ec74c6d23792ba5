//! What happened to every request, by kind: sent, answered, refused as declared overload, lost,
//! answered wrongly, answered with an unexpected 5xx, or abandoned on purpose.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp::Verdict;

/// The kinds of request the soak sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Modern stateless `tools/call`.
    ModernCall,
    /// Modern `tools/list`.
    ModernList,
    /// Modern `tools/call` of the panicking tool.
    ModernPanic,
    /// Modern `tools/call` of `test_trigger_tool_change` (a list change for every listener).
    Trigger,
    /// Modern `subscriptions/listen`, up to its acknowledgement.
    Listen,
    /// Legacy `initialize`.
    Initialize,
    /// Legacy `notifications/initialized`.
    Initialized,
    /// Legacy `tools/call` in a session.
    LegacyCall,
    /// Legacy `tools/call` of the panicking tool.
    LegacyPanic,
    /// DELETE of a session.
    Delete,
    /// A body over the server's `max_body_bytes` (413).
    Oversize,
    /// A body that is not JSON (400 -32700).
    BadJson,
    /// A JSON value that is not a request (400 -32600).
    NotARequest,
    /// `Content-Type: text/plain` (415).
    WrongContentType,
    /// No `Accept` (406).
    MissingAccept,
    /// A slow call whose client disconnects before its answer (abandoned on purpose).
    Disconnect,
    /// A call of the hanging tool, given up after a short timeout (abandoned on purpose).
    Hang,
}

impl Kind {
    /// Every kind, in report order.
    pub(crate) const ALL: [Kind; 17] = [
        Kind::ModernCall,
        Kind::ModernList,
        Kind::ModernPanic,
        Kind::Trigger,
        Kind::Listen,
        Kind::Initialize,
        Kind::Initialized,
        Kind::LegacyCall,
        Kind::LegacyPanic,
        Kind::Delete,
        Kind::Oversize,
        Kind::BadJson,
        Kind::NotARequest,
        Kind::WrongContentType,
        Kind::MissingAccept,
        Kind::Disconnect,
        Kind::Hang,
    ];

    /// The name in the report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::ModernCall => "modern tools/call",
            Kind::ModernList => "modern tools/list",
            Kind::ModernPanic => "modern panic tool",
            Kind::Trigger => "modern list change",
            Kind::Listen => "subscriptions/listen",
            Kind::Initialize => "legacy initialize",
            Kind::Initialized => "legacy initialized",
            Kind::LegacyCall => "legacy tools/call",
            Kind::LegacyPanic => "legacy panic tool",
            Kind::Delete => "legacy DELETE",
            Kind::Oversize => "oversize body",
            Kind::BadJson => "bad JSON",
            Kind::NotARequest => "not a request",
            Kind::WrongContentType => "wrong Content-Type",
            Kind::MissingAccept => "missing Accept",
            Kind::Disconnect => "disconnect mid-call",
            Kind::Hang => "hanging tool",
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    sent: AtomicU64,
    answered: AtomicU64,
    overload: AtomicU64,
    lost: AtomicU64,
    wrong: AtomicU64,
    unexpected_5xx: AtomicU64,
    abandoned: AtomicU64,
    max_us: AtomicU64,
}

/// Most failure reasons kept for the report.
const MAX_SAMPLES: usize = 20;

/// The counts of every kind, and a few failure reasons.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    counts: [Counts; Kind::ALL.len()],
    samples: Mutex<Vec<String>>,
}

/// The totals over every kind.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Totals {
    /// Requests sent.
    pub(crate) sent: u64,
    /// Expected answers.
    pub(crate) answered: u64,
    /// Declared overload refusals.
    pub(crate) overload: u64,
    /// Requests that should have had an answer and got none.
    pub(crate) lost: u64,
    /// Answers that were not the expected one.
    pub(crate) wrong: u64,
    /// 5xx answers other than a declared overload.
    pub(crate) unexpected_5xx: u64,
    /// Requests given up on purpose.
    pub(crate) abandoned: u64,
}

impl Tally {
    fn of(&self, kind: Kind) -> &Counts {
        &self.counts[Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0)]
    }

    /// Counts one request of `kind` as sent.
    pub(crate) fn sent(&self, kind: Kind) {
        self.of(kind).sent.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the verdict on an answer that took `took`.
    pub(crate) fn verdict(&self, kind: Kind, verdict: &Verdict, took: Duration) {
        let c = self.of(kind);
        c.max_us.fetch_max(took.as_micros() as u64, Ordering::Relaxed);
        match verdict {
            Verdict::Answered => c.answered.fetch_add(1, Ordering::Relaxed),
            Verdict::Overload => c.overload.fetch_add(1, Ordering::Relaxed),
            Verdict::Unexpected5xx(why) => {
                self.sample(kind, "unexpected 5xx", why);
                c.unexpected_5xx.fetch_add(1, Ordering::Relaxed)
            }
            Verdict::Wrong(why) => {
                self.sample(kind, "wrong answer", why);
                c.wrong.fetch_add(1, Ordering::Relaxed)
            }
        };
    }

    /// Records a request that got no answer.
    pub(crate) fn lost(&self, kind: Kind, why: &str) {
        self.sample(kind, "lost", why);
        self.of(kind).lost.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a request given up on purpose.
    pub(crate) fn abandoned(&self, kind: Kind) {
        self.of(kind).abandoned.fetch_add(1, Ordering::Relaxed);
    }

    /// Keeps a failure reason for the report (and says it on stderr), up to a bound.
    fn sample(&self, kind: Kind, what: &str, why: &str) {
        let mut samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if samples.len() < MAX_SAMPLES {
            let line = format!("{}: {what}: {why}", kind.name());
            eprintln!("soak: {line}");
            samples.push(line);
        }
    }

    /// The kept failure reasons.
    pub(crate) fn samples(&self) -> Vec<String> {
        self.samples.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The totals.
    pub(crate) fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for c in &self.counts {
            t.sent += c.sent.load(Ordering::Relaxed);
            t.answered += c.answered.load(Ordering::Relaxed);
            t.overload += c.overload.load(Ordering::Relaxed);
            t.lost += c.lost.load(Ordering::Relaxed);
            t.wrong += c.wrong.load(Ordering::Relaxed);
            t.unexpected_5xx += c.unexpected_5xx.load(Ordering::Relaxed);
            t.abandoned += c.abandoned.load(Ordering::Relaxed);
        }
        t
    }

    /// One row per kind that was sent: the name and its counts.
    pub(crate) fn rows(&self) -> Vec<(Kind, [u64; 7], f64)> {
        Kind::ALL
            .iter()
            .map(|k| {
                let c = self.of(*k);
                let n = [
                    c.sent.load(Ordering::Relaxed),
                    c.answered.load(Ordering::Relaxed),
                    c.overload.load(Ordering::Relaxed),
                    c.lost.load(Ordering::Relaxed),
                    c.wrong.load(Ordering::Relaxed),
                    c.unexpected_5xx.load(Ordering::Relaxed),
                    c.abandoned.load(Ordering::Relaxed),
                ];
                (*k, n, c.max_us.load(Ordering::Relaxed) as f64 / 1000.0)
            })
            .filter(|(_, n, _)| n[0] > 0)
            .collect()
    }

    /// The counts as JSON.
    pub(crate) fn json(&self) -> Value {
        let kinds: Vec<Value> = self
            .rows()
            .into_iter()
            .map(|(k, n, max_ms)| {
                json!({
                    "kind": k.name(),
                    "sent": n[0],
                    "answered": n[1],
                    "declared_overload": n[2],
                    "lost": n[3],
                    "wrong": n[4],
                    "unexpected_5xx": n[5],
                    "abandoned_on_purpose": n[6],
                    "max_ms": (max_ms * 10.0).round() / 10.0,
                })
            })
            .collect();
        Value::Array(kinds)
    }
}
