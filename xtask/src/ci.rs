//! `cargo xtask ci`: the whole gate, in order, stopping at the first failing step.

use crate::util::{self, Result};
use crate::{conformance, interop};

/// Runs fmt, clippy, rustdoc, tests, interop and conformance.
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
        (
            "cargo doc --workspace --no-deps (warnings denied)",
            &["doc", "--workspace", "--no-deps"],
        ),
        ("cargo test --workspace", &["test", "--workspace"]),
    ];
    let total = steps.len() + 2;
    for (i, (title, args)) in steps.iter().enumerate() {
        util::banner(&format!("ci [{}/{total}] {title}", i + 1));
        let status = util::run_status(util::cargo().args(*args).env("RUSTDOCFLAGS", "-D warnings"))?;
        if !status.success() {
            return Err(format!("ci: `{title}` failed ({})", util::describe(status)));
        }
    }

    util::banner(&format!("ci [{}/{total}] interop", total - 1));
    interop::run(&interop::Options { skip_build: false }).map_err(|e| format!("ci: interop failed: {e}"))?;

    util::banner(&format!("ci [{total}/{total}] conformance"));
    // interop has just built the release example.
    let opts = conformance::Options {
        skip_build: true,
        ..Default::default()
    };
    conformance::run(&opts).map_err(|e| format!("ci: conformance failed: {e}"))
}
