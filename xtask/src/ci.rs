//! `cargo xtask ci`: the whole gate, in order, stopping at the first failing step.

use std::process::{Command, Stdio};

use crate::util::{self, Result};
use crate::{conformance, interop};

/// Runs fmt, clippy, tests, interop and (when the example serves HTTP) conformance.
pub(crate) fn run() -> Result {
    if !interop::client_script_exists() {
        return Err("interop/client.py is missing".to_owned());
    }
    let steps: &[(&str, &[&str])] = &[
        ("cargo fmt --all -- --check", &["fmt", "--all", "--", "--check"]),
        (
            "cargo clippy --workspace --all-targets -- -D warnings",
            &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
        ),
        ("cargo test --workspace", &["test", "--workspace"]),
    ];
    let total = steps.len() + 2;
    for (i, (title, args)) in steps.iter().enumerate() {
        util::banner(&format!("ci [{}/{total}] {title}", i + 1));
        let status = util::run_status(util::cargo().args(*args))?;
        if !status.success() {
            return Err(format!("ci: `{title}` failed ({})", util::describe(status)));
        }
    }

    util::banner(&format!("ci [{}/{total}] interop", total - 1));
    interop::run(&interop::Options { skip_build: false }).map_err(|e| format!("ci: interop failed: {e}"))?;

    util::banner(&format!("ci [{total}/{total}] conformance"));
    // Gate until the HTTP transport lands: the runner only speaks Streamable HTTP.
    if !everything_serves_http()? {
        println!("conformance: skipped (the everything example serves no HTTP yet)");
        return Ok(());
    }
    // interop has just built the release example.
    let opts = conformance::Options {
        skip_build: true,
        ..Default::default()
    };
    conformance::run(&opts).map_err(|e| format!("ci: conformance failed: {e}"))
}

/// Whether `everything --help` mentions `--port`.
fn everything_serves_http() -> Result<bool> {
    let binary = util::existing_everything()?;
    let out = Command::new(&binary)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{} --help`: {e}", binary.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(text.contains("--port"))
}
