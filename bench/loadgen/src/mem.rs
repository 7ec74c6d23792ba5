//! M1: resident memory of a server. Idle size, then the growth per idle legacy session, per idle
//! keep-alive connection (one modern `tools/call` served on it), per open `subscriptions/listen`
//! stream over HTTP/1.1 (each on its own connection, so its figure includes one connection's) and
//! per open listen stream over h2c (HTTP/2 with prior knowledge, [`H2_STREAMS_PER_CONN`] streams
//! on each connection, so its figure includes that share of a connection), each as the `VmRSS`
//! difference over many of them divided by their number (after a few of each first, so that
//! one-time allocations are not counted). Everything opened stays open until the end, so that no
//! kind reuses memory another kind freed.

use std::time::Duration;

use hyper::body::Incoming;
use serde::Serialize;

use crate::client::{Conn, H2Conn, Result, Target, first_event};
use crate::mcp;
use crate::stats::proc_status_kb;

/// Sessions or streams opened before the baseline is read.
const WARM: usize = 64;
/// Connections the sessions are opened over.
const SESSION_CONNS: usize = 8;
/// Listen streams opened on each h2c connection (under the server's default
/// `h2_max_concurrent_streams`, 200).
pub(crate) const H2_STREAMS_PER_CONN: usize = 100;
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
    /// Resident bytes per open listen stream over HTTP/1.1 (its connection included).
    pub(crate) bytes_per_stream: Option<f64>,
    /// Listen streams measured over h2c.
    pub(crate) h2_streams: usize,
    /// Listen streams on each h2c connection.
    pub(crate) h2_streams_per_connection: usize,
    /// Resident bytes per open listen stream over h2c (its share of the connection included).
    pub(crate) bytes_per_stream_h2c: Option<f64>,
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

/// Opens `n` listen streams over h2c, [`H2_STREAMS_PER_CONN`] on each connection, past their
/// acknowledgement; the returned connections and bodies hold them open.
async fn open_h2_streams(target: &Target, n: usize) -> Result<(Vec<H2Conn>, Vec<Incoming>)> {
    let mut conns = Vec::new();
    let mut bodies = Vec::with_capacity(n);
    let mut next_id = 1u64;
    let mut left = n;
    while left > 0 {
        let batch = left.min(H2_STREAMS_PER_CONN);
        let conn = H2Conn::open(target).await?;
        for i in 0..batch {
            bodies.push(listen_h2(&conn, next_id + i as u64).await?);
        }
        next_id += batch as u64;
        left -= batch;
        conns.push(conn);
    }
    Ok((conns, bodies))
}

/// One listen stream on `conn`, past its acknowledgement.
async fn listen_h2(conn: &H2Conn, id: u64) -> Result<Incoming> {
    let resp = conn.start(mcp::MODERN_LISTEN_HEADERS, mcp::modern_listen(id)).await?;
    if !resp.status().is_success() {
        return Err(format!("subscriptions/listen over h2c: HTTP {}", resp.status()));
    }
    let mut body = resp.into_body();
    let ack = first_event(&mut body).await?;
    if !ack.contains("notifications/subscriptions/acknowledged") {
        return Err(format!("subscriptions/listen over h2c: no acknowledgement but {ack}"));
    }
    Ok(body)
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
    /// Open listen streams over HTTP/1.1, one per connection.
    pub(crate) streams: usize,
    /// Open listen streams over h2c, [`H2_STREAMS_PER_CONN`] per connection.
    pub(crate) h2_streams: usize,
}

/// Measures the server `pid` serving `target`: idle, then the sessions, the connections and the
/// streams of `counts`, each kind held open while the next is measured.
pub(crate) async fn measure(target: &Target, pid: u32, counts: Counts) -> Result<Memory> {
    let Counts {
        sessions,
        connections,
        streams,
        h2_streams,
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
        h2_streams,
        h2_streams_per_connection: H2_STREAMS_PER_CONN,
        bytes_per_stream_h2c: None,
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
    let mut held_streams = Vec::new();
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
                held_streams.push(warm);
                held_streams.push(open);
            }
            Err(e) => notes.push(format!("streams: {e}")),
        }
    }
    let mut held_h2 = Vec::new();
    if h2_streams > 0 {
        match open_h2_streams(target, WARM).await {
            Ok(warm) => {
                let before = settle_rss(pid).await?;
                let open = open_h2_streams(target, h2_streams).await?;
                let after = settle_rss(pid).await?;
                memory.bytes_per_stream_h2c = Some(per_item(before, after, h2_streams));
                held_h2.push(warm);
                held_h2.push(open);
            }
            Err(e) => notes.push(format!("h2c streams: {e}")),
        }
    }
    memory.peak_rss_kb = proc_status_kb(pid, "VmHWM")?;
    drop((held, held_streams, held_h2));
    if !notes.is_empty() {
        memory.note = Some(notes.join("; "));
    }
    Ok(memory)
}
