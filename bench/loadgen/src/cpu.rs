//! Server CPU over the measured window: the `utime` and `stime` of each server process
//! (`/proc/PID/stat`, every thread of the process counted, live or exited) read when the
//! measured window opens and when it closes, in clock ticks (`AT_CLKTCK` of the auxiliary
//! vector, `/proc/self/auxv`: the unit of those fields).

use std::time::Instant;

use tokio::task::JoinHandle;

use crate::client::Result;

/// The `AT_CLKTCK` entry of the auxiliary vector: clock ticks per second.
const AT_CLKTCK: usize = 17;

/// The `utime + stime` of process `pid`, in clock ticks.
pub(crate) fn process_ticks(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    parse_ticks(&stat).ok_or_else(|| format!("{path}: no utime and stime in `{}`", stat.trim()))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/PID/stat` line. The command name (field 2,
/// in parentheses) may hold spaces and parentheses: fields are counted after its last `)`.
fn parse_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` begins with field 3 (the state): field N is at index N - 3.
    let mut fields = rest.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second, the unit of `/proc/PID/stat`'s times.
pub(crate) fn ticks_per_second() -> Result<u64> {
    let auxv = std::fs::read("/proc/self/auxv").map_err(|e| format!("/proc/self/auxv: {e}"))?;
    parse_clktck(&auxv).ok_or_else(|| "/proc/self/auxv: no AT_CLKTCK".to_owned())
}

/// The `AT_CLKTCK` value of an auxiliary vector (native-endian `(type, value)` word pairs).
fn parse_clktck(auxv: &[u8]) -> Option<u64> {
    const WORD: usize = std::mem::size_of::<usize>();
    let word = |b: &[u8]| -> Option<usize> { Some(usize::from_ne_bytes(b.try_into().ok()?)) };
    auxv.chunks_exact(2 * WORD)
        .map(|pair| Some((word(&pair[..WORD])?, word(&pair[WORD..])?)))
        .map_while(|pair| pair.filter(|(kind, _)| *kind != 0))
        .find(|(kind, _)| *kind == AT_CLKTCK)
        .and_then(|(_, value)| u64::try_from(value).ok())
        .filter(|&ticks| ticks > 0)
}

/// The summed `utime + stime` of `pids`, in clock ticks.
fn total_ticks(pids: &[u32]) -> Result<u64> {
    pids.iter().map(|&pid| process_ticks(pid)).sum()
}

/// The CPU the servers spent in a window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spent {
    /// Milliseconds of CPU (user and system, every thread of every server).
    pub(crate) ms: f64,
    /// Microseconds of CPU per request measured.
    pub(crate) us_per_request: Option<f64>,
}

/// A reading of the servers' CPU at two instants, taken by a task of the runtime.
pub(crate) struct Window {
    task: Option<JoinHandle<Result<u64>>>,
}

impl Window {
    /// Reads the CPU of `pids` at `from` and at `to` (nothing when `pids` is empty).
    pub(crate) fn start(pids: &[u32], from: Instant, to: Instant) -> Window {
        if pids.is_empty() {
            return Window { task: None };
        }
        let pids = pids.to_vec();
        let task = tokio::spawn(async move {
            tokio::time::sleep_until(from.into()).await;
            let before = total_ticks(&pids)?;
            tokio::time::sleep_until(to.into()).await;
            let after = total_ticks(&pids)?;
            Ok(after.saturating_sub(before))
        });
        Window { task: Some(task) }
    }

    /// The CPU spent in the window, per request of `requests` (the requests measured in it).
    pub(crate) async fn finish(self, requests: u64) -> Result<Option<Spent>> {
        let Some(task) = self.task else {
            return Ok(None);
        };
        let ticks = task.await.map_err(|e| format!("CPU reading task: {e}"))??;
        let ms = ticks as f64 * 1000.0 / ticks_per_second()? as f64;
        let us_per_request = (requests > 0).then(|| ms * 1000.0 / requests as f64);
        Ok(Some(Spent { ms, us_per_request }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 1500 0 0 0 731 42 0 0 20 0 9 0 12345";
        assert_eq!(parse_ticks(line), Some(773));
        assert_eq!(parse_ticks("4242 (x) S 1"), None);
    }

    #[test]
    fn auxiliary_vector() {
        let words = |pairs: &[(usize, usize)]| -> Vec<u8> {
            pairs
                .iter()
                .flat_map(|(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()].concat())
                .collect()
        };
        assert_eq!(parse_clktck(&words(&[(6, 4096), (17, 100), (0, 0)])), Some(100));
        assert_eq!(parse_clktck(&words(&[(6, 4096), (0, 0), (17, 100)])), None);
        assert!(ticks_per_second().is_ok_and(|t| t > 0));
        assert!(process_ticks(std::process::id()).is_ok());
    }
}
