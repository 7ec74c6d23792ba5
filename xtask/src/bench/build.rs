//! The builds of the bench: the bench workspace in release (`target/bench-build`); `ours` with
//! a feature, each in a directory of its own under the bench build, so that the measured binary
//! carries none of it (`count-allocs`, its counting allocator; `shared`, the store on Redis;
//! `otel`, OpenTelemetry); and `ours` at a `--baseline` commit (`target/bench-baseline`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, Result};

/// `cargo` as xtask was run with, building every peer (and a `--baseline` commit's `ours`)
/// alike in the release profile of a deployed server: fat LTO and one codegen unit, so that
/// each is compared in its fastest honest setup (the bench workspace's own profile adds line
/// tables for profiling).
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.env("CARGO_PROFILE_RELEASE_LTO", "fat")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1");
    cmd
}

/// Builds the bench workspace in release into `build_dir`.
pub(super) fn workspace(build_dir: &Path) -> Result {
    util::banner("build the bench workspace (release)");
    let mut cmd = cargo();
    cmd.current_dir(util::root().join("bench"))
        .env("CARGO_TARGET_DIR", build_dir)
        .args(["build", "--release", "--workspace"]);
    util::run(&mut cmd)
}

/// Builds `ours --features count-allocs` into its own directory under `build_dir` (unless
/// `skip_build`) and returns the binary.
pub(super) fn counted(build_dir: &Path, skip_build: bool) -> Result<PathBuf> {
    ours_with("count-allocs", "its counting allocator", build_dir, skip_build)
}

/// Builds `ours --features shared` (state shared through Redis, for the S cells) into its own
/// directory under `build_dir` (unless `skip_build`) and returns the binary: the measured `ours`
/// carries no shared store, as a single-process server would not.
pub(super) fn shared(build_dir: &Path, skip_build: bool) -> Result<PathBuf> {
    ours_with("shared", "a shared store", build_dir, skip_build)
}

/// Builds `ours --features otel` (its spans recorded with OpenTelemetry, for the seam target
/// `traced`) into its own directory under `build_dir` (unless `skip_build`) and returns the
/// binary: the measured `ours` carries none of the SDK's code.
pub(super) fn traced(build_dir: &Path, skip_build: bool) -> Result<PathBuf> {
    ours_with("otel", "OpenTelemetry", build_dir, skip_build)
}

/// Builds `ours --features FEATURE` into `build_dir/FEATURE` (unless `skip_build`) and returns
/// the binary.
fn ours_with(feature: &str, what: &str, build_dir: &Path, skip_build: bool) -> Result<PathBuf> {
    let dir = build_dir.join(feature);
    if !skip_build {
        util::banner(&format!("build ours with {what} (release, --features {feature})"));
        let mut cmd = cargo();
        cmd.current_dir(util::root().join("bench"))
            .env("CARGO_TARGET_DIR", &dir)
            .args(["build", "--release", "-p", "ours", "--features", feature]);
        util::run(&mut cmd)?;
    }
    let binary = dir.join("release/ours");
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!("{} does not exist: run without --skip-build", binary.display()))
    }
}

/// Checks commit `rev` out in a worktree under `target/bench-baseline/src` (anew when it names
/// another commit) and builds its bench workspace into `target/bench-baseline/build` (and its
/// `ours` with the shared store into `build-shared`, where it has that feature); returns both.
/// With `skip_build`, binaries already built for that commit are used.
pub(super) fn baseline(rev: &str, skip_build: bool) -> Result<Baseline> {
    let git = |args: &[&str]| -> Result<String> {
        let out = Command::new("git")
            .current_dir(util::root())
            .args(args)
            .output()
            .map_err(|e| format!("git: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?;
    let dir = util::target_dir().join("bench-baseline");
    let src = dir.join("src");
    let build = dir.join("build");
    let release = build.join("release");
    let checked_out = std::fs::read_to_string(dir.join("commit")).unwrap_or_default();
    let shared = dir.join("build-shared/release/ours");
    if skip_build && checked_out.trim() == commit && release.join("ours").is_file() {
        let shared = if shared.is_file() { shared } else { release.join("ours") };
        return Ok(Baseline { release, shared });
    }
    util::banner(&format!("baseline: ours at {rev} ({commit})"));
    if src.exists() {
        let _ = git(&["worktree", "remove", "--force", &src.display().to_string()]);
        let _ = std::fs::remove_dir_all(&src);
    }
    git(&["worktree", "prune"])?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    git(&["worktree", "add", "--detach", &src.display().to_string(), &commit])?;
    let mut cmd = cargo();
    cmd.current_dir(src.join("bench"))
        .env("CARGO_TARGET_DIR", &build)
        .args(["build", "--release", "-p", "ours"]);
    util::run(&mut cmd)?;
    // Since the shared store became a feature of `ours`, the S cells' instances are a build of
    // their own; before, the measured `ours` had the store built in.
    let manifest = std::fs::read_to_string(src.join("bench/ours/Cargo.toml")).unwrap_or_default();
    let shared = if manifest.lines().any(|l| l.trim_start().starts_with("shared =")) {
        let mut cmd = cargo();
        cmd.current_dir(src.join("bench"))
            .env("CARGO_TARGET_DIR", dir.join("build-shared"))
            .args(["build", "--release", "-p", "ours", "--features", "shared"]);
        util::run(&mut cmd)?;
        shared
    } else {
        release.join("ours")
    };
    std::fs::write(dir.join("commit"), &commit).map_err(|e| format!("cannot write the baseline's commit: {e}"))?;
    Ok(Baseline { release, shared })
}

/// The builds of the `--baseline` commit.
pub(super) struct Baseline {
    /// The release directory of its `ours` as measured.
    pub(super) release: PathBuf,
    /// The `ours` its S cells run as instances (with its shared store).
    pub(super) shared: PathBuf,
}
