//! `cargo xtask interop`: the Python SDK (`mcp==2.3.0`) drives the `everything` example through
//! `interop/client.py`, once per leg of [`LEGS`] (transport × negotiation mode).

use std::process::Command;
use std::time::Duration;

use crate::tools;
use crate::util::{self, HttpServer, Result};

/// Wall-clock bound of one client run (the client bounds every request itself; this catches a
/// hang in process teardown).
const LEG_TIMEOUT: Duration = Duration::from_secs(600);

/// How the client reaches the server.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    /// `--stdio "<everything> --stdio"`: the client spawns the server.
    Stdio,
    /// `--url http://127.0.0.1:P/mcp`: one server started by xtask for all HTTP legs.
    Http,
}

/// One client run.
struct Leg {
    transport: Transport,
    /// `mcp.Client(mode=…)`: `legacy`, `auto` or `2026-07-28`.
    mode: &'static str,
    /// Disabled legs are listed but not run.
    enabled: bool,
}

/// The legs, in order. Adding one is one line (hence no rustfmt here).
#[rustfmt::skip]
const LEGS: &[Leg] = &[
    Leg { transport: Transport::Stdio, mode: "legacy", enabled: true },
    Leg { transport: Transport::Stdio, mode: "auto", enabled: true },
    Leg { transport: Transport::Stdio, mode: "2026-07-28", enabled: true },
    Leg { transport: Transport::Http, mode: "legacy", enabled: true },
    Leg { transport: Transport::Http, mode: "auto", enabled: true },
    Leg { transport: Transport::Http, mode: "2026-07-28", enabled: true },
];

/// Options of `cargo xtask interop`.
pub(crate) struct Options {
    /// Use the existing `target/release/examples/everything`.
    pub(crate) skip_build: bool,
}

/// Runs every enabled leg (all of them, even after a failure) and fails if any failed.
pub(crate) fn run(opts: &Options) -> Result {
    let binary = if opts.skip_build {
        util::existing_everything()?
    } else {
        util::build_everything()?
    };
    let python = tools::ensure_venv()?;
    let client = util::root().join("interop/client.py");

    // Started on the first HTTP leg, shared by the others, killed on every way out.
    let mut http: Option<HttpServer> = None;
    let mut failed = Vec::new();
    for leg in LEGS {
        let name = leg_name(leg);
        if !leg.enabled {
            println!("interop: {name}: skipped (disabled)");
            continue;
        }
        util::banner(&format!("interop: {name}"));
        let mut cmd = Command::new(&python);
        cmd.arg(&client).current_dir(util::root());
        match leg.transport {
            Transport::Stdio => {
                cmd.arg("--stdio")
                    .arg(format!("{} --stdio", util::shell_quote(&binary)));
            }
            Transport::Http => {
                let server = match &mut http {
                    Some(server) => server,
                    None => http.insert(HttpServer::start(&binary)?),
                };
                server.ensure_running()?;
                cmd.arg("--url").arg(&server.url);
            }
        }
        cmd.args(["--mode", leg.mode]);
        if let Err(why) = run_leg(&mut cmd) {
            eprintln!("interop: {name}: FAILED: {why}");
            failed.push(name);
        }
    }
    if failed.is_empty() {
        println!("interop: all enabled legs passed");
        Ok(())
    } else {
        Err(format!("interop failed: {}", failed.join(", ")))
    }
}

fn run_leg(cmd: &mut Command) -> Result {
    let line = util::display(cmd);
    let status = util::run_with_timeout(cmd, LEG_TIMEOUT)?;
    util::check_status(&line, status)
}

fn leg_name(leg: &Leg) -> String {
    let transport = match leg.transport {
        Transport::Stdio => "stdio",
        Transport::Http => "http",
    };
    format!("{transport} {}", leg.mode)
}

/// `interop/client.py` exists next to this crate (checked by `ci` before the long steps).
pub(crate) fn client_script_exists() -> bool {
    util::root().join("interop/client.py").is_file()
}
