//! A server run as a child process, spoken to over its stdin and stdout (newline-delimited
//! JSON-RPC; spec basic/transports §stdio).
//!
//! A supervisor task owns the child. It writes the outbound queue (bounded: a sender waits
//! while the child reads slowly) to stdin, reads stdout line by line (a line over the bound is
//! dropped with a warning, the rest of the stream still read), and logs stderr through
//! `tracing` (target `mcp_client::stderr`). When the child exits, every waiting request fails
//! with the exit status; with a [`Restart`] policy the child is started again after a backoff
//! (doubling, reset once a child ran for a minute), and the connection greets it again.
//! Closing the client closes stdin, waits a grace for the child to exit, then kills it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio as Pipe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::frames::{Event, Outbound};
use crate::error::ClientError;

/// How long a closed client waits for its child to exit after closing its stdin.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// The capacity of the outbound queue.
const QUEUE: usize = 64;
/// The longest stderr line logged whole.
const MAX_STDERR_LINE: usize = 8 * 1024;

/// A command that starts a server: a program, its arguments, environment and directory.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    dir: Option<PathBuf>,
}

impl ServerCommand {
    /// Runs `program` (found on `PATH` when it has no slash).
    pub fn new(program: impl Into<OsString>) -> Self {
        ServerCommand {
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            dir: None,
        }
    }

    /// A command given as one line, split into the program and its arguments as a POSIX shell
    /// would split it (quotes and backslash escapes; no shell runs, nothing is expanded):
    /// `ServerCommand::parse("npx -y '@scope/server' --dir \"My Files\"")`.
    pub fn parse(line: &str) -> Result<Self, ClientError> {
        let words = shell_words::split(line).map_err(|e| ClientError::Transport(format!("{line:?}: {e}")))?;
        let mut words = words.into_iter();
        let program = words
            .next()
            .ok_or_else(|| ClientError::Transport("an empty command".into()))?;
        Ok(ServerCommand::new(program).args(words))
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable of the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Runs the child in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// The program, for logs and errors.
    pub fn program(&self) -> &std::ffi::OsStr {
        &self.program
    }

    fn spawn(&self) -> std::io::Result<Child> {
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(Pipe::piped())
            .kill_on_drop(true);
        if let Some(d) = &self.dir {
            c.current_dir(d);
        }
        c.spawn()
    }
}

/// Whether and how a child that exited is started again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart {
    /// The first wait before starting again; it doubles up to `max_backoff`.
    pub backoff: Duration,
    /// The longest wait.
    pub max_backoff: Duration,
}

impl Default for Restart {
    fn default() -> Self {
        Restart {
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
        }
    }
}

/// A child process transport.
#[derive(Debug)]
pub(crate) struct Stdio {
    queue: mpsc::Sender<Vec<u8>>,
    stop: CancellationToken,
    supervisor: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Stdio {
    /// Starts `command` (the first start is awaited: a program that cannot start is an error
    /// here) and supervises it.
    pub(crate) fn start(
        command: ServerCommand,
        restart: Option<Restart>,
        max_line: usize,
        inbox: mpsc::Sender<Event>,
    ) -> Result<Stdio, ClientError> {
        let child = command
            .spawn()
            .map_err(|e| ClientError::Transport(format!("cannot start {:?}: {e}", command.program)))?;
        let (queue, rx) = mpsc::channel(QUEUE);
        let stop = CancellationToken::new();
        let supervisor = Supervisor {
            command,
            restart,
            max_line,
            inbox,
            outbound: Arc::new(Mutex::new(rx)),
            stop: stop.clone(),
        };
        let task = tokio::spawn(supervisor.run(child));
        Ok(Stdio {
            queue,
            stop,
            supervisor: std::sync::Mutex::new(Some(task)),
        })
    }

    pub(crate) async fn send(&self, out: Outbound) -> Result<(), ClientError> {
        self.queue
            .send(out.bytes)
            .await
            .map_err(|_| ClientError::Closed("the server process is gone".into()))
    }

    pub(crate) async fn close(&self) {
        self.stop.cancel();
        let task = self
            .supervisor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        // The supervisor closes the child's stdin, then kills it after the grace.
        self.stop.cancel();
    }
}

struct Supervisor {
    command: ServerCommand,
    restart: Option<Restart>,
    max_line: usize,
    inbox: mpsc::Sender<Event>,
    outbound: Arc<Mutex<mpsc::Receiver<Vec<u8>>>>,
    stop: CancellationToken,
}

impl Supervisor {
    async fn run(self, first: Child) {
        let mut child = first;
        let mut backoff = self.restart.map(|r| r.backoff).unwrap_or_default();
        loop {
            let started = Instant::now();
            let status = self.supervise(&mut child).await;
            let Some(status) = status else {
                let closed = Event::Down {
                    why: "the client closed the connection".into(),
                    for_good: true,
                };
                let _ = self.inbox.send(closed).await;
                return;
            };
            let program = self.command.program.to_string_lossy();
            tracing::warn!(%program, %status, "the server process exited");
            let _ = self
                .inbox
                .send(Event::Down {
                    why: format!("the server process exited ({status})"),
                    for_good: self.restart.is_none(),
                })
                .await;
            let Some(restart) = self.restart else { return };
            if started.elapsed() > Duration::from_secs(60) {
                backoff = restart.backoff;
            }
            loop {
                tokio::select! {
                    _ = self.stop.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(restart.max_backoff);
                match self.command.spawn() {
                    Ok(c) => {
                        child = c;
                        break;
                    }
                    Err(e) => tracing::warn!(%program, error = %e, ?backoff, "the server process cannot start again"),
                }
            }
            tracing::info!(%program, "the server process started again");
            let _ = self.inbox.send(Event::Restarted).await;
        }
    }

    /// Runs one child until it exits (its status) or the client closes (`None`).
    async fn supervise(&self, child: &mut Child) -> Option<String> {
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Some("without its pipes".into());
        };
        let program = self.command.program.to_string_lossy().into_owned();
        let writer = tokio::spawn(write(stdin, self.outbound.clone()));
        let reader = tokio::spawn(read(stdout, self.max_line, self.inbox.clone()));
        let logger = tokio::spawn(log(stderr, program));
        let status = tokio::select! {
            s = child.wait() => Some(s.map_or_else(|e| e.to_string(), |s| s.to_string())),
            _ = self.stop.cancelled() => None,
        };
        writer.abort();
        if status.is_none() {
            // stdin closes with the writer: a well-behaved server exits on its own.
            let _ = writer.await;
            if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        }
        // What the child wrote before it exited is still read to its end.
        let _ = reader.await;
        let _ = logger.await;
        status
    }
}

async fn write(stdin: ChildStdin, outbound: Arc<Mutex<mpsc::Receiver<Vec<u8>>>>) {
    let mut stdin = BufWriter::new(stdin);
    let mut rx = outbound.lock().await;
    while let Some(mut frame) = rx.recv().await {
        frame.push(b'\n');
        let mut ok = stdin.write_all(&frame).await.is_ok();
        // Frames already queued go out together.
        while ok && let Ok(mut more) = rx.try_recv() {
            more.push(b'\n');
            ok = stdin.write_all(&more).await.is_ok();
        }
        if !ok || stdin.flush().await.is_err() {
            return;
        }
    }
}

/// One line of a child's output.
enum Line {
    /// A line within the bound (without its end).
    Text(Vec<u8>),
    /// A line over the bound, skipped to its end.
    TooLong,
    /// The end of the output.
    End,
}

/// Reads the next line, holding at most `max` bytes of it: a longer line is skipped to its
/// newline without being kept.
async fn next_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Text(line),
            });
        }
        let (chunk, used, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long && line.len() + chunk.len() > max {
            too_long = true;
            line = Vec::new();
        }
        if !too_long {
            line.extend_from_slice(chunk);
        }
        r.consume(used);
        if ended {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(if too_long { Line::TooLong } else { Line::Text(line) });
        }
    }
}

async fn read(stdout: tokio::process::ChildStdout, max_line: usize, inbox: mpsc::Sender<Event>) {
    let mut stdout = BufReader::new(stdout);
    loop {
        match next_line(&mut stdout, max_line).await {
            Ok(Line::Text(line)) if line.iter().all(u8::is_ascii_whitespace) => {}
            Ok(Line::Text(line)) => {
                if inbox.send(Event::Frame(Bytes::from(line), None)).await.is_err() {
                    return;
                }
            }
            Ok(Line::TooLong) => {
                tracing::warn!(limit = max_line, "the server wrote a line over the bound: dropped");
            }
            Ok(Line::End) => return,
            Err(e) => {
                tracing::warn!(error = %e, "reading the server's stdout failed");
                return;
            }
        }
    }
}

async fn log(stderr: tokio::process::ChildStderr, program: String) {
    let mut stderr = BufReader::new(stderr);
    loop {
        match next_line(&mut stderr, MAX_STDERR_LINE).await {
            Ok(Line::Text(line)) => {
                let line = String::from_utf8_lossy(&line);
                tracing::info!(target: "mcp_client::stderr", %program, "{line}");
            }
            Ok(Line::TooLong) => {
                tracing::info!(target: "mcp_client::stderr", %program, "(a line over {MAX_STDERR_LINE} bytes, left out)");
            }
            Ok(Line::End) | Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_split_as_a_shell_would_without_running_one() {
        let c = ServerCommand::parse(r#"npx -y '@scope/server' --dir "My Files" a\ b $HOME"#).unwrap();
        assert_eq!(c.program, "npx");
        assert_eq!(c.args, ["-y", "@scope/server", "--dir", "My Files", "a b", "$HOME"]);
        assert!(ServerCommand::parse("").is_err());
        assert!(ServerCommand::parse("unterminated 'quote").is_err());
    }

    #[tokio::test]
    async fn lines_over_the_bound_are_skipped_and_the_next_ones_read() {
        let input: &[u8] = b"short\r\nxxxxxxxxxxxxxxxxxxxx\nnext\nlast-without-end";
        let mut r = BufReader::with_capacity(4, input);
        let mut got = Vec::new();
        loop {
            match next_line(&mut r, 16).await.unwrap() {
                Line::Text(t) => got.push(String::from_utf8(t).unwrap()),
                Line::TooLong => got.push("<too long>".into()),
                Line::End => break,
            }
        }
        assert_eq!(got, ["short", "<too long>", "next", "last-without-end"]);
    }
}
