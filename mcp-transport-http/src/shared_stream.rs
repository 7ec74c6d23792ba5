//! The GET stream of a session shared by several instances: its events live in the shared
//! store's [`EventLog`], whichever instance raised them, so the stream reads them from there.
//!
//! Opening a stream announces it (the session's older GET stream on another instance ends: one
//! GET stream per session) and makes this instance the one that appends registry changes to the
//! session's log. The stream wakes when any instance appends to the log
//! ([`Session::log_head`]) or when messages between instances may have been lost (a bus gap:
//! the log is re-read), and ends when the session ends, a newer stream opens anywhere, or the
//! server shuts down. Ids come from the log, so a client resuming with `Last-Event-ID` on any
//! instance gets the events after it, or `notifications/replay_truncated` when some are gone.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Bytes;
use mcp_runtime::Session;
use mcp_runtime::store::{EventLog, Replay, StoreError, StreamKey};
use tokio::sync::watch;

use crate::hub::Channel;
use crate::pump::{Feed, Next};
use crate::sse;

/// The [`Feed`] of a shared session's GET stream.
pub(crate) struct SharedLive {
    channel: Arc<Channel>,
    session: Arc<Session>,
    log: Arc<dyn EventLog>,
    key: StreamKey,
    head: watch::Receiver<u64>,
    takeovers: watch::Receiver<u64>,
    gaps: Option<watch::Receiver<u64>>,
    /// The last event id written (or skipped past, after a truncation).
    cursor: u64,
    /// Woken, not yet read: the next `next` reads the log before waiting again (cancel safety).
    dirty: bool,
    opening: Vec<Bytes>,
}

impl SharedLive {
    /// Opens the stream: the priming event (its id from the log), or after `last` a `retry:`
    /// field and the events after it (or the truncation notice).
    pub(crate) async fn open(
        channel: Arc<Channel>,
        log: Arc<dyn EventLog>,
        gaps: Option<watch::Receiver<u64>>,
        last: Option<&str>,
        retry: Duration,
    ) -> Result<Self, StoreError> {
        let session = channel.session().clone();
        let key = StreamKey::get_stream(session.id().to_string());
        let mut head = session.log_head();
        head.mark_unchanged();
        let mut takeovers = session.takeovers();
        takeovers.mark_unchanged();
        session.stream_opened();
        channel.holder.store(true, Ordering::Release);
        let (opening, cursor) = match last {
            None => {
                let id = log.allocate(&key).await?;
                (vec![sse::priming(&id.to_string(), retry)], id)
            }
            Some(last) => {
                let mut opening = vec![sse::retry(retry)];
                let replay = match mcp_protocol::event_id::parse_seq(last) {
                    Some(c) => Some((log.after(&key, c).await?, c)),
                    None => None,
                };
                let cursor = match replay {
                    Some((Replay::From(events), c)) => push_events(&mut opening, c, events),
                    _ => {
                        opening.push(sse::truncated(last));
                        log.allocate(&key).await?
                    }
                };
                (opening, cursor)
            }
        };
        Ok(SharedLive {
            channel,
            session,
            log,
            key,
            head,
            takeovers,
            gaps,
            cursor,
            dirty: false,
            opening,
        })
    }
}

/// Frames `events` onto `out` with their ids; returns the cursor past them.
fn push_events(out: &mut Vec<Bytes>, mut cursor: u64, events: Vec<(u64, Vec<u8>)>) -> u64 {
    for (id, frame) in events {
        out.push(sse::event(Some(&id.to_string()), &frame));
        cursor = cursor.max(id);
    }
    cursor
}

async fn changed(rx: &mut Option<watch::Receiver<u64>>) -> bool {
    match rx {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

impl Feed for SharedLive {
    fn open(&mut self) -> Next {
        Next::Write(std::mem::take(&mut self.opening))
    }

    async fn next(&mut self) -> Next {
        if !self.dirty {
            tokio::select! {
                biased;
                () = self.session.closed().cancelled() => return Next::Stop,
                r = self.takeovers.changed() => {
                    let _ = r;
                    self.channel.holder.store(false, Ordering::Release);
                    return Next::Stop;
                }
                r = self.head.changed() => {
                    if r.is_err() {
                        return Next::Stop;
                    }
                    self.head.mark_unchanged();
                }
                ok = changed(&mut self.gaps) => {
                    if !ok {
                        self.gaps = None;
                    }
                }
            }
            self.dirty = true;
        }
        let read = match self.log.after(&self.key, self.cursor).await {
            Ok(r) => r,
            Err(e) => {
                // The store is away: the client reconnects with its cursor and resumes.
                tracing::warn!(session = %self.session.id(), error = %e, "stream log unreadable; stream ends");
                return Next::Stop;
            }
        };
        let mut out = Vec::new();
        match read {
            Replay::From(events) => self.cursor = push_events(&mut out, self.cursor, events),
            Replay::Truncated => {
                out.push(sse::truncated(&self.cursor.to_string()));
                match self.log.allocate(&self.key).await {
                    Ok(id) => self.cursor = id,
                    Err(_) => return Next::Stop,
                }
            }
        }
        self.dirty = false;
        Next::Write(out)
    }

    fn on_keep_alive(&mut self) {
        // An open stream is activity: the idle sweep spares its session.
        self.session.touch();
    }
}
