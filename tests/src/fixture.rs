//! The `everything` example as a test fixture: where its binary is, and a process of it on a
//! free port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The `everything` example's binary, `target/<profile>/examples/everything` beside the running
/// test's directory. `cargo test` of the workspace builds it; a suite run alone needs
/// `cargo build -p mcp-server --example everything` first (the assertion says so).
pub fn everything() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>");
    let path = profile.join("examples").join("everything");
    assert!(
        path.exists(),
        "{} is missing: `cargo test` of the workspace builds it (`cargo build -p mcp-server --example everything`)",
        path.display()
    );
    path
}

/// Spawns `everything` with `args` (its stdin closed, its stderr the test's, killed when
/// dropped) and reads its stdout lines: `first` and `more` after it, each within 30 s. The rest
/// of its stdout is drained, so that it never blocks on it.
async fn spawn(args: &[&str], more: usize) -> (Child, String, Vec<String>) {
    let mut child = Command::new(everything())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("everything starts");
    let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("everything prints within 30 s")
            .expect("its stdout")
            .expect("a line (a set-up error exits before it)")
    };
    let first = next().await;
    let mut after = Vec::with_capacity(more);
    for _ in 0..more {
        after.push(next().await);
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, first, after)
}

/// Starts `everything` on `127.0.0.1:0` with `args` besides (its stdin closed, its stderr the
/// test's, killed when dropped) and waits, 30 s at most, for the line naming its endpoint and
/// for `more` lines after it (`--metrics` prints a second one): the process, the endpoint's
/// address and those lines. The rest of its stdout is drained, so that it never blocks on it.
pub async fn start_everything(args: &[&str], more: usize) -> (Child, SocketAddr, Vec<String>) {
    let all: Vec<&str> = ["--host", "127.0.0.1", "--port", "0"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let (child, first, after) = spawn(&all, more).await;
    let endpoint = first
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"));
    let addr = endpoint.trim_end_matches("/mcp").parse().expect("an address");
    (child, addr, after)
}

/// Starts `everything --role worker` with `args` besides (its stdin closed, its stderr the
/// test's, killed when dropped) and waits, 30 s at most, for the line saying it runs.
pub async fn start_worker(args: &[&str]) -> Child {
    let all: Vec<&str> = ["--role", "worker"].into_iter().chain(args.iter().copied()).collect();
    let (child, first, _) = spawn(&all, 0).await;
    assert_eq!(first, "worker running", "unexpected first line");
    child
}
