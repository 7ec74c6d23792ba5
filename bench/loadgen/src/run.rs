//! The HTTP workloads W1–W4: N clients, each on its own keep-alive connection, doing one
//! operation after the other through a warm-up and then a fixed measured duration.
//!
//! With `--hold` the run has two phases instead: the warm-up, a hold, the measured duration and
//! a hold (see [`crate::hold`]), every client idle at both holds, so that the requests between
//! them are known exactly (`held_requests`). Given the servers' pids, their CPU over the measured
//! window is read too (see [`crate::cpu`]).
//!
//! Given several targets (instances of one server sharing their state), each client holds one
//! keep-alive connection per target and sends every request to the next target in turn
//! (client-side round robin, so that no proxy is measured): a session is used on every instance,
//! as behind a round-robin load balancer. Client `i` begins at target `i mod n`, so that the
//! first request of an operation (W3's `initialize`) is spread over the instances.

use std::time::{Duration, Instant};

use hyper::Method;

use crate::client::{Conn, Result, Target};
use crate::cpu;
use crate::hold::Holds;
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
    /// The servers' pids, whose CPU over the measured window is read (none: not read).
    pub(crate) pids: Vec<u32>,
    /// Hold after the warm-up and after the measured duration (see [`crate::hold`]).
    pub(crate) hold: bool,
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
    let mut outcome = Outcome::new(opts.duration);
    outcome.instances = targets.len();
    if opts.hold {
        return held(clients, opts, outcome).await;
    }
    let start = Instant::now();
    let measure_from = start + opts.warmup;
    let end = measure_from + opts.duration;
    let cpu = cpu::Window::start(&opts.pids, measure_from, end);
    for (_, measure) in phase(clients, measure_from, end).await? {
        outcome.add(measure)?;
    }
    outcome.set_cpu(cpu.finish(outcome.requests).await?);
    Ok(outcome)
}

/// `--hold`: the warm-up (nothing measured), a hold, the measured duration, a hold.
async fn held(warming: Vec<Client>, opts: &LoadOpts, mut outcome: Outcome) -> Result<Outcome> {
    let mut holds = Holds::new();
    let warm_end = Instant::now() + opts.warmup;
    // An operation is measured if it ends between `measure_from` and the end: none of these.
    let never = warm_end + Duration::from_secs(1);
    let mut clients = Vec::with_capacity(warming.len());
    for (client, measure) in phase(warming, never, warm_end).await? {
        if measure.gave_up {
            return Err(measure.first_error.unwrap_or_else(|| "a client gave up".to_owned()));
        }
        clients.push(client);
    }
    let sent = |clients: &[Client]| clients.iter().map(|c| c.requests).sum::<u64>();
    holds.hold(None).await?;
    let before = sent(&clients);
    let start = Instant::now();
    let end = start + opts.duration;
    let cpu = cpu::Window::start(&opts.pids, start, end);
    let mut done = Vec::with_capacity(clients.len());
    for (client, measure) in phase(clients, start, end).await? {
        outcome.add(measure)?;
        done.push(client);
    }
    outcome.set_cpu(cpu.finish(outcome.requests).await?);
    let requests = sent(&done) - before;
    outcome.held_requests = Some(requests);
    // The connections stay open until the second hold is over: closing them is no request.
    holds.hold(Some(requests)).await?;
    drop(done);
    Ok(outcome)
}

/// Every client's loop until `end` (operations that end after `measure_from` are measured),
/// concurrently; each client comes back with what it measured.
async fn phase(clients: Vec<Client>, measure_from: Instant, end: Instant) -> Result<Vec<(Client, Measure)>> {
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| tokio::spawn(drive(client, measure_from, end)))
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(task.await.map_err(|e| format!("client task: {e}"))?);
    }
    Ok(out)
}

/// One client's loop until `end`; operations that end after `measure_from` are measured. The
/// client comes back (idle: its last answer read) with its measure.
async fn drive(mut client: Client, measure_from: Instant, end: Instant) -> (Client, Measure) {
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
    (client, m)
}
