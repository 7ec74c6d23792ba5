//! `cargo xtask fuzz [--seconds N] [--target NAME]...`: the cargo-fuzz targets of `fuzz/`.
//!
//! `fuzz/` is a workspace of its own (libFuzzer through `libfuzzer-sys`), built with nightly
//! (`cargo +nightly fuzz`) into `target/fuzz-build`. This command installs cargo-fuzz from
//! crates.io when `cargo +nightly fuzz` is missing (a missing nightly toolchain is an error
//! that says how to get one), builds the targets once, then runs each for `N` seconds
//! (`-max_total_time`, default [`DEFAULT_SECONDS`]), one job, on its seeds (`fuzz/seeds/<target>`,
//! read only) and a working corpus kept between runs (`target/fuzz/corpus/<target>`), with an
//! RSS cap ([`RSS_LIMIT_MB`]) and a per-input timeout ([`INPUT_TIMEOUT_S`]).
//!
//! The targets are safe Rust, so they run without a sanitizer (about twice the executions of
//! AddressSanitizer); debug assertions and overflow checks are on. A crash, a timeout or an
//! out-of-memory input fails the command once every target has run: the input is written to
//! `target/fuzz/artifacts/<target>/` and the command prints how to replay it. Each target's
//! whole libFuzzer log is in `target/fuzz/logs/<target>.log`; the terminal gets the log without
//! its progress lines, then a table of executions and executions per second from libFuzzer's
//! final statistics.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use crate::util::{self, ChildGuard, Result};

/// The fuzz targets, in the order they run (`fuzz/fuzz_targets/<name>.rs`).
pub(crate) const TARGETS: [&str; 8] = [
    "jsonrpc_decode",
    "header_agreement",
    "request_state_open",
    "last_event_id",
    "uri_template",
    "x_mcp_header",
    "cursor",
    "engine",
];
/// Seconds per target when `--seconds` is not given.
pub(crate) const DEFAULT_SECONDS: u64 = 60;
/// libFuzzer's `-rss_limit_mb`: an input that makes the process grow past it is a failure.
const RSS_LIMIT_MB: u64 = 2048;
/// libFuzzer's `-timeout`: one input that runs longer is a failure (a hang).
const INPUT_TIMEOUT_S: u64 = 10;
/// The cargo-fuzz release installed when it is missing.
const CARGO_FUZZ_VERSION: &str = "0.13.2";
/// How long past `-max_total_time` a run may take (start-up, the last input, a crash report)
/// before it is killed.
const RUN_SLACK: Duration = Duration::from_secs(180);

/// The options of `cargo xtask fuzz`.
#[derive(Debug)]
pub(crate) struct Options {
    /// `--seconds N`: how long each target runs.
    pub(crate) seconds: u64,
    /// `--target NAME` (repeatable): only these targets (default: all of [`TARGETS`]).
    pub(crate) targets: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seconds: DEFAULT_SECONDS,
            targets: Vec::new(),
        }
    }
}

/// Parses the arguments after `fuzz`.
pub(crate) fn parse(rest: &[String]) -> std::result::Result<Options, String> {
    let mut opts = Options::default();
    let mut flags = util::Flags::new("fuzz", rest);
    while let Some((flag, inline)) = flags.next_flag() {
        match flag {
            "--seconds" => opts.seconds = flags.positive(flag, inline)?,
            "--target" => {
                let name = flags.value(flag, inline)?;
                if !TARGETS.contains(&name.as_str()) {
                    return Err(format!(
                        "fuzz: unknown target `{name}` (targets: {})",
                        TARGETS.join(", ")
                    ));
                }
                if !opts.targets.contains(&name) {
                    opts.targets.push(name);
                }
            }
            other => return Err(flags.unexpected(other)),
        }
    }
    Ok(opts)
}

/// What one target's run came to.
struct Outcome {
    target: String,
    /// `stat::number_of_executed_units`.
    executions: Option<u64>,
    /// `stat::average_exec_per_sec`.
    per_second: Option<u64>,
    /// `stat::new_units_added`.
    new_units: Option<u64>,
    /// `stat::peak_rss_mb`.
    peak_rss_mb: Option<u64>,
    /// Why it failed (`None`: it ran its time out cleanly).
    failure: Option<String>,
    /// The input libFuzzer wrote for the failure.
    artifact: Option<String>,
}

/// Builds the fuzz workspace and runs the targets; fails if any target failed.
pub(crate) fn run(opts: &Options) -> Result {
    let fuzz_dir = util::root().join("fuzz");
    if !fuzz_dir.join("Cargo.toml").is_file() {
        return Err(format!("{} is missing", fuzz_dir.join("Cargo.toml").display()));
    }
    ensure_nightly()?;
    ensure_cargo_fuzz()?;
    let targets: Vec<String> = if opts.targets.is_empty() {
        TARGETS.iter().map(|t| (*t).to_owned()).collect()
    } else {
        opts.targets.clone()
    };

    util::banner("fuzz: build (nightly, no sanitizer, debug assertions)");
    let mut build = nightly_fuzz();
    build.args(["build"]).args(build_flags());
    if let [only] = targets.as_slice() {
        build.arg(only);
    }
    util::run(&mut build)?;

    let mut outcomes = Vec::new();
    for target in &targets {
        util::banner(&format!("fuzz: {target} for {} s", opts.seconds));
        outcomes.push(run_target(&fuzz_dir, target, opts.seconds)?);
    }

    print_table(&outcomes, opts.seconds);
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.failure.as_ref().map(|f| format!("{}: {f}", o.target)))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        for o in outcomes.iter().filter(|o| o.failure.is_some()) {
            if let Some(artifact) = &o.artifact {
                eprintln!(
                    "xtask: replay with `cd fuzz && cargo +nightly fuzz run -s none -a --target-dir {} {} {artifact}`",
                    build_dir().display(),
                    o.target
                );
            }
        }
        Err(format!("fuzz: {}", failed.join("; ")))
    }
}

/// `target/fuzz-build`: the fuzz workspace's own target directory.
fn build_dir() -> PathBuf {
    util::target_dir().join("fuzz-build")
}

/// `target/fuzz`: working corpora, artifacts and logs.
fn work_dir() -> PathBuf {
    util::target_dir().join("fuzz")
}

/// The flags shared by `cargo fuzz build` and `cargo fuzz run`: same flags, same binaries.
fn build_flags() -> Vec<String> {
    vec![
        "--sanitizer".to_owned(),
        "none".to_owned(),
        "--debug-assertions".to_owned(),
        "--target-dir".to_owned(),
        build_dir().display().to_string(),
    ]
}

/// `cargo +nightly fuzz` in `fuzz/`, through the rustup proxy on `PATH` (the `$CARGO` running
/// this xtask is a toolchain's own cargo, which knows no `+toolchain`), with the toolchain
/// choices of the outer cargo removed from its environment.
fn nightly_fuzz() -> Command {
    let mut cmd = nightly_cargo();
    cmd.arg("fuzz").current_dir(util::root().join("fuzz"));
    cmd
}

fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly")
        .current_dir(util::root())
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO_TARGET_DIR");
    cmd
}

/// Fails with a clear message unless `cargo +nightly` works.
fn ensure_nightly() -> Result {
    let out = nightly_cargo().arg("--version").stdin(Stdio::null()).output();
    match out {
        Ok(out) if out.status.success() => {
            println!("fuzz: {}", String::from_utf8_lossy(&out.stdout).trim());
            Ok(())
        }
        _ => Err(
            "fuzz: `cargo +nightly` is not available; the fuzz targets need a nightly toolchain \
             (install one with `rustup toolchain install nightly --profile minimal`)"
                .to_owned(),
        ),
    }
}

/// Installs cargo-fuzz (pinned, `--locked`) unless `cargo +nightly fuzz` already runs.
fn ensure_cargo_fuzz() -> Result {
    let present = |quiet: bool| {
        let mut cmd = nightly_cargo();
        cmd.args(["fuzz", "--version"]).stdin(Stdio::null());
        if quiet {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
        cmd.status().is_ok_and(|s| s.success())
    };
    if present(false) {
        return Ok(());
    }
    util::run(util::cargo().args(["install", "cargo-fuzz", "--locked", "--version", CARGO_FUZZ_VERSION]))?;
    if present(false) {
        Ok(())
    } else {
        Err("fuzz: cargo-fuzz was installed but `cargo +nightly fuzz --version` still fails".to_owned())
    }
}

/// Runs one target for `seconds` and reads libFuzzer's final statistics.
fn run_target(fuzz_dir: &Path, target: &str, seconds: u64) -> Result<Outcome> {
    let corpus = work_dir().join("corpus").join(target);
    let artifacts = work_dir().join("artifacts").join(target);
    let logs = work_dir().join("logs");
    let seeds = fuzz_dir.join("seeds").join(target);
    for dir in [&corpus, &artifacts, &logs] {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let log_path = logs.join(format!("{target}.log"));
    let log = fs::File::create(&log_path).map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;

    let mut cmd = nightly_fuzz();
    cmd.args(["run"]).args(build_flags()).arg(target).arg(&corpus);
    if seeds.is_dir() {
        cmd.arg(&seeds);
    }
    cmd.arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_S}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1")
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::from(log));
    println!("$ {} 2> {}", util::display(&cmd), log_path.display());
    let done = Arc::new(AtomicBool::new(false));
    let echo = {
        let (path, done) = (log_path.clone(), done.clone());
        thread::spawn(move || echo_log(&path, &done))
    };
    let mut child = ChildGuard::spawn(&mut cmd)?;
    let status = child.wait_timeout(Duration::from_secs(seconds) + RUN_SLACK);
    done.store(true, Ordering::Release);
    let _ = echo.join();
    let status = status?;
    let text = fs::read_to_string(&log_path).map_err(|e| format!("cannot read {}: {e}", log_path.display()))?;
    let lines: Vec<&str> = text.lines().collect();

    let stat = |name: &str| {
        let key = format!("stat::{name}:");
        lines
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix(&key).and_then(|v| v.trim().parse::<u64>().ok()))
    };
    let artifact = lines.iter().rev().find_map(|l| {
        l.split_once("Test unit written to ")
            .map(|(_, path)| path.trim().to_owned())
    });
    let failure = if status.success() {
        None
    } else {
        let kind = lines.iter().find_map(|l| {
            [
                ("ERROR: libFuzzer: deadly signal", "crash"),
                ("ERROR: libFuzzer: timeout", "timeout"),
                ("ERROR: libFuzzer: out-of-memory", "out of memory"),
                ("ERROR: libFuzzer: fuzz target exited", "the target exited"),
                (
                    "ERROR: libFuzzer: fuzz target overwrites",
                    "the target overwrote its input",
                ),
                ("ERROR: libFuzzer: leak", "leak"),
            ]
            .iter()
            .find(|(needle, _)| l.contains(needle))
            .map(|(_, kind)| *kind)
        });
        Some(format!(
            "{} ({}; log: {})",
            kind.unwrap_or("failed"),
            util::describe(status),
            log_path.display()
        ))
    };
    Ok(Outcome {
        target: target.to_owned(),
        executions: stat("number_of_executed_units"),
        per_second: stat("average_exec_per_sec"),
        new_units: stat("new_units_added"),
        peak_rss_mb: stat("peak_rss_mb"),
        failure,
        artifact,
    })
}

/// Prints the log as it grows, without its progress lines, until `done` and its end.
fn echo_log(path: &Path, done: &AtomicBool) {
    let Ok(file) = fs::File::open(path) else { return };
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    loop {
        let finished = done.load(Ordering::Acquire);
        match reader.read_line(&mut line) {
            Ok(n) if n > 0 && line.ends_with('\n') => {
                if !is_progress(&line) {
                    eprint!("{line}");
                }
                line.clear();
            }
            Ok(_) if finished => {
                if !line.is_empty() && !is_progress(&line) {
                    eprintln!("{line}");
                }
                return;
            }
            Ok(_) => thread::sleep(Duration::from_millis(200)),
            Err(_) => return,
        }
    }
}

/// libFuzzer's per-event progress lines (`#123 NEW …`, `REDUCE`, `pulse`, `NEW_FUNC[…]`) and its
/// recommended dictionary (`"…" # Uses: N`): kept in the log only.
fn is_progress(line: &str) -> bool {
    let line = line.trim_end();
    let event = line.strip_prefix('#').is_some_and(|rest| {
        let mut words = rest.split_whitespace();
        let counter = words.next().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        counter && matches!(words.next(), Some("NEW" | "REDUCE" | "pulse" | "RELOAD"))
    });
    let dictionary = line.starts_with('"')
        && line
            .rsplit_once("# Uses: ")
            .is_some_and(|(_, n)| n.bytes().all(|b| b.is_ascii_digit()));
    let new_function = line.trim_start().starts_with("NEW_FUNC[");
    event || dictionary || new_function || line.contains("Recommended dictionary")
}

fn print_table(outcomes: &[Outcome], seconds: u64) {
    let show = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |n| n.to_string());
    println!("\nfuzz: {seconds} s per target, one job");
    println!(
        "{:<20} {:>14} {:>10} {:>9} {:>8}  result",
        "target", "executions", "exec/s", "new", "rss MB"
    );
    for o in outcomes {
        println!(
            "{:<20} {:>14} {:>10} {:>9} {:>8}  {}",
            o.target,
            show(o.executions),
            show(o.per_second),
            show(o.new_units),
            show(o.peak_rss_mb),
            o.failure.as_deref().unwrap_or("ok")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_options() {
        let o = parse(&args(&[
            "--seconds",
            "5",
            "--target=cursor",
            "--target",
            "engine",
            "--target",
            "cursor",
        ]))
        .unwrap();
        assert_eq!(o.seconds, 5);
        assert_eq!(o.targets, ["cursor", "engine"]);
        assert_eq!(parse(&[]).unwrap().seconds, DEFAULT_SECONDS);
        assert!(parse(&args(&["--seconds", "0"])).is_err());
        assert!(parse(&args(&["--target", "nope"])).is_err());
        assert!(parse(&args(&["--jobs", "2"])).is_err());
    }

    #[test]
    fn progress_lines() {
        assert!(is_progress("#1234\tNEW    cov: 10 ft: 20 corp: 3/4b"));
        assert!(is_progress("#65536\tpulse  cov: 10"));
        assert!(!is_progress("#1234\tDONE   cov: 10"));
        assert!(is_progress("\"slow\" # Uses: 20"));
        assert!(is_progress("###### Recommended dictionary. ######"));
        assert!(is_progress("\tNEW_FUNC[1/3]: 0x56167d4bcbb1"));
        assert!(!is_progress("stat::number_of_executed_units: 5"));
    }

    #[test]
    fn every_target_has_a_source_and_seeds() {
        let fuzz = util::root().join("fuzz");
        for t in TARGETS {
            assert!(fuzz.join(format!("fuzz_targets/{t}.rs")).is_file(), "{t}");
            assert!(fuzz.join(format!("seeds/{t}")).is_dir(), "{t}");
        }
    }
}
