//! `Last-Event-ID` parsing (`mcp_protocol::event_id`): the `<stream>-<seq>` id of a resumable
//! POST stream and the `<seq>` id of a session's GET stream.
//!
//! Checks that parsing never panics, that the two shapes never both accept one id, that what
//! parses is written back by `stream_id` / `seq_id` to an id that parses to the same value, and
//! that it agrees with a straightforward reference parser (`u64` digits around one `-`, after
//! trimming whitespace).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_protocol::event_id::{StreamEventId, parse_seq, parse_stream_id, seq_id, stream_id};

fuzz_target!(|data: &[u8]| {
    let id = String::from_utf8_lossy(data);
    let stream = parse_stream_id(&id);
    let seq = parse_seq(&id);
    assert!(stream.is_none() || seq.is_none(), "{id:?} parses as both shapes");
    if let Some(parsed) = stream {
        assert_eq!(parse_stream_id(&stream_id(parsed.stream, parsed.seq)), Some(parsed));
    }
    if let Some(n) = seq {
        assert_eq!(parse_seq(&seq_id(n)), Some(n));
    }
    assert_eq!(stream, reference_stream(&id), "{id:?}");
    assert_eq!(seq, reference_number(id.trim()), "{id:?}");
});

fn reference_stream(id: &str) -> Option<StreamEventId> {
    let id = id.trim();
    let dash = id.find('-')?;
    Some(StreamEventId {
        stream: reference_number(&id[..dash])?,
        seq: reference_number(&id[dash + 1..])?,
    })
}

/// An optional `+`, then decimal digits that fit a `u64` (what `u64::from_str` reads).
fn reference_number(s: &str) -> Option<u64> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits
        .bytes()
        .try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}
