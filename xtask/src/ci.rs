//! `cargo xtask ci`: the whole gate, in order, stopping at the first failing step.

use crate::util::{self, Result};
use crate::{conformance, fuzz, interop, soak};

/// Seconds each fuzz target runs in the CI smoke (the first build of `fuzz/` takes minutes).
const FUZZ_SMOKE_SECONDS: u64 = 5;

/// Runs fmt, clippy, rustdoc, tests, a fuzz smoke, interop, conformance and the one-minute soak.
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
    let total = steps.len() + 4;
    for (i, (title, args)) in steps.iter().enumerate() {
        util::banner(&format!("ci [{}/{total}] {title}", i + 1));
        let status = util::run_status(util::cargo().args(*args).env("RUSTDOCFLAGS", "-D warnings"))?;
        if !status.success() {
            return Err(format!("ci: `{title}` failed ({})", util::describe(status)));
        }
    }

    util::banner(&format!(
        "ci [{}/{total}] fuzz smoke ({FUZZ_SMOKE_SECONDS} s per target)",
        total - 3
    ));
    let opts = fuzz::Options {
        seconds: FUZZ_SMOKE_SECONDS,
        ..Default::default()
    };
    fuzz::run(&opts).map_err(|e| format!("ci: fuzz smoke failed: {e}"))?;

    util::banner(&format!("ci [{}/{total}] interop", total - 2));
    interop::run(&interop::Options { skip_build: false }).map_err(|e| format!("ci: interop failed: {e}"))?;

    util::banner(&format!("ci [{}/{total}] conformance", total - 1));
    // interop has just built the release example.
    let opts = conformance::Options {
        skip_build: true,
        ..Default::default()
    };
    conformance::run(&opts).map_err(|e| format!("ci: conformance failed: {e}"))?;

    util::banner(&format!(
        "ci [{total}/{total}] soak (1 min, {} listen streams)",
        soak::CI_LISTENERS
    ));
    let opts = soak::Options {
        minutes: 1,
        listeners: soak::CI_LISTENERS,
        skip_build: false,
    };
    soak::run(&opts).map_err(|e| format!("ci: soak failed: {e}"))
}
