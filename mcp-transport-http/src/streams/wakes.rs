//! [`Wakes`]: what wakes the streams of a session shared by several instances, kept by this
//! transport as the session's [`LogWatcher`].
//!
//! The runtime tells the watcher of every event appended to one of the session's logs in the
//! shared store, on any instance, and of the session's GET stream opened on another instance
//! ([`LogNews`]). Three counters turn that news into wake-ups: the newest event id of the GET
//! stream's log (log `0`), a count of appends to the POST streams' logs, and a count of
//! takeovers (one GET stream per session: a newer one anywhere ends the one here). Each is made
//! on first use: most sessions never open a shared stream, and each is a few hundred bytes.

use std::sync::{Arc, OnceLock};

use mcp_runtime::{LogNews, LogWatcher, SessionHandle};
use tokio::sync::watch;

/// The wake-ups of one shared session's streams.
#[derive(Debug, Default)]
pub(crate) struct Wakes {
    /// The newest event id of the session's GET stream log known here.
    log_head: OnceLock<watch::Sender<u64>>,
    /// Bumped when a GET stream of the session opens on another instance.
    takeovers: OnceLock<watch::Sender<u64>>,
    /// Bumped by every event appended to one of the session's POST stream logs.
    stream_logs: OnceLock<watch::Sender<u64>>,
}

/// A counter channel, created (at 0) on first use.
fn lazy(cell: &OnceLock<watch::Sender<u64>>) -> &watch::Sender<u64> {
    cell.get_or_init(|| watch::Sender::new(0))
}

impl Wakes {
    /// The session's wakes, installed as its log watcher on first use.
    pub(crate) fn of(session: &SessionHandle) -> Arc<Wakes> {
        // Only this transport installs a watcher on the sessions it serves; another type there
        // would be a second transport serving one session, which sessions never are.
        session.watch_logs(Wakes::default).unwrap_or_else(|| {
            tracing::error!(session = %session.id(), "a session's log watcher is not this transport's");
            Arc::default()
        })
    }

    /// A receiver of the newest event id of the session's GET stream log.
    pub(crate) fn log_head(&self) -> watch::Receiver<u64> {
        lazy(&self.log_head).subscribe()
    }

    /// A receiver woken by every append to one of the session's POST stream logs.
    pub(crate) fn stream_logs(&self) -> watch::Receiver<u64> {
        lazy(&self.stream_logs).subscribe()
    }

    /// A receiver woken when a GET stream of the session opens on another instance.
    pub(crate) fn takeovers(&self) -> watch::Receiver<u64> {
        lazy(&self.takeovers).subscribe()
    }

    /// How many GET streams of the session opened on other instances since this one watches.
    pub(crate) fn takeover_count(&self) -> u64 {
        *lazy(&self.takeovers).borrow()
    }
}

impl LogWatcher for Wakes {
    fn news(&self, news: LogNews) {
        match news {
            LogNews::Appended { stream: 0, id } => {
                lazy(&self.log_head).send_if_modified(|head| {
                    let newer = id > *head;
                    if newer {
                        *head = id;
                    }
                    newer
                });
            }
            LogNews::Appended { .. } => lazy(&self.stream_logs).send_modify(|n| *n += 1),
            LogNews::Claimed => lazy(&self.takeovers).send_modify(|n| *n += 1),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn news_wakes_the_matching_counter_only() {
        let w = Wakes::default();
        let (mut head, posts, mut takes) = (w.log_head(), w.stream_logs(), w.takeovers());
        w.news(LogNews::Appended { stream: 0, id: 7 });
        assert!(head.has_changed().unwrap());
        assert_eq!(*head.borrow_and_update(), 7);
        assert!(!posts.has_changed().unwrap() && !takes.has_changed().unwrap());
        // An older id of the GET log does not move the head back, nor wake it.
        w.news(LogNews::Appended { stream: 0, id: 3 });
        assert!(!head.has_changed().unwrap());
        w.news(LogNews::Appended { stream: 2, id: 1 });
        assert!(posts.has_changed().unwrap() && !head.has_changed().unwrap());
        w.news(LogNews::Claimed);
        assert_eq!(*takes.borrow_and_update(), 1);
        assert_eq!(w.takeover_count(), 1);
    }
}
