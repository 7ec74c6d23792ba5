//! A real OpenID provider for the auth tests: `interop/oidc/provider.mjs`, panva's
//! `oidc-provider` (pinned by `interop/oidc/package-lock.json`, installed under `target/oidc` by
//! [`ensure_oidc`], run by Node 22) on loopback, plain http. [`OidcProvider::start`] runs one as
//! a child of xtask, reads the JSON line it prints once listening and kills it when dropped;
//! [`OidcProvider::env`] is what the tests get:
//!
//! - `MCP_TEST_OIDC_ISSUER`: the issuer, `http://127.0.0.1:P` (no trailing slash; discovery at
//!   `/.well-known/openid-configuration` and `/.well-known/oauth-authorization-server`).
//! - `MCP_TEST_OIDC_ADMIN`: the admin API, `http://127.0.0.1:A` (`GET /state`,
//!   `POST /rotate[?alg=RS256|ES256][&drop_old=1]`, `POST /issuers`, `DELETE /issuers?issuer=URL`).
//! - `MCP_TEST_OIDC_CLIENTS`: JSON, `{"jwt": C, "opaque": C, "jwt_short": C, "opaque_short": C,
//!   "introspector": {"client_id", "client_secret"}}` with each `C` = `{"client_id",
//!   "client_secret", "token_format": "jwt"|"opaque", "ttl": seconds}` (`client_secret_basic`).
//!
//! `provider.mjs` documents the clients, scopes, resources, DPoP and rotation. `cargo xtask oidc`
//! starts one and prints those lines; `cargo xtask oidc --smoke` runs `interop/oidc/smoke.mjs`
//! (Node's fetch and `node:crypto` only) against a provider of its own; `cargo xtask ci` runs
//! that smoke, then hands a provider to `cargo test`.

use std::fs::{self, File};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use crate::tools;
use crate::util::{self, ChildGuard, Result};

/// The packages `interop/oidc/package.json` pins, checked after installing.
pub(crate) const OIDC_PACKAGES: &[&str] = &["oidc-provider"];

/// How long the provider may take to print its JSON line (Node start and an RSA key).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Wall-clock bound of the smoke (its requests time out after 10 s each; it sleeps 3 s).
const SMOKE_TIMEOUT: Duration = Duration::from_secs(120);

/// The environment variables the tests get, in [`OidcProvider::env`] order.
pub(crate) const ENV_VARS: [&str; 3] = ["MCP_TEST_OIDC_ISSUER", "MCP_TEST_OIDC_ADMIN", "MCP_TEST_OIDC_CLIENTS"];

/// `target/oidc`.
pub(crate) fn oidc_dir() -> PathBuf {
    util::target_dir().join("oidc")
}

/// Node 22 and the scripts, once installed.
pub(crate) struct Installed {
    /// The `node` binary.
    pub(crate) node: PathBuf,
    /// `target/oidc/provider.mjs`.
    pub(crate) provider: PathBuf,
    /// `target/oidc/smoke.mjs`.
    pub(crate) smoke: PathBuf,
}

/// Ensures Node 22 ([`tools::ensure_node`]) and `interop/oidc` under `target/oidc`: `npm ci`
/// from its package-lock, reused while the lock and the pinned `oidc-provider` are unchanged;
/// the scripts are copied on every run.
pub(crate) fn ensure_oidc() -> Result<Installed> {
    let node = tools::ensure_node()?;
    let provider = tools::npm_dir(
        &util::root().join("interop/oidc"),
        &oidc_dir(),
        OIDC_PACKAGES,
        "provider.mjs",
    )?;
    let smoke = oidc_dir().join("smoke.mjs");
    if !smoke.is_file() {
        return Err(format!(
            "{} is missing",
            util::root().join("interop/oidc/smoke.mjs").display()
        ));
    }
    Ok(Installed { node, provider, smoke })
}

/// Options of one provider.
#[derive(Default)]
pub(crate) struct Settings {
    /// Access token lifetime in seconds (`None`: the script's 60).
    pub(crate) ttl: Option<u64>,
    /// Lifetime of the `*_short` clients' tokens (`None`: the script's 2).
    pub(crate) short_ttl: Option<u64>,
    /// Its stderr goes to `target/oidc/<name>.log` (`None`: inherited).
    pub(crate) log: Option<&'static str>,
}

/// A running `provider.mjs`, killed when dropped (and exiting by itself when xtask dies: it
/// holds our end of its stdin).
pub(crate) struct OidcProvider {
    child: ChildGuard,
    issuer: String,
    admin: String,
    clients: String,
    log: Option<PathBuf>,
}

impl OidcProvider {
    /// Runs `node provider.mjs --port 0 --admin-port 0 --exit-with-stdin` (the provider binds
    /// free loopback ports and says which) and reads its JSON line.
    pub(crate) fn start(installed: &Installed, settings: &Settings) -> Result<Self> {
        let mut cmd = Command::new(&installed.node);
        cmd.arg(&installed.provider)
            .args(["--port", "0", "--admin-port", "0", "--exit-with-stdin"])
            .current_dir(oidc_dir())
            .stdin(Stdio::piped());
        if let Some(ttl) = settings.ttl {
            cmd.args(["--ttl", &ttl.to_string()]);
        }
        if let Some(ttl) = settings.short_ttl {
            cmd.args(["--short-ttl", &ttl.to_string()]);
        }
        let log = match settings.log {
            Some(name) => {
                let path = oidc_dir().join(format!("{name}.log"));
                let file = File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                cmd.stderr(Stdio::from(file));
                Some(path)
            }
            None => None,
        };
        let in_log = |e: String| match &log {
            Some(path) => format!("{e}; its log is {}", path.display()),
            None => e,
        };
        let (child, first, _rest) = util::spawn_first_line(&mut cmd, START_TIMEOUT, "its JSON line").map_err(in_log)?;
        let info: serde_json::Value = serde_json::from_str(&first)
            .map_err(|e| in_log(format!("provider.mjs printed `{first}`, not a JSON line: {e}")))?;
        let field = |name: &str| {
            info[name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| in_log(format!("provider.mjs: no `{name}` in its JSON line `{first}`")))
        };
        let (issuer, admin) = (field("issuer")?, field("admin")?);
        if !info["clients"].is_object() {
            return Err(in_log(format!("provider.mjs: no `clients` in its JSON line `{first}`")));
        }
        let clients = info["clients"].to_string();
        println!(
            "oidc: issuer {issuer} (signing {} {}), admin {admin}{}",
            info["signing"]["alg"].as_str().unwrap_or("?"),
            info["signing"]["kid"].as_str().unwrap_or("?"),
            log.as_ref()
                .map(|path| format!(", log {}", path.display()))
                .unwrap_or_default()
        );
        Ok(Self {
            child,
            issuer,
            admin,
            clients,
            log,
        })
    }

    /// `http://127.0.0.1:P`.
    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
    }

    /// `http://127.0.0.1:A`.
    pub(crate) fn admin(&self) -> &str {
        &self.admin
    }

    /// The `clients` object of the JSON line, as JSON.
    pub(crate) fn clients(&self) -> &str {
        &self.clients
    }

    /// `(name, value)` of each of [`ENV_VARS`].
    pub(crate) fn env(&self) -> [(&'static str, &str); 3] {
        [
            (ENV_VARS[0], self.issuer()),
            (ENV_VARS[1], self.admin()),
            (ENV_VARS[2], self.clients()),
        ]
    }

    /// Fails if the provider has exited (it should serve until dropped).
    pub(crate) fn ensure_running(&mut self) -> Result {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!(
                "the OpenID provider {} exited ({}){}",
                self.issuer,
                util::describe(status),
                self.log
                    .as_ref()
                    .map(|path| format!("; its log is {}", path.display()))
                    .unwrap_or_default()
            )),
        }
    }
}

/// Runs `smoke.mjs` against a provider of its own (the smoke rotates its keys).
pub(crate) fn smoke(installed: &Installed) -> Result {
    let settings = Settings {
        log: Some("smoke-provider"),
        ..Settings::default()
    };
    let mut provider = OidcProvider::start(installed, &settings)?;
    let mut cmd = Command::new(&installed.node);
    cmd.arg(&installed.smoke).current_dir(oidc_dir()).stdin(Stdio::null());
    for (name, value) in provider.env() {
        cmd.env(name, value);
    }
    let line = util::display(&cmd);
    let status = util::run_with_timeout(&mut cmd, SMOKE_TIMEOUT)?;
    provider.ensure_running()?;
    util::check_status(&line, status).map_err(|e| format!("the OpenID provider smoke failed: {e}"))
}

/// `cargo xtask oidc` options.
#[derive(Default)]
pub(crate) struct Options {
    /// Run the smoke instead of serving.
    pub(crate) smoke: bool,
    /// See [`Settings::ttl`].
    pub(crate) ttl: Option<u64>,
    /// See [`Settings::short_ttl`].
    pub(crate) short_ttl: Option<u64>,
}

/// `cargo xtask oidc`: installs, then either runs the smoke or starts a provider, prints the
/// test environment (also written to `target/oidc/env`) and serves until interrupted.
pub(crate) fn run(opts: &Options) -> Result {
    let installed = ensure_oidc()?;
    if opts.smoke {
        util::banner("oidc: smoke");
        return smoke(&installed);
    }
    let settings = Settings {
        ttl: opts.ttl,
        short_ttl: opts.short_ttl,
        log: None,
    };
    let mut provider = OidcProvider::start(&installed, &settings)?;
    let lines: String = provider
        .env()
        .iter()
        .map(|(name, value)| format!("{name}={}\n", util::shell_quote(value)))
        .collect();
    let env_file = oidc_dir().join("env");
    fs::write(&env_file, &lines).map_err(|e| format!("cannot write {}: {e}", env_file.display()))?;
    println!(
        "\n{lines}\n(also in {}: `set -a; . {0}; set +a` in another shell, then `cargo test`)\nserving until interrupted (Ctrl-C)",
        env_file.display()
    );
    loop {
        provider.ensure_running()?;
        thread::sleep(Duration::from_millis(500));
    }
}
