//! The in-memory backend (`[store] backend = "memory"`): gone when the process ends.

use super::StoreError;
use super::backend::{Backend, Change, Health, Row};
use super::wait::Wait;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;

/// JSON texts by (namespace, key).
#[derive(Default)]
pub(super) struct Memory {
    values: RwLock<BTreeMap<(String, String), String>>,
    /// Serialises updates (read, change on the caller's thread, write); readers do not
    /// wait for it.
    writer: Mutex<()>,
}

impl Backend for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn location(&self) -> String {
        "memory".to_string()
    }

    fn get(&self, ns: &str, key: &str, _wait: &Wait) -> Result<Option<String>, StoreError> {
        Ok(self
            .values
            .read()
            .get(&(ns.to_string(), key.to_string()))
            .cloned())
    }

    fn set(&self, ns: &str, key: &str, text: &str, _wait: &Wait) -> Result<(), StoreError> {
        self.values
            .write()
            .insert((ns.to_string(), key.to_string()), text.to_string());
        Ok(())
    }

    fn delete(&self, ns: &str, key: &str, _wait: &Wait) -> Result<bool, StoreError> {
        Ok(self
            .values
            .write()
            .remove(&(ns.to_string(), key.to_string()))
            .is_some())
    }

    fn list(
        &self,
        ns: &str,
        prefix: &str,
        limit: usize,
        _wait: &Wait,
    ) -> Result<Vec<String>, StoreError> {
        let start = (ns.to_string(), prefix.to_string());
        Ok(self
            .values
            .read()
            .range(start..)
            .take_while(|((n, k), _)| n == ns && k.starts_with(prefix))
            .take(limit)
            .map(|((_, k), _)| k.clone())
            .collect())
    }

    fn update(
        &self,
        ns: &str,
        key: &str,
        wait: &Wait,
        change: Change<'_>,
    ) -> Result<(), StoreError> {
        let _writer = wait.lock(&self.writer)?;
        let id = (ns.to_string(), key.to_string());
        let old = self.values.read().get(&id).cloned();
        match change(old)? {
            Some(text) => {
                self.values.write().insert(id, text);
            }
            None => {
                self.values.write().remove(&id);
            }
        }
        Ok(())
    }

    fn rows(
        &self,
        after: Option<(&str, &str)>,
        page: usize,
        _wait: &Wait,
    ) -> Result<Vec<Row>, StoreError> {
        use std::ops::Bound;
        let values = self.values.read();
        let start = match after {
            Some((ns, key)) => Bound::Excluded((ns.to_string(), key.to_string())),
            None => Bound::Unbounded,
        };
        Ok(values
            .range((start, Bound::Unbounded))
            .take(page)
            .map(|((ns, key), value)| Row {
                ns: ns.clone(),
                key: key.clone(),
                value: value.clone(),
            })
            .collect())
    }

    fn load(&self, rows: &[Row], wait: &Wait) -> Result<(), StoreError> {
        let _writer = wait.lock(&self.writer)?;
        let mut values = self.values.write();
        for row in rows {
            values.insert((row.ns.clone(), row.key.clone()), row.value.clone());
        }
        Ok(())
    }

    fn health(&self) -> Health {
        Health::ok()
    }
}
