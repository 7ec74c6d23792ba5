//! A subscription's queue: at most [`LISTENER_BUFFER`] frames from the fan-out, one sender and
//! one receiver, allocating nothing beyond its header until frames wait in it (an idle
//! subscription holds a few dozen bytes, where a `tokio::sync::mpsc` channel holds a block of 32
//! slots from the start).
//!
//! The receiver is polled ([`Inbox::poll_recv`]): its waker is kept in the queue, so that a
//! stream waiting for its next frame holds no future of its own (a server may hold thousands of
//! idle subscriptions).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;

use crate::sink::Frame;

/// How many notifications wait for a slow listener before it misses some.
pub(super) const LISTENER_BUFFER: usize = 64;

/// Why a frame was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// The queue holds [`LISTENER_BUFFER`] frames: this one is missed.
    Full,
    /// The receiving end is gone.
    Closed,
}

/// A bounded queue of frames from the fan-out to one subscription: [`queue`].
#[derive(Debug, Default)]
struct Queue {
    frames: Mutex<VecDeque<Frame>>,
    /// The receiver waiting for a frame (or for the end).
    waker: AtomicWaker,
    /// The [`Inbox`] was dropped.
    receiver_gone: AtomicBool,
    /// The [`Outbox`] was dropped or closed: the receiver gets what is queued, then the end.
    sender_gone: AtomicBool,
}

/// The sending end: [`Outbox::try_send`] never waits.
#[derive(Debug)]
pub(super) struct Outbox(Arc<Queue>);

/// The receiving end, held by the [`Listener`].
#[derive(Debug)]
pub(super) struct Inbox(Arc<Queue>);

/// A queue of at most [`LISTENER_BUFFER`] frames with one sender and one receiver. Unlike
/// `tokio::sync::mpsc`, it allocates nothing beyond its header until frames wait in it.
pub(super) fn queue() -> (Outbox, Inbox) {
    let queue = Arc::new(Queue::default());
    (Outbox(queue.clone()), Inbox(queue))
}

impl Outbox {
    /// Queues `frame`, unless the queue is full or the receiver is gone.
    pub(super) fn try_send(&self, frame: Frame) -> Result<(), Refused> {
        if self.0.receiver_gone.load(Ordering::Acquire) || self.0.sender_gone.load(Ordering::Acquire) {
            return Err(Refused::Closed);
        }
        {
            let mut frames = self.0.frames.lock().unwrap_or_else(PoisonError::into_inner);
            if frames.len() >= LISTENER_BUFFER {
                return Err(Refused::Full);
            }
            frames.push_back(frame);
        }
        // The receiver checks the queue after it registers its waker: no wake-up is lost.
        self.0.waker.wake();
        Ok(())
    }

    /// Ends the queue while the sender still exists (the server shutting its subscriptions
    /// down): the receiver gets what is queued, then the end.
    pub(super) fn close(&self) {
        self.0.sender_gone.store(true, Ordering::Release);
        self.0.waker.wake();
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.close();
    }
}

impl Inbox {
    /// The next frame; `None` once the sender is gone (or closed the queue) and the queue is
    /// empty.
    pub(super) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Frame>> {
        if let Some(frame) = self.pop() {
            return Poll::Ready(Some(frame));
        }
        self.0.waker.register(cx.waker());
        // Again, now that a frame queued meanwhile wakes this task.
        if let Some(frame) = self.pop() {
            return Poll::Ready(Some(frame));
        }
        if self.0.sender_gone.load(Ordering::Acquire) {
            // The end is final; frames queued before it were taken above.
            return Poll::Ready(self.pop());
        }
        Poll::Pending
    }

    fn pop(&self) -> Option<Frame> {
        let mut frames = self.0.frames.lock().unwrap_or_else(PoisonError::into_inner);
        let next = frames.pop_front();
        if frames.is_empty() && frames.capacity() > 0 {
            // An idle subscription keeps no buffer from a burst.
            frames.shrink_to_fit();
        }
        next
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.0.receiver_gone.store(true, Ordering::Release);
    }
}
