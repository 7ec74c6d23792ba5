//! The load balancers of the scale-out legs: [`Balancer::Rr`], the `rr-proxy` binary of the
//! `mcp-tests` crate (a new instance on every request), and two real ones from the distribution,
//! [`Balancer::Nginx`] and [`Balancer::Haproxy`] (Debian's `nginx` and `haproxy` packages,
//! installed with apt-get when missing).
//!
//! [`RunningBalancer::start`] runs one in front of N backends, as a foreground child of xtask
//! listening on a free loopback port, and kills it when dropped; no system service is used.
//! nginx and HAProxy run from the configuration templates `xtask/balancers/nginx.conf` and
//! `xtask/balancers/haproxy.cfg` (quoted in `docs/DEPLOYMENT.md`): plain round robin, no
//! stickiness, HTTP/1.1 keep-alive to the backends, SSE unbuffered, long idle timeouts. Their
//! placeholders (`@LISTEN@`, `@STATS@` and a line `@SERVERS@`, on lines that are not comments)
//! are replaced here and the result is written under `target/balancers/<name>-<port>/`, with
//! the balancer's own logs:
//!
//! - nginx: `nginx -p <dir> -e <dir>/error.log -c <dir>/nginx.conf -g 'daemon off;
//!   master_process off;'` (one process, so killing it leaves nothing behind); the requests each
//!   backend served are counted from `$upstream_addr` in `<dir>/access.log`;
//! - HAProxy: `haproxy -f <dir>/haproxy.cfg -db`; the requests each backend served are the
//!   `stot` column of `GET /stats;csv` on its second, stats-only loopback frontend.

use std::fs::{self, File};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::util::{self, ChildGuard, Listening, Result};

/// The nginx template (placeholders `@LISTEN@` and `@SERVERS@`).
const NGINX_TEMPLATE: &str = include_str!("../balancers/nginx.conf");

/// The HAProxy template (placeholders `@LISTEN@`, `@STATS@` and `@SERVERS@`).
const HAPROXY_TEMPLATE: &str = include_str!("../balancers/haproxy.cfg");

/// The HAProxy backend the template names (the `pxname` of its servers in the stats).
const HAPROXY_BACKEND: &str = "instances";

/// How long a balancer may take to listen (`rr-proxy`: to print its `listening on …` line).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A load balancer the scale-out legs can run behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Balancer {
    /// `rr-proxy`, the project's own round-robin proxy.
    Rr,
    /// nginx, from the `nginx` package.
    Nginx,
    /// HAProxy, from the `haproxy` package.
    Haproxy,
}

impl Balancer {
    /// Every balancer, in the order `--balancer all` runs them.
    pub(crate) const ALL: [Balancer; 3] = [Balancer::Rr, Balancer::Nginx, Balancer::Haproxy];

    /// Its name on the command line and in paths: `rr`, `nginx` or `haproxy`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Balancer::Rr => "rr",
            Balancer::Nginx => "nginx",
            Balancer::Haproxy => "haproxy",
        }
    }

    /// The balancer named `name` (see [`Balancer::name`]).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|balancer| balancer.name() == name)
    }

    /// Its name in messages.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Balancer::Rr => "rr-proxy",
            Balancer::Nginx => "nginx",
            Balancer::Haproxy => "HAProxy",
        }
    }

    /// Its binary, ready to run: the debug `rr-proxy` (built with `cargo build -p mcp-tests
    /// --bin rr-proxy` unless `skip_build`, a no-op after `cargo test`), or `nginx` or
    /// `haproxy` from the system, installed with apt-get when missing.
    pub(crate) fn prepare(self, skip_build: bool) -> Result<PathBuf> {
        match self {
            Balancer::Rr => {
                if !skip_build {
                    util::run(util::cargo().args(["build", "-p", "mcp-tests", "--bin", "rr-proxy"]))?;
                }
                let binary = util::target_dir().join("debug/rr-proxy");
                if binary.is_file() {
                    Ok(binary)
                } else {
                    Err(format!(
                        "{} does not exist: build it with `cargo build -p mcp-tests --bin rr-proxy`",
                        binary.display()
                    ))
                }
            }
            Balancer::Nginx => util::ensure_system_binary("nginx", "nginx"),
            Balancer::Haproxy => util::ensure_system_binary("haproxy", "haproxy"),
        }
    }
}

/// A balancer running in front of backends on loopback; killed when dropped.
pub(crate) struct RunningBalancer {
    kind: Balancer,
    /// The port it listens on, at 127.0.0.1.
    pub(crate) port: u16,
    /// The backends' ports, in the order of [`RunningBalancer::counts`].
    backends: Vec<u16>,
    process: Process,
}

enum Process {
    Rr {
        process: Listening,
        /// Its commands (`counts`).
        stdin: ChildStdin,
    },
    Nginx {
        child: ChildGuard,
        dir: PathBuf,
    },
    Haproxy {
        child: ChildGuard,
        dir: PathBuf,
        stats_port: u16,
    },
}

impl RunningBalancer {
    /// Starts `kind` (its binary from [`Balancer::prepare`]) on a free loopback port in front of
    /// the backends `http://127.0.0.1:<port>` of `backends`, and waits until it listens.
    pub(crate) fn start(kind: Balancer, binary: &Path, backends: &[u16]) -> Result<Self> {
        if kind == Balancer::Rr {
            return start_rr(binary, backends);
        }
        // Another process may take a port between its choice and the bind: retry.
        let mut last = String::new();
        for _ in 0..3 {
            match start_configured(kind, binary, backends)? {
                Ok(running) => return Ok(running),
                Err(exited) => {
                    eprintln!("xtask: {exited}; retrying on other ports");
                    last = exited;
                }
            }
        }
        Err(last)
    }

    /// Its URL with no path: `http://127.0.0.1:P`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests it sent to each backend so far, in the order of the backends it was started
    /// with (for nginx, the requests that have ended: a stream still open is not counted yet).
    pub(crate) fn counts(&mut self) -> Result<Vec<u64>> {
        match &mut self.process {
            Process::Rr { process, stdin } => rr_counts(process, stdin),
            Process::Nginx { dir, .. } => {
                let log = dir.join("access.log");
                let text = fs::read_to_string(&log).map_err(|e| format!("cannot read {}: {e}", log.display()))?;
                Ok(nginx_counts(&text, &self.backends))
            }
            Process::Haproxy { stats_port, .. } => {
                let csv = http_get(*stats_port, "/stats;csv")?;
                haproxy_counts(&csv, self.backends.len())
            }
        }
    }

    /// Fails if it has exited (it should serve until dropped).
    pub(crate) fn ensure_running(&mut self) -> Result {
        let (child, dir) = match &mut self.process {
            Process::Rr { process, .. } => (&mut process.child, None),
            Process::Nginx { child, dir } | Process::Haproxy { child, dir, .. } => (child, Some(dir)),
        };
        match child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!(
                "{} on port {} exited ({}){}",
                self.kind.title(),
                self.port,
                util::describe(status),
                dir.map_or_else(String::new, |dir| format!("; its logs are under {}", dir.display()))
            )),
        }
    }
}

/// Starts `rr-proxy --listen 127.0.0.1:0 --backend B…` and reads its `listening on
/// http://127.0.0.1:P` line (port 0: no other process can take the port in between).
fn start_rr(binary: &Path, backends: &[u16]) -> Result<RunningBalancer> {
    let mut cmd = Command::new(binary);
    cmd.args(["--listen", "127.0.0.1:0"]).current_dir(util::root());
    for port in backends {
        cmd.args(["--backend", &format!("http://127.0.0.1:{port}")]);
    }
    cmd.stdin(Stdio::piped()).stderr(Stdio::inherit());
    let mut process = util::spawn_listening(&mut cmd, START_TIMEOUT)?;
    let port = process
        .url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|port| port.parse::<u16>().ok())
        .ok_or_else(|| {
            format!(
                "rr-proxy: expected `listening on http://127.0.0.1:P`, got `{}`",
                process.url
            )
        })?;
    let stdin = process.child.take_stdin().ok_or("rr-proxy: stdin is piped")?;
    Ok(RunningBalancer {
        kind: Balancer::Rr,
        port,
        backends: backends.to_vec(),
        process: Process::Rr { process, stdin },
    })
}

/// `rr-proxy`'s counts: `counts` on its stdin, `counts N0 N1 …` back.
fn rr_counts(process: &mut Listening, stdin: &mut ChildStdin) -> Result<Vec<u64>> {
    // Drop the lines nobody asked for.
    while process.lines.try_recv().is_ok() {}
    writeln!(stdin, "counts")
        .and_then(|()| stdin.flush())
        .map_err(|e| format!("rr-proxy: cannot write its stdin: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match process.lines.recv_timeout(left) {
            Ok(line) => {
                if let Some(numbers) = line.trim().strip_prefix("counts ") {
                    return numbers
                        .split_whitespace()
                        .map(|n| n.parse::<u64>().map_err(|e| format!("rr-proxy: bad count `{n}`: {e}")))
                        .collect();
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err("rr-proxy did not answer `counts` within 10 s".to_owned());
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("rr-proxy closed its stdout before answering `counts`".to_owned());
            }
        }
    }
}

/// One attempt at starting nginx or HAProxy on fresh ports: `Ok(Err(why))` when it exited
/// before listening (worth other ports).
fn start_configured(
    kind: Balancer,
    binary: &Path,
    backends: &[u16],
) -> Result<std::result::Result<RunningBalancer, String>> {
    let port = util::free_port()?;
    let stats_port = match kind {
        Balancer::Haproxy => Some(util::free_port()?),
        _ => None,
    };
    let dir = util::target_dir()
        .join("balancers")
        .join(format!("{}-{port}", kind.name()));
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("cannot clean {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let listen = format!("127.0.0.1:{port}");
    let (config, text, output, mut cmd) = match kind {
        Balancer::Nginx => {
            let servers: Vec<String> = backends
                .iter()
                .map(|backend| format!("        server 127.0.0.1:{backend};"))
                .collect();
            let text = render(NGINX_TEMPLATE, &[("@LISTEN@", listen.as_str())], &servers)?;
            let config = dir.join("nginx.conf");
            let mut cmd = Command::new(binary);
            // A trailing slash: nginx appends relative paths to the prefix as it is.
            cmd.arg("-p")
                .arg(format!("{}/", dir.display()))
                .arg("-e")
                .arg(dir.join("error.log"))
                .arg("-c")
                .arg(&config)
                .args(["-g", "daemon off; master_process off;"]);
            (config, text, dir.join("nginx.out"), cmd)
        }
        _ => {
            let stats = format!("127.0.0.1:{}", stats_port.unwrap_or_default());
            let servers: Vec<String> = backends
                .iter()
                .enumerate()
                .map(|(i, backend)| format!("    server mcp{} 127.0.0.1:{backend} check", i + 1))
                .collect();
            let text = render(
                HAPROXY_TEMPLATE,
                &[("@LISTEN@", listen.as_str()), ("@STATS@", stats.as_str())],
                &servers,
            )?;
            let config = dir.join("haproxy.cfg");
            let mut cmd = Command::new(binary);
            cmd.arg("-f").arg(&config).arg("-db");
            (config, text, dir.join("haproxy.out"), cmd)
        }
    };
    fs::write(&config, text).map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let out = File::create(&output).map_err(|e| format!("cannot create {}: {e}", output.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot open {}: {e}", output.display()))?;
    cmd.current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    println!("$ {} >{} 2>&1 &", util::display(&cmd), output.display());
    let mut child = ChildGuard::spawn(&mut cmd)?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Err(format!(
                "{} exited ({}) before listening on {listen}: {}",
                kind.title(),
                util::describe(status),
                last_lines(&output, &dir.join("error.log"))
            )));
        }
        if accepts(port) && stats_port.is_none_or(accepts) {
            println!(
                "{}: http://{listen} is up (its files under {})",
                kind.title(),
                dir.display()
            );
            let process = match stats_port {
                Some(stats_port) => Process::Haproxy { child, dir, stats_port },
                None => Process::Nginx { child, dir },
            };
            return Ok(Ok(RunningBalancer {
                kind,
                port,
                backends: backends.to_vec(),
                process,
            }));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} did not listen on {listen} within {} s; its files are under {}",
                kind.title(),
                START_TIMEOUT.as_secs(),
                dir.display()
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// The template with each placeholder of `values` replaced and the line `@SERVERS@` replaced by
/// `servers`, on every line that is not a comment (comments name the placeholders). Fails if
/// a placeholder is missing from the template or one is left.
fn render(template: &str, values: &[(&str, &str)], servers: &[String]) -> Result<String> {
    let mut out = String::with_capacity(template.len() + servers.len() * 48);
    let mut seen = vec![false; values.len()];
    let mut servers_seen = false;
    for line in template.lines() {
        if line.trim_start().starts_with('#') {
            out.push_str(line);
        } else if line.trim() == "@SERVERS@" {
            servers_seen = true;
            out.push_str(&servers.join("\n"));
        } else {
            let mut line = line.to_owned();
            for ((placeholder, value), seen) in values.iter().zip(&mut seen) {
                if line.contains(placeholder) {
                    *seen = true;
                    line = line.replace(placeholder, value);
                }
            }
            if let Some(at) = line.find('@').filter(|&at| line[at + 1..].contains('@')) {
                return Err(format!(
                    "a placeholder is left in the balancer template: `{}`",
                    &line[at..]
                ));
            }
            out.push_str(&line);
        }
        out.push('\n');
    }
    let missing: Vec<&str> = values
        .iter()
        .zip(&seen)
        .filter(|(_, seen)| !**seen)
        .map(|((placeholder, _), _)| *placeholder)
        .chain((!servers_seen).then_some("@SERVERS@"))
        .collect();
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!("the balancer template lacks {}", missing.join(", ")))
    }
}

/// Requests per backend port in an nginx access log of the template's format: the addresses of
/// `upstream=$upstream_addr` on each line (several when nginx tried more than one backend).
fn nginx_counts(log: &str, backends: &[u16]) -> Vec<u64> {
    let mut counts = vec![0; backends.len()];
    for line in log.lines() {
        let Some((_, rest)) = line.split_once(" upstream=") else {
            continue;
        };
        let addrs = rest.split(" request_time=").next().unwrap_or(rest);
        for addr in addrs.split([',', ':', ' ']).filter(|part| !part.is_empty()) {
            // `127.0.0.1`, `3001`, …: the ports are what tells the backends apart.
            if let Ok(port) = addr.parse::<u16>()
                && let Some(i) = backends.iter().position(|&backend| backend == port)
            {
                counts[i] += 1;
            }
        }
    }
    counts
}

/// Requests per backend from HAProxy's `show stat` CSV: the `stot` column of the servers
/// `mcp1` … `mcpN` of the template's backend.
fn haproxy_counts(csv: &str, backends: usize) -> Result<Vec<u64>> {
    let mut lines = csv.lines();
    let header = lines
        .next()
        .and_then(|line| line.strip_prefix("# "))
        .ok_or_else(|| format!("HAProxy stats: no CSV header in `{}`", csv.lines().next().unwrap_or("")))?;
    let columns: Vec<&str> = header.split(',').collect();
    let column = |name: &str| {
        columns
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| format!("HAProxy stats: no `{name}` column"))
    };
    let (px, sv, stot) = (column("pxname")?, column("svname")?, column("stot")?);
    let mut counts = vec![None; backends];
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.get(px) != Some(&HAPROXY_BACKEND) {
            continue;
        }
        let Some(i) = fields
            .get(sv)
            .and_then(|name| name.strip_prefix("mcp"))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| (1..=backends).contains(n))
        else {
            continue;
        };
        let value = fields.get(stot).copied().unwrap_or("");
        counts[i - 1] = Some(
            value
                .parse::<u64>()
                .map_err(|e| format!("HAProxy stats: bad stot `{value}` for mcp{i}: {e}"))?,
        );
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| count.ok_or_else(|| format!("HAProxy stats: no row for server mcp{}", i + 1)))
        .collect()
}

/// `GET path` on `127.0.0.1:port` with `Connection: close`: the body of a 200 answer (HAProxy
/// sends its statistics chunked).
fn http_get(port: u16, path: &str) -> Result<String> {
    let what = format!("GET http://127.0.0.1:{port}{path}");
    let timeout = Duration::from_secs(5);
    let mut stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), timeout)
        .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {e}"))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("{what}: {e}"))?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(|e| format!("{what}: {e}"))?;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{what}: no complete answer"))?;
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("{what}: `{status}`"));
    }
    let chunked = head.lines().skip(1).any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("transfer-encoding") && value.to_ascii_lowercase().contains("chunked")
        })
    });
    if chunked {
        dechunk(body).ok_or_else(|| format!("{what}: a malformed chunked body"))
    } else {
        Ok(body.to_owned())
    }
}

/// A complete `Transfer-Encoding: chunked` body, decoded (`None` if it is not one).
fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size_line, rest) = body.split_once("\r\n")?;
        let size_hex = size_line.split(';').next()?.trim();
        let size = usize::from_str_radix(size_hex, 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}

/// Something accepts connections on `127.0.0.1:port`.
fn accepts(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).is_ok()
}

/// The last lines of a balancer's output and error log, for a message.
fn last_lines(output: &Path, error_log: &Path) -> String {
    let mut lines: Vec<String> = [output, error_log]
        .iter()
        .filter_map(|file| fs::read_to_string(file).ok())
        .flat_map(|text| text.lines().map(str::to_owned).collect::<Vec<_>>())
        .filter(|line| !line.trim().is_empty())
        .collect();
    let keep = lines.len().saturating_sub(5);
    lines.drain(..keep);
    if lines.is_empty() {
        format!("nothing in {}", output.display())
    } else {
        lines.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|line| (*line).to_owned()).collect()
    }

    #[test]
    fn the_nginx_template_renders_with_the_settings_that_matter() {
        let text = render(
            NGINX_TEMPLATE,
            &[("@LISTEN@", "127.0.0.1:8080")],
            &servers(&["        server 127.0.0.1:3001;", "        server 127.0.0.1:3002;"]),
        )
        .unwrap();
        assert_settings(
            &text,
            &[
                "listen 127.0.0.1:8080;",
                "server 127.0.0.1:3001;",
                "server 127.0.0.1:3002;",
                "keepalive 32;",
                "proxy_http_version 1.1;",
                "proxy_set_header Connection \"\";",
                "proxy_set_header Host $http_host;",
                "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
                "proxy_buffering off;",
                "proxy_request_buffering off;",
                "proxy_cache off;",
                "proxy_read_timeout 1h;",
                "proxy_send_timeout 1h;",
            ],
            &["ip_hash", "hash "],
        );
    }

    #[test]
    fn the_haproxy_template_renders_with_the_settings_that_matter() {
        let text = render(
            HAPROXY_TEMPLATE,
            &[("@LISTEN@", "127.0.0.1:8080"), ("@STATS@", "127.0.0.1:8081")],
            &servers(&["    server mcp1 127.0.0.1:3001 check"]),
        )
        .unwrap();
        assert_settings(
            &text,
            &[
                "bind 127.0.0.1:8080",
                "bind 127.0.0.1:8081",
                "server mcp1 127.0.0.1:3001 check",
                "mode http",
                "balance roundrobin",
                "option http-no-delay",
                "option forwardfor",
                "option abortonclose",
                "timeout connect 5s",
                "timeout client 1h",
                "timeout server 1h",
                "timeout tunnel 1h",
                "http-reuse safe",
                "backend instances",
            ],
            &["option http-server-close", "stick"],
        );
    }

    /// Every `needed` line is in the rendered configuration's code (comments aside), no
    /// placeholder is left, and no line starts with a `forbidden` directive.
    fn assert_settings(text: &str, needed: &[&str], forbidden: &[&str]) {
        let code: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with('#'))
            .collect();
        for line in needed {
            assert!(code.contains(line), "the configuration lacks `{line}`");
        }
        assert!(!code.iter().any(|line| line.contains('@')), "a placeholder is left");
        for directive in forbidden {
            assert!(
                !code.iter().any(|line| line.starts_with(directive)),
                "the configuration sets `{directive}`"
            );
        }
    }

    #[test]
    fn a_template_without_a_placeholder_is_refused() {
        assert!(render("listen 80;\n@SERVERS@\n", &[("@LISTEN@", "x")], &[]).is_err());
        assert!(render("listen @LISTEN@;\n", &[("@LISTEN@", "x")], &[]).is_err());
        assert!(render("listen @LISTEN@;\n@SERVERS@\n@OTHER@\n", &[("@LISTEN@", "x")], &[]).is_err());
    }

    #[test]
    fn nginx_requests_are_counted_per_upstream_address() {
        let log = "\
127.0.0.1 [03/Dec/2026:08:30:27 +0000] \"POST /mcp HTTP/1.1\" 200 333 upstream=127.0.0.1:3001 request_time=0.003
127.0.0.1 [03/Dec/2026:08:30:27 +0000] \"POST /mcp HTTP/1.1\" 200 333 upstream=127.0.0.1:3002 request_time=0.003
127.0.0.1 [03/Dec/2026:08:30:27 +0000] \"GET /mcp HTTP/1.1\" 502 0 upstream=127.0.0.1:3001, 127.0.0.1:3002 request_time=0.010
127.0.0.1 [03/Dec/2026:08:30:27 +0000] \"GET /x HTTP/1.1\" 400 0 upstream=- request_time=0.000
";
        assert_eq!(nginx_counts(log, &[3001, 3002, 3003]), vec![2, 2, 0]);
    }

    #[test]
    fn haproxy_requests_are_the_stot_of_each_server() {
        let csv = "\
# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin
mcp,FRONTEND,,,0,2,4096,5,0
instances,mcp1,0,0,0,1,,3,0
instances,mcp2,0,0,0,1,,2,0
instances,BACKEND,0,0,0,1,410,5,0
stats,FRONTEND,,,1,1,4096,1,0
";
        assert_eq!(haproxy_counts(csv, 2).unwrap(), vec![3, 2]);
        assert!(haproxy_counts(csv, 3).is_err());
        assert!(haproxy_counts("nothing", 1).is_err());
    }

    #[test]
    fn the_deployment_guide_quotes_the_templates_as_they_are() {
        let guide = include_str!("../../docs/DEPLOYMENT.md");
        assert!(guide.contains(&format!("```nginx\n{NGINX_TEMPLATE}```")));
        assert!(guide.contains(&format!("```haproxy\n{HAPROXY_TEMPLATE}```")));
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        assert_eq!(
            dechunk("5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\n\r\n").as_deref(),
            Some("hello, world")
        );
        assert_eq!(dechunk("5\r\nhel"), None);
        assert_eq!(dechunk("zz\r\n"), None);
    }

    #[test]
    fn balancers_are_named() {
        for balancer in Balancer::ALL {
            assert_eq!(Balancer::parse(balancer.name()), Some(balancer));
        }
        assert_eq!(Balancer::parse("all"), None);
    }
}
