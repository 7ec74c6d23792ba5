//! `cargo xtask weight`: what a server built on this library weighs beside the same server on
//! rmcp, the official SDK.
//!
//! The fixtures are the two "notes" servers of `weight/` (a workspace of its own, so that its
//! lock file pins rmcp and neither server is built by the main workspace): the same tools,
//! template resource, prompt, elicitation, progress and cancellation, nested in an axum app with
//! a tower-http layer and an API key, graceful shutdown and `--stdio`, each written the way its
//! library documents. `notes-ours` depends on `mcp-server` with the features a server behind a
//! TLS-terminating balancer picks (`http` and `stdio`, no defaults); `notes-rmcp` on rmcp with the
//! features its HTTP and stdio transports need.
//!
//! Both are built with the dev profile (a plain `cargo build`) into `target/weight`. For each it
//! reports:
//!
//! - **crates**: the distinct packages cargo compiles for the binary (its `compiler-artifact`
//!   messages: libraries, proc-macros, build scripts' packages and the binary itself), which is
//!   what a clean build compiles, whether or not this build found them fresh;
//! - **stripped**: the binary's size after `strip` (debug build, symbols and debug info gone).
//!
//! It fails when ours compiles more crates than rmcp's or its stripped binary is larger (issue
//! 26's bounds); the sizes are printed side by side with their ratio.
//!
//! `--features` adds the cost of each `mcp-server` feature: `notes-ours` built again with that
//! feature on top of the light set (the `notes-ours` features forward to `mcp-server`'s),
//! crates and stripped bytes, and the default set; the README's table comes from it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::{self, Result};

/// The features of `notes-ours` (forwarded to `mcp-server`) whose cost `--features` reports, on
/// top of the light set (`http`, `stdio`), then all of them (the defaults).
const FEATURES: &[&str] = &[
    "shared-store",
    "tls",
    "http2",
    "schema-validation",
    "auth",
    "skills",
    "events",
];

/// What `cargo xtask weight` was asked.
#[derive(Debug, Default)]
pub(crate) struct Options {
    /// Also report each `mcp-server` feature's cost.
    pub(crate) features: bool,
}

/// One build's weight.
#[derive(Debug, Clone, PartialEq)]
struct Weight {
    /// Distinct packages compiled for the binary.
    crates: usize,
    /// The stripped binary, in bytes.
    stripped: u64,
}

/// Builds both fixtures, prints their weights side by side, and fails when ours compiles more
/// crates or its stripped binary is larger.
pub(crate) fn run(opts: &Options) -> Result {
    let ours = measure("notes-ours", &[])?;
    let rmcp = measure("notes-rmcp", &[])?;
    println!();
    println!("| notes server | crates compiled | stripped binary (debug) |");
    println!("| --- | ---: | ---: |");
    println!(
        "| this library (`http`, `stdio`) | {} | {} |",
        ours.crates,
        mib(ours.stripped)
    );
    println!("| rmcp 3.11 | {} | {} |", rmcp.crates, mib(rmcp.stripped));
    println!();
    if opts.features {
        features(&ours)?;
    }
    let ratio = ours.stripped as f64 / rmcp.stripped as f64;
    let mut missed = Vec::new();
    if ours.crates > rmcp.crates {
        missed.push(format!(
            "{} crates compiled against rmcp's {}",
            ours.crates, rmcp.crates
        ));
    }
    if ours.stripped > rmcp.stripped {
        missed.push(format!(
            "{} stripped against rmcp's {} ({ratio:.2}x)",
            mib(ours.stripped),
            mib(rmcp.stripped)
        ));
    }
    if !missed.is_empty() {
        return Err(format!(
            "weight: the notes server on this library is heavier: {}",
            missed.join("; ")
        ));
    }
    println!(
        "weight: met: {} crates against rmcp's {}, stripped {ratio:.2}x rmcp's",
        ours.crates, rmcp.crates
    );
    Ok(())
}

/// Each feature's cost on top of the light set, then the default set.
fn features(light: &Weight) -> Result {
    let mut rows = Vec::new();
    for feature in FEATURES {
        rows.push((format!("+ `{feature}`"), measure("notes-ours", &[feature])?));
    }
    rows.push(("default features".to_owned(), measure("notes-ours", FEATURES)?));
    println!();
    println!("| `mcp-server` features | crates compiled | stripped binary (debug) |");
    println!("| --- | ---: | ---: |");
    println!("| `http`, `stdio` | {} | {} |", light.crates, mib(light.stripped));
    for (name, w) in rows {
        println!(
            "| {name} | {} (+{}) | {} (+{}) |",
            w.crates,
            w.crates.saturating_sub(light.crates),
            mib(w.stripped),
            kib(w.stripped.saturating_sub(light.stripped))
        );
    }
    println!();
    Ok(())
}

/// Builds `package` of the weight workspace with `features` and measures it.
fn measure(package: &str, features: &[&str]) -> Result<Weight> {
    let label = if features.is_empty() {
        package.to_owned()
    } else {
        format!("{package} +{}", features.join(","))
    };
    util::banner(&format!("weight: building {label} (dev profile)"));
    let manifest = util::root().join("weight").join("Cargo.toml");
    let target = util::target_dir().join("weight");
    let mut cmd = util::cargo();
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["-p", package, "--message-format=json-render-diagnostics"])
        .env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::piped())
        // `output()` would capture the compiler's errors too; they belong on the console.
        .stderr(Stdio::inherit());
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    let line = util::display(&cmd);
    let out = cmd.output().map_err(|e| format!("cannot run `{line}`: {e}"))?;
    util::check_status(&line, out.status)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (crates, binary) = artifacts(&stdout, package)?;
    let stripped = strip(&binary, &target.join(format!("{package}.stripped")))?;
    let weight = Weight { crates, stripped };
    println!("weight: {label}: {crates} crates, {} stripped", mib(stripped));
    Ok(weight)
}

/// The distinct packages compiled (from cargo's JSON messages) and the binary of `package`.
fn artifacts(messages: &str, package: &str) -> Result<(usize, PathBuf)> {
    let mut packages = BTreeSet::new();
    let mut binary = None;
    for message in messages.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        if let Some(id) = message["package_id"].as_str() {
            packages.insert(id.to_owned());
        }
        if message["target"]["name"] == package
            && let Some(exe) = message["executable"].as_str()
        {
            binary = Some(PathBuf::from(exe));
        }
    }
    let binary = binary.ok_or_else(|| format!("weight: cargo named no executable for {package}"))?;
    Ok((packages.len(), binary))
}

/// Copies `binary` to `to`, strips the copy, and answers its size.
fn strip(binary: &Path, to: &Path) -> Result<u64> {
    std::fs::copy(binary, to).map_err(|e| format!("cannot copy {}: {e}", binary.display()))?;
    let mut cmd = Command::new("strip");
    cmd.arg(to);
    util::run(&mut cmd)?;
    let meta = std::fs::metadata(to).map_err(|e| format!("cannot read {}: {e}", to.display()))?;
    Ok(meta.len())
}

/// Bytes as MiB with one decimal (the README's unit).
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Bytes as KiB, rounded.
fn kib(bytes: u64) -> String {
    format!("{} KiB", (bytes + 512) / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_count_packages_once_and_find_the_binary() {
        let messages = [
            r#"{"reason":"compiler-artifact","package_id":"a 1.0","target":{"name":"a","kind":["lib"]},"executable":null}"#,
            r#"{"reason":"compiler-artifact","package_id":"a 1.0","target":{"name":"build-script-build","kind":["custom-build"]},"executable":null}"#,
            r#"{"reason":"build-script-executed","package_id":"a 1.0"}"#,
            r#"{"reason":"compiler-artifact","package_id":"m 0.1","target":{"name":"m","kind":["proc-macro"]},"executable":null}"#,
            r#"{"reason":"compiler-artifact","package_id":"notes 0.1","target":{"name":"notes","kind":["bin"]},"executable":"/t/notes"}"#,
            "not json",
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        let (crates, binary) = artifacts(&messages, "notes").unwrap();
        assert_eq!(crates, 3);
        assert_eq!(binary, PathBuf::from("/t/notes"));
        assert!(artifacts(&messages, "other").is_err());
    }

    #[test]
    fn sizes_are_readable() {
        assert_eq!(mib(15 * 1024 * 1024 + 100 * 1024), "15.1 MiB");
        assert_eq!(kib(1536), "2 KiB");
    }
}
