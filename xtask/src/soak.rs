//! `cargo xtask soak [--minutes N] [--listeners N] [--skip-build]`: a bounded load-and-fault
//! soak of the `everything` example over loopback, checked for lost replies, unexpected 5xx,
//! resident memory and file descriptors ("Hardening").
//!
//! It builds the `everything` example and the soak driver (the `soak` crate of this workspace)
//! in release, starts `everything --soak` on a free loopback port with the listen bounds raised
//! for the run (every soak client is one peer and one principal) and a 64 KiB body limit, with
//! its stderr in `target/soak/server.log`, then runs the driver against it for N minutes, warm-up
//! included (a fifth of the run, between 20 s and 120 s). The driver prints the table and the
//! checks and writes `target/soak/report.json`; a failed check fails the command. The server is
//! killed on every way out.
//!
//! `cargo xtask ci` runs the one-minute form with [`CI_LISTENERS`] listen streams instead of
//! 2 000, so that it stays light on a small shared machine.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::util::{self, ChildGuard, Result};

/// Listen streams held open by default.
pub(crate) const LISTENERS: usize = 2_000;
/// Listen streams of the one-minute form `cargo xtask ci` runs.
pub(crate) const CI_LISTENERS: usize = 500;
/// The server's body limit during the soak; the driver's oversize bodies are larger.
const MAX_BODY_BYTES: usize = 64 * 1024;
/// How long `soak_hang` sleeps; the driver gives up on it after [`HANG_TIMEOUT_MS`].
const HANG_MS: u64 = 5_000;
/// The driver's short timeout for the hanging tool.
const HANG_TIMEOUT_MS: u64 = 300;
/// How long the server may take to print its `listening on …` line.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Time the driver is given beyond the load itself (ramp, drain, descriptor settling).
const DRIVER_SLACK: Duration = Duration::from_secs(120);

/// The options of `cargo xtask soak`.
#[derive(Debug)]
pub(crate) struct Options {
    /// Minutes of load, warm-up included (at least 1).
    pub(crate) minutes: u64,
    /// Listen streams held open.
    pub(crate) listeners: usize,
    /// Use the binaries already built.
    pub(crate) skip_build: bool,
    /// A rate limit on `tools/call` (`everything --rate-limit RATE[:BURST]`): its refusals
    /// (429, the rate-limit error) count as declared, every other check stays.
    pub(crate) rate_limit: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            minutes: 1,
            listeners: LISTENERS,
            skip_build: false,
            rate_limit: None,
        }
    }
}

/// Runs the soak.
pub(crate) fn run(opts: &Options) -> Result {
    if !opts.skip_build {
        util::banner("build the everything example and the soak driver (release)");
        util::run(util::cargo().args([
            "build",
            "--release",
            "-p",
            "mcp-server",
            "--example",
            "everything",
            "-p",
            "soak",
            "--bin",
            "soak",
        ]))?;
    }
    let everything = util::existing_everything()?;
    let driver = util::target_dir().join("release/soak");
    if !driver.is_file() {
        return Err(format!(
            "{} does not exist: build it with `cargo build --release -p soak`",
            driver.display()
        ));
    }
    let dir = util::target_dir().join("soak");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;

    let seconds = opts.minutes.max(1) * 60;
    let warmup = (seconds / 5).clamp(20, 120);
    util::banner(&format!(
        "soak: {} min ({warmup} s warm-up), {} listen streams",
        opts.minutes.max(1),
        opts.listeners
    ));
    let log = dir.join("server.log");
    let (mut server, url) = start_server(&everything, opts, &log)?;

    let report = dir.join("report.json");
    let mut cmd = Command::new(&driver);
    cmd.current_dir(util::root())
        .args(["--url", &url, "--pid", &server.id().to_string()])
        .args([
            "--seconds",
            &seconds.to_string(),
            "--warmup-seconds",
            &warmup.to_string(),
        ])
        .args(["--listeners", &opts.listeners.to_string()])
        .args(["--max-body-bytes", &MAX_BODY_BYTES.to_string()])
        .args(["--hang-timeout-ms", &HANG_TIMEOUT_MS.to_string()])
        .arg("--report")
        .arg(&report);
    let status = util::run_with_timeout(&mut cmd, Duration::from_secs(seconds) + DRIVER_SLACK)?;
    if let Some(exit) = server.try_wait()? {
        return Err(format!(
            "soak: the everything server exited during the soak ({}); its log is {}",
            util::describe(exit),
            log.display()
        ));
    }
    match status.code() {
        Some(0) => {
            println!("soak: passed; report in {}", report.display());
            Ok(())
        }
        Some(1) => Err(format!(
            "soak: a check failed (see `soak: FAILED` above); report in {}, server log in {}",
            report.display(),
            log.display()
        )),
        _ => Err(format!("soak: the driver failed ({})", util::describe(status))),
    }
}

/// Starts `everything --soak` on a free loopback port, its stderr into `log`; returns it with
/// the endpoint it printed. Retries on another port if it exits before printing.
fn start_server(binary: &Path, opts: &Options, log: &Path) -> Result<(ChildGuard, String)> {
    let listeners = opts.listeners;
    let mut last = String::new();
    for _ in 0..3 {
        let port = util::free_port()?;
        let stderr = File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        // Room above the streams for the ones being reopened.
        let bound = (listeners + 64).to_string();
        let mut cmd = Command::new(binary);
        cmd.current_dir(util::root())
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--soak"])
            .args(["--soak-hang-ms", &HANG_MS.to_string()])
            .args(["--max-listeners-per-peer", &bound])
            .args(["--max-listeners-per-principal", &bound])
            .args(["--max-streams-per-address", &bound])
            .args(["--max-body-bytes", &MAX_BODY_BYTES.to_string()])
            .args(opts.rate_limit.iter().flat_map(|q| ["--rate-limit", q.as_str()]))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr));
        let line = util::display(&cmd);
        println!("$ {line} 2>{} &", log.display());
        let mut child = ChildGuard::spawn(&mut cmd)?;
        let stdout = child.take_stdout().ok_or("the server's stdout is not piped")?;
        let (tx, rx) = mpsc::channel::<String>();
        thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next()
                && tx.send(first).is_ok()
            {
                // Keep draining so the server never blocks on a full pipe.
                for line in lines.map_while(std::result::Result::ok) {
                    println!("{line}");
                }
            }
        });
        let expected = format!("http://127.0.0.1:{port}/mcp");
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(first) if first.trim_end() == format!("listening on {expected}") => {
                println!("{first}");
                return Ok((child, expected));
            }
            Ok(first) => return Err(format!("`{line}`: expected `listening on {expected}`, got `{first}`")),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!("`{line}` printed nothing within {} s", START_TIMEOUT.as_secs()));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait_timeout(Duration::from_secs(5))?;
                last = format!(
                    "`{line}` exited ({}) before printing `listening on …`; see {}",
                    util::describe(status),
                    log.display()
                );
                eprintln!("xtask: {last}; retrying on another port");
            }
        }
    }
    Err(last)
}
