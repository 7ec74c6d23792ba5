//! `cargo xtask ci`: the whole gate, in order, stopping at the first failing step.

use crate::redis::RedisServer;
use crate::util::{self, Result};
use crate::{conformance, fuzz, interop, scaleout, soak};

/// Seconds each fuzz target runs in the CI smoke (the first build of `fuzz/` takes minutes).
const FUZZ_SMOKE_SECONDS: u64 = 5;

/// Runs fmt, clippy, rustdoc, tests (with a Redis of their own: `MCP_TEST_REDIS_URL`), a fuzz
/// smoke, interop, conformance, the scale-out legs and the one-minute soak.
pub(crate) fn run() -> Result {
    if !interop::client_script_exists() {
        return Err("interop/client.py is missing".to_owned());
    }
    // Started (and installed if missing) before the long steps; killed on every way out.
    util::banner("ci: redis-server for the tests");
    let redis = RedisServer::start().map_err(|e| format!("ci: cannot start Redis: {e}"))?;
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
    let total = steps.len() + 5;
    for (i, (title, args)) in steps.iter().enumerate() {
        util::banner(&format!("ci [{}/{total}] {title}", i + 1));
        let status = util::run_status(
            util::cargo()
                .args(*args)
                .env("RUSTDOCFLAGS", "-D warnings")
                .env("MCP_TEST_REDIS_URL", redis.url()),
        )?;
        if !status.success() {
            return Err(format!("ci: `{title}` failed ({})", util::describe(status)));
        }
    }

    util::banner(&format!(
        "ci [{}/{total}] fuzz smoke ({FUZZ_SMOKE_SECONDS} s per target)",
        total - 4
    ));
    let opts = fuzz::Options {
        seconds: FUZZ_SMOKE_SECONDS,
        ..Default::default()
    };
    fuzz::run(&opts).map_err(|e| format!("ci: fuzz smoke failed: {e}"))?;

    util::banner(&format!("ci [{}/{total}] interop", total - 3));
    interop::run(&interop::Options { skip_build: false }).map_err(|e| format!("ci: interop failed: {e}"))?;

    util::banner(&format!("ci [{}/{total}] conformance", total - 2));
    // interop has just built the release example.
    let opts = conformance::Options {
        skip_build: true,
        ..Default::default()
    };
    conformance::run(&opts).map_err(|e| format!("ci: conformance failed: {e}"))?;

    util::banner(&format!(
        "ci [{}/{total}] scale-out (two instances sharing a Redis, behind rr-proxy)",
        total - 1
    ));
    // The release example is built; the debug rr-proxy was built by `cargo test` (a no-op
    // build then), and this scale-out has a Redis of its own.
    scaleout::run(&scaleout::Options { skip_build: false }).map_err(|e| format!("ci: scale-out failed: {e}"))?;

    util::banner(&format!(
        "ci [{total}/{total}] soak (1 min, {} listen streams)",
        soak::CI_LISTENERS
    ));
    let opts = soak::Options {
        minutes: 1,
        listeners: soak::CI_LISTENERS,
        skip_build: false,
    };
    let soaked = soak::run(&opts).map_err(|e| format!("ci: soak failed: {e}"));
    drop(redis);
    soaked
}
