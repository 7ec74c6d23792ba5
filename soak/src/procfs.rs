//! What the soak reads about a process from `/proc`: resident memory, open descriptors, the
//! descriptor limit.

use crate::client::Result;

/// `VmRSS` of `pid`, KiB.
pub(crate) fn rss_kb(pid: u32) -> Result<u64> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("/proc/{pid}/status has no VmRSS"))
}

/// The number of open file descriptors of `pid` (entries of `/proc/<pid>/fd`).
pub(crate) fn fd_count(pid: u32) -> Result<usize> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(Iterator::count)
        .map_err(|e| format!("/proc/{pid}/fd: {e}"))
}

/// Whether `pid` is still running (and not a zombie).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            // The state follows the parenthesised command name.
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// The soft limit of open files of `pid` ("self" for this process), if it can be read.
pub(crate) fn open_files_limit(pid: &str) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line.trim_start_matches("Max open files").split_whitespace().next()?;
    if soft == "unlimited" {
        Some(u64::MAX)
    } else {
        soft.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let pid = std::process::id();
        assert!(rss_kb(pid).expect("VmRSS") > 0);
        assert!(fd_count(pid).expect("fds") >= 3);
        assert!(alive(pid));
        assert!(open_files_limit("self").expect("a limit") > 0);
    }
}
