//! One file's tools while [`super::RegistryState::apply`] checks them, before any enters
//! the registry: in the order they were first registered, a later tool of the same scope
//! and name taking its predecessor's place.
//!
//! Looked up by scanning while small and through an index once large: nearly every file
//! registers one tool, and building (and dropping) a hash map for it was about a fifth of
//! applying it on a warm start, which applies every file.

use super::entry::ToolEntry;
use std::sync::Arc;

/// A tool's place in the registry: its scope (`None`: global) and name.
pub(super) type Key = (Option<String>, String);

/// Largest batch looked up by scanning.
const SCANNED: usize = 8;

/// The tools of a batch, in first-registration order.
pub(super) struct Batch {
    entries: Vec<(Key, Arc<ToolEntry>)>,
    /// Each key's place in `entries`, for a batch of more than [`SCANNED`] tools (foldhash:
    /// SipHash was a tenth of a large batch).
    index: Option<foldhash::HashMap<Key, usize>>,
}

impl Batch {
    /// An empty batch for `capacity` tools.
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Vec::with_capacity(capacity),
            index: (capacity > SCANNED)
                .then(|| foldhash::HashMap::with_capacity_and_hasher(capacity, Default::default())),
        }
    }

    /// The tool staged under `key`.
    pub(super) fn get(&self, key: &Key) -> Option<&Arc<ToolEntry>> {
        self.position(key).map(|at| &self.entries[at].1)
    }

    /// Stages `entry` under `key`, in the place of one staged there before.
    pub(super) fn insert(&mut self, key: Key, entry: Arc<ToolEntry>) {
        match self.position(&key) {
            Some(at) => self.entries[at].1 = entry,
            None => {
                if let Some(index) = &mut self.index {
                    index.insert(key.clone(), self.entries.len());
                }
                self.entries.push((key, entry));
            }
        }
    }

    /// How many tools are staged.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The staged tools, in first-registration order.
    pub(super) fn into_entries(self) -> impl Iterator<Item = (Key, Arc<ToolEntry>)> {
        self.entries.into_iter()
    }

    fn position(&self, key: &Key) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.entries.iter().position(|(staged, _)| staged == key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::entry::test_entry;

    fn key(scope: Option<&str>, name: &str) -> Key {
        (scope.map(str::to_owned), name.to_owned())
    }

    /// `count` tools named `t0`, `t1`, …, then `t0` again in toolset `second`; returns the
    /// batch's (name, toolset) pairs in order.
    fn staged_with_a_repeat(count: usize) -> Vec<(String, String)> {
        let mut batch = Batch::with_capacity(count + 1);
        for i in 0..count {
            batch.insert(
                key(None, &format!("t{i}")),
                Arc::new(test_entry(&format!("t{i}"), "first")),
            );
        }
        batch.insert(key(None, "t0"), Arc::new(test_entry("t0", "second")));
        assert_eq!(batch.len(), count);
        batch
            .into_entries()
            .map(|(_, entry)| (entry.name.to_string(), entry.toolset.to_string()))
            .collect()
    }

    #[test]
    fn a_repeated_key_takes_its_predecessors_place_in_a_scanned_batch() {
        let staged = staged_with_a_repeat(3);
        let names: Vec<&str> = staged.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["t0", "t1", "t2"]);
        assert_eq!(staged[0].1, "second");
    }

    #[test]
    fn a_repeated_key_takes_its_predecessors_place_in_an_indexed_batch() {
        let staged = staged_with_a_repeat(3 * SCANNED);
        let expected: Vec<String> = (0..3 * SCANNED).map(|i| format!("t{i}")).collect();
        let names: Vec<String> = staged.iter().map(|(name, _)| name.clone()).collect();
        assert_eq!(names, expected);
        assert_eq!(staged[0].1, "second");
    }

    #[test]
    fn the_same_name_in_another_scope_is_another_key() {
        let mut batch = Batch::with_capacity(2);
        batch.insert(key(None, "t"), Arc::new(test_entry("t", "global")));
        batch.insert(key(Some("team"), "t"), Arc::new(test_entry("t", "scoped")));
        assert_eq!(batch.len(), 2);
        assert_eq!(
            batch.get(&key(None, "t")).map(|e| e.toolset.to_string()),
            Some("global".into())
        );
        assert_eq!(
            batch
                .get(&key(Some("team"), "t"))
                .map(|e| e.toolset.to_string()),
            Some("scoped".into())
        );
        assert!(batch.get(&key(Some("other"), "t")).is_none());
    }
}
