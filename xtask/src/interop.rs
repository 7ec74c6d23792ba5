//! `cargo xtask interop`: the Python SDK (`mcp==2.3.0`) drives the `everything` example through
//! `interop/client.py`, once per leg of [`LEGS`] (transport × negotiation mode × credentials);
//! then the official TypeScript SDK clients (v1 `@modelcontextprotocol/sdk`, v2
//! `@modelcontextprotocol/client`, pinned in `interop/ts/package.json` and its lock) drive it
//! through `interop/ts/client.mjs` on Node 22, once per leg of [`TS_LEGS`] (SDK × transport);
//! last, the MCP Apps legs ([`apps`]) load the `apps` example's view in headless Chromium inside a
//! host built on the official ext-apps app bridge.
//! Each TypeScript leg calls `test_tool_with_progress` [`PROGRESS_CALLS`] times and fails unless
//! every call saw its 3 progress notifications before its result: these clients drop a progress
//! notification read together with its response, so a rare coalescing shows up here.
//!
//! The legs with credentials start their own `everything` with `--bearer-secret <random 64 hex
//! digits> --audience mcp-test` (the client mints its HS256 token with `--mint-hs256`) or with
//! `--api-key <random>`; the client also checks that a request without them is refused.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::{self, HttpServer, Result};
use crate::{apps, tools};

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

/// The credentials of an HTTP leg.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Auth {
    /// No authentication (the shared server).
    None,
    /// `everything --bearer-secret S --audience mcp-test`; the client mints an HS256 token.
    Bearer,
    /// `everything --api-key K`; the client sends `X-API-Key`.
    ApiKey,
}

/// The audience of the bearer legs.
const AUDIENCE: &str = "mcp-test";

/// One client run.
struct Leg {
    transport: Transport,
    /// `mcp.Client(mode=…)`: `legacy`, `auto` or `2026-07-28`.
    mode: &'static str,
    /// The credentials (HTTP legs only).
    auth: Auth,
    /// Disabled legs are listed but not run.
    enabled: bool,
}

/// The legs, in order. Adding one is one line (hence no rustfmt here).
#[rustfmt::skip]
const LEGS: &[Leg] = &[
    Leg { transport: Transport::Stdio, mode: "legacy", auth: Auth::None, enabled: true },
    Leg { transport: Transport::Stdio, mode: "auto", auth: Auth::None, enabled: true },
    Leg { transport: Transport::Stdio, mode: "2026-07-28", auth: Auth::None, enabled: true },
    Leg { transport: Transport::Http, mode: "legacy", auth: Auth::None, enabled: true },
    Leg { transport: Transport::Http, mode: "auto", auth: Auth::None, enabled: true },
    Leg { transport: Transport::Http, mode: "2026-07-28", auth: Auth::None, enabled: true },
    Leg { transport: Transport::Http, mode: "legacy", auth: Auth::Bearer, enabled: true },
    Leg { transport: Transport::Http, mode: "auto", auth: Auth::Bearer, enabled: true },
    Leg { transport: Transport::Http, mode: "legacy", auth: Auth::ApiKey, enabled: true },
    Leg { transport: Transport::Http, mode: "auto", auth: Auth::ApiKey, enabled: true },
];

/// One TypeScript client run: `node client.mjs --sdk SDK --mode MODE (--stdio | --http) <everything>`
/// (over HTTP the client starts its own `everything` on a free port and reads its URL).
struct TsLeg {
    /// `v1` (`@modelcontextprotocol/sdk`) or `v2` (`@modelcontextprotocol/client`).
    sdk: &'static str,
    transport: Transport,
    /// The v2 client's version negotiation: `legacy` or `auto` (`auto` reaches 2026-07-28
    /// here); v1 speaks the handshake era only.
    mode: &'static str,
    /// Disabled legs are listed but not run.
    enabled: bool,
}

/// The TypeScript legs, in order (no rustfmt, as for [`LEGS`]).
#[rustfmt::skip]
const TS_LEGS: &[TsLeg] = &[
    TsLeg { sdk: "v1", transport: Transport::Stdio, mode: "legacy", enabled: true },
    TsLeg { sdk: "v1", transport: Transport::Http, mode: "legacy", enabled: true },
    TsLeg { sdk: "v2", transport: Transport::Stdio, mode: "auto", enabled: true },
    TsLeg { sdk: "v2", transport: Transport::Http, mode: "auto", enabled: true },
];

/// How many times a TypeScript leg calls `test_tool_with_progress`: a loss that happens once in
/// 5 calls fails a leg with a probability above 0.99.
const PROGRESS_CALLS: u32 = 20;

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
    let client = client_script();
    let node = tools::ensure_node()?;
    let ts_client = tools::ensure_ts_clients()?;

    // Started on the first HTTP leg, shared by the others, killed on every way out.
    let mut http: Option<HttpServer> = None;
    // One per kind of credentials, started on its first leg; fresh secrets for every run.
    let (secret, key) = (util::random_hex(), util::random_hex());
    let mut bearer: Option<HttpServer> = None;
    let mut api_key: Option<HttpServer> = None;
    let mut failed = Vec::new();
    for leg in LEGS {
        let name = leg_name(leg);
        if !leg.enabled {
            println!("interop: {name}: skipped (disabled)");
            continue;
        }
        util::banner(&format!("interop: {name}"));
        let mut cmd = python_command(&python, &client);
        match leg.transport {
            Transport::Stdio => {
                cmd.arg("--stdio")
                    .arg(format!("{} --stdio", util::shell_quote(&binary)));
            }
            Transport::Http if leg.auth == Auth::None => {
                let server = match &mut http {
                    Some(server) => server,
                    None => http.insert(HttpServer::start(&binary, &[])?),
                };
                server.ensure_running()?;
                cmd.arg("--url").arg(&server.url);
            }
            Transport::Http => {
                let (slot, flags, client): (_, Vec<&str>, Vec<&str>) = match leg.auth {
                    Auth::Bearer => (
                        &mut bearer,
                        vec!["--bearer-secret", &secret, "--audience", AUDIENCE],
                        vec!["--mint-hs256", &secret, "--audience", AUDIENCE],
                    ),
                    _ => (&mut api_key, vec!["--api-key", &key], vec!["--api-key", &key]),
                };
                let server = match slot {
                    Some(server) => server,
                    None => slot.insert(HttpServer::start(&binary, &flags)?),
                };
                server.ensure_running()?;
                cmd.arg("--url").arg(&server.url);
                cmd.args(client);
            }
        }
        cmd.args(["--mode", leg.mode]);
        if let Err(why) = run_leg(&mut cmd) {
            eprintln!("interop: {name}: FAILED: {why}");
            failed.push(name);
        }
    }
    for leg in TS_LEGS {
        let name = ts_leg_name(leg);
        if !leg.enabled {
            println!("interop: {name}: skipped (disabled)");
            continue;
        }
        util::banner(&format!("interop: {name}"));
        let mut cmd = Command::new(&node);
        cmd.arg(&ts_client)
            .args(["--sdk", leg.sdk, "--mode", leg.mode])
            .args(["--progress-calls", &PROGRESS_CALLS.to_string()])
            .arg(match leg.transport {
                Transport::Stdio => "--stdio",
                Transport::Http => "--http",
            })
            .arg(&binary)
            .current_dir(util::root());
        if let Err(why) = run_leg(&mut cmd) {
            eprintln!("interop: {name}: FAILED: {why}");
            failed.push(name);
        }
    }
    failed.extend(apps::run(opts.skip_build)?);
    if failed.is_empty() {
        println!("interop: all enabled legs passed");
        Ok(())
    } else {
        Err(format!("interop failed: {}", failed.join(", ")))
    }
}

/// Runs the Python SDK client against the server at `url` (one logical server, however many
/// processes serve it) in the mode of every enabled HTTP leg of [`LEGS`] without credentials
/// (`legacy`, `auto`, `2026-07-28`), all of them even after a failure, calling `check` before
/// each (it fails the whole run: a server is gone). Returns the names of the failed legs, each
/// prefixed with `label`.
pub(crate) fn run_python_http(url: &str, label: &str, check: &mut dyn FnMut() -> Result) -> Result<Vec<String>> {
    let python = tools::ensure_venv()?;
    let client = client_script();
    let mut failed = Vec::new();
    let legs = LEGS
        .iter()
        .filter(|leg| leg.enabled && leg.transport == Transport::Http && leg.auth == Auth::None);
    for leg in legs {
        let name = format!("{label}{}", leg_name(leg));
        check()?;
        util::banner(&name);
        let mut cmd = python_command(&python, &client);
        cmd.arg("--url").arg(url).args(["--mode", leg.mode]);
        if let Err(why) = run_leg(&mut cmd) {
            eprintln!("{name}: FAILED: {why}");
            failed.push(name);
        }
    }
    Ok(failed)
}

/// Runs the Python SDK client over the 2024-11-05 HTTP+SSE transport (`mcp.client.sse`) at
/// `url`, the SSE path of a server started with `--sse-pair`, in `legacy` mode (the pair serves
/// the handshake era only), calling `check` first. Returns the name of the leg when it failed,
/// prefixed with `label`.
pub(crate) fn run_python_sse(url: &str, label: &str, check: &mut dyn FnMut() -> Result) -> Result<Vec<String>> {
    let python = tools::ensure_venv()?;
    let name = format!("{label}sse legacy");
    check()?;
    util::banner(&name);
    let mut cmd = python_command(&python, &client_script());
    cmd.arg("--sse").arg(url).args(["--mode", "legacy"]);
    Ok(match run_leg(&mut cmd) {
        Ok(()) => Vec::new(),
        Err(why) => {
            eprintln!("{name}: FAILED: {why}");
            vec![name]
        }
    })
}

/// `<venv python> interop/client.py`, from the workspace root.
fn python_command(python: &Path, client: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(client).current_dir(util::root());
    cmd
}

fn client_script() -> PathBuf {
    util::root().join("interop/client.py")
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
    match leg.auth {
        Auth::None => format!("{transport} {}", leg.mode),
        Auth::Bearer => format!("{transport} {} (bearer)", leg.mode),
        Auth::ApiKey => format!("{transport} {} (api key)", leg.mode),
    }
}

fn ts_leg_name(leg: &TsLeg) -> String {
    let transport = match leg.transport {
        Transport::Stdio => "stdio",
        Transport::Http => "http",
    };
    format!("ts {} {transport} {}", leg.sdk, leg.mode)
}

/// `interop/client.py` exists next to this crate (checked by `ci` before the long steps).
pub(crate) fn client_script_exists() -> bool {
    client_script().is_file()
}
