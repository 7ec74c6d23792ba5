//! The MCP Apps legs of `cargo xtask interop`: the `apps` example's view loaded in a real host.
//! `interop/apps/run.mjs` (Node 22, puppeteer-core, installed under `target/interop/apps` from
//! `interop/apps/package-lock.json`) serves a minimal host page built on the official
//! `@modelcontextprotocol/ext-apps` app bridge and TypeScript client, and drives headless
//! Chromium (`/usr/bin/chromium`, installed with apt-get when missing): the host connects to the
//! example over Streamable HTTP, renders its `ui://` view in a sandboxed iframe, and the view's
//! button calls the app-only tool back through the bridge. Once per client negotiation mode of
//! [`MODES`]; each leg saves `target/interop/apps/out/apps-<mode>.png`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::tools;
use crate::util::{self, HttpServer, Result};

/// The TypeScript client's negotiation modes: the legacy handshake, and `auto` (2026-07-28).
const MODES: &[&str] = &["legacy", "auto"];

/// Where the browser is.
const CHROMIUM: &str = "/usr/bin/chromium";

/// Wall-clock bound of one leg (the script bounds each wait by 30 s).
const LEG_TIMEOUT: Duration = Duration::from_secs(300);

/// `target/release/examples/apps`.
fn binary() -> PathBuf {
    util::target_dir().join("release/examples/apps")
}

/// Installs Chromium with apt-get when it is missing.
fn ensure_chromium() -> Result<PathBuf> {
    let chromium = PathBuf::from(CHROMIUM);
    if chromium.is_file() {
        println!("chromium: reusing {CHROMIUM}");
        return Ok(chromium);
    }
    let hint = "(install the chromium package, or run as root so that apt-get can)";
    util::run(Command::new("apt-get").arg("update")).map_err(|e| format!("{e} {hint}"))?;
    util::run(
        Command::new("apt-get")
            .args(["install", "-y", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .map_err(|e| format!("{e} {hint}"))?;
    if chromium.is_file() {
        Ok(chromium)
    } else {
        Err(format!("apt-get installed chromium, but {CHROMIUM} is missing"))
    }
}

/// Runs every leg (all of them, even after a failure) and returns the names of the failed ones.
pub(crate) fn run(skip_build: bool) -> Result<Vec<String>> {
    if !skip_build {
        util::run(util::cargo().args(["build", "--release", "-p", "mcp-server", "--example", "apps"]))?;
    }
    let binary = binary();
    if !binary.is_file() {
        return Err(format!(
            "{} does not exist: build it with `cargo build --release -p mcp-server --example apps`",
            binary.display()
        ));
    }
    let chromium = ensure_chromium()?;
    let node = tools::ensure_node()?;
    let script = tools::ensure_apps_host()?;
    let out = util::target_dir().join("interop/apps/out");
    let mut failed = Vec::new();
    for mode in MODES {
        let name = format!("apps {mode}");
        util::banner(&format!("interop: {name}"));
        // A fresh server per leg: the counter starts at 0.
        let mut server = HttpServer::start(&binary, &[])?;
        server.ensure_running()?;
        if let Err(why) = run_leg(&node, &script, &server.url, &chromium, &out, mode) {
            eprintln!("interop: {name}: FAILED: {why}");
            failed.push(name);
        }
    }
    Ok(failed)
}

fn run_leg(node: &Path, script: &Path, url: &str, chromium: &Path, out: &Path, mode: &str) -> Result {
    let mut cmd = Command::new(node);
    cmd.arg(script)
        .args(["--url", url, "--mode", mode])
        .arg("--chromium")
        .arg(chromium)
        .arg("--out")
        .arg(out)
        .current_dir(util::root());
    let line = util::display(&cmd);
    let status = util::run_with_timeout(&mut cmd, LEG_TIMEOUT)?;
    util::check_status(&line, status)
}
