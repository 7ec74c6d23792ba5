//! Server-Sent Events, read as the HTML standard's event-stream format says (§9.2.6): lines end
//! with CRLF, LF or CR; `data:` lines join with LF; `id:` sets the last event id (kept across
//! events, never containing NUL); `retry:` the reconnection delay; a line starting with `:` is a
//! comment (a keep-alive); an empty line ends the event, and an event without data is not
//! dispatched.
//!
//! Written here rather than taken from a crate because the client needs one thing the crates
//! leave out: a bound on what one event may hold, so a server that never ends an event cannot
//! make the client buffer without end.

use bytes::{Buf, BytesMut};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The data lines, joined with LF.
    pub(crate) data: String,
}

/// Why the stream cannot be read further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SseError {
    /// An event (or a line) grew past the bound.
    #[error("an event of the stream exceeds {0} bytes")]
    TooLarge(usize),
}

/// An incremental event-stream reader.
#[derive(Debug)]
pub(crate) struct SseReader {
    buf: BytesMut,
    data: String,
    has_data: bool,
    /// The last event id the stream set.
    pub(crate) last_id: Option<String>,
    /// The reconnection delay the stream asked for, in milliseconds.
    pub(crate) retry_ms: Option<u64>,
    max: usize,
    /// A CR ended the previous chunk: an LF starting the next one belongs to it.
    after_cr: bool,
}

impl SseReader {
    /// A reader that refuses an event (or a line) over `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        SseReader {
            buf: BytesMut::new(),
            data: String::new(),
            has_data: false,
            last_id: None,
            retry_ms: None,
            max,
            after_cr: false,
        }
    }

    /// Feeds a chunk and returns the events it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        loop {
            if self.after_cr && self.buf.first() == Some(&b'\n') {
                self.buf.advance(1);
            }
            self.after_cr = false;
            let Some(end) = self.buf.iter().position(|b| *b == b'\n' || *b == b'\r') else {
                break;
            };
            let line = self.buf.split_to(end);
            let terminator = self.buf[0];
            self.buf.advance(1);
            if terminator == b'\r' {
                if self.buf.first() == Some(&b'\n') {
                    self.buf.advance(1);
                } else if self.buf.is_empty() {
                    self.after_cr = true;
                }
            }
            if let Some(event) = self.line(&String::from_utf8_lossy(&line)) {
                events.push(event);
            }
            if self.data.len() > self.max {
                return Err(SseError::TooLarge(self.max));
            }
        }
        if self.buf.len() > self.max {
            return Err(SseError::TooLarge(self.max));
        }
        Ok(events)
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if !self.has_data {
                return None;
            }
            self.has_data = false;
            return Some(SseEvent {
                data: std::mem::take(&mut self.data),
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datas(events: Vec<SseEvent>) -> Vec<String> {
        events.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn events_split_anywhere_and_every_line_ending_are_read() {
        let stream = b": keep-alive\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\nretry: 250\nevent: message\ndata: x\ndata: y\n\n\rdata: z\r\r";
        for cut in 0..stream.len() {
            let mut r = SseReader::new(1024);
            let mut got = datas(r.feed(&stream[..cut]).unwrap());
            got.extend(datas(r.feed(&stream[cut..]).unwrap()));
            assert_eq!(got, ["{\"a\":1}", "x\ny", "z"], "cut at {cut}");
            assert_eq!(r.last_id.as_deref(), Some("7"));
            assert_eq!(r.retry_ms, Some(250));
        }
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_but_its_id_is_kept() {
        let mut r = SseReader::new(1024);
        assert!(r.feed(b"id: 3\n\n").unwrap().is_empty());
        assert_eq!(r.last_id.as_deref(), Some("3"));
    }

    #[test]
    fn an_event_or_a_line_past_the_bound_is_refused() {
        let mut r = SseReader::new(16);
        assert_eq!(r.feed(&[b'a'; 17]), Err(SseError::TooLarge(16)));
        let mut r = SseReader::new(16);
        let many = b"data: 12345\ndata: 12345\ndata: 12345\n";
        assert_eq!(r.feed(many), Err(SseError::TooLarge(16)));
    }
}
