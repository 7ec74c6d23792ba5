//! Reading frames: one JSON-RPC message (or batch) per line.
//!
//! The reader never holds more than the frame cap in memory: a line that
//! grows past it is discarded up to its newline and reported as
//! [`Input::Oversize`], so the transport can answer it and keep serving.
//! A trailing `\r` is dropped (CRLF-terminated clients), blank lines are
//! skipped, and a last line without a newline before end of input still
//! counts as a frame.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// How many bytes are pulled from the input at a time.
const READ_CHUNK: usize = 64 * 1024;

/// One item of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// A non-blank line, without its line terminator.
    Line(Vec<u8>),
    /// A line longer than the cap; its bytes were discarded.
    Oversize,
}

/// Splits a byte stream into lines within a size cap.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
    buf: Vec<u8>,
    discarding: bool,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of lines of at most `max` bytes (terminator excluded).
    pub(crate) fn new(reader: R, max: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(READ_CHUNK, reader),
            max,
            buf: Vec::new(),
            discarding: false,
            eof: false,
        }
    }

    /// The next input, or `None` at end of input.
    ///
    /// Cancel-safe: the only suspension point is the buffered read, and
    /// the bytes already taken from it are kept in `self`.
    pub(crate) async fn next(&mut self) -> io::Result<Option<Input>> {
        // Room for a trailing `\r` on a line of exactly `max` bytes.
        let cap = self.max.saturating_add(1);
        loop {
            if self.eof {
                return Ok(None);
            }
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                self.eof = true;
                if std::mem::take(&mut self.discarding) {
                    return Ok(Some(Input::Oversize));
                }
                let line = std::mem::take(&mut self.buf);
                return Ok(self.finish(line));
            }
            match chunk.iter().position(|&b| b == b'\n') {
                Some(pos) => {
                    let oversize = self.discarding || self.buf.len() + pos > cap;
                    if !oversize {
                        self.buf.extend_from_slice(&chunk[..pos]);
                    }
                    self.inner.consume(pos + 1);
                    if oversize {
                        self.discarding = false;
                        self.buf = Vec::new();
                        return Ok(Some(Input::Oversize));
                    }
                    let line = std::mem::take(&mut self.buf);
                    if let Some(input) = self.finish(line) {
                        return Ok(Some(input));
                    }
                }
                None => {
                    let n = chunk.len();
                    if !self.discarding {
                        if self.buf.len() + n > cap {
                            // Free what was held: the line is lost anyway.
                            self.discarding = true;
                            self.buf = Vec::new();
                        } else {
                            self.buf.extend_from_slice(chunk);
                        }
                    }
                    self.inner.consume(n);
                }
            }
        }
    }

    /// Strips a trailing `\r`, checks the cap, skips blank lines.
    fn finish(&self, mut line: Vec<u8>) -> Option<Input> {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max {
            return Some(Input::Oversize);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(Input::Line(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn read_all(chunks: &[&[u8]], max: usize) -> Vec<Input> {
        let (mut tx, rx) = tokio::io::duplex(16);
        let owned: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
        let writer = mcp_runtime::background::spawn(async move {
            for c in owned {
                tx.write_all(&c).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let mut r = LineReader::new(rx, max);
        let mut out = Vec::new();
        while let Some(i) = r.next().await.unwrap() {
            out.push(i);
        }
        writer.await.unwrap();
        out
    }

    fn line(s: &str) -> Input {
        Input::Line(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn splits_and_joins() {
        let got = read_all(&[b"a\nbb", b"b\r\n\n  \r\ncc", b"c"], 100).await;
        assert_eq!(got, [line("a"), line("bbb"), line("ccc")]);
    }

    #[tokio::test]
    async fn oversize_lines_are_skipped_to_their_newline() {
        let long = vec![b'x'; 100];
        let got = read_all(&[b"ok\n", &long, &long, b"\nnext\n"], 10).await;
        assert_eq!(got, [line("ok"), Input::Oversize, line("next")]);
        // Exactly at the cap, with or without CR: accepted.
        let got = read_all(&[b"0123456789\r\n0123456789\n01234567890\n"], 10).await;
        assert_eq!(got, [line("0123456789"), line("0123456789"), Input::Oversize]);
        // An oversize last line without a newline.
        let got = read_all(&[&long], 10).await;
        assert_eq!(got, [Input::Oversize]);
    }
}
