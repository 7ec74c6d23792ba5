//! Event cursors: the opaque position of an event log a client brings back.
//!
//! A position is two numbers ordered together ([`Position`]): a log kept in memory counts
//! occurrences in `lo`; a log in a Redis stream uses the entry id's two halves. A cursor also
//! names the log's *epoch*, a number the log draws when it starts with nothing (a process
//! start for a log in memory, the creation of the stream for a shared one), so that a cursor
//! from a log that has since been lost is recognised as stale rather than read as a position
//! of the new one. Cursors are opaque to clients; one that does not parse, or names another
//! epoch, is *stale*: the server answers from now with `truncated: true`, never with an error.

use std::fmt;

/// A position in an event log: after the occurrence at this position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// The high half (a Redis stream id's milliseconds; 0 in memory).
    pub hi: u64,
    /// The low half (a sequence number).
    pub lo: u64,
}

impl Position {
    /// The position before anything.
    pub const START: Position = Position { hi: 0, lo: 0 };

    /// A position from its two halves.
    pub const fn new(hi: u64, lo: u64) -> Self {
        Position { hi, lo }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.hi, self.lo)
    }
}

/// A cursor: a log's epoch and a position in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cursor {
    /// The epoch of the log the position belongs to.
    pub epoch: u64,
    /// The position.
    pub position: Position,
}

/// What a client's cursor means to a log of epoch `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// No cursor (absent or `null`): start from now, replay nothing.
    FromNow,
    /// Resume after this position of the log.
    After(Position),
    /// The cursor is not this log's (malformed, or from a lost log): start from now and say
    /// `truncated: true`.
    Stale,
}

const PREFIX: &str = "ev1.";

impl Cursor {
    /// The cursor's text.
    pub fn encode(&self) -> String {
        format!("{PREFIX}{:x}.{:x}.{:x}", self.epoch, self.position.hi, self.position.lo)
    }

    /// Reads a cursor's text (`None` when it is not one).
    pub fn decode(text: &str) -> Option<Cursor> {
        let mut parts = text.strip_prefix(PREFIX)?.split('.');
        let mut next = || parts.next().and_then(|p| u64::from_str_radix(p, 16).ok());
        let cursor = Cursor {
            epoch: next()?,
            position: Position::new(next()?, next()?),
        };
        (parts.next().is_none() && cursor.encode() == text).then_some(cursor)
    }

    /// What `text`, a client's cursor, means to a log of epoch `epoch`.
    pub fn resume(text: Option<&str>, epoch: u64) -> Resume {
        match text.map(Cursor::decode) {
            None => Resume::FromNow,
            Some(Some(c)) if c.epoch == epoch => Resume::After(c.position),
            Some(_) => Resume::Stale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_order() {
        let c = Cursor {
            epoch: 0xabc,
            position: Position::new(1_700_000_000_000, 3),
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        assert!(Position::new(1, 9) < Position::new(2, 0));
        assert!(Position::START < Position::new(0, 1));
    }

    #[test]
    fn foreign_and_malformed_cursors_are_stale() {
        let c = Cursor {
            epoch: 7,
            position: Position::new(0, 5),
        }
        .encode();
        assert_eq!(Cursor::resume(Some(&c), 7), Resume::After(Position::new(0, 5)));
        assert_eq!(Cursor::resume(Some(&c), 8), Resume::Stale);
        assert_eq!(Cursor::resume(None, 7), Resume::FromNow);
        for bad in [
            "",
            "ev1.",
            "ev1.7.0",
            "ev1.7.0.5.1",
            "ev1.7.0.05",
            "ev1.7.0.-5",
            "xx.7.0.5",
            "ev1.7.0.5 ",
        ] {
            assert_eq!(Cursor::resume(Some(bad), 7), Resume::Stale, "{bad:?}");
        }
    }
}
