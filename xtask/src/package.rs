//! `cargo xtask package`: the crates that are published, ready to be. Each workspace member
//! not marked `publish = false` must carry the metadata crates.io shows (description, license,
//! repository, documentation, readme, 1 to 5 keywords, categories), then `cargo package` builds
//! every one of them from the archive it would upload (path dependencies resolved against the
//! others' archives), so a file the build reads from outside its crate fails here, not on
//! publication.

use serde_json::Value;

use crate::util::{self, Result};

/// The most keywords crates.io takes.
const MAX_KEYWORDS: usize = 5;

/// Checks the metadata of every published crate, then packages them all, verified
/// (`allow_dirty`: with uncommitted changes in the work tree).
pub(crate) fn run(allow_dirty: bool) -> Result {
    util::banner("package metadata");
    let crates = published()?;
    let mut missing = Vec::new();
    for krate in &crates {
        missing.extend(lacks(krate).into_iter().map(|what| format!("{}: {what}", name(krate))));
    }
    if !missing.is_empty() {
        return Err(format!("crates not ready to publish: {}", missing.join("; ")));
    }
    let names: Vec<&str> = crates.iter().map(name).collect();
    println!("published crates: {}", names.join(", "));
    util::banner("cargo package (verified)");
    let mut cmd = util::cargo();
    cmd.arg("package");
    if allow_dirty {
        cmd.arg("--allow-dirty");
    }
    for n in &names {
        cmd.args(["-p", n]);
    }
    util::run(&mut cmd)
}

/// The workspace members that are published (`publish` not `false`), from `cargo metadata`.
fn published() -> Result<Vec<Value>> {
    let mut cmd = util::cargo();
    cmd.args(["metadata", "--format-version", "1", "--no-deps"]);
    let line = util::display(&cmd);
    let out = cmd.output().map_err(|e| format!("cannot run `{line}`: {e}"))?;
    if !out.status.success() {
        return Err(format!("`{line}` failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let meta: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("`{line}`: {e}"))?;
    let packages = meta["packages"].as_array().cloned().unwrap_or_default();
    Ok(packages
        .into_iter()
        .filter(|p| p["publish"].as_array().is_none_or(|registries| !registries.is_empty()))
        .collect())
}

fn name(krate: &Value) -> &str {
    krate["name"].as_str().unwrap_or("?")
}

/// What a crate lacks to be published well (nothing when it is ready).
fn lacks(krate: &Value) -> Vec<String> {
    let mut lacks = Vec::new();
    for field in ["description", "license", "repository", "documentation", "readme"] {
        if krate[field].as_str().is_none_or(str::is_empty) {
            lacks.push(format!("no {field}"));
        }
    }
    let keywords = krate["keywords"].as_array().map_or(0, Vec::len);
    if !(1..=MAX_KEYWORDS).contains(&keywords) {
        lacks.push(format!("{keywords} keywords (1 to {MAX_KEYWORDS})"));
    }
    if krate["categories"].as_array().is_none_or(Vec::is_empty) {
        lacks.push("no categories".to_owned());
    }
    lacks
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_complete_manifest_lacks_nothing() {
        let ready = json!({
            "name": "a", "description": "d", "license": "MIT", "repository": "https://x",
            "documentation": "https://docs.rs/a", "readme": "README.md",
            "keywords": ["mcp"], "categories": ["network-programming"],
        });
        assert!(lacks(&ready).is_empty());
    }

    #[test]
    fn each_missing_field_is_named() {
        let bare = json!({"name": "a", "description": "", "keywords": ["1", "2", "3", "4", "5", "6"]});
        assert_eq!(
            lacks(&bare),
            [
                "no description",
                "no license",
                "no repository",
                "no documentation",
                "no readme",
                "6 keywords (1 to 5)",
                "no categories",
            ]
        );
    }
}
