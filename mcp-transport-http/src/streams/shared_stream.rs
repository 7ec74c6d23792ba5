//! The GET stream of a session shared by several instances: its events live in the shared
//! store's [`EventLog`], whichever instance raised them, so the stream reads them from there.
//!
//! Opening a stream announces it (the session's older GET stream on another instance ends: one
//! GET stream per session) and makes this instance the one that appends registry changes to the
//! session's log. The stream wakes when any instance appends to the log
//! ([`Wakes`]) or when messages between instances may have been lost (a bus gap:
//! the log is re-read), and ends when the session ends, a newer stream opens anywhere, or the
//! server shuts down. Ids come from the log, so a client resuming with `Last-Event-ID` on any
//! instance gets the events after it, or `notifications/replay_truncated` when some are gone.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Bytes;
use mcp_protocol::event_id::{seq_id, stream_id};
use mcp_runtime::SessionHandle;
use mcp_runtime::store::{EventLog, Replay, StoreError, StreamKey};
use tokio::sync::watch;

use crate::streams::hub::{Channel, push_events};
use crate::streams::pump::{Feed, Next};
use crate::streams::sse;
use crate::streams::wakes::Wakes;

/// The [`Feed`] of a shared session's GET stream.
pub(crate) struct SharedLive {
    channel: Arc<Channel>,
    session: SessionHandle,
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
        let key = StreamKey::own(session.id().to_string());
        let mut head = channel.wakes.log_head();
        head.mark_unchanged();
        let mut takeovers = channel.wakes.takeovers();
        takeovers.mark_unchanged();
        session.claim_stream();
        channel.hold();
        let (opening, cursor) = match last {
            None => {
                let id = log.allocate(&key).await?;
                (vec![sse::priming(&seq_id(id), retry)], id)
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
            // This stream's ids are stored before they are sent: a log behind its cursor lost
            // what it held (the store forgot it).
            Replay::Truncated | Replay::Ahead => {
                out.push(sse::truncated(&seq_id(self.cursor)));
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

/// How long a resumed POST stream waits, without progress, for the events its cursor names
/// to be stored: the instance running the call writes an event to its client before it
/// mirrors it to the log, so a client that resumes at once on another instance may be ahead of
/// the log for a moment (milliseconds while the store answers). When the instance running the
/// call died before mirroring, nothing ever comes: the stream then says what was lost
/// (`notifications/replay_truncated`) and ends.
pub(crate) const AHEAD_WAIT: Duration = Duration::from_secs(30);

/// A POST stream of a shared session resumed on an instance that does not run its call: its
/// events are read from the session's log of that stream (the instance running the call
/// mirrors its tape there, ending with an empty marker), woken by every append to the session's
/// POST stream logs. A cursor ahead of the log waits for the log (see [`AHEAD_WAIT`]).
pub(crate) struct SharedTape {
    session: SessionHandle,
    log: Arc<dyn EventLog>,
    key: StreamKey,
    wake: watch::Receiver<u64>,
    cursor: u64,
    /// When the log last made progress (or the stream opened): the bound of [`AHEAD_WAIT`].
    progress: tokio::time::Instant,
    /// The end marker was read: the stream is over once what was read is written.
    over: bool,
    /// The last read found the cursor ahead of the log.
    ahead: bool,
    /// Woken, not yet read: the next `next` reads the log before waiting again (cancel safety).
    dirty: bool,
    opening: Vec<Bytes>,
}

/// What a resumed shared POST stream found.
pub(crate) enum Resumed {
    /// Events to follow.
    Follow(SharedTape),
    /// Nothing left to send (or a stream nobody knows): 204, the client stops reconnecting.
    Nothing,
}

/// What one read of the log found.
enum Read {
    /// The events after the cursor as SSE chunks, and whether the end marker was among them.
    Events(Vec<Bytes>, bool),
    /// The cursor is past what the log holds yet.
    Ahead,
    /// Events after the cursor are gone.
    Lost,
}

impl SharedTape {
    /// Resumes stream `number` of `session` after `cursor`.
    pub(crate) async fn open(
        session: SessionHandle,
        wakes: &Wakes,
        log: Arc<dyn EventLog>,
        number: u64,
        cursor: u64,
        retry: Duration,
    ) -> Result<Resumed, StoreError> {
        let key = StreamKey {
            session: session.id().to_string(),
            stream: number,
        };
        let mut wake = wakes.stream_logs();
        wake.mark_unchanged();
        let mut feed = SharedTape {
            session,
            log,
            key,
            wake,
            cursor,
            progress: tokio::time::Instant::now(),
            over: false,
            ahead: false,
            dirty: false,
            opening: vec![sse::retry(retry)],
        };
        match feed.read().await? {
            Read::Lost => Ok(Resumed::Nothing),
            Read::Events(chunks, true) if chunks.is_empty() => Ok(Resumed::Nothing),
            Read::Events(chunks, done) => {
                feed.opening.extend(chunks);
                feed.over = done;
                Ok(Resumed::Follow(feed))
            }
            // The events are on their way to the log: the stream opens and waits for them.
            Read::Ahead => {
                feed.ahead = true;
                Ok(Resumed::Follow(feed))
            }
        }
    }

    /// Reads the log after the cursor.
    async fn read(&mut self) -> Result<Read, StoreError> {
        let events = match self.log.after(&self.key, self.cursor).await? {
            Replay::From(events) => events,
            Replay::Ahead => return Ok(Read::Ahead),
            Replay::Truncated => return Ok(Read::Lost),
        };
        let mut out = Vec::new();
        let mut done = false;
        for (id, frame) in events {
            self.cursor = id;
            self.progress = tokio::time::Instant::now();
            if frame.is_empty() {
                done = true;
                break;
            }
            out.push(sse::event(Some(&stream_id(self.key.stream, id)), &frame));
        }
        Ok(Read::Events(out, done))
    }
}

impl Feed for SharedTape {
    fn open(&mut self) -> Next {
        Next::Write(std::mem::take(&mut self.opening))
    }

    async fn next(&mut self) -> Next {
        if self.over {
            return Next::End(Vec::new());
        }
        loop {
            if !self.dirty {
                let ahead_until = self.ahead.then_some(self.progress + AHEAD_WAIT);
                tokio::select! {
                    biased;
                    () = self.session.closed().cancelled() => return Next::Stop,
                    r = self.wake.changed() => {
                        if r.is_err() {
                            return Next::Stop;
                        }
                        self.wake.mark_unchanged();
                    }
                    // A cursor left ahead is read once more when the bound passes.
                    () = until(ahead_until) => {}
                }
                self.dirty = true;
            }
            let read = self.read().await;
            self.dirty = false;
            self.ahead = matches!(read, Ok(Read::Ahead));
            match read {
                Ok(Read::Events(chunks, true)) => return Next::End(chunks),
                Ok(Read::Events(chunks, false)) if !chunks.is_empty() => return Next::Write(chunks),
                Ok(Read::Events(..)) => {}
                Ok(Read::Ahead) if self.progress.elapsed() < AHEAD_WAIT => {}
                Ok(Read::Ahead | Read::Lost) => {
                    tracing::info!(session = %self.session.id(), stream = self.key.stream, "resumed stream lost its events");
                    return Next::End(vec![sse::truncated(&stream_id(self.key.stream, self.cursor))]);
                }
                Err(e) => {
                    tracing::warn!(session = %self.session.id(), error = %e, "stream log unreadable; stream ends");
                    return Next::Stop;
                }
            }
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
