//! SSE event ids and the `Last-Event-ID` a client resumes with.
//!
//! The server writes two shapes of event id:
//!
//! - on a session's GET stream, the sequence number of the event in the session's ring:
//!   `<seq>` ([`parse_seq`], [`seq_id`]);
//! - on a resumable POST stream (SEP-1699), the stream's number and the event's sequence
//!   number within it: `<stream>-<seq>` ([`parse_stream_id`], [`stream_id`]), so that a
//!   `Last-Event-ID` names the stream it came from and never resumes another.
//!
//! A `Last-Event-ID` is whatever the client sends: parsing trims surrounding whitespace and
//! reads unsigned decimal integers (as [`u64`]'s `FromStr` does); anything else is `None`,
//! which the transport treats as an unknown cursor. Parsing never panics and never allocates.

/// A `<stream>-<seq>` id of a resumable POST stream, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamEventId {
    /// The stream's number within its session.
    pub stream: u64,
    /// The event's sequence number within the stream (0 is the priming event).
    pub seq: u64,
}

/// Parses the `Last-Event-ID` of a resumable POST stream: `<stream>-<seq>`.
///
/// `None` for anything else, including a plain `<seq>` (a GET stream's id).
pub fn parse_stream_id(id: &str) -> Option<StreamEventId> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some(StreamEventId {
        stream: stream.parse().ok()?,
        seq: seq.parse().ok()?,
    })
}

/// Parses the `Last-Event-ID` of a session's GET stream: `<seq>`.
pub fn parse_seq(id: &str) -> Option<u64> {
    id.trim().parse().ok()
}

/// The event id `<stream>-<seq>` of an event on a resumable POST stream.
pub fn stream_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// The event id `<seq>` of an event on a session's GET stream.
pub fn seq_id(seq: u64) -> String {
    seq.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids() {
        assert_eq!(parse_stream_id("3-7"), Some(StreamEventId { stream: 3, seq: 7 }));
        assert_eq!(parse_stream_id(" 3-7\t"), Some(StreamEventId { stream: 3, seq: 7 }));
        assert_eq!(parse_stream_id("7"), None);
        assert_eq!(parse_stream_id("a-1"), None);
        assert_eq!(parse_stream_id("1-a"), None);
        assert_eq!(parse_stream_id("-1"), None);
        assert_eq!(parse_stream_id("1-"), None);
        assert_eq!(parse_stream_id("1-2-3"), None);
        assert_eq!(parse_stream_id("18446744073709551616-0"), None, "overflow");
        assert_eq!(
            parse_stream_id("18446744073709551615-18446744073709551615"),
            Some(StreamEventId {
                stream: u64::MAX,
                seq: u64::MAX
            })
        );
        assert_eq!(parse_stream_id(""), None);
        assert_eq!(parse_stream_id("é-1"), None);
    }

    #[test]
    fn seq_ids() {
        assert_eq!(parse_seq("42"), Some(42));
        assert_eq!(parse_seq(" 42 "), Some(42));
        assert_eq!(parse_seq("3-7"), None, "a POST stream's id");
        assert_eq!(parse_seq("-1"), None);
        assert_eq!(parse_seq(""), None);
        assert_eq!(parse_seq("18446744073709551616"), None, "overflow");
    }

    #[test]
    fn written_ids_parse_back() {
        for (stream, seq) in [(0, 0), (1, 2), (u64::MAX, u64::MAX)] {
            assert_eq!(
                parse_stream_id(&stream_id(stream, seq)),
                Some(StreamEventId { stream, seq })
            );
            assert_eq!(parse_seq(&seq_id(seq)), Some(seq));
            assert_eq!(parse_seq(&stream_id(stream, seq)), None, "the shapes never overlap");
            assert_eq!(parse_stream_id(&seq_id(seq)), None, "the shapes never overlap");
        }
    }
}
