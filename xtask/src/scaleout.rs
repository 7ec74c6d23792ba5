//! `cargo xtask scaleout [--skip-build]`: one logical server made of two `everything`
//! processes sharing state through Redis, behind a round-robin proxy that switches backend on
//! every HTTP request, driven by the real peers.
//!
//! It starts a fresh `redis-server` ([`RedisServer`]), two `everything --host 127.0.0.1 --port 0
//! --redis <url> --redis-prefix <random> --state-key <64 random hex digits>` instances and the
//! `rr-proxy` binary of the `mcp-tests` crate in front of them (debug build: `cargo build -p
//! mcp-tests --bin rr-proxy`), then runs through the proxy:
//!
//! - the Python SDK client (`interop/client.py`) in each mode of the HTTP legs of `cargo xtask
//!   interop` without credentials (`legacy`, `auto`, `2026-07-28`), at `http://127.0.0.1:P/mcp`;
//! - every enabled leg of `cargo xtask conformance`, failing on any `FAILURE` or `WARNING`
//!   check exactly as there, at `http://localhost:P/mcp` (the dns-rebinding scenario needs a
//!   `localhost` URL), with results under `target/conformance/out-scaleout/<leg>`.
//!
//! Every leg runs even after a failure. At the end it prints the requests the proxy sent to each
//! instance, and fails if one got none, if an instance, Redis or the proxy exited, or if a leg
//! failed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::redis::RedisServer;
use crate::util::{self, HttpServer, Listening, Result};
use crate::{conformance, interop, tools};

/// How long `rr-proxy` may take to print its `listening on …` line.
const PROXY_START_TIMEOUT: Duration = Duration::from_secs(30);

/// Options of `cargo xtask scaleout`.
pub(crate) struct Options {
    /// Use the existing release `everything` and debug `rr-proxy` builds.
    pub(crate) skip_build: bool,
}

/// Runs every leg through the proxy and fails if any failed (see the module docs).
pub(crate) fn run(opts: &Options) -> Result {
    let begin = Instant::now();
    let (everything, proxy_binary) = if opts.skip_build {
        (util::existing_everything()?, existing_proxy()?)
    } else {
        (util::build_everything()?, build_proxy()?)
    };
    // Selected first: an unknown leg fails before anything starts.
    let legs = conformance::select(&[])?;

    util::banner("scaleout: redis, two everything instances, rr-proxy");
    // Every process below is killed on every way out of this function.
    let mut redis = RedisServer::start()?;
    let redis_url = redis.url();
    let prefix = format!("scaleout-{}", &util::random_hex()[..16]);
    let state_key = util::random_hex();
    let flags = [
        "--redis",
        redis_url.as_str(),
        "--redis-prefix",
        prefix.as_str(),
        "--state-key",
        state_key.as_str(),
    ];
    let mut instances = [
        HttpServer::start(&everything, &flags)?,
        HttpServer::start(&everything, &flags)?,
    ];
    let backends: Vec<String> = instances
        .iter()
        .map(|server| format!("http://127.0.0.1:{}", server.port))
        .collect();
    let mut proxy = ProxyProcess::start(&proxy_binary, &backends)?;
    let url = format!("http://127.0.0.1:{}/mcp", proxy.port);
    let localhost_url = format!("http://localhost:{}/mcp", proxy.port);
    println!(
        "scaleout: {url} -> {} (redis {redis_url}, prefix {prefix})",
        backends.join(", ")
    );

    let mut check = || {
        redis.ensure_running()?;
        for server in &mut instances {
            server.ensure_running()?;
        }
        proxy.ensure_running()
    };
    let mut failed = interop::run_python_http(&url, "scaleout: python ", &mut check)?;
    let out_root = tools::conformance_dir().join("out-scaleout");
    if let Err(why) = conformance::run_legs(&legs, &localhost_url, &out_root, "scaleout: conformance", &mut check) {
        failed.push(why);
    }
    check()?;

    let counts = proxy.counts()?;
    util::banner("scaleout: requests per instance");
    for ((backend, count), server) in backends.iter().zip(&counts).zip(&instances) {
        println!("scaleout: {backend} ({}): {count} requests", server.url);
    }
    if counts.len() != backends.len() || counts.contains(&0) {
        failed.push(format!(
            "every instance should have served requests, the proxy counted {counts:?}"
        ));
    }
    let seconds = begin.elapsed().as_secs();
    if failed.is_empty() {
        println!("scaleout: every leg passed through the proxy in {seconds} s");
        Ok(())
    } else {
        Err(format!("scaleout failed (after {seconds} s): {}", failed.join("; ")))
    }
}

/// The debug `rr-proxy`, built: `cargo build -p mcp-tests --bin rr-proxy` (`cargo test` builds
/// the same binary, so after it this is a no-op).
fn build_proxy() -> Result<PathBuf> {
    util::run(util::cargo().args(["build", "-p", "mcp-tests", "--bin", "rr-proxy"]))?;
    existing_proxy()
}

/// The debug `rr-proxy`, which must have been built already.
fn existing_proxy() -> Result<PathBuf> {
    let binary = util::target_dir().join("debug/rr-proxy");
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!(
            "{} does not exist: build it with `cargo build -p mcp-tests --bin rr-proxy`",
            binary.display()
        ))
    }
}

/// The `rr-proxy` binary in front of the instances; killed when dropped.
struct ProxyProcess {
    process: Listening,
    /// Its commands (`counts`).
    stdin: ChildStdin,
    port: u16,
}

impl ProxyProcess {
    /// Starts `rr-proxy --listen 127.0.0.1:0 --backend B…` and reads its `listening on
    /// http://127.0.0.1:P` line.
    fn start(binary: &Path, backends: &[String]) -> Result<Self> {
        let mut cmd = Command::new(binary);
        cmd.args(["--listen", "127.0.0.1:0"]).current_dir(util::root());
        for backend in backends {
            cmd.args(["--backend", backend]);
        }
        cmd.stdin(Stdio::piped()).stderr(Stdio::inherit());
        let mut process = util::spawn_listening(&mut cmd, PROXY_START_TIMEOUT)?;
        let port = process
            .url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|port| port.parse::<u16>().ok())
            .ok_or_else(|| {
                format!(
                    "rr-proxy: expected `listening on http://127.0.0.1:P`, got `{}`",
                    process.url
                )
            })?;
        let stdin = process.child.take_stdin().ok_or("rr-proxy: stdin is piped")?;
        Ok(Self { process, stdin, port })
    }

    /// The requests it sent to each backend: `counts` on its stdin, `counts N0 N1 …` back.
    fn counts(&mut self) -> Result<Vec<u64>> {
        // Drop the lines nobody asked for.
        while self.process.lines.try_recv().is_ok() {}
        writeln!(self.stdin, "counts")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("rr-proxy: cannot write its stdin: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.process.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(numbers) = line.trim().strip_prefix("counts ") {
                        return numbers
                            .split_whitespace()
                            .map(|n| n.parse::<u64>().map_err(|e| format!("rr-proxy: bad count `{n}`: {e}")))
                            .collect();
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err("rr-proxy did not answer `counts` within 10 s".to_owned());
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("rr-proxy closed its stdout before answering `counts`".to_owned());
                }
            }
        }
    }

    /// Fails if the proxy has exited.
    fn ensure_running(&mut self) -> Result {
        match self.process.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!(
                "rr-proxy on port {} exited ({})",
                self.port,
                util::describe(status)
            )),
        }
    }
}
