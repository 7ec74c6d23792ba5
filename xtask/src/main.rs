//! Project automation, run as `cargo xtask <command>` (an alias in `.cargo/config.toml`).
//!
//! - `ci`: `cargo fmt --check`, `cargo clippy -D warnings`, `cargo test`, then `interop` and
//!   `conformance`, stopping at the first failure.
//! - `interop [--skip-build]`: the Python SDK client (`interop/client.py`, `mcp==2.3.0` in
//!   `target/interop/venv`) against the `everything` example, in each negotiation mode.
//! - `conformance [--leg NAME]… [--url URL] [--skip-build] [--list]`: the official conformance
//!   runner (Node 22 and the runner installed under `target/conformance/`) against the
//!   `everything` example served over HTTP, or against a running server at `--url`.
//! - `bench [--quick] [--skip-build]`: our server against rmcp and a bare HTTP floor (the bench
//!   workspace under `bench/`, built into `target/bench-build`), every workload in one run; prints
//!   a table and writes `target/bench/report.json`.
//!
//! The only requirements on the machine are the Rust toolchain, `python3` and `npm`: everything
//! else is installed under `target/`. Subprocesses inherit stdout and stderr; servers started
//! here are killed on every way out. A failure exits non-zero with a one-line reason.

mod bench;
mod ci;
mod conformance;
mod interop;
mod tools;
mod util;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci                      fmt, clippy, test, interop, conformance (in order, fail fast)
  interop [--skip-build]  Python SDK client against the everything example (stdio legs)
  conformance [--leg NAME]... [--url URL] [--skip-build] [--list]
                          official conformance runner against the everything example over HTTP
                          (or against the server at URL); --list prints the legs
  bench [--quick] [--skip-build]
                          load test against rmcp and a bare HTTP floor; writes target/bench/report.json
                          (--quick: short runs, under two minutes once built)";

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
        "conformance" => match parse_conformance(rest) {
            Ok(opts) => conformance::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "bench" => match parse_bench(rest) {
            Ok(opts) => bench::run(&opts).into(),
            Err(e) => Outcome::Usage(e),
        },
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Outcome::Done
        }
        other => Outcome::Usage(format!("unknown command `{other}`")),
    }
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

fn parse_bench(rest: &[String]) -> Result<bench::Options, String> {
    let mut opts = bench::Options::default();
    for arg in rest {
        match arg.as_str() {
            "--quick" => opts.quick = true,
            "--skip-build" => opts.skip_build = true,
            other => return Err(format!("bench: unexpected argument `{other}`")),
        }
    }
    Ok(opts)
}

fn parse_conformance(rest: &[String]) -> Result<conformance::Options, String> {
    let mut opts = conformance::Options::default();
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| format!("conformance: {flag} needs a value"))
        };
        match flag {
            "--leg" => opts.legs.push(value()?),
            "--url" => opts.url = Some(value()?),
            "--skip-build" => opts.skip_build = true,
            "--list" => opts.list = true,
            other => return Err(format!("conformance: unexpected argument `{other}`")),
        }
    }
    Ok(opts)
}
