//! Standard input when it is not a pipe (a terminal, a file): read on a thread of its own.
//!
//! Tokio's `stdin()` reads on the engine's blocking pool, and a runtime waits for its
//! blocking threads when it shuts down: a read stuck on a terminal kept the process alive after
//! serving ended (until the user pressed Enter). This reader's thread is detached instead:
//! nothing waits for it, and the process exits when `main` returns, read or no read.

use std::io::{self, Read};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// How many bytes the thread reads at a time.
const CHUNK: usize = 64 * 1024;

/// The asynchronous end of the stdin thread.
#[derive(Debug)]
pub(crate) struct ThreadStdin {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    buf: Vec<u8>,
    pos: usize,
}

/// Starts the detached reading thread; `None` when no thread could be started.
pub(crate) fn spawn() -> Option<ThreadStdin> {
    let (tx, rx) = mpsc::channel::<io::Result<Vec<u8>>>(2);
    let started = std::thread::Builder::new().name("mcp-stdin".into()).spawn(move || {
        let mut stdin = io::stdin();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let chunk = match stdin.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => Ok(buf[..n].to_vec()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let failed = chunk.is_err();
            // The serving side is gone: stop (or linger in `read` until the process exits).
            if tx.blocking_send(chunk).is_err() || failed {
                return;
            }
        }
    });
    match started {
        Ok(_) => Some(ThreadStdin {
            rx,
            buf: Vec::new(),
            pos: 0,
        }),
        Err(e) => {
            tracing::debug!(error = %e, "no stdin thread; reading on the blocking pool");
            None
        }
    }
}

impl AsyncRead for ThreadStdin {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.pos >= this.buf.len() {
            match this.rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                // End of input (or the thread ended).
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                Poll::Ready(Some(Ok(chunk))) => {
                    this.buf = chunk;
                    this.pos = 0;
                }
            }
        }
        let n = out.remaining().min(this.buf.len() - this.pos);
        out.put_slice(&this.buf[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}
