//! The `everything` example as a test fixture: where its binary is.

use std::path::PathBuf;

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
