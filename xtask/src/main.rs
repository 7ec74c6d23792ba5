//! Project automation, run as `cargo xtask <command>` (an alias in `.cargo/config.toml`).
//!
//! - `ci`: `cargo fmt --check`, `cargo clippy -D warnings`, rustdoc with warnings denied,
//!   `cargo test` (given a `redis-server` of its own in `MCP_TEST_REDIS_URL`, and an OpenID
//!   provider of its own, once its smoke passed, in `MCP_TEST_OIDC_ISSUER`, `MCP_TEST_OIDC_ADMIN`
//!   and `MCP_TEST_OIDC_CLIENTS`), the `extension` and `middleware` examples run with `--demo`,
//!   the import circles (`imports`), then a `fuzz` smoke, `interop`, `conformance`, `scaleout` (behind `rr-proxy` with 4
//!   instances, behind nginx and HAProxy with 2, behind `rr-proxy` with 2 on a Redis Cluster),
//!   `chaos` (on Redis and on a Redis Cluster) and the one-minute `soak`, stopping at the first
//!   failure.
//! - `oidc [--smoke] [--ttl N] [--short-ttl N]`: the OpenID provider of the auth tests
//!   (`interop/oidc/provider.mjs`: panva's `oidc-provider`, pinned, installed under
//!   `target/oidc`, on Node 22) on free loopback ports; prints the three `MCP_TEST_OIDC_*` lines
//!   (also written to `target/oidc/env`) and serves until interrupted, for running tests by hand.
//!   `--smoke`: instead, `interop/oidc/smoke.mjs` against a provider of its own (discovery, JWT and
//!   opaque tokens, introspection, revocation, expiry, DPoP binding, key rotation); see
//!   `xtask/src/oidc.rs` for the variables' formats.
//! - `interop [--skip-build]`: the Python SDK client (`interop/client.py`, `mcp==2.3.0` in
//!   `target/interop/venv`) in each negotiation mode, and the TypeScript SDK clients v1 and v2
//!   (`interop/ts`, installed under `target/interop/ts`), against the `everything` example over
//!   stdio and HTTP; then the MCP Apps legs: the `apps` example's view in headless Chromium, in a
//!   host page on the official ext-apps app bridge (`interop/apps`).
//! - `apps [--skip-build]`: only those MCP Apps legs.
//! - `conformance [--leg NAME]… [--url URL] [--skip-build] [--list]`: the official conformance
//!   runner (Node 22 and the runner installed under `target/conformance/`) against the
//!   `everything` example served over HTTP, or against a running server at `--url`.
//! - `scaleout [--balancer rr|nginx|haproxy|all] [--instances N] [--redis-cluster]
//!   [--skip-build]`: N (default 2) `everything --redis` instances sharing one `redis-server`
//!   (started for the run on a free port; `--redis-cluster`: a six-node Redis Cluster of
//!   `redis-server` children, and `everything --redis-cluster`) behind a round-robin load balancer with no stickiness: `rr-proxy` (the default; the
//!   proxy of the `mcp-tests` crate, switching instance on every HTTP request), nginx or HAProxy
//!   (run in the foreground from the templates under `xtask/balancers/`), or each in turn
//!   (`all`); driven through it by the Python SDK client in its three HTTP modes and by every
//!   conformance leg; prints the requests each instance served (each must be > 0).
//! - `chaos [--skip-build] [--redis-cluster]`: tasks that outlive their instance: 2 fronts
//!   behind nginx and 2 workers on Redis (and, unless `--redis-cluster` picks it alone, again on
//!   a Redis Cluster), 360 tasks of both eras from the Python SDK, one worker killed and the
//!   other drained and restarted while they run (see `chaos.rs`).
//! - `bench [--quick] [--skip-build] [--readme] [--only ID]... [--baseline REV]`: our
//!   server against rmcp and a
//!   bare HTTP floor (the bench workspace under `bench/`, built into `target/bench-build`), every
//!   workload in one run; prints a table and writes `target/bench/report.json` (`--readme`:
//!   prints the Markdown tables of the saved report, measuring nothing; `--only W5a`: only that
//!   row, into `target/bench/report-only.json`; `--baseline REV`: `ours` as it was at commit REV
//!   too, interleaved with the others). W1 measures the seams too: `ours` with a pass-through
//!   middleware layer, with the rate limiter, with OpenTelemetry.
//! - `soak [--minutes N] [--listeners N] [--rate-limit Q] [--skip-build]`: a bounded load-and-fault
//!   soak of the `everything` example (the `soak` driver crate), checked for lost replies,
//!   unexpected 5xx, flat memory and descriptors back to baseline; writes
//!   `target/soak/report.json` (`--rate-limit RATE[:BURST]`: the server limits `tools/call`, and
//!   its 429 refusals count as declared).
//! - `imports`: the import circles of the library crates (see `imports.rs` for what counts as
//!   an import); fails on a circle of more than two files.
//! - `package [--allow-dirty]`: every published crate (not `publish = false`) checked for the
//!   metadata crates.io shows, then packaged with `cargo package`, each built from its archive
//!   (`--allow-dirty`: with uncommitted changes, which `cargo package` refuses otherwise).
//! - `fuzz [--seconds N] [--target NAME]…`: the cargo-fuzz targets of `fuzz/` (nightly; cargo-fuzz
//!   installed when missing), each for N seconds, one job; prints executions and exec/s per target.
//!
//! The only requirements on the machine are the Rust toolchain, `python3` and `npm`: everything
//! else is installed under `target/` (Node 22 and the pinned npm packages among it), except
//! `redis-server` (`ci`, `scaleout`), `nginx` and `haproxy` (`ci`, `scaleout --balancer`),
//! installed from the distribution with `apt-get install` when they are not on the machine (as
//! root, else with `sudo -n`); they are always run as children of xtask, never as system
//! services. Subprocesses inherit stdout and stderr;
//! servers started here are killed on every way out. A failure exits non-zero with a one-line
//! reason.

mod apps;
mod balancer;
mod bench;
mod chaos;
mod ci;
mod conformance;
mod fuzz;
mod imports;
mod interop;
mod oidc;
mod package;
mod redis;
mod redis_cluster;
mod scaleout;
mod soak;
mod tools;
mod util;
mod weight;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci                      fmt, clippy, doc, test, fuzz smoke, interop, conformance, scaleout, soak
                          (in order, fail fast; installs redis-server, nginx and haproxy with
                          apt-get when missing;
                          the tests get a Redis and an OpenID provider: MCP_TEST_REDIS_URL,
                          MCP_TEST_OIDC_ISSUER, MCP_TEST_OIDC_ADMIN, MCP_TEST_OIDC_CLIENTS)
  oidc [--smoke] [--ttl N] [--short-ttl N]
                          the tests' OpenID provider (oidc-provider on Node 22, under target/oidc)
                          on loopback: prints the MCP_TEST_OIDC_* lines (also in target/oidc/env)
                          and serves until Ctrl-C (token lifetimes N s, default 60 and 2);
                          --smoke: checks it against a provider of its own and exits
  interop [--skip-build]  Python and TypeScript SDK clients against the everything example (stdio, HTTP);
                          the apps example's view in headless Chromium on the official MCP Apps bridge
  apps [--skip-build]     only the MCP Apps legs of interop
  conformance [--leg NAME]... [--url URL] [--skip-build] [--list]
                          official conformance runner against the everything example over HTTP
                          (or against the server at URL); --list prints the legs
  scaleout [--balancer rr|nginx|haproxy|all] [--instances N] [--redis-cluster] [--skip-build]
                          N everything --redis instances (default 2; --redis-cluster: on a
                          six-node Redis Cluster) behind a round-robin load
                          balancer, no stickiness: rr-proxy (default; a new instance on every
                          request), nginx or HAProxy (installed with apt-get when missing, run
                          from xtask/balancers/), or each in turn (all): the Python SDK client
                          (3 HTTP modes) and every conformance leg through it; results in
                          target/conformance/out-scaleout/<balancer>
  package [--allow-dirty] the published crates' metadata checked (description, license, repository,
                          documentation, readme, keywords, categories), then `cargo package`
                          builds each from the archive it would upload (--allow-dirty: with
                          uncommitted changes)
  fuzz [--seconds N] [--target NAME]...
                          libFuzzer targets of fuzz/ (cargo +nightly fuzz), N s each (default 60),
                          one job; fails on a crash, timeout or OOM; prints executions and exec/s
  bench [--quick] [--skip-build] [--readme] [--only ID]... [--baseline REV] [--rounds N]
                          load test against rmcp and a bare HTTP floor (W1: ours with each seam
                          too: a pass-through layer, the rate limiter, OpenTelemetry; server CPU per request,
                          allocations per request from a counting build of ours, issue 25's targets,
                          disturbed cells that decide a target rerun); writes target/bench/report.json
                          (--quick: short runs, under two minutes once built; --readme: print the
                          Markdown tables of the saved report.json, measuring nothing; --only W5a:
                          only that row (W1..W4, W5a, W5b, M1), into target/bench/report-only.json;
                          --baseline REV: ours at commit REV as a fourth target, in the same rounds;
                          --rounds N: N interleaved rounds per cell instead of 3)
  imports                 the import circles of the library crates, every import form counted
                          (use trees, paths in code and types, child modules named, followed
                          through re-exports to the defining file); fails on one of more than
                          2 files
  weight [--features]     the notes server of weight/ on this library (mcp-server with http and
                          stdio) and on rmcp 3.11, dev profile: crates compiled and stripped size
                          side by side; fails when ours compiles more crates (--features: each mcp-server
                          feature's cost too, the README's table)
  soak [--minutes N] [--listeners N] [--rate-limit RATE[:BURST]] [--skip-build]
                          N minutes (default 1) of load and faults against the everything example:
                          2000 listen streams (ci runs 1 minute with 500), callers of both eras,
                          disconnects, a panicking and a hanging tool, oversize and malformed
                          requests; fails on a lost reply, an unexpected 5xx, RSS growth over 10 %
                          or leaked fds; writes target/soak/report.json";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Outcome::Done => ExitCode::SUCCESS,
        Outcome::Failed(reason) => {
            eprintln!("xtask: error: {reason}");
            ExitCode::FAILURE
        }
        Outcome::Usage(reason) => {
            eprintln!("xtask: {reason}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

enum Outcome {
    Done,
    Failed(String),
    Usage(String),
}

impl From<util::Result> for Outcome {
    fn from(result: util::Result) -> Self {
        match result {
            Ok(()) => Outcome::Done,
            Err(reason) => Outcome::Failed(reason),
        }
    }
}

fn dispatch(args: &[String]) -> Outcome {
    let Some((command, rest)) = args.split_first() else {
        return Outcome::Usage("no command given".to_owned());
    };
    match command.as_str() {
        "ci" => match no_options(rest) {
            Ok(()) => ci::run().into(),
            Err(e) => Outcome::Usage(e),
        },
        "interop" => match parse_interop(rest) {
            Ok(opts) => interop::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "apps" => match parse_interop(rest) {
            Ok(opts) => match apps::run(opts.skip_build) {
                Ok(failed) if failed.is_empty() => Outcome::Done,
                Ok(failed) => Outcome::Failed(format!("apps interop failed: {}", failed.join(", "))),
                Err(e) => Outcome::Failed(e),
            },
            Err(e) => Outcome::Usage(e),
        },
        "conformance" => match parse_conformance(rest) {
            Ok(opts) => conformance::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "chaos" => match parse_chaos(rest) {
            Ok(opts) => chaos::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "scaleout" => match parse_scaleout(rest) {
            Ok(opts) => scaleout::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "bench" => match parse_bench(rest) {
            Ok(opts) => bench::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "soak" => match parse_soak(rest) {
            Ok(opts) => soak::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "imports" => match no_options(rest) {
            Ok(()) => imports::run().into(),
            Err(e) => Outcome::Usage(e),
        },
        "weight" => match parse_weight(rest) {
            Ok(opts) => weight::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "oidc" => match parse_oidc(rest) {
            Ok(opts) => oidc::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "fuzz" => match fuzz::parse(rest) {
            Ok(opts) => fuzz::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "package" => match rest {
            [] => package::run(false).into(),
            [flag] if flag == "--allow-dirty" => package::run(true).into(),
            [other, ..] => Outcome::Usage(format!("package: unexpected argument `{other}`")),
        },
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Outcome::Done
        }
        other => Outcome::Usage(format!("unknown command `{other}`")),
    }
}

fn parse_weight(args: &[String]) -> Result<weight::Options, String> {
    let mut opts = weight::Options::default();
    for arg in args {
        match arg.as_str() {
            "--features" => opts.features = true,
            other => return Err(format!("unknown weight option `{other}`")),
        }
    }
    Ok(opts)
}

fn no_options(rest: &[String]) -> Result<(), String> {
    match rest.first() {
        None => Ok(()),
        Some(arg) => Err(format!("unexpected argument `{arg}`")),
    }
}

fn parse_interop(rest: &[String]) -> Result<interop::Options, String> {
    let mut opts = interop::Options { skip_build: false };
    for arg in rest {
        match arg.as_str() {
            "--skip-build" => opts.skip_build = true,
            other => return Err(format!("interop: unexpected argument `{other}`")),
        }
    }
    Ok(opts)
}

fn parse_chaos(rest: &[String]) -> Result<chaos::Options, String> {
    let mut skip_build = false;
    let mut clusters = vec![false, true];
    let mut flags = util::Flags::new("chaos", rest);
    while let Some((flag, inline)) = flags.next_flag() {
        match flag {
            "--skip-build" if inline.is_none() => skip_build = true,
            "--redis-cluster" if inline.is_none() => clusters = vec![true],
            other => return Err(flags.unexpected(other)),
        }
    }
    Ok(chaos::Options { skip_build, clusters })
}

fn parse_scaleout(rest: &[String]) -> Result<scaleout::Options, String> {
    let mut skip_build = false;
    let mut balancers = vec![balancer::Balancer::Rr];
    let mut instances = 2;
    let mut cluster = false;
    let mut flags = util::Flags::new("scaleout", rest);
    while let Some((flag, inline)) = flags.next_flag() {
        match flag {
            "--skip-build" if inline.is_none() => skip_build = true,
            "--balancer" => {
                let value = flags.value(flag, inline)?;
                balancers = match value.as_str() {
                    "all" => balancer::Balancer::ALL.to_vec(),
                    name => vec![balancer::Balancer::parse(name).ok_or_else(|| {
                        format!("scaleout: --balancer takes rr, nginx, haproxy or all, not `{name}`")
                    })?],
                };
            }
            "--instances" => instances = flags.positive(flag, inline)? as usize,
            "--redis-cluster" if inline.is_none() => cluster = true,
            other => return Err(flags.unexpected(other)),
        }
    }
    let passes = balancers
        .into_iter()
        .map(|balancer| scaleout::Pass {
            balancer,
            instances,
            cluster,
        })
        .collect();
    Ok(scaleout::Options { skip_build, passes })
}

fn parse_bench(rest: &[String]) -> Result<bench::Options, String> {
    let mut opts = bench::Options::default();
    let mut flags = util::Flags::new("bench", rest);
    while let Some((flag, inline)) = flags.next_flag() {
        match flag {
            "--quick" if inline.is_none() => opts.quick = true,
            "--skip-build" if inline.is_none() => opts.skip_build = true,
            "--readme" if inline.is_none() => opts.readme = true,
            "--only" => opts.only.push(flags.value(flag, inline)?),
            "--baseline" => opts.baseline = Some(flags.value(flag, inline)?),
            "--rounds" => {
                let value = flags.value(flag, inline)?;
                let rounds = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("bench: --rounds takes a positive count, not `{value}`"))?;
                opts.rounds = Some(rounds);
            }
            other => return Err(flags.unexpected(other)),
        }
    }
    Ok(opts)
}

fn parse_soak(rest: &[String]) -> Result<soak::Options, String> {
    let mut opts = soak::Options::default();
    let mut flags = util::Flags::new("soak", rest);
    while let Some((flag, inline)) = flags.next_flag() {
        match flag {
            "--minutes" => opts.minutes = flags.positive(flag, inline)?,
            "--listeners" => opts.listeners = flags.positive(flag, inline)? as usize,
            "--rate-limit" => opts.rate_limit = Some(flags.value(flag, inline)?),
            "--skip-build" if inline.is_none() => opts.skip_build = true,
            other => return Err(flags.unexpected(other)),
        }
    }
    Ok(opts)
}

fn parse_oidc(rest: &[String]) -> Result<oidc::Options, String> {
    let mut opts = oidc::Options::default();
    let mut flags = util::Flags::new("oidc", rest);
    while let Some((flag, inline)) = flags.next_flag() {
        match flag {
            "--smoke" if inline.is_none() => opts.smoke = true,
            "--ttl" => opts.ttl = Some(flags.positive(flag, inline)?),
            "--short-ttl" => opts.short_ttl = Some(flags.positive(flag, inline)?),
            other => return Err(flags.unexpected(other)),
        }
    }
    Ok(opts)
}

fn parse_conformance(rest: &[String]) -> Result<conformance::Options, String> {
    let mut opts = conformance::Options::default();
    let mut flags = util::Flags::new("conformance", rest);
    while let Some((flag, inline)) = flags.next_flag() {
        match flag {
            "--leg" => opts.legs.push(flags.value(flag, inline)?),
            "--url" => opts.url = Some(flags.value(flag, inline)?),
            "--skip-build" => opts.skip_build = true,
            "--list" => opts.list = true,
            other => return Err(flags.unexpected(other)),
        }
    }
    Ok(opts)
}
