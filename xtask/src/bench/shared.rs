//! What the S cells read from Redis: `INFO commandstats` (the commands Redis executed, those
//! run by scripts and by `MULTI`/`EXEC` counted one by one) before and after a measured round,
//! and a `MONITOR` tap during a separate counting run that gives the requests the instances sent
//! (a script, or a whole `MULTI`/`EXEC` transaction, counts once: one round trip each).
//!
//! Everything goes over a plain TCP socket to `127.0.0.1:PORT` in RESP, so xtask needs no Redis
//! client.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::util::{Result, round};

/// How long one `INFO` may take.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the tap waits for its end marker once the run is over.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// The `ECHO` that tells the tap the counting run is over.
const END_MARKER: &str = "xtask-bench-monitor-end";
/// Commands of xtask itself, never counted.
const OURS: [&str; 2] = ["info", "echo"];

/// The port of `redis://127.0.0.1:PORT/`.
pub(super) fn port_of(url: &str) -> Result<u16> {
    url.strip_prefix("redis://127.0.0.1:")
        .map(|rest| rest.trim_end_matches('/'))
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("{url}: not redis://127.0.0.1:PORT/"))
}

fn connect(port: u16) -> Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), IO_TIMEOUT)
        .map_err(|e| format!("redis 127.0.0.1:{port}: {e}"))?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)))
        .map_err(|e| format!("redis 127.0.0.1:{port}: {e}"))?;
    Ok(stream)
}

/// `INFO SECTION`: the bulk string Redis answers.
fn info(port: u16, section: &str) -> Result<String> {
    let mut stream = connect(port)?;
    stream
        .write_all(format!("INFO {section}\r\n").as_bytes())
        .map_err(|e| format!("redis INFO: {e}"))?;
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    reader.read_line(&mut head).map_err(|e| format!("redis INFO: {e}"))?;
    let len: usize = head
        .trim_end()
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("redis INFO {section} answered `{}`", head.trim_end()))?;
    let mut body = vec![0; len + 2];
    reader.read_exact(&mut body).map_err(|e| format!("redis INFO: {e}"))?;
    body.truncate(len);
    String::from_utf8(body).map_err(|e| format!("redis INFO: {e}"))
}

/// The `calls` of every `cmdstat_<name>` line of `INFO commandstats`.
fn parse_commandstats(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (name, fields) = line.trim_end().strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = fields.split(',').find_map(|f| f.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

/// The calls of every command Redis has executed since it started.
pub(super) fn commandstats(port: u16) -> Result<BTreeMap<String, u64>> {
    Ok(parse_commandstats(&info(port, "commandstats")?))
}

/// `after - before` per command, xtask's own commands left out, zeros dropped.
pub(super) fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter(|(name, _)| !OURS.contains(&name.as_str()))
        .map(|(name, n)| (name.clone(), n.saturating_sub(before.get(name).copied().unwrap_or(0))))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Per-command counts as JSON: `{"total": …, "per_request": …, "per_op": …, "by_command":
/// {name: per request, …}}` (largest first), over `requests` requests of `requests_per_op` each.
pub(super) fn per_request(counts: &BTreeMap<String, u64>, requests: u64, requests_per_op: f64) -> Value {
    let total: u64 = counts.values().sum();
    let per = |n: u64| {
        if requests == 0 {
            Value::Null
        } else {
            json!(round(n as f64 / requests as f64, 4))
        }
    };
    let mut sorted: Vec<(&String, &u64)> = counts.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let by_command: Map<String, Value> = sorted.into_iter().map(|(name, n)| (name.clone(), per(*n))).collect();
    let per_op = match per(total).as_f64() {
        Some(v) => json!(round(v * requests_per_op, 3)),
        None => Value::Null,
    };
    json!({
        "total": total,
        "requests": requests,
        "per_request": per(total),
        "per_op": per_op,
        "by_command": by_command,
    })
}

/// Pins every thread of the Redis on `port` to `cpu` (`taskset -a -p -c CPU PID`, the pid from
/// `INFO server`).
pub(super) fn pin(port: u16, cpu: &str) -> Result {
    let server = info(port, "server")?;
    let pid = server
        .lines()
        .find_map(|l| l.trim_end().strip_prefix("process_id:"))
        .ok_or("redis INFO server: no process_id")?
        .to_owned();
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", cpu, &pid])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("taskset: {e}"))?;
    if status.success() {
        println!("redis: pid {pid} pinned to CPU {cpu}");
        Ok(())
    } else {
        Err(format!("`taskset -a -p -c {cpu} {pid}` failed"))
    }
}

/// A `MONITOR` connection counting, per command, the requests clients send: a command run by a
/// script (`[0 lua]`) is not counted (its `EVALSHA` is), and a transaction counts once, as
/// `multi/exec`, whatever it queued.
pub(super) struct Tap {
    port: u16,
    stream: TcpStream,
    reader: JoinHandle<Result<BTreeMap<String, u64>>>,
}

impl Tap {
    /// Connects and sends `MONITOR` (counting begins once Redis answered `+OK`).
    pub(super) fn start(port: u16) -> Result<Tap> {
        let mut stream = connect(port)?;
        stream
            .write_all(b"MONITOR\r\n")
            .map_err(|e| format!("redis MONITOR: {e}"))?;
        let mut reader = BufReader::new(stream.try_clone().map_err(|e| format!("redis MONITOR: {e}"))?);
        let mut ok = String::new();
        reader.read_line(&mut ok).map_err(|e| format!("redis MONITOR: {e}"))?;
        if ok.trim_end() != "+OK" {
            return Err(format!("redis MONITOR answered `{}`", ok.trim_end()));
        }
        stream
            .set_read_timeout(Some(DRAIN_TIMEOUT))
            .map_err(|e| format!("redis MONITOR: {e}"))?;
        let reader = thread::spawn(move || count_monitor(reader));
        Ok(Tap { port, stream, reader })
    }

    /// Sends the end marker on another connection, reads the tap up to it and returns the
    /// counts.
    pub(super) fn finish(self) -> Result<BTreeMap<String, u64>> {
        let sent = connect(self.port).and_then(|mut s| {
            s.write_all(format!("ECHO {END_MARKER}\r\n").as_bytes())
                .map_err(|e| format!("redis ECHO: {e}"))?;
            let mut answer = [0u8; 64];
            let _ = s.read(&mut answer);
            Ok(())
        });
        if let Err(e) = sent {
            let _ = self.stream.shutdown(Shutdown::Both);
            let _ = self.reader.join();
            return Err(e);
        }
        let counts = self
            .reader
            .join()
            .map_err(|_| "the MONITOR reader panicked".to_owned())?;
        let _ = self.stream.shutdown(Shutdown::Both);
        counts
    }
}

/// Reads `MONITOR` lines up to the end marker.
fn count_monitor(reader: BufReader<TcpStream>) -> Result<BTreeMap<String, u64>> {
    let mut counter = MonitorCounter::default();
    for line in reader.lines() {
        let line = line.map_err(|e| format!("redis MONITOR: {e}"))?;
        if counter.line(&line) {
            return Ok(counter.counts);
        }
    }
    Err("the MONITOR connection closed before the end marker".to_owned())
}

/// Counts client requests from `MONITOR` lines (`+<time> [<db> <client>] "CMD" "ARG"…`).
#[derive(Default)]
struct MonitorCounter {
    counts: BTreeMap<String, u64>,
    /// Clients inside `MULTI`.
    in_multi: HashMap<String, bool>,
}

impl MonitorCounter {
    /// Counts one line; true at the end marker.
    fn line(&mut self, line: &str) -> bool {
        let Some((client, rest)) = line
            .split_once(" [")
            .and_then(|(_, r)| r.split_once("] "))
            .map(|(c, r)| (c.split_once(' ').map_or(c, |(_, addr)| addr), r))
        else {
            return false;
        };
        let Some(name) = rest.strip_prefix('"').and_then(|r| r.split('"').next()) else {
            return false;
        };
        let name = name.to_ascii_lowercase();
        if name == "echo" && rest.contains(END_MARKER) {
            return true;
        }
        if client == "lua" || OURS.contains(&name.as_str()) {
            return false;
        }
        let in_multi = self.in_multi.entry(client.to_owned()).or_default();
        let counted = match (name.as_str(), *in_multi) {
            ("multi", _) => {
                *in_multi = true;
                None
            }
            ("exec" | "discard", true) => {
                *in_multi = false;
                Some("multi/exec".to_owned())
            }
            (_, true) => None,
            (_, false) => Some(name),
        };
        if let Some(name) = counted {
            *self.counts.entry(name).or_default() += 1;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commandstats_lines() {
        let text = "# Commandstats\r\ncmdstat_evalsha:calls=12,usec=30,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n\
                    cmdstat_script|load:calls=2,usec=1,usec_per_call=0.5,rejected_calls=0,failed_calls=0\r\n";
        let stats = parse_commandstats(text);
        assert_eq!(stats.get("evalsha"), Some(&12));
        assert_eq!(stats.get("script|load"), Some(&2));
        let before = BTreeMap::from([("evalsha".to_owned(), 2), ("info".to_owned(), 1)]);
        let after = BTreeMap::from([
            ("evalsha".to_owned(), 12),
            ("info".to_owned(), 3),
            ("ping".to_owned(), 4),
        ]);
        let d = delta(&before, &after);
        assert_eq!(d, BTreeMap::from([("evalsha".to_owned(), 10), ("ping".to_owned(), 4)]));
        let v = per_request(&d, 7, 4.0);
        assert_eq!(v["total"], 14);
        assert_eq!(v["per_request"], 2.0);
        assert_eq!(v["per_op"], 8.0);
        assert_eq!(v["by_command"]["evalsha"].as_f64(), Some(round(10.0 / 7.0, 4)));
    }

    #[test]
    fn monitor_counts_requests() {
        let mut c = MonitorCounter::default();
        for line in [
            r#"+1796131613.879627 [0 127.0.0.1:33186] "MULTI""#,
            r#"+1796131613.879896 [0 127.0.0.1:33186] "DEL" "x""#,
            r#"+1796131613.879900 [0 127.0.0.1:4000] "GET" "y""#,
            r#"+1796131613.879916 [0 127.0.0.1:33186] "HSET" "x" "a" "1""#,
            r#"+1796131613.879923 [0 127.0.0.1:33186] "EXEC""#,
            r#"+1796131613.887435 [0 127.0.0.1:33190] "evalsha" "abc" "1" "k""#,
            r#"+1796131613.887495 [0 lua] "HGETALL" "k""#,
            r#"+1796131613.887496 [0 127.0.0.1:33190] "INFO" "commandstats""#,
        ] {
            assert!(!c.line(line));
        }
        assert!(c.line(&format!(r#"+1.0 [0 127.0.0.1:1] "ECHO" "{END_MARKER}""#)));
        let expected = BTreeMap::from([
            ("evalsha".to_owned(), 1),
            ("get".to_owned(), 1),
            ("multi/exec".to_owned(), 1),
        ]);
        assert_eq!(c.counts, expected);
    }

    #[test]
    fn redis_urls() {
        assert_eq!(port_of("redis://127.0.0.1:6379/"), Ok(6379));
        assert!(port_of("redis://10.0.0.1:6379/").is_err());
    }
}
