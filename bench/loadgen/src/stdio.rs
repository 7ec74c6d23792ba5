//! W5: round trips over stdio. The server binary is spawned with piped stdin/stdout, goes
//! through the legacy handshake, then `inflight` workers each send `tools/call echo` and wait
//! for its answer (1: sequential), through a warm-up and a fixed measured duration. The server's
//! CPU over the measured window is read from its pid.

use std::cell::RefCell;
use std::collections::HashMap;
use std::process::Stdio;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, oneshot};

use crate::client::Result;
use crate::mcp::{self, TEXT};
use crate::run::LoadOpts;
use crate::stats::{Measure, Outcome, proc_status_kb};

/// Answers awaited, by request id.
type Pending = Rc<RefCell<HashMap<u64, oneshot::Sender<String>>>>;

/// The id of a line from the server (requests and notifications of the server are ignored).
#[derive(Deserialize)]
struct Head {
    id: Option<u64>,
}

/// The spawned server and the bench's end of its pipes.
struct Server {
    child: Child,
    stdin: Mutex<ChildStdin>,
    pending: Pending,
}

impl Server {
    fn spawn(command: &[String]) -> Result<Server> {
        let (program, args) = command.split_first().ok_or("stdio: no server command given")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdin = child.stdin.take().ok_or("stdio: no stdin")?;
        let stdout = child.stdout.take().ok_or("stdio: no stdout")?;
        let pending: Pending = Rc::default();
        let routes = pending.clone();
        tokio::task::spawn_local(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(Head { id: Some(id) }) = serde_json::from_str::<Head>(&line) else {
                    continue;
                };
                if let Some(tx) = routes.borrow_mut().remove(&id) {
                    let _ = tx.send(line);
                }
            }
            // The server closed its stdout: every waiter sees its sender dropped.
            routes.borrow_mut().clear();
        });
        Ok(Server {
            child,
            stdin: Mutex::new(stdin),
            pending,
        })
    }

    /// Writes one line (a request has its waiter registered first).
    async fn write(&self, body: &[u8]) -> Result<()> {
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(body).await.map_err(|e| format!("stdin: {e}"))?;
        stdin.write_all(b"\n").await.map_err(|e| format!("stdin: {e}"))?;
        stdin.flush().await.map_err(|e| format!("stdin: {e}"))
    }

    /// Sends request `id` and waits for its answer line.
    async fn request(&self, id: u64, body: &[u8]) -> Result<String> {
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id, tx);
        self.write(body).await?;
        tokio::time::timeout(Duration::from_secs(30), rx)
            .await
            .map_err(|_| format!("no answer to request {id} within 30 s"))?
            .map_err(|_| "the server closed its stdout".to_owned())
    }
}

/// A `tools/call` answer line is good if it carries the text back and no error.
fn check(line: &str) -> Result<()> {
    if line.contains(TEXT) && !line.contains(r#""error":{"#) {
        Ok(())
    } else {
        Err(format!(
            "tools/call: unexpected answer {}",
            mcp::snippet(line.as_bytes())
        ))
    }
}

/// Spawns `command`, shakes hands, and measures `inflight` concurrent round-trip loops.
/// Must run inside a `LocalSet`.
pub(crate) async fn run(command: &[String], inflight: usize, opts: &LoadOpts, strict: bool) -> Result<Outcome> {
    let server = Rc::new(Server::spawn(command)?);
    let pid = server.child.id().ok_or("stdio: the server has no pid")?;
    let init = server.request(0, &mcp::initialize(0)).await?;
    if !init.contains(r#""result""#) {
        return Err(format!("initialize: {}", mcp::snippet(init.as_bytes())));
    }
    server.write(&mcp::initialized()).await?;
    let first = server.request(1, &mcp::legacy_call(1)).await?;
    if strict {
        let reply = crate::client::Reply {
            status: hyper::StatusCode::OK,
            session: None,
            body: first.clone().into(),
        };
        mcp::strict_call(&reply)?;
    } else {
        check(&first)?;
    }

    let start = Instant::now();
    let measure_from = start + opts.warmup;
    let end = measure_from + opts.duration;
    let cpu = crate::cpu::Window::start(&[pid], measure_from, end);
    let workers: Vec<_> = (0..inflight.max(1) as u64)
        .map(|slot| tokio::task::spawn_local(drive(server.clone(), slot, inflight.max(1) as u64, measure_from, end)))
        .collect();
    let mut outcome = Outcome::new(opts.duration);
    for worker in workers {
        outcome.add(worker.await.map_err(|e| format!("worker: {e}"))?)?;
    }
    outcome.peak_rss_kb = proc_status_kb(pid, "VmHWM").ok();
    outcome.set_cpu(cpu.finish(outcome.requests).await?);
    Ok(outcome)
}

/// One in-flight slot: ids `slot + k * stride`, so slots never collide.
async fn drive(server: Rc<Server>, slot: u64, stride: u64, measure_from: Instant, end: Instant) -> Measure {
    let mut m = Measure::default();
    let mut id = 2 + slot;
    loop {
        let t0 = Instant::now();
        if t0 >= end {
            break;
        }
        let result = server.request(id, &mcp::legacy_call(id)).await.and_then(|line| {
            m.body_bytes = line.len();
            check(&line)
        });
        id += stride;
        m.sent += 1;
        let t1 = Instant::now();
        let measured = t1 >= measure_from && t1 <= end;
        match result {
            Ok(()) if measured => {
                m.ops += 1;
                m.requests += 1;
                let micros = u64::try_from((t1 - t0).as_micros()).unwrap_or(u64::MAX);
                m.hist.saturating_record(micros.max(1));
            }
            Ok(()) => {}
            Err(e) => {
                m.errors += u64::from(measured);
                m.first_error.get_or_insert(e);
                m.gave_up = true;
                break;
            }
        }
    }
    m
}
