//! M1: resident memory of a server. Idle size, then the growth per idle legacy session, per idle
//! keep-alive connection (one modern `tools/call` served on it) and per open
//! `subscriptions/listen` stream (each on its own connection, so its figure includes one
//! connection's), each as the `VmRSS` difference over many of them divided by their number (after
//! a few of each first, so that one-time allocations are not counted).

use std::time::Duration;

use hyper::body::Incoming;
use serde::Serialize;

use crate::client::{Conn, Result, Target, first_event};
use crate::mcp;
use crate::stats::proc_status_kb;

/// Sessions or streams opened before the baseline is read.
const WARM: usize = 64;
/// Connections the sessions are opened over.
const SESSION_CONNS: usize = 8;
/// How long the server is left to settle before each reading.
const SETTLE: Duration = Duration::from_millis(1500);

/// What M1 measured.
#[derive(Debug, Serialize)]
pub(crate) struct Memory {
    /// `VmRSS` when the server has served nothing, KiB.
    pub(crate) idle_rss_kb: u64,
    /// Sessions measured.
    pub(crate) sessions: usize,
    /// Resident bytes per idle legacy session.
    pub(crate) bytes_per_session: Option<f64>,
    /// Idle keep-alive connections measured.
    pub(crate) connections: usize,
    /// Resident bytes per idle keep-alive connection that served one request.
    pub(crate) bytes_per_connection: Option<f64>,
    /// Streams measured.
    pub(crate) streams: usize,
    /// Resident bytes per open listen stream (its connection included).
    pub(crate) bytes_per_stream: Option<f64>,
    /// Peak resident size over the whole measure (`VmHWM`), KiB.
    pub(crate) peak_rss_kb: u64,
    /// Why a part could not be measured.
    pub(crate) note: Option<String>,
}

/// `VmRSS` after the server has had time to settle.
async fn settle_rss(pid: u32) -> Result<u64> {
    tokio::time::sleep(SETTLE).await;
    proc_status_kb(pid, "VmRSS")
}

fn per_item(before_kb: u64, after_kb: u64, n: usize) -> f64 {
    (after_kb as f64 - before_kb as f64) * 1024.0 / n as f64
}

/// Opens `n` legacy sessions (never deleted) over a few connections.
async fn open_sessions(target: &Target, n: usize) -> Result<()> {
    let per_conn = n.div_ceil(SESSION_CONNS);
    let tasks: Vec<_> = (0..SESSION_CONNS)
        .map(|c| {
            let target = target.clone();
            let count = per_conn.min(n.saturating_sub(c * per_conn));
            tokio::spawn(async move {
                let mut conn = Conn::open(&target).await?;
                for i in 0..count {
                    let reply = conn.post(&[], mcp::initialize(i as u64)).await?;
                    mcp::check_ok(&reply, "initialize")?;
                    let session = reply.session.ok_or("initialize: no Mcp-Session-Id")?;
                    let headers = mcp::legacy_headers(Some(&session));
                    let reply = conn.post(&headers, mcp::initialized()).await?;
                    mcp::check_status(&reply, "notifications/initialized")?;
                }
                Ok::<_, String>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.map_err(|e| format!("session task: {e}"))??;
    }
    Ok(())
}

/// Opens `n` listen streams, each on its own connection, past their acknowledgement; the
/// returned bodies hold them open.
async fn open_streams(target: &Target, n: usize) -> Result<Vec<(Conn, Incoming)>> {
    let mut streams = Vec::with_capacity(n);
    for i in 0..n {
        let mut conn = Conn::open(target).await?;
        let resp = conn
            .start(
                hyper::Method::POST,
                mcp::MODERN_LISTEN_HEADERS,
                mcp::modern_listen(i as u64 + 1),
            )
            .await?;
        if !resp.status().is_success() {
            return Err(format!("subscriptions/listen: HTTP {}", resp.status()));
        }
        let mut body = resp.into_body();
        let ack = first_event(&mut body).await?;
        if !ack.contains("notifications/subscriptions/acknowledged") {
            return Err(format!("subscriptions/listen: no acknowledgement but {ack}"));
        }
        streams.push((conn, body));
    }
    Ok(streams)
}

/// Opens `n` connections that each serve one modern `tools/call` and then stay idle.
async fn open_connections(target: &Target, n: usize) -> Result<Vec<Conn>> {
    let mut conns = Vec::with_capacity(n);
    for i in 0..n {
        let mut conn = Conn::open(target).await?;
        let reply = conn
            .post(mcp::MODERN_CALL_HEADERS, mcp::modern_call(i as u64 + 1))
            .await?;
        mcp::check_call(&reply)?;
        conns.push(conn);
    }
    Ok(conns)
}

/// How many of each kind M1 opens (0 skips a kind).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    /// Idle legacy sessions.
    pub(crate) sessions: usize,
    /// Idle keep-alive connections.
    pub(crate) connections: usize,
    /// Open listen streams.
    pub(crate) streams: usize,
}

/// Measures the server `pid` serving `target`: idle, then the sessions, the connections and the
/// streams of `counts`, each kind held open while the next is measured.
pub(crate) async fn measure(target: &Target, pid: u32, counts: Counts) -> Result<Memory> {
    let Counts {
        sessions,
        connections,
        streams,
    } = counts;
    let idle_rss_kb = settle_rss(pid).await?;
    let mut memory = Memory {
        idle_rss_kb,
        sessions,
        bytes_per_session: None,
        connections,
        bytes_per_connection: None,
        streams,
        bytes_per_stream: None,
        peak_rss_kb: 0,
        note: None,
    };
    let mut notes = Vec::new();
    if sessions > 0 {
        match open_sessions(target, WARM).await {
            Ok(()) => {
                let before = settle_rss(pid).await?;
                open_sessions(target, sessions).await?;
                let after = settle_rss(pid).await?;
                memory.bytes_per_session = Some(per_item(before, after, sessions));
            }
            Err(e) => notes.push(format!("sessions: {e}")),
        }
    }
    let mut held = Vec::new();
    if connections > 0 {
        match open_connections(target, WARM).await {
            Ok(warm) => {
                let before = settle_rss(pid).await?;
                let open = open_connections(target, connections).await?;
                let after = settle_rss(pid).await?;
                memory.bytes_per_connection = Some(per_item(before, after, connections));
                held.push(warm);
                held.push(open);
            }
            Err(e) => notes.push(format!("connections: {e}")),
        }
    }
    if streams > 0 {
        match open_streams(target, WARM).await {
            Ok(warm) => {
                let before = settle_rss(pid).await?;
                let open = open_streams(target, streams).await?;
                let after = settle_rss(pid).await?;
                memory.bytes_per_stream = Some(per_item(before, after, streams));
                drop(open);
                drop(warm);
                drop(held);
            }
            Err(e) => notes.push(format!("streams: {e}")),
        }
    }
    memory.peak_rss_kb = proc_status_kb(pid, "VmHWM")?;
    if !notes.is_empty() {
        memory.note = Some(notes.join("; "));
    }
    Ok(memory)
}
