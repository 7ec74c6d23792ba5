//! The soak's workers, all running at once until `stop`: listen holders, callers of both eras
//! with session churn, and the fault injectors (mid-call disconnects, the hanging tool, oversize
//! and malformed requests), plus a periodic tool-list change every listener should see.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::client::{Conn, Reply, Req, Target, next_event};
use crate::mcp::{self, Expect, INVALID_REQUEST, PARSE_ERROR, Verdict};
use crate::tally::{Kind, Tally};

/// Longest wait for an answer that should come; past it the request counts as lost.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a slow call (`soak_sleep`) would take if its client stayed.
const SLOW_CALL_MS: u64 = 2_000;
/// Pause after a refused or failed listen before the next try.
const LISTEN_RETRY: Duration = Duration::from_secs(2);
/// Most `tools/call`s in one legacy session before it is deleted.
const MAX_CALLS_PER_SESSION: u64 = 8;
/// Percent of calls that call the panicking tool.
const PANIC_PERCENT: u64 = 3;
/// Percent of legacy calls that are a fault on a side connection (disconnect or hang).
const LEGACY_FAULT_PERCENT: u64 = 3;

/// How hard and how long the soak runs.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Listen streams held open.
    pub(crate) listeners: usize,
    /// Listen streams opened per second while ramping up.
    pub(crate) listen_ramp_per_s: usize,
    /// Callers of the legacy era (session churn).
    pub(crate) legacy_callers: usize,
    /// Callers of the modern era (stateless).
    pub(crate) modern_callers: usize,
    /// Requests per second of all callers together.
    pub(crate) rate: f64,
    /// The server's `max_body_bytes`: the oversize bodies are larger.
    pub(crate) max_body_bytes: usize,
    /// How long the driver waits for the hanging tool before it gives up.
    pub(crate) hang_timeout: Duration,
    /// Interval of the tool-list changes.
    pub(crate) trigger_every: Duration,
    /// Intervals of the fault injectors.
    pub(crate) disconnect_every: Duration,
    /// Interval of the hanging-tool calls.
    pub(crate) hang_every: Duration,
    /// Interval of the oversize bodies.
    pub(crate) oversize_every: Duration,
    /// Interval of the malformed requests.
    pub(crate) malformed_every: Duration,
}

/// The life of one listen stream, for the notification check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamLife {
    /// When its acknowledgement arrived.
    pub(crate) opened: Instant,
    /// When it ended.
    pub(crate) closed: Instant,
    /// Tool-list changes it carried.
    pub(crate) notifications: u64,
    /// Whether the server ended it before the soak stopped.
    pub(crate) ended_by_server: bool,
}

/// A tool-list change: when its call was sent and when it was answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TriggerTime {
    /// When the `tools/call` was sent.
    pub(crate) sent: Instant,
    /// When its answer arrived.
    pub(crate) answered: Instant,
}

/// What every worker shares.
pub(crate) struct Shared {
    /// The server.
    pub(crate) target: Target,
    /// The plan.
    pub(crate) plan: Plan,
    /// Cancelled when the load stops.
    pub(crate) stop: CancellationToken,
    /// The counts.
    pub(crate) tally: Tally,
    /// JSON-RPC ids, unique over the run.
    ids: AtomicU64,
    /// Listen streams open now.
    pub(crate) open_streams: AtomicUsize,
    /// Most listen streams open at once.
    pub(crate) peak_streams: AtomicUsize,
    /// Tool-list changes that were answered.
    pub(crate) triggers: std::sync::Mutex<Vec<TriggerTime>>,
}

impl Shared {
    /// A fresh state for `plan` against `target`.
    pub(crate) fn new(target: Target, plan: Plan) -> Arc<Shared> {
        Arc::new(Shared {
            target,
            plan,
            stop: CancellationToken::new(),
            tally: Tally::default(),
            ids: AtomicU64::new(1),
            open_streams: AtomicUsize::new(0),
            peak_streams: AtomicUsize::new(0),
            triggers: std::sync::Mutex::new(Vec::new()),
        })
    }

    fn id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `req` on `conn` and judges its answer; `None` when it got none (counted lost).
    async fn exchange(&self, conn: &mut Conn, kind: Kind, req: &Req, expect: Expect) -> Option<(Reply, Verdict)> {
        self.tally.sent(kind);
        let began = Instant::now();
        match conn.send(req, REQUEST_TIMEOUT).await {
            Ok(reply) => {
                let verdict = mcp::judge(&reply, expect);
                self.tally.verdict(kind, &verdict, began.elapsed());
                Some((reply, verdict))
            }
            Err(why) => {
                self.tally.lost(kind, &why);
                None
            }
        }
    }

    /// Like [`exchange`](Self::exchange) on a fresh connection, closed afterwards.
    async fn exchange_once(&self, kind: Kind, req: &Req, expect: Expect) -> Option<(Reply, Verdict)> {
        let mut conn = self.connect(kind).await?;
        self.exchange(&mut conn, kind, req, expect).await
    }

    /// A fresh connection; a failure counts one request of `kind` as sent and lost.
    async fn connect(&self, kind: Kind) -> Option<Conn> {
        match Conn::open(&self.target, CONNECT_TIMEOUT).await {
            Ok(conn) => Some(conn),
            Err(why) => {
                self.tally.sent(kind);
                self.tally.lost(kind, &why);
                None
            }
        }
    }

    /// Sends `req` on a fresh connection and drops the connection after `after` unless the
    /// answer came first: abandoned on purpose.
    async fn abandon(&self, kind: Kind, req: &Req, after: Duration) {
        let Some(mut conn) = self.connect(kind).await else {
            return;
        };
        self.tally.sent(kind);
        let began = Instant::now();
        match conn.send(req, after).await {
            // An answer before the client left: it must still be a right one.
            Ok(reply) => {
                let verdict = mcp::judge(&reply, Expect::Success);
                self.tally.verdict(kind, &verdict, began.elapsed());
            }
            Err(_) => self.tally.abandoned(kind),
        }
        drop(conn);
    }
}

/// A small xorshift generator: the soak needs spread, not quality.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// A ticker at `every` that gives up ticking once the soak stops.
struct Pace {
    interval: tokio::time::Interval,
    stop: CancellationToken,
}

impl Pace {
    fn new(every: Duration, stop: &CancellationToken) -> Pace {
        let mut interval = tokio::time::interval(every.max(Duration::from_millis(1)));
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Pace {
            interval,
            stop: stop.clone(),
        }
    }

    /// Waits for the next tick; `false` once the soak stopped.
    async fn tick(&mut self) -> bool {
        tokio::select! {
            _ = self.stop.cancelled() => false,
            _ = self.interval.tick() => !self.stop.is_cancelled(),
        }
    }
}

/// Keeps one listen stream open until the soak stops (reopening it when it is refused or
/// ends), starting after `delay`; returns the lives of its streams.
pub(crate) async fn listen_holder(shared: Arc<Shared>, delay: Duration) -> Vec<StreamLife> {
    let mut lives = Vec::new();
    tokio::select! {
        _ = shared.stop.cancelled() => return lives,
        _ = tokio::time::sleep(delay) => {}
    }
    while !shared.stop.is_cancelled() {
        match hold_one(&shared).await {
            Some(life) => {
                let server_ended = life.ended_by_server;
                lives.push(life);
                if !server_ended {
                    break;
                }
            }
            None => {
                tokio::select! {
                    _ = shared.stop.cancelled() => break,
                    _ = tokio::time::sleep(LISTEN_RETRY) => {}
                }
            }
        }
    }
    lives
}

/// Opens one listen stream and holds it; `None` when it did not open.
async fn hold_one(shared: &Shared) -> Option<StreamLife> {
    let kind = Kind::Listen;
    let mut conn = shared.connect(kind).await?;
    let id = shared.id();
    shared.tally.sent(kind);
    let began = Instant::now();
    let opening = async {
        let resp = conn.start(&mcp::modern_listen(id)).await?;
        let status = resp.status();
        let mut body = resp.into_body();
        if status != hyper::StatusCode::OK {
            let bytes = http_body_util::BodyExt::collect(body)
                .await
                .map_err(|e| format!("body: {e}"))?
                .to_bytes();
            return Ok(Err(Reply {
                status,
                session: None,
                body: bytes,
            }));
        }
        let mut buf = String::new();
        match next_event(&mut body, &mut buf).await? {
            Some(ack) => Ok(Ok((body, buf, ack))),
            None => Err("the stream ended before its acknowledgement".to_owned()),
        }
    };
    let opened = match tokio::time::timeout(REQUEST_TIMEOUT, opening).await {
        Err(_) => Err(format!("no acknowledgement within {} s", REQUEST_TIMEOUT.as_secs())),
        Ok(r) => r,
    };
    let (mut body, mut buf) = match opened {
        Err(why) => {
            shared.tally.lost(kind, &why);
            return None;
        }
        Ok(Err(refusal)) => {
            let verdict = mcp::judge(&refusal, Expect::Result(id));
            shared.tally.verdict(kind, &verdict, began.elapsed());
            return None;
        }
        Ok(Ok((body, buf, ack))) => {
            let verdict = if ack.contains("notifications/subscriptions/acknowledged") {
                Verdict::Answered
            } else {
                Verdict::Wrong(format!("no acknowledgement but {}", mcp::snippet(ack.as_bytes())))
            };
            let ok = matches!(verdict, Verdict::Answered);
            shared.tally.verdict(kind, &verdict, began.elapsed());
            if !ok {
                return None;
            }
            (body, buf)
        }
    };
    let opened = Instant::now();
    let now_open = shared.open_streams.fetch_add(1, Ordering::Relaxed) + 1;
    shared.peak_streams.fetch_max(now_open, Ordering::Relaxed);
    let mut notifications = 0;
    let ended_by_server = loop {
        tokio::select! {
            _ = shared.stop.cancelled() => break false,
            event = next_event(&mut body, &mut buf) => match event {
                Ok(Some(data)) if data.contains("notifications/tools/list_changed") => notifications += 1,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break true,
            },
        }
    };
    shared.open_streams.fetch_sub(1, Ordering::Relaxed);
    drop(body);
    drop(conn);
    Some(StreamLife {
        opened,
        closed: Instant::now(),
        notifications,
        ended_by_server,
    })
}

/// The caller's share of the request rate: its interval between requests.
fn caller_interval(plan: &Plan) -> Duration {
    let callers = (plan.legacy_callers + plan.modern_callers).max(1) as f64;
    Duration::from_secs_f64(callers / plan.rate.max(1.0))
}

/// A keep-alive connection, reopened when it closed.
async fn ensure(shared: &Shared, conn: &mut Option<Conn>, kind: Kind) -> bool {
    if conn.as_ref().is_some_and(Conn::is_open) {
        return true;
    }
    *conn = shared.connect(kind).await;
    conn.is_some()
}

/// A modern caller: stateless `tools/call` (and a few `tools/list` and panics) on one
/// keep-alive connection.
pub(crate) async fn modern_caller(shared: Arc<Shared>, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut pace = Pace::new(caller_interval(&shared.plan), &shared.stop);
    let mut conn = None;
    while pace.tick().await {
        let roll = rng.below(100);
        let kind = match roll {
            r if r < PANIC_PERCENT => Kind::ModernPanic,
            r if r < PANIC_PERCENT + 5 => Kind::ModernList,
            _ => Kind::ModernCall,
        };
        if !ensure(&shared, &mut conn, kind).await {
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        let id = shared.id();
        let (req, expect) = match kind {
            Kind::ModernPanic => (mcp::modern_call(id, "soak_panic", json!({})), Expect::ToolError(id)),
            Kind::ModernList => (mcp::modern_list(id), Expect::Result(id)),
            _ => (mcp::modern_call(id, "test_simple_text", json!({})), Expect::Result(id)),
        };
        if shared.exchange(c, kind, &req, expect).await.is_none() {
            conn = None;
        }
    }
}

/// A legacy caller: `initialize`, `notifications/initialized`, a few `tools/call`s (some of
/// them panics, some faults on a side connection), DELETE, and again.
pub(crate) async fn legacy_caller(shared: Arc<Shared>, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut pace = Pace::new(caller_interval(&shared.plan), &shared.stop);
    let mut conn = None;
    while pace.tick().await {
        if !ensure(&shared, &mut conn, Kind::Initialize).await {
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        let id = shared.id();
        let Some((reply, verdict)) = shared
            .exchange(c, Kind::Initialize, &mcp::initialize(id), Expect::Initialize(id))
            .await
        else {
            conn = None;
            continue;
        };
        let Some(session) = reply.session.filter(|_| matches!(verdict, Verdict::Answered)) else {
            continue;
        };
        if session_calls(&shared, &mut rng, &mut pace, &mut conn, &session).await {
            conn = None;
        }
        // The session is always deleted, even once the soak stopped: nothing is left behind.
        if ensure(&shared, &mut conn, Kind::Delete).await
            && let Some(c) = conn.as_mut()
            && shared
                .exchange(c, Kind::Delete, &mcp::delete(&session), Expect::Success)
                .await
                .is_none()
        {
            conn = None;
        }
    }
}

/// The calls of one legacy session; `true` when the connection broke.
async fn session_calls(
    shared: &Shared,
    rng: &mut Rng,
    pace: &mut Pace,
    conn: &mut Option<Conn>,
    session: &str,
) -> bool {
    let Some(c) = conn.as_mut() else { return true };
    if shared
        .exchange(c, Kind::Initialized, &mcp::initialized(session), Expect::Success)
        .await
        .is_none()
    {
        return true;
    }
    let calls = 1 + rng.below(MAX_CALLS_PER_SESSION);
    for _ in 0..calls {
        if !pace.tick().await {
            break;
        }
        let roll = rng.below(100);
        let id = shared.id();
        if roll < LEGACY_FAULT_PERCENT {
            if roll.is_multiple_of(2) {
                let req = mcp::legacy_call(id, session, "soak_sleep", json!({"ms": SLOW_CALL_MS}));
                let after = Duration::from_millis(20 + rng.below(400));
                shared.abandon(Kind::Disconnect, &req, after).await;
            } else {
                let req = mcp::legacy_call(id, session, "soak_hang", json!({}));
                shared.abandon(Kind::Hang, &req, shared.plan.hang_timeout).await;
            }
            continue;
        }
        let (kind, req, expect) = if roll < LEGACY_FAULT_PERCENT + PANIC_PERCENT {
            let req = mcp::legacy_call(id, session, "soak_panic", json!({}));
            (Kind::LegacyPanic, req, Expect::ToolError(id))
        } else {
            let req = mcp::legacy_call(id, session, "test_simple_text", json!({}));
            (Kind::LegacyCall, req, Expect::Result(id))
        };
        if shared.exchange(c, kind, &req, expect).await.is_none() {
            return true;
        }
    }
    false
}

/// Every `trigger_every`, `test_trigger_tool_change`: a tool-list change for every listener.
pub(crate) async fn trigger(shared: Arc<Shared>) {
    let mut pace = Pace::new(shared.plan.trigger_every, &shared.stop);
    // The first tick is immediate: let the listeners open first.
    pace.tick().await;
    while pace.tick().await {
        let id = shared.id();
        let req = mcp::modern_call(id, "test_trigger_tool_change", json!({}));
        let sent = Instant::now();
        if let Some((_, Verdict::Answered)) = shared.exchange_once(Kind::Trigger, &req, Expect::Result(id)).await {
            let answered = Instant::now();
            shared
                .triggers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(TriggerTime { sent, answered });
        }
    }
}

/// Modern slow calls whose client leaves mid-call, and calls of the hanging tool given up
/// after the short timeout.
pub(crate) async fn modern_faults(shared: Arc<Shared>, seed: u64, hang: bool) {
    let mut rng = Rng::new(seed);
    let every = if hang {
        shared.plan.hang_every
    } else {
        shared.plan.disconnect_every
    };
    let mut pace = Pace::new(every, &shared.stop);
    while pace.tick().await {
        let id = shared.id();
        if hang {
            let req = mcp::modern_call(id, "soak_hang", json!({}));
            shared.abandon(Kind::Hang, &req, shared.plan.hang_timeout).await;
        } else {
            let req = mcp::modern_call(id, "soak_sleep", json!({"ms": SLOW_CALL_MS}));
            let after = Duration::from_millis(20 + rng.below(400));
            shared.abandon(Kind::Disconnect, &req, after).await;
        }
    }
}

/// Bodies over `max_body_bytes`, each on a fresh connection: 413.
pub(crate) async fn oversize(shared: Arc<Shared>) {
    let mut pace = Pace::new(shared.plan.oversize_every, &shared.stop);
    let filler = "x".repeat(shared.plan.max_body_bytes + 4096);
    while pace.tick().await {
        let id = shared.id();
        let req = mcp::modern_call(id, "test_simple_text", json!({"filler": filler}));
        shared
            .exchange_once(Kind::Oversize, &req, Expect::Status(413, Some(INVALID_REQUEST)))
            .await;
    }
}

/// Malformed requests in turn, each on a fresh connection: bad JSON (400 -32700), a JSON value
/// that is not a request (400 -32600), a wrong `Content-Type` (415), no `Accept` (406).
pub(crate) async fn malformed(shared: Arc<Shared>) {
    let mut pace = Pace::new(shared.plan.malformed_every, &shared.stop);
    let mut turn = 0u64;
    while pace.tick().await {
        turn += 1;
        let id = shared.id();
        let good = mcp::modern_call(id, "test_simple_text", json!({}));
        let (kind, req, expect) = match turn % 4 {
            0 => {
                let mut req = good;
                req.body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"#);
                (Kind::BadJson, req, Expect::Status(400, Some(PARSE_ERROR)))
            }
            1 => {
                let mut req = good;
                req.body = Bytes::from(json!({"jsonrpc": "2.0", "id": id}).to_string());
                (Kind::NotARequest, req, Expect::Status(400, Some(INVALID_REQUEST)))
            }
            2 => {
                let mut req = good;
                req.content_type = Some("text/plain");
                (Kind::WrongContentType, req, Expect::Status(415, None))
            }
            _ => {
                let mut req = good;
                req.accept = None;
                (Kind::MissingAccept, req, Expect::Status(406, None))
            }
        };
        shared.exchange_once(kind, &req, expect).await;
    }
}
