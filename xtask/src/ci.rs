//! `cargo xtask ci`: the whole gate, in order, stopping at the first failing step.

use crate::balancer::Balancer;
use crate::oidc::{self, OidcProvider};
use crate::redis::RedisServer;
use crate::util::{self, Result};
use crate::{chaos, conformance, fuzz, imports, interop, scaleout, soak, weight};

/// The scale-out passes of the gate: every balancer, two and four instances, one Redis and a
/// Redis Cluster.
const SCALEOUT_PASSES: &[scaleout::Pass] = &[
    scaleout::Pass {
        balancer: Balancer::Rr,
        instances: 4,
        cluster: false,
    },
    scaleout::Pass {
        balancer: Balancer::Nginx,
        instances: 4,
        cluster: false,
    },
    scaleout::Pass {
        balancer: Balancer::Haproxy,
        instances: 2,
        cluster: false,
    },
    scaleout::Pass {
        balancer: Balancer::Haproxy,
        instances: 2,
        cluster: true,
    },
];

/// Seconds each fuzz target runs in the CI smoke (the first build of `fuzz/` takes minutes).
const FUZZ_SMOKE_SECONDS: u64 = 5;

/// The feature sets of `mcp-server` linted on their own (the default set is the workspace's).
const FEATURE_SETS: &[&str] = &[
    "",
    "stdio",
    "http",
    "http,stdio",
    "shared-store",
    "http,stdio,shared-store",
    "tls",
    "http2",
    "auth",
    "skills",
    "http,auth,redis",
    "otel",
    "http,otel",
    "mount",
];

/// Crates a stdio-only `mcp-server` must not depend on: HTTP, TLS and JWT.
const NOT_IN_STDIO: &[&str] = &[
    "axum",
    "hyper",
    "hyper-util",
    "rustls",
    "tokio-rustls",
    "jsonwebtoken",
    "mcp-transport-http",
];

/// Lints `mcp-server` (its examples and tests too: each needs `required-features` or a `cfg`)
/// with each of [`FEATURE_SETS`], warnings denied, then checks that its stdio-only dependency
/// tree has none of [`NOT_IN_STDIO`].
pub(crate) fn features() -> Result {
    for set in FEATURE_SETS {
        let mut cmd = util::cargo();
        cmd.args(["clippy", "-p", "mcp-server", "--all-targets", "--no-default-features"]);
        if !set.is_empty() {
            cmd.args(["--features", set]);
        }
        util::run(cmd.args(["--", "-D", "warnings"]))?;
    }
    let mut tree = util::cargo();
    tree.args([
        "tree",
        "-p",
        "mcp-server",
        "--no-default-features",
        "--features",
        "stdio",
    ])
    .args(["-e", "normal,build", "--prefix", "none", "--format", "{p}"]);
    let line = util::display(&tree);
    println!("$ {line}");
    let out = tree.output().map_err(|e| format!("cannot run `{line}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{line}` failed ({}): {}",
            util::describe(out.status),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let listing = String::from_utf8_lossy(&out.stdout);
    let found = forbidden_in(&listing);
    if !found.is_empty() {
        return Err(format!(
            "a stdio-only mcp-server depends on {} (`{line}`)",
            found.join(", ")
        ));
    }
    println!("stdio-only mcp-server: none of {}", NOT_IN_STDIO.join(", "));
    Ok(())
}

/// The crates of [`NOT_IN_STDIO`] named in a `cargo tree --prefix none --format {p}` listing.
fn forbidden_in(tree: &str) -> Vec<&str> {
    let mut found: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| NOT_IN_STDIO.contains(name))
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// Runs fmt, clippy, rustdoc, the `mcp-server` feature matrix ([`features`]), the weight
/// comparison with rmcp ([`weight`]), the import circles ([`imports`]), tests (with a
/// Redis of their own, `MCP_TEST_REDIS_URL`, and an OpenID provider of their own once its smoke
/// passed, `MCP_TEST_OIDC_*`: see [`oidc`]), the `extension` and `middleware` examples, a fuzz
/// smoke, interop, conformance, the scale-out legs ([`SCALEOUT_PASSES`]), the chaos passes
/// ([`chaos`]) and the one-minute soak.
pub(crate) fn run() -> Result {
    if !interop::client_script_exists() {
        return Err("interop/client.py is missing".to_owned());
    }
    // Started (and installed if missing) before the long steps; killed on every way out.
    util::banner("ci: redis-server for the tests");
    let redis = RedisServer::start().map_err(|e| format!("ci: cannot start Redis: {e}"))?;
    util::banner("ci: OpenID provider for the tests (its smoke first, on a provider of its own)");
    let installed = oidc::ensure_oidc().map_err(|e| format!("ci: cannot install the OpenID provider: {e}"))?;
    oidc::smoke(&installed).map_err(|e| format!("ci: {e}"))?;
    let settings = oidc::Settings {
        log: Some("ci-provider"),
        ..Default::default()
    };
    let mut idp =
        OidcProvider::start(&installed, &settings).map_err(|e| format!("ci: cannot start the OpenID provider: {e}"))?;
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
        (
            "the extension example runs (--demo: both eras, a declaring and another client)",
            &[
                "run",
                "-q",
                "-p",
                "mcp-server",
                "--example",
                "extension",
                "--",
                "--demo",
            ],
        ),
        (
            "the middleware example runs (--demo: timing, logging, a refused method, both eras)",
            &[
                "run",
                "-q",
                "-p",
                "mcp-server",
                "--example",
                "middleware",
                "--",
                "--demo",
            ],
        ),
    ];
    // The feature matrix runs after rustdoc, before the tests: `Some` marks its place.
    let order = steps[..3]
        .iter()
        .map(Some)
        .chain([None])
        .chain(steps[3..].iter().map(Some));
    let total = steps.len() + 9;
    let mut n = 0;
    for step in order {
        n += 1;
        let Some((title, args)) = step else {
            util::banner(&format!(
                "ci [{n}/{total}] mcp-server feature matrix; no HTTP, TLS or JWT crate in a stdio-only build"
            ));
            features().map_err(|e| format!("ci: feature matrix failed: {e}"))?;
            n += 1;
            util::banner(&format!(
                "ci [{n}/{total}] weight: the notes server on this library and on rmcp (crates, stripped size)"
            ));
            weight::run(&weight::Options::default()).map_err(|e| format!("ci: {e}"))?;
            n += 1;
            util::banner(&format!(
                "ci [{n}/{total}] imports: no circle of more than 2 files in a library crate"
            ));
            imports::run().map_err(|e| format!("ci: {e}"))?;
            continue;
        };
        util::banner(&format!("ci [{n}/{total}] {title}"));
        let mut cmd = util::cargo();
        cmd.args(*args)
            .env("RUSTDOCFLAGS", "-D warnings")
            .env("MCP_TEST_REDIS_URL", redis.url());
        for (name, value) in idp.env() {
            cmd.env(name, value);
        }
        let status = util::run_status(&mut cmd)?;
        if !status.success() {
            return Err(format!("ci: `{title}` failed ({})", util::describe(status)));
        }
        idp.ensure_running().map_err(|e| format!("ci: after `{title}`: {e}"))?;
    }

    util::banner(&format!(
        "ci [{}/{total}] fuzz smoke ({FUZZ_SMOKE_SECONDS} s per target)",
        total - 5
    ));
    let opts = fuzz::Options {
        seconds: FUZZ_SMOKE_SECONDS,
        ..Default::default()
    };
    fuzz::run(&opts).map_err(|e| format!("ci: fuzz smoke failed: {e}"))?;

    util::banner(&format!("ci [{}/{total}] interop", total - 4));
    interop::run(&interop::Options { skip_build: false }).map_err(|e| format!("ci: interop failed: {e}"))?;

    util::banner(&format!("ci [{}/{total}] conformance", total - 3));
    // interop has just built the release example.
    let opts = conformance::Options {
        skip_build: true,
        ..Default::default()
    };
    conformance::run(&opts).map_err(|e| format!("ci: conformance failed: {e}"))?;

    util::banner(&format!(
        "ci [{}/{total}] scale-out (instances sharing a Redis: 4 behind rr-proxy, 4 behind nginx, 2 behind HAProxy; 2 behind HAProxy on a Redis Cluster)",
        total - 2
    ));
    // The release example is built; the debug rr-proxy was built by `cargo test` (a no-op
    // build then); each pass has a Redis (or a Redis Cluster) of its own.
    let opts = scaleout::Options {
        skip_build: false,
        passes: SCALEOUT_PASSES.to_vec(),
    };
    scaleout::run(&opts).map_err(|e| format!("ci: scale-out failed: {e}"))?;

    util::banner(&format!(
        "ci [{}/{total}] chaos (2 fronts behind nginx, 2 workers; one killed, one drained; on Redis and on a Redis Cluster)",
        total - 1
    ));
    let opts = chaos::Options {
        skip_build: true,
        clusters: vec![false, true],
    };
    chaos::run(&opts).map_err(|e| format!("ci: chaos failed: {e}"))?;

    util::banner(&format!(
        "ci [{total}/{total}] soak (1 min, {} listen streams)",
        soak::CI_LISTENERS
    ));
    let opts = soak::Options {
        minutes: 1,
        listeners: soak::CI_LISTENERS,
        ..Default::default()
    };
    let soaked = soak::run(&opts).map_err(|e| format!("ci: soak failed: {e}"));
    drop(idp);
    drop(redis);
    soaked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_crates_are_found_by_name() {
        let tree = "mcp-server v0.1.0 (/x)\nhyper v1.8.0\nhyper v1.8.0\nhttp v1.3.0\nrustls-pki-types v1.0.0\n";
        assert_eq!(forbidden_in(tree), vec!["hyper"]);
        assert!(forbidden_in("mcp-server v0.1.0\ntokio v1.0.0\n").is_empty());
    }
}
