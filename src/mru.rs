//! A small most-recently-used cache: a handful of keyed values, the most recently used
//! first, the least recently used dropped beyond the capacity. The memos of definitions,
//! search plans and resolved selections hold a few entries each (one per caller
//! selection in use), so a linear scan of a short list beats hashing their keys.

use parking_lot::Mutex;
use std::collections::VecDeque;

/// At most `capacity` values by key, most recently used first; shared behind `&self`.
pub(crate) struct Mru<K, V> {
    capacity: usize,
    entries: Mutex<VecDeque<(K, V)>>,
}

impl<K: PartialEq, V: Clone> Mru<K, V> {
    /// An empty cache keeping at most `capacity` values.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(VecDeque::with_capacity(capacity)),
        }
    }

    /// The value of `key`, which becomes the most recently used.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        self.get_if(key, |_| true)
    }

    /// The value of `key` if `usable` says it still is (it becomes the most recently
    /// used); a value no longer usable is dropped, so it never takes a place again.
    pub(crate) fn get_if(&self, key: &K, usable: impl FnOnce(&V) -> bool) -> Option<V> {
        let mut entries = self.entries.lock();
        let position = entries.iter().position(|(k, _)| k == key)?;
        let entry = entries.remove(position)?;
        if !usable(&entry.1) {
            return None;
        }
        let value = entry.1.clone();
        entries.push_front(entry);
        Some(value)
    }

    /// Stores `value` under `key` as the most recently used (replacing the key's value, if
    /// any), dropping the least recently used beyond the capacity.
    pub(crate) fn insert(&self, key: K, value: V) {
        let mut entries = self.entries.lock();
        entries.retain(|(k, _)| *k != key);
        entries.push_front((key, value));
        entries.truncate(self.capacity);
    }

    /// The keys, most recently used first.
    #[cfg(test)]
    fn keys(&self) -> Vec<K>
    where
        K: Clone,
    {
        self.entries.lock().iter().map(|(k, _)| k.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Mru;

    fn filled(capacity: usize, keys: &[u32]) -> Mru<u32, String> {
        let mru = Mru::new(capacity);
        for key in keys {
            mru.insert(*key, key.to_string());
        }
        mru
    }

    #[test]
    fn the_least_recently_used_is_evicted_beyond_the_capacity() {
        let mru = filled(3, &[1, 2, 3, 4]);
        assert_eq!(mru.keys(), [4, 3, 2]);
        assert_eq!(mru.get(&1), None);
    }

    #[test]
    fn a_hit_becomes_the_most_recently_used_and_survives_eviction() {
        let mru = filled(3, &[1, 2, 3]);
        assert_eq!(mru.get(&1).as_deref(), Some("1"));
        assert_eq!(mru.keys(), [1, 3, 2]);
        mru.insert(4, "4".into());
        assert_eq!(mru.keys(), [4, 1, 3], "2 was the least recently used");
    }

    #[test]
    fn inserting_a_known_key_replaces_it_without_a_duplicate() {
        let mru = filled(3, &[1, 2, 3]);
        mru.insert(2, "two".into());
        assert_eq!(mru.keys(), [2, 3, 1]);
        assert_eq!(mru.get(&2).as_deref(), Some("two"));
    }

    #[test]
    fn a_value_no_longer_usable_is_dropped() {
        let mru = filled(3, &[1, 2, 3]);
        assert_eq!(mru.get_if(&2, |_| false), None);
        assert_eq!(mru.keys(), [3, 1]);
        assert_eq!(mru.get_if(&3, |v| v == "3").as_deref(), Some("3"));
        assert_eq!(mru.keys(), [3, 1]);
    }

    #[test]
    fn a_miss_changes_nothing() {
        let mru = filled(3, &[1, 2]);
        assert_eq!(mru.get(&9), None);
        assert_eq!(mru.keys(), [2, 1]);
    }
}
