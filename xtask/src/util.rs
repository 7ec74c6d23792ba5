//! Helpers shared by the commands: paths, subprocesses that are killed when dropped, and the
//! `everything` example (its build, and starting it as an HTTP server on a free port).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Every failure is a one-line reason; `main` prints it and exits non-zero.
pub(crate) type Result<T = ()> = std::result::Result<T, String>;

/// How long the `everything` example may take to print its `listening on …` line.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The workspace root (the parent of this crate).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` if set, else `<root>/target`.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                std::env::current_dir().unwrap_or_else(|_| root()).join(dir)
            }
        }
        _ => root().join("target"),
    }
}

/// Prints the banner that opens a step.
pub(crate) fn banner(title: &str) {
    println!("\n==> {title}");
}

/// `cargo`, as the one running this xtask (`$CARGO`), else from `PATH`.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// A command line for messages, each argument quoted as a POSIX shell would need.
pub(crate) fn display(cmd: &Command) -> String {
    let mut line = shell_quote(cmd.get_program());
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&shell_quote(arg));
    }
    line
}

/// Quotes one word for a POSIX shell (and for Python's `shlex.split`).
pub(crate) fn shell_quote(word: impl AsRef<OsStr>) -> String {
    let word = word.as_ref().to_string_lossy();
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,%".contains(c));
    if plain {
        word.into_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Runs a command with inherited stdio and fails unless it exits with status 0.
pub(crate) fn run(cmd: &mut Command) -> Result {
    let status = run_status(cmd)?;
    check_status(&display(cmd), status)
}

/// Runs a command with inherited stdio and returns its exit status.
pub(crate) fn run_status(cmd: &mut Command) -> Result<ExitStatus> {
    let line = display(cmd);
    println!("$ {line}");
    cmd.status().map_err(|e| format!("cannot run `{line}`: {e}"))
}

/// Runs a command with inherited stdio, killing it after `timeout`.
pub(crate) fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<ExitStatus> {
    let line = display(cmd);
    println!("$ {line}");
    let mut child = ChildGuard::spawn(cmd)?;
    child.wait_timeout(timeout)
}

/// Fails with the command line and its exit status unless it succeeded.
pub(crate) fn check_status(line: &str, status: ExitStatus) -> Result {
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{line}` failed ({})", describe(status)))
    }
}

/// "exit code N" or "killed by signal N".
pub(crate) fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// A child process that is killed (and reaped) when the guard is dropped: on success, on an
/// error return and on a panic alike.
pub(crate) struct ChildGuard {
    child: Child,
    line: String,
}

impl ChildGuard {
    /// Spawns `cmd`.
    pub(crate) fn spawn(cmd: &mut Command) -> Result<Self> {
        let line = display(cmd);
        let child = cmd.spawn().map_err(|e| format!("cannot start `{line}`: {e}"))?;
        Ok(Self { child, line })
    }

    /// The child's process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child's piped stdout (once).
    pub(crate) fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// The child's piped stderr (once).
    pub(crate) fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// The child's piped stdin (once).
    pub(crate) fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// The exit status if the child has exited.
    pub(crate) fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        self.child
            .try_wait()
            .map_err(|e| format!("cannot poll `{}`: {e}", self.line))
    }

    /// Waits for the child; kills it and fails after `timeout`.
    pub(crate) fn wait_timeout(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(format!(
                    "`{}` did not finish within {} s: killed",
                    self.line,
                    timeout.as_secs()
                ));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port that was free a moment ago.
pub(crate) fn free_port() -> Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// Where system binaries are looked for after `PATH` (daemons live in `sbin`, often not on a
/// user's `PATH`).
const SYSTEM_DIRS: &[&str] = &["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"];

/// `binary` from `PATH` or [`SYSTEM_DIRS`], else the distribution's `package` installed with
/// `apt-get update` and `apt-get install -y --no-install-recommends <package>`
/// (non-interactive; as root, else through `sudo -n`), and `binary` found then. Only the
/// binary is used: a system service the package may set up is left alone.
pub(crate) fn ensure_system_binary(binary: &str, package: &str) -> Result<PathBuf> {
    if let Some(found) = find_system_binary(binary) {
        return Ok(found);
    }
    banner(&format!(
        "{binary} is missing: installing it (apt-get install {package})"
    ));
    if !Path::new("/usr/bin/apt-get").is_file() {
        return Err(format!(
            "{binary} is not installed and there is no apt-get to install it: install {package} ({binary} on PATH)"
        ));
    }
    let root = is_root();
    let apt = |args: &[&str]| {
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.args(["-n", "apt-get"]);
            sudo
        };
        cmd.args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null());
        cmd
    };
    let hint = if root {
        String::new()
    } else {
        format!(" (not root: `sudo -n` needs password-less sudo; or install {package} yourself)")
    };
    run(&mut apt(&["update"])).map_err(|e| format!("{e}{hint}"))?;
    run(&mut apt(&["install", "-y", "--no-install-recommends", package])).map_err(|e| format!("{e}{hint}"))?;
    find_system_binary(binary).ok_or_else(|| format!("`apt-get install {package}` succeeded but no {binary} is found"))
}

/// `binary` in a directory of `PATH` or of [`SYSTEM_DIRS`].
fn find_system_binary(binary: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(binary))
        .find(|candidate| candidate.is_file())
}

/// `id -u` says 0.
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// The release build of the `everything` example.
pub(crate) fn everything_binary() -> PathBuf {
    target_dir().join("release/examples/everything")
}

/// `cargo build --release -p mcp-server --example everything`, returning the binary.
pub(crate) fn build_everything() -> Result<PathBuf> {
    run(cargo().args(["build", "--release", "-p", "mcp-server", "--example", "everything"]))?;
    existing_everything()
}

/// The `everything` binary, which must have been built already.
pub(crate) fn existing_everything() -> Result<PathBuf> {
    let binary = everything_binary();
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!(
            "{} does not exist: build it with `cargo build --release -p mcp-server --example everything`",
            binary.display()
        ))
    }
}

/// A child that tells where it listens with its first stdout line, `listening on URL`; killed
/// when dropped.
pub(crate) struct Listening {
    /// The child.
    pub(crate) child: ChildGuard,
    /// The URL of its first line.
    pub(crate) url: String,
    /// Its later stdout lines, also printed as they come (the oldest kept when nobody reads:
    /// for children that answer commands on stdout).
    pub(crate) lines: mpsc::Receiver<String>,
}

/// Lines of a [`Listening`] child kept unread.
const UNREAD_LINES: usize = 256;

/// Spawns `cmd` with its stdout piped and waits up to `timeout` for its first stdout line,
/// `listening on URL`. The rest of its stdout is forwarded to ours (and to
/// [`Listening::lines`]); its stdin and stderr are as `cmd` sets them (inherited by default).
pub(crate) fn spawn_listening(cmd: &mut Command, timeout: Duration) -> Result<Listening> {
    let (child, first, lines) = spawn_first_line(cmd, timeout, "`listening on …`")?;
    println!("{first}");
    match first.trim_end().strip_prefix("listening on ") {
        Some(url) => Ok(Listening {
            child,
            url: url.to_owned(),
            lines,
        }),
        None => Err(format!(
            "`{}`: expected first stdout line `listening on URL`, got `{first}`",
            display(cmd)
        )),
    }
}

/// Spawns `cmd` with its stdout piped and waits up to `timeout` for its first stdout line
/// (`what` names it in messages), returned with the child and not printed. The rest of its stdout is forwarded
/// to ours and to the receiver (the oldest [`UNREAD_LINES`] kept when nobody reads); its stdin
/// and stderr are as `cmd` sets them.
pub(crate) fn spawn_first_line(
    cmd: &mut Command,
    timeout: Duration,
    what: &str,
) -> Result<(ChildGuard, String, mpsc::Receiver<String>)> {
    cmd.stdout(Stdio::piped());
    let line = display(cmd);
    println!("$ {line} &");
    let mut child = ChildGuard::spawn(cmd)?;
    let stdout = child.take_stdout().ok_or("stdout is piped")?;

    let (first_tx, first_rx) = mpsc::channel::<String>();
    let (rest_tx, rest_rx) = mpsc::sync_channel::<String>(UNREAD_LINES);
    thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        match lines.next() {
            Some(Ok(first)) => {
                if first_tx.send(first).is_err() {
                    return;
                }
            }
            _ => return, // EOF or an unreadable line: the waiting side notices the exit
        }
        // Keep draining so the child never blocks on a full pipe.
        for line in lines.map_while(std::result::Result::ok) {
            println!("{line}");
            let _ = rest_tx.try_send(line);
        }
    });

    let deadline = Instant::now() + timeout;
    let first = loop {
        match first_rx.recv_timeout(Duration::from_millis(200)) {
            Ok(first) => break first,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed: wait briefly for the exit status for the message.
                let _ = child.wait_timeout(Duration::from_secs(5));
            }
        }
        if let Some(status) = child.try_wait()? {
            return Err(format!("`{line}` exited ({}) before printing {what}", describe(status)));
        }
        if Instant::now() >= deadline {
            return Err(format!("`{line}` printed nothing within {} s", timeout.as_secs()));
        }
    };
    Ok((child, first, rest_rx))
}

/// The `everything` example serving HTTP on a loopback port; killed when dropped.
pub(crate) struct HttpServer {
    process: Listening,
    /// The port it listens on.
    pub(crate) port: u16,
    /// The endpoint it printed: `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
}

impl HttpServer {
    /// Starts `binary --host 127.0.0.1 --port 0 <flags>` and waits until it prints
    /// `listening on http://127.0.0.1:P/mcp` as its first stdout line (port 0: the server
    /// picks a free port and says which, so no other process can take it in between). The rest
    /// of its stdout is forwarded to ours; its stderr is inherited.
    pub(crate) fn start(binary: &Path, flags: &[&str]) -> Result<Self> {
        let mut cmd = Command::new(binary);
        cmd.args(["--host", "127.0.0.1", "--port", "0"])
            .args(flags)
            .current_dir(root())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        let process = spawn_listening(&mut cmd, SERVER_START_TIMEOUT)?;
        let port = process
            .url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|port| port.parse::<u16>().ok())
            .ok_or_else(|| {
                format!(
                    "`{}`: expected `listening on http://127.0.0.1:P/mcp`, got `listening on {}`",
                    display(&cmd),
                    process.url
                )
            })?;
        let url = process.url.clone();
        Ok(Self { process, port, url })
    }

    /// Fails if the server has exited (it should serve until dropped).
    pub(crate) fn ensure_running(&mut self) -> Result {
        match self.process.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!(
                "the everything server at {} exited ({})",
                self.url,
                describe(status)
            )),
        }
    }
}

/// 64 random hex digits (32 bytes: a throwaway secret or key for one run, from the standard
/// library's randomly seeded hasher).
pub(crate) fn random_hex() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher as _, Hasher as _};
    (0..4u64)
        .map(|i| {
            let mut h = RandomState::new().build_hasher();
            h.write_u64(i);
            format!("{:016x}", h.finish())
        })
        .collect()
}

/// The `--flag value` / `--flag=value` arguments of one subcommand, parsed one way for all.
pub(crate) struct Flags<'a> {
    command: &'static str,
    args: std::slice::Iter<'a, String>,
}

impl<'a> Flags<'a> {
    /// The arguments after `command`.
    pub(crate) fn new(command: &'static str, rest: &'a [String]) -> Self {
        Flags {
            command,
            args: rest.iter(),
        }
    }

    /// The next flag, with its inline value (`--name=value`) if it has one.
    pub(crate) fn next_flag(&mut self) -> Option<(&'a str, Option<String>)> {
        let arg = self.args.next()?;
        Some(match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        })
    }

    /// The value of `flag`: its inline value, or the next argument.
    pub(crate) fn value(&mut self, flag: &str, inline: Option<String>) -> std::result::Result<String, String> {
        inline
            .or_else(|| self.args.next().cloned())
            .ok_or_else(|| format!("{}: {flag} needs a value", self.command))
    }

    /// The value of `flag` as a positive whole number.
    pub(crate) fn positive(&mut self, flag: &str, inline: Option<String>) -> std::result::Result<u64, String> {
        let value = self.value(flag, inline)?;
        match value.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "{}: {flag} needs a positive whole number, not `{value}`",
                self.command
            )),
        }
    }

    /// The refusal of an argument the command does not take.
    pub(crate) fn unexpected(&self, arg: &str) -> String {
        format!("{}: unexpected argument `{arg}`", self.command)
    }
}

/// `x` rounded to `digits` decimals (the figures of the reports).
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
