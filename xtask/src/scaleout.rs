//! `cargo xtask scaleout [--balancer rr|nginx|haproxy|all] [--instances N] [--redis-cluster]
//! [--skip-build]`: one
//! logical server made of N `everything` processes sharing state through Redis, behind a
//! round-robin load balancer with no stickiness, driven by the real peers.
//!
//! Each pass starts a fresh `redis-server` ([`RedisServer`](crate::redis::RedisServer)), N (default 2) `everything --host
//! 127.0.0.1 --port 0 --redis <url> --redis-prefix <random> --state-key <64 random hex digits>
//! --sse-pair` instances and a balancer in front of them ([`crate::balancer`]): `rr-proxy` of the `mcp-tests`
//! crate (switching instance on every HTTP request; debug build: `cargo build -p mcp-tests --bin
//! rr-proxy`), nginx or HAProxy (from the distribution, installed with apt-get when missing, run
//! in the foreground from the templates `xtask/balancers/nginx.conf` and
//! `xtask/balancers/haproxy.cfg`). Then, through the balancer:
//!
//! - the Python SDK client (`interop/client.py`) in each mode of the HTTP legs of `cargo xtask
//!   interop` without credentials (`legacy`, `auto`, `2026-07-28`), at `http://127.0.0.1:P/mcp`,
//!   and over the 2024-11-05 HTTP+SSE pair (`--sse http://127.0.0.1:P/sse --mode legacy`): its
//!   stream on one instance, its POSTs on any;
//! - every enabled leg of `cargo xtask conformance`, failing on any `FAILURE` or `WARNING`
//!   check exactly as there, at `http://localhost:P/mcp` (the dns-rebinding scenario needs a
//!   `localhost` URL), with results under `target/conformance/out-scaleout/<balancer>/<leg>`;
//! - the events scenarios of `mcp-tests` that hold for one logical server (discovery, poll, push
//!   with its stream limit, the webhook subscription surface, webhook delivery), against as many
//!   more instances started with `--events-fixture --api-key <random> --events-permit-origin
//!   <the receiver's>` under a prefix of their own, behind a second balancer of the same kind.
//!
//! `--redis-cluster`: the instances share a Redis Cluster instead ([`RedisCluster`](crate::redis_cluster::RedisCluster): six
//! `redis-server` nodes, three primaries and three replicas, given to `everything` as
//! `--redis-cluster 127.0.0.1:P1,…`).
//!
//! `--balancer all` runs a whole pass behind each balancer in turn (`rr`, `nginx`, `haproxy`);
//! `cargo xtask ci` runs four passes: `rr-proxy` with 4 instances, nginx and HAProxy with 2,
//! and `rr-proxy` with 2 on a Redis Cluster.
//! Every leg and every pass runs even after a failure. At the end of a pass it prints the
//! requests the balancer sent to each instance, and the pass fails if one got none, if an
//! instance, Redis or the balancer exited, or if a leg failed; a summary gives each pass's
//! outcome and time.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::balancer::{Balancer, RunningBalancer};
use crate::redis::SharedRedis;
use crate::util::{self, HttpServer, Result};
use crate::{conformance, interop, tools};

/// One run of every leg behind one balancer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    pub(crate) balancer: Balancer,
    /// How many `everything` instances share the Redis (at least 1).
    pub(crate) instances: usize,
    /// Share a Redis Cluster ([`RedisCluster`](crate::redis_cluster::RedisCluster), `everything --redis-cluster`) instead of one
    /// `redis-server`.
    pub(crate) cluster: bool,
}

/// Options of `cargo xtask scaleout`.
pub(crate) struct Options {
    /// Use the existing release `everything` and debug `rr-proxy` builds.
    pub(crate) skip_build: bool,
    /// The passes, in order.
    pub(crate) passes: Vec<Pass>,
}

/// Runs every pass (see the module docs) and fails if any failed.
pub(crate) fn run(opts: &Options) -> Result {
    let begin = Instant::now();
    let everything = if opts.skip_build {
        util::existing_everything()?
    } else {
        util::build_everything()?
    };
    // Every balancer is built or installed, and the legs selected, before anything starts.
    let mut binaries: Vec<(Balancer, PathBuf)> = Vec::new();
    for pass in &opts.passes {
        if !binaries.iter().any(|(balancer, _)| *balancer == pass.balancer) {
            binaries.push((pass.balancer, pass.balancer.prepare(opts.skip_build)?));
        }
    }
    let legs = conformance::select(&[])?;

    let mut summary = Vec::new();
    let mut failed = Vec::new();
    for pass in &opts.passes {
        let name = pass_name(pass);
        let binary = binaries
            .iter()
            .find(|(balancer, _)| *balancer == pass.balancer)
            .map(|(_, binary)| binary.as_path())
            .ok_or("every balancer is prepared")?;
        let started = Instant::now();
        let outcome = run_pass(pass, &everything, binary, &legs);
        let seconds = started.elapsed().as_secs();
        match outcome {
            Ok(()) => summary.push(format!("scaleout: {name}: passed in {seconds} s")),
            Err(why) => {
                eprintln!("scaleout: {name}: FAILED: {why}");
                summary.push(format!("scaleout: {name}: FAILED in {seconds} s: {why}"));
                failed.push(name);
            }
        }
    }
    util::banner("scaleout: summary");
    for line in &summary {
        println!("{line}");
    }
    let seconds = begin.elapsed().as_secs();
    if failed.is_empty() {
        println!("scaleout: every pass passed in {seconds} s");
        Ok(())
    } else {
        Err(format!("scaleout failed (after {seconds} s): {}", failed.join("; ")))
    }
}

/// `nginx, 2 instances` (`…, Redis Cluster` on a cluster).
fn pass_name(pass: &Pass) -> String {
    let plural = if pass.instances == 1 { "" } else { "s" };
    let cluster = if pass.cluster { ", Redis Cluster" } else { "" };
    format!(
        "{}, {} instance{plural}{cluster}",
        pass.balancer.title(),
        pass.instances
    )
}

/// The events scenarios of the `mcp-tests` suite that hold for one logical server however many
/// processes make it (`cargo test` filters): discovery, poll, push (the stream limit included),
/// the webhook subscription surface (keys, ownership, tenants) and webhook delivery (consent,
/// signatures, envelopes, retries) to a receiver whose origin every instance permits.
const EVENTS_SCENARIOS: &[&str] = &[
    "events_poll::",
    "events_push::",
    "events_webhook::subscriptions_are_keyed_checked_and_owned",
    "events_webhook::another_tenants_subscription_is_out_of_reach",
    "events_webhook::deliveries_are_consented_signed_retried_and_bounded",
];

/// The events leg of a pass: as many `everything --events-fixture --api-key <random>`
/// instances as the pass has, on the pass's Redis under a prefix of their own, behind a
/// balancer of the pass's kind, and [`EVENTS_SCENARIOS`] run through it one at a time (they
/// share the logical server's types and signals), each request with the key
/// (`MCP_EVENTS_TARGET`, `MCP_EVENTS_TARGET_KEY`; the receiver's port, whose origin the
/// instances permit, in `MCP_EVENTS_RECEIVER_PORT`). Every instance must have served requests.
fn run_events(
    pass: &Pass,
    everything: &Path,
    balancer_binary: &Path,
    (redis_flag, redis_url): (&str, &str),
    check: &mut dyn FnMut() -> Result,
) -> Result {
    let name = pass_name(pass);
    util::banner(&format!("scaleout: {name}: the events scenarios through the balancer"));
    let prefix = format!("scaleout-events-{}", &util::random_hex()[..16]);
    let key = util::random_hex();
    // The delivery scenario's receiver listens there; every instance permits its origin.
    let receiver = util::free_port()?;
    let origin = format!("http://127.0.0.1:{receiver}");
    let flags = [
        redis_flag,
        redis_url,
        "--redis-prefix",
        prefix.as_str(),
        "--events-fixture",
        "--api-key",
        key.as_str(),
        "--events-permit-origin",
        origin.as_str(),
    ];
    let mut instances = Vec::with_capacity(pass.instances);
    for _ in 0..pass.instances {
        instances.push(HttpServer::start(everything, &flags)?);
    }
    let ports: Vec<u16> = instances.iter().map(|server| server.port).collect();
    let mut balancer = RunningBalancer::start(pass.balancer, balancer_binary, &ports)?;
    let mut cmd = util::cargo();
    cmd.args(["test", "--workspace", "--test", "scenarios", "--"])
        .args(EVENTS_SCENARIOS)
        .arg("--test-threads=1")
        .env("MCP_EVENTS_TARGET", balancer.base_url())
        .env("MCP_EVENTS_TARGET_KEY", &key)
        .env("MCP_EVENTS_RECEIVER_PORT", receiver.to_string());
    let outcome = util::run(&mut cmd);
    check()?;
    for server in &mut instances {
        server.ensure_running()?;
    }
    balancer.ensure_running()?;
    let counts = balancer.counts()?;
    println!("scaleout: {name}: events requests per instance: {counts:?}");
    outcome.map_err(|e| format!("the events scenarios through {}: {e}", pass.balancer.title()))?;
    if counts.len() != ports.len() || counts.contains(&0) {
        return Err(format!(
            "every events instance should have served requests, counted {counts:?}"
        ));
    }
    Ok(())
}

/// One pass: Redis, the instances and the balancer, every leg through it, then the counts.
fn run_pass(pass: &Pass, everything: &Path, balancer_binary: &Path, legs: &[&conformance::Leg]) -> Result {
    let name = pass_name(pass);
    util::banner(&format!("scaleout: {name}: redis, the instances, the balancer"));
    // Every process below is killed on every way out of this function.
    let mut redis = SharedRedis::start(pass.cluster)?;
    let (redis_flag, redis_url) = redis.flag();
    let prefix = format!("scaleout-{}", &util::random_hex()[..16]);
    let state_key = util::random_hex();
    let flags = [
        redis_flag,
        redis_url.as_str(),
        "--redis-prefix",
        prefix.as_str(),
        "--state-key",
        state_key.as_str(),
        "--sse-pair",
    ];
    let mut instances = Vec::with_capacity(pass.instances);
    for _ in 0..pass.instances {
        instances.push(HttpServer::start(everything, &flags)?);
    }
    let ports: Vec<u16> = instances.iter().map(|server| server.port).collect();
    let mut balancer = RunningBalancer::start(pass.balancer, balancer_binary, &ports)?;
    let url = format!("{}/mcp", balancer.base_url());
    let localhost_url = format!("http://localhost:{}/mcp", balancer.port);
    let sse_url = format!("{}/sse", balancer.base_url());
    let backends: Vec<String> = instances.iter().map(|server| server.url.clone()).collect();
    println!(
        "scaleout: {name}: {url} -> {} (redis {redis_url}, prefix {prefix})",
        backends.join(", ")
    );

    let mut check = || {
        redis.ensure_running()?;
        for server in &mut instances {
            server.ensure_running()?;
        }
        balancer.ensure_running()
    };
    let label = format!("scaleout {}: ", pass.balancer.name());
    let mut failed = interop::run_python_http(&url, &format!("{label}python "), &mut check)?;
    failed.extend(interop::run_python_sse(
        &sse_url,
        &format!("{label}python "),
        &mut check,
    )?);
    let out_root = tools::conformance_dir().join("out-scaleout").join(pass.balancer.name());
    if let Err(why) = conformance::run_legs(
        legs,
        &localhost_url,
        &out_root,
        &format!("{label}conformance"),
        &mut check,
    ) {
        failed.push(why);
    }
    if let Err(why) = run_events(pass, everything, balancer_binary, (redis_flag, &redis_url), &mut check) {
        failed.push(why);
    }
    check()?;

    let counts = balancer.counts()?;
    util::banner(&format!("scaleout: {name}: requests per instance"));
    for (backend, count) in backends.iter().zip(&counts) {
        println!("scaleout: {backend}: {count} requests");
    }
    if counts.len() != backends.len() || counts.contains(&0) {
        failed.push(format!(
            "every instance should have served requests, {} counted {counts:?}",
            pass.balancer.title()
        ));
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}
