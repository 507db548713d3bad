//! The in-memory backend (`[store] backend = "memory"`): gone when the process ends.

use parking_lot::RwLock;
use std::collections::BTreeMap;

/// JSON texts by (namespace, key).
#[derive(Default)]
pub(super) struct Memory {
    values: RwLock<BTreeMap<(String, String), String>>,
}

impl Memory {
    pub(super) fn get(&self, ns: &str, key: &str) -> Option<String> {
        self.values
            .read()
            .get(&(ns.to_string(), key.to_string()))
            .cloned()
    }

    pub(super) fn set(&self, ns: &str, key: &str, text: String) {
        self.values
            .write()
            .insert((ns.to_string(), key.to_string()), text);
    }

    pub(super) fn delete(&self, ns: &str, key: &str) -> bool {
        self.values
            .write()
            .remove(&(ns.to_string(), key.to_string()))
            .is_some()
    }

    pub(super) fn list(&self, ns: &str, prefix: &str, limit: usize) -> Vec<String> {
        let start = (ns.to_string(), prefix.to_string());
        self.values
            .read()
            .range(start..)
            .take_while(|((n, k), _)| n == ns && k.starts_with(prefix))
            .take(limit)
            .map(|((_, k), _)| k.clone())
            .collect()
    }
}
