//! `cargo xtask conformance`: the official runner (`@modelcontextprotocol/conformance`, pinned
//! in [`tools::RUNNER_VERSION`]) against the `everything` example over Streamable HTTP, once per
//! leg of [`LEGS`]. A leg fails on a non-zero runner exit code or on any `FAILURE` or `WARNING`
//! check in the `checks.json` files it writes (a non-zero exit alone misses warnings).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::tools;
use crate::util::{self, HttpServer, Result};

/// Wall-clock bound of one leg.
const LEG_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The baseline: an empty list (`server: []`). Stale entries fail the runner, so it stays empty
/// unless a failure is known and accepted.
const EXPECTED_FAILURES: &str = "conformance/expected-failures.yml";

/// One runner invocation: `server --url URL <args> -o target/conformance/out/<name> …`.
pub(crate) struct Leg {
    /// Also the output directory name and the value of `--leg`.
    name: &'static str,
    args: &'static [&'static str],
    /// Disabled legs run only when named with `--leg`.
    enabled: bool,
}

/// The legs, in order. Adding one is one line (hence no rustfmt here).
#[rustfmt::skip]
pub(crate) const LEGS: &[Leg] = &[
    Leg { name: "all-2025-11-25", args: &["--spec-version", "2025-11-25", "--suite", "all"], enabled: true },
    Leg { name: "all-2025-06-18", args: &["--spec-version", "2025-06-18", "--suite", "all"], enabled: true },
    Leg { name: "all-2025-03-26", args: &["--spec-version", "2025-03-26", "--suite", "all"], enabled: true },
    Leg { name: "req-2025-11-25", args: &["--requirements", "2025-11-25"], enabled: true },
    Leg { name: "all-2026-07-28", args: &["--spec-version", "2026-07-28", "--suite", "all"], enabled: true },
    Leg { name: "req-2026-07-28", args: &["--requirements", "2026-07-28"], enabled: true },
    Leg { name: "all", args: &["--suite", "all"], enabled: true },
];

/// Options of `cargo xtask conformance`.
#[derive(Default)]
pub(crate) struct Options {
    /// `--leg NAME` (repeatable): run only these legs, enabled or not.
    pub(crate) legs: Vec<String>,
    /// `--url URL`: test a running server instead of starting the everything example.
    pub(crate) url: Option<String>,
    /// `--skip-build`: start the existing release build of the everything example.
    pub(crate) skip_build: bool,
    /// `--list`: print the legs and exit.
    pub(crate) list: bool,
}

/// Installs the runner, starts the server (unless `--url`), runs the selected legs (all of
/// them, even after a failure) and fails if any failed.
pub(crate) fn run(opts: &Options) -> Result {
    if opts.list {
        for leg in LEGS {
            let state = if leg.enabled { "" } else { "  (disabled)" };
            println!("{:<16} {}{state}", leg.name, leg.args.join(" "));
        }
        return Ok(());
    }
    let legs = select(&opts.legs)?;

    // Killed on every way out of this function.
    let mut server: Option<HttpServer> = None;
    let url = match &opts.url {
        Some(url) => url.clone(),
        None => {
            let binary = if opts.skip_build {
                util::existing_everything()?
            } else {
                util::build_everything()?
            };
            let started = server.insert(HttpServer::start(&binary, &[])?);
            // The runner's dns-rebinding scenario needs a `localhost` URL.
            format!("http://localhost:{}/mcp", started.port)
        }
    };
    let mut check = || match &mut server {
        Some(server) => server.ensure_running(),
        None => Ok(()),
    };
    run_legs(
        &legs,
        &url,
        &tools::conformance_dir().join("out"),
        "conformance",
        &mut check,
    )
}

/// Installs the runner and runs `legs` against the server at `url` (which must be a
/// `localhost` URL for the dns-rebinding scenario), all of them even after a failure, each
/// writing under `out_root/<leg>`; `check` runs before each leg and after the last (it fails
/// the whole run: a server is gone). Fails if any leg failed. Messages start with `label`.
pub(crate) fn run_legs(
    legs: &[&Leg],
    url: &str,
    out_root: &Path,
    label: &str,
    check: &mut dyn FnMut() -> Result,
) -> Result {
    let node = tools::ensure_node()?;
    let runner = tools::ensure_runner()?;
    let baseline = util::root().join(EXPECTED_FAILURES);
    if !baseline.is_file() {
        return Err(format!("{} is missing", baseline.display()));
    }

    let mut failed = Vec::new();
    for leg in legs {
        check()?;
        util::banner(&format!("{label}: {} ({})", leg.name, leg.args.join(" ")));
        let out = out_root.join(leg.name);
        if let Err(why) = run_leg(leg, &node, &runner, url, &baseline, &out, label) {
            eprintln!("{label}: {}: FAILED: {why}", leg.name);
            failed.push(leg.name);
        }
    }
    check()?;
    if failed.is_empty() {
        println!("{label}: all selected legs passed");
        Ok(())
    } else {
        Err(format!(
            "{label} failed: {} (results under {})",
            failed.join(", "),
            out_root.display()
        ))
    }
}

/// The legs to run: the named ones, else the enabled ones.
pub(crate) fn select(names: &[String]) -> Result<Vec<&'static Leg>> {
    if names.is_empty() {
        return Ok(LEGS.iter().filter(|leg| leg.enabled).collect());
    }
    names
        .iter()
        .map(|name| {
            LEGS.iter().find(|leg| leg.name == name).ok_or_else(|| {
                let known: Vec<_> = LEGS.iter().map(|leg| leg.name).collect();
                format!("unknown leg `{name}` (known: {})", known.join(", "))
            })
        })
        .collect()
}

fn run_leg(leg: &Leg, node: &Path, runner: &Path, url: &str, baseline: &Path, out: &Path, label: &str) -> Result {
    if out.exists() {
        fs::remove_dir_all(out).map_err(|e| format!("cannot clean {}: {e}", out.display()))?;
    }
    fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;

    let mut cmd = Command::new(node);
    cmd.arg(runner)
        .args(["server", "--url", url])
        .args(leg.args)
        .arg("-o")
        .arg(out)
        .arg("--expected-failures")
        .arg(baseline)
        .current_dir(util::root());
    let status = util::run_with_timeout(&mut cmd, LEG_TIMEOUT)?;

    let report = scan(out)?;
    println!(
        "{label}: {}: {} checks in {} scenarios, {} failing or warning; runner {}",
        leg.name,
        report.checks,
        report.files,
        report.bad.len(),
        util::describe(status)
    );
    for bad in &report.bad {
        eprintln!("  {bad}");
    }

    let mut reasons = Vec::new();
    if !status.success() {
        reasons.push(format!("the runner exited with {}", util::describe(status)));
    }
    if report.files == 0 {
        reasons.push(format!("no checks.json under {}", out.display()));
    }
    if !report.bad.is_empty() {
        reasons.push(format!("{} checks FAILURE or WARNING", report.bad.len()));
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons.join("; "))
    }
}

/// What the `checks.json` files of one leg say.
struct Report {
    files: usize,
    checks: usize,
    /// `<scenario dir> [<check id>] <STATUS>: <errorMessage>` per failing or warning check.
    bad: Vec<String>,
}

/// Reads every `checks.json` under `out`, recursively.
fn scan(out: &Path) -> Result<Report> {
    let mut files = Vec::new();
    find_checks(out, &mut files)?;
    files.sort();
    let mut report = Report {
        files: files.len(),
        checks: 0,
        bad: Vec::new(),
    };
    for file in &files {
        let text = fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
        let checks = json
            .as_array()
            .ok_or_else(|| format!("{} is not a JSON array", file.display()))?;
        let scenario = file
            .parent()
            .and_then(|dir| dir.strip_prefix(out).ok())
            .map_or_else(|| file.display().to_string(), |dir| dir.display().to_string());
        for check in checks {
            report.checks += 1;
            let field = |name: &str| check.get(name).and_then(|v| v.as_str()).unwrap_or("");
            let status = field("status");
            if status == "FAILURE" || status == "WARNING" {
                let message = match field("errorMessage") {
                    "" => field("description"),
                    m => m,
                };
                report
                    .bad
                    .push(format!("{scenario} [{}] {status}: {message}", field("id")));
            }
        }
    }
    Ok(report)
}

fn find_checks(dir: &Path, found: &mut Vec<PathBuf>) -> Result {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        if kind.is_dir() {
            find_checks(&path, found)?;
        } else if kind.is_file() && entry.file_name() == "checks.json" {
            found.push(path);
        }
    }
    Ok(())
}
