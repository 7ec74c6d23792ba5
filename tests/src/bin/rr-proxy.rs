//! `rr-proxy`: a round-robin HTTP/1.1 reverse proxy in front of several servers, switching
//! backend on every request ([`mcp_tests::proxy`]).
//!
//! ```text
//! rr-proxy [--listen 127.0.0.1:0] --backend http://127.0.0.1:A --backend http://127.0.0.1:B
//! ```
//!
//! The first stdout line is `listening on http://127.0.0.1:P`. While it runs, a line on stdin
//! is a command: `counts` prints `counts N0 N1 …` (requests sent to each backend, in the order
//! given), `down I` and `up I` take backend I out of the rotation and put it back (each
//! answered `ok` or `error: …`). It serves until interrupted (SIGINT or SIGTERM), then prints
//! the counts and exits.

use std::net::SocketAddr;
use std::process::ExitCode;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::signal::unix::{SignalKind, signal};

const USAGE: &str = "usage: rr-proxy [--listen ADDR] --backend http://HOST:PORT [--backend …]";

#[tokio::main]
async fn main() -> ExitCode {
    let (listen, backends) = match parse(std::env::args().skip(1)) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("rr-proxy: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let proxy = match mcp_tests::proxy::start_on(listen, backends).await {
        Ok(proxy) => proxy,
        Err(e) => {
            eprintln!("rr-proxy: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {}", proxy.url);

    let (mut term, mut int) = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(term), Ok(int)) => (term, int),
        _ => {
            eprintln!("rr-proxy: cannot install the signal handlers");
            return ExitCode::FAILURE;
        }
    };
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut stdin_open = true;
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            line = stdin.next_line(), if stdin_open => match line {
                Ok(Some(line)) => println!("{}", command(&proxy, line.trim())),
                // End of stdin (or an unreadable one): keep serving, stop reading.
                _ => stdin_open = false,
            },
        }
    }
    println!("{}", counts(&proxy));
    ExitCode::SUCCESS
}

/// Runs one stdin command and returns its answer line.
fn command(proxy: &mcp_tests::proxy::Proxy, line: &str) -> String {
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("counts"), None, _) => counts(proxy),
        (Some(verb @ ("down" | "up")), Some(index), None) => match index.parse::<usize>() {
            Ok(i) if i < proxy.backends().len() => {
                proxy.set_down(i, verb == "down");
                "ok".to_owned()
            }
            _ => format!("error: no backend `{index}`"),
        },
        _ => format!("error: unknown command `{line}` (counts | down I | up I)"),
    }
}

fn counts(proxy: &mcp_tests::proxy::Proxy) -> String {
    let counts: Vec<String> = proxy.counts().iter().map(u64::to_string).collect();
    format!("counts {}", counts.join(" "))
}

/// `--listen ADDR` (default `127.0.0.1:0`) and one `--backend URL` or more; `None` for `--help`.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<(SocketAddr, Vec<String>)>, String> {
    let mut listen = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut backends = Vec::new();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (arg, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--listen" => {
                let v = value()?;
                listen = v
                    .parse()
                    .map_err(|e| format!("--listen `{v}`: {e} (expected IP:PORT)"))?;
            }
            "--backend" => backends.push(value()?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    if backends.is_empty() {
        return Err("at least one --backend is needed".to_owned());
    }
    Ok(Some((listen, backends)))
}
