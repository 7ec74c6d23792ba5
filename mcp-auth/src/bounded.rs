//! A map bounded in entries: past its capacity, the entry inserted first is evicted.
//!
//! The throttle's records and the credential cache live in one each, so that a flood of new
//! keys (addresses, user names, passwords) cannot grow memory without bound. Entries are never
//! removed one by one (a stale entry is reset in place), so the insertion order is exactly the
//! map's keys and evicting the oldest is a `pop_front`.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// A `HashMap` of at most `cap` entries, evicting the oldest inserted.
#[derive(Debug)]
pub(crate) struct BoundedMap<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    cap: usize,
}

impl<K: Eq + Hash + Clone, V> BoundedMap<K, V> {
    /// An empty map holding at most `cap` entries (at least 1).
    pub(crate) fn new(cap: usize) -> Self {
        BoundedMap {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    /// The entry of `key`, if any.
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// The entry of `key`, if any, to change in place.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key)
    }

    /// The entry of `key`, inserted with `make` when absent. Before inserting, entries at the
    /// front for which `stale` holds are dropped, then the oldest while the map is full.
    pub(crate) fn entry(&mut self, key: K, make: impl FnOnce() -> V, stale: impl Fn(&V) -> bool) -> &mut V {
        if !self.map.contains_key(&key) {
            while let Some(front) = self.order.front() {
                let full = self.map.len() >= self.cap;
                if !full && !self.map.get(front).is_some_and(&stale) {
                    break;
                }
                let front = self.order.pop_front().expect("front exists");
                self.map.remove(&front);
            }
            self.order.push_back(key.clone());
        }
        self.map.entry(key).or_insert_with(make)
    }

    /// How many entries are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_is_evicted_past_the_cap() {
        let mut m = BoundedMap::new(3);
        for k in 0..5 {
            *m.entry(k, || 0, |_| false) += k;
        }
        assert_eq!(m.len(), 3);
        assert!(m.get(&0).is_none() && m.get(&1).is_none());
        assert_eq!(m.get(&4), Some(&4));
        // Touching an entry does not reorder it: 2 is still the oldest.
        *m.entry(2, || 0, |_| false) += 10;
        m.entry(5, || 0, |_| false);
        assert!(m.get(&2).is_none());
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn stale_entries_at_the_front_go_first() {
        let mut m = BoundedMap::new(10);
        for k in 0..4 {
            m.entry(k, || k, |_| false);
        }
        // 0 and 1 are stale, 2 is not: the sweep stops at 2, 3 stays although it is stale too.
        m.entry(9, || 9, |v| *v != 2);
        assert_eq!(m.len(), 3);
        assert!(m.get(&0).is_none() && m.get(&1).is_none());
        assert!(m.get(&2).is_some() && m.get(&3).is_some());
        if let Some(v) = m.get_mut(&3) {
            *v = 30;
        }
        assert_eq!(m.get(&3), Some(&30));
    }

    #[test]
    fn a_zero_cap_holds_one() {
        let mut m = BoundedMap::new(0);
        m.entry("a", || 1, |_| false);
        m.entry("b", || 2, |_| false);
        assert_eq!(m.len(), 1);
        assert_eq!(m.get(&"b"), Some(&2));
    }
}
