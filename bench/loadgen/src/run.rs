//! The HTTP workloads W1–W4: N clients, each on its own keep-alive connection, doing one
//! operation after the other through a warm-up and then a fixed measured duration.
//!
//! Given several targets (instances of one server sharing their state), each client holds one
//! keep-alive connection per target and sends every request to the next target in turn
//! (client-side round robin, so that no proxy is measured): a session is used on every instance,
//! as behind a round-robin load balancer. Client `i` begins at target `i mod n`, so that the
//! first request of an operation (W3's `initialize`) is spread over the instances.

use std::time::{Duration, Instant};

use hyper::Method;

use crate::client::{Conn, Result, Target};
use crate::mcp;
use crate::stats::{Measure, Outcome};

/// A workload over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Workload {
    /// Modern `tools/call echo` at 2026-07-28, stateless.
    W1,
    /// Legacy: one session per client, `tools/call echo` repeated.
    W2,
    /// Session churn: `initialize`, `notifications/initialized`, `tools/call`, DELETE.
    W3,
    /// Modern `tools/list` of every tool (following `nextCursor`).
    W4,
}

/// How a run goes.
#[derive(Debug, Clone)]
pub(crate) struct LoadOpts {
    /// Concurrent clients (one connection each).
    pub(crate) clients: usize,
    /// Time run before measuring.
    pub(crate) warmup: Duration,
    /// Time measured.
    pub(crate) duration: Duration,
}

/// Consecutive failures after which a client gives up (the target is broken, not loaded).
const MAX_CONSECUTIVE_ERRORS: u32 = 50;

/// One keep-alive connection per target, taken in turn: each request goes to the next target.
struct Conns {
    conns: Vec<Conn>,
    next: usize,
}

impl Conns {
    async fn open(targets: &[Target], first: usize) -> Result<Conns> {
        let mut conns = Vec::with_capacity(targets.len());
        for target in targets {
            conns.push(Conn::open(target).await?);
        }
        Ok(Conns {
            next: first % conns.len().max(1),
            conns,
        })
    }

    /// The connection of the next request.
    fn next(&mut self) -> &mut Conn {
        let i = self.next;
        self.next = (i + 1) % self.conns.len();
        &mut self.conns[i]
    }
}

/// One client: its connections, its session (W2) and its request ids.
struct Client {
    targets: Vec<Target>,
    workload: Workload,
    conn: Conns,
    session: Option<String>,
    next_id: u64,
    requests: u64,
    body_bytes: usize,
}

impl Client {
    /// Client number `index` of a run.
    async fn open(targets: &[Target], workload: Workload, index: usize) -> Result<Client> {
        if targets.is_empty() {
            return Err("no target".to_owned());
        }
        let mut client = Client {
            targets: targets.to_vec(),
            workload,
            conn: Conns::open(targets, index).await?,
            session: None,
            next_id: 1,
            requests: 0,
            body_bytes: 0,
        };
        if workload == Workload::W2 {
            client.session = client.handshake().await?;
        }
        Ok(client)
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.requests += 1;
        self.next_id
    }

    /// `initialize` and `notifications/initialized`: the session, if the target minted one.
    async fn handshake(&mut self) -> Result<Option<String>> {
        let body = mcp::initialize(self.id());
        let reply = self.conn.next().post(&[], body).await?;
        mcp::check_ok(&reply, "initialize")?;
        let session = reply.session;
        self.requests += 1;
        let headers = mcp::legacy_headers(session.as_deref());
        let reply = self.conn.next().post(&headers, mcp::initialized()).await?;
        mcp::check_status(&reply, "notifications/initialized")?;
        Ok(session)
    }

    /// One operation of the workload; `strict` checks the answers fully (the probe).
    async fn op(&mut self, strict: Option<usize>) -> Result<()> {
        match self.workload {
            Workload::W1 => {
                let body = mcp::modern_call(self.id());
                let reply = self.conn.next().post(mcp::MODERN_CALL_HEADERS, body).await?;
                self.body_bytes = reply.body.len();
                check_call(&reply, strict.is_some())
            }
            Workload::W2 => {
                let body = mcp::legacy_call(self.id());
                let headers = mcp::legacy_headers(self.session.as_deref());
                let reply = self.conn.next().post(&headers, body).await?;
                self.body_bytes = reply.body.len();
                check_call(&reply, strict.is_some())
            }
            Workload::W3 => {
                let session = self.handshake().await?;
                let headers = mcp::legacy_headers(session.as_deref());
                let body = mcp::legacy_call(self.id());
                let reply = self.conn.next().post(&headers, body).await?;
                self.body_bytes = reply.body.len();
                check_call(&reply, strict.is_some())?;
                self.requests += 1;
                let reply = self
                    .conn
                    .next()
                    .send(Method::DELETE, &headers, bytes::Bytes::new())
                    .await?;
                mcp::check_status(&reply, "DELETE")
            }
            Workload::W4 => {
                let mut cursor: Option<String> = None;
                let mut tools = 0;
                loop {
                    let body = mcp::modern_list(self.id(), cursor.as_deref());
                    let reply = self.conn.next().post(mcp::MODERN_LIST_HEADERS, body).await?;
                    self.body_bytes = reply.body.len();
                    if strict.is_some() {
                        let (n, next) = mcp::list_page(&reply)?;
                        tools += n;
                        cursor = next;
                    } else {
                        mcp::check_ok(&reply, "tools/list")?;
                        cursor = mcp::next_cursor(&reply)?;
                    }
                    if cursor.is_none() {
                        break;
                    }
                }
                match strict {
                    Some(expected) if tools != expected => {
                        Err(format!("tools/list: {tools} tools in all pages, expected {expected}"))
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    /// After a failure: a fresh connection (and session), in case the old one broke.
    async fn reset(&mut self) -> Result<()> {
        let next = self.conn.next;
        self.conn = Conns::open(&self.targets, next).await?;
        if self.workload == Workload::W2 {
            self.session = self.handshake().await?;
        }
        Ok(())
    }
}

fn check_call(reply: &crate::client::Reply, strict: bool) -> Result<()> {
    if strict {
        mcp::strict_call(reply)
    } else {
        mcp::check_call(reply)
    }
}

/// One operation per target with every answer checked in full: fails if a target does not
/// answer as the workload expects. `tools` is the number of tools `tools/list` must return in
/// all. Returns the requests sent.
pub(crate) async fn probe(targets: &[Target], workload: Workload, tools: usize) -> Result<u64> {
    let mut client = Client::open(targets, workload, 0).await?;
    for _ in 0..targets.len() {
        client.op(Some(tools)).await?;
    }
    Ok(client.requests)
}

/// Runs the workload and measures it.
pub(crate) async fn run(targets: &[Target], workload: Workload, opts: &LoadOpts) -> Result<Outcome> {
    let mut clients = Vec::with_capacity(opts.clients);
    for i in 0..opts.clients {
        clients.push(Client::open(targets, workload, i).await?);
    }
    let start = Instant::now();
    let measure_from = start + opts.warmup;
    let end = measure_from + opts.duration;
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| tokio::spawn(drive(client, measure_from, end)))
        .collect();
    let mut outcome = Outcome::new(opts.duration);
    outcome.instances = targets.len();
    for task in tasks {
        let measure = task.await.map_err(|e| format!("client task: {e}"))?;
        outcome.add(measure)?;
    }
    Ok(outcome)
}

/// One client's loop until `end`; operations that end after `measure_from` are measured.
async fn drive(mut client: Client, measure_from: Instant, end: Instant) -> Measure {
    let mut m = Measure::default();
    let mut consecutive = 0;
    loop {
        let before = client.requests;
        let t0 = Instant::now();
        if t0 >= end {
            break;
        }
        let result = client.op(None).await;
        let t1 = Instant::now();
        let measured = t1 >= measure_from && t1 <= end;
        match result {
            Ok(()) => {
                consecutive = 0;
                m.body_bytes = client.body_bytes;
                if measured {
                    m.ops += 1;
                    m.requests += client.requests - before;
                    let micros = u64::try_from((t1 - t0).as_micros()).unwrap_or(u64::MAX);
                    m.hist.saturating_record(micros.max(1));
                }
            }
            Err(e) => {
                if measured {
                    m.errors += 1;
                }
                m.first_error.get_or_insert(e);
                consecutive += 1;
                if consecutive >= MAX_CONSECUTIVE_ERRORS || client.reset().await.is_err() {
                    m.gave_up = true;
                    break;
                }
            }
        }
    }
    m.sent = client.requests;
    m
}
