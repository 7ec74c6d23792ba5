//! How instances number their bus messages, so that a receiver notices one that was lost.
//!
//! A sender counts its messages to every instance from 1, and apart from them its messages to
//! each one instance (an instance hears only the latter of those meant for others). A
//! receiver keeps the last number heard from each sender in each of the two counts it
//! hears; a number skipped is a gap. The bus keeps one publisher's order across both kinds
//! (see [`Bus`](crate::store::Bus)), so each count arrives in order.

use std::collections::HashMap;

/// At most this many senders (or destinations) are remembered: instances come and go. Past
/// it, the memory starts afresh: a receiver forgoes one comparison per sender, a destination
/// hears its count start again at 1 (one spurious gap there).
const MAX: usize = 1024;

/// A sender's counts: of its messages to every instance, and of those to each one.
#[derive(Debug, Default)]
pub(super) struct Outgoing {
    everyone: u64,
    each: HashMap<String, u64>,
}

impl Outgoing {
    /// The number of the next message, to `to` or (`None`) to every instance.
    pub(super) fn next(&mut self, to: Option<&str>) -> u64 {
        let n = match to {
            None => &mut self.everyone,
            Some(to) => {
                if !self.each.contains_key(to) && self.each.len() >= MAX {
                    self.each.clear();
                }
                self.each.entry(to.to_owned()).or_default()
            }
        };
        *n += 1;
        *n
    }
}

/// A receiver's memory of the numbers heard.
#[derive(Debug, Default)]
pub(super) struct Incoming {
    everyone: Heard,
    mine: Heard,
}

impl Incoming {
    /// Records message `seq` from `from`, one to every instance or (`direct`) to this one;
    /// `false` when numbers were skipped since its last message of that kind (the first heard,
    /// and a sender that does not count, are in order).
    pub(super) fn in_order(&mut self, from: &str, seq: u64, direct: bool) -> bool {
        if direct { &mut self.mine } else { &mut self.everyone }.in_order(from, seq)
    }
}

/// The last number heard from each sender, in one count.
#[derive(Debug, Default)]
struct Heard(HashMap<String, u64>);

impl Heard {
    fn in_order(&mut self, from: &str, seq: u64) -> bool {
        if seq == 0 {
            return true;
        }
        if let Some(last) = self.0.get_mut(from) {
            let next = *last + 1;
            *last = seq;
            return seq == next;
        }
        if self.0.len() >= MAX {
            self.0.clear();
        }
        self.0.insert(from.to_owned(), seq);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Incoming, MAX, Outgoing};

    #[test]
    fn a_skipped_number_is_a_gap() {
        let mut heard = Incoming::default();
        assert!(heard.in_order("a", 7, false), "the first message heard is in order");
        assert!(heard.in_order("a", 8, false));
        assert!(heard.in_order("b", 1, false), "senders are counted apart");
        assert!(!heard.in_order("a", 10, false), "9 was lost");
        assert!(heard.in_order("a", 11, false));
        assert!(
            heard.in_order("c", 0, false) && heard.in_order("c", 0, false),
            "a sender that does not count"
        );
    }

    #[test]
    fn messages_to_one_instance_are_counted_apart() {
        let mut out = Outgoing::default();
        let mut heard = Incoming::default();
        // The sender's first message to everyone, then two to this instance, one to another,
        // then to everyone again: this instance hears 1, 1, 2 and 2, all in order.
        assert_eq!(out.next(None), 1);
        assert!(heard.in_order("a", 1, false));
        for expected in [1, 2] {
            let n = out.next(Some("me"));
            assert_eq!(n, expected);
            assert!(heard.in_order("a", n, true));
        }
        assert_eq!(out.next(Some("other")), 1, "each destination has its own count");
        let n = out.next(None);
        assert_eq!(n, 2, "messages to one instance leave the count to everyone whole");
        assert!(heard.in_order("a", n, false));
        // One message to this instance lost: heard as a gap in its own count only.
        out.next(Some("me"));
        assert!(!heard.in_order("a", out.next(Some("me")), true));
        assert!(heard.in_order("a", out.next(None), false));
    }

    #[test]
    fn the_memory_of_senders_and_destinations_is_bounded() {
        let mut heard = Incoming::default();
        let mut out = Outgoing::default();
        for n in 0..MAX + 10 {
            assert!(heard.in_order(&format!("i{n}"), 1, false));
            assert_eq!(out.next(Some(&format!("i{n}"))), 1);
        }
        assert!(heard.everyone.0.len() <= MAX);
        assert!(out.each.len() <= MAX);
    }
}
