//! The SQLite backend: one table `kv(ns, key, value)` in WAL mode, connections opened on
//! first use and pooled. A file that cannot be opened as a store (not a database, corrupt,
//! unreadable) is never written to: every operation reports it and the host goes on.

use super::{BUSY_TIMEOUT, StoreError};
use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};

/// A store file and its idle connections.
pub(super) struct Sqlite {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Why the file cannot be used, once that is known.
    broken: Mutex<Option<String>>,
}

impl Sqlite {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            path,
            idle: Mutex::new(Vec::new()),
            broken: Mutex::new(None),
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    fn unusable(&self, reason: String) -> StoreError {
        StoreError::Unusable {
            file: self.path.clone(),
            reason,
        }
    }

    fn failed(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            file: self.path.clone(),
            source,
        }
    }

    /// An open connection (from the pool, or a new one).
    fn connection(&self) -> Result<Pooled<'_>, StoreError> {
        if let Some(reason) = self.broken.lock().clone() {
            return Err(self.unusable(reason));
        }
        if let Some(connection) = self.idle.lock().pop() {
            return Ok(Pooled {
                owner: self,
                connection: Some(connection),
            });
        }
        match self.open() {
            Ok(connection) => Ok(Pooled {
                owner: self,
                connection: Some(connection),
            }),
            Err(reason) => {
                *self.broken.lock() = Some(reason.clone());
                tracing::error!("store {}: {reason}", self.path.display());
                Err(self.unusable(reason))
            }
        }
    }

    fn open(&self) -> Result<Connection, String> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection =
            Connection::open_with_flags(&self.path, flags).map_err(|e| e.to_string())?;
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| e.to_string())?;
        // The first statements read the header: a file that is not a database fails here,
        // before anything is written to it.
        let mode: String = connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(|e| e.to_string())?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!(
                "cannot switch to WAL mode (journal mode is {mode})"
            ));
        }
        connection
            .execute_batch(
                "PRAGMA synchronous = NORMAL;
                 CREATE TABLE IF NOT EXISTS kv (
                     ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
                     PRIMARY KEY (ns, key)
                 ) WITHOUT ROWID;
                 PRAGMA quick_check(1);",
            )
            .map_err(|e| e.to_string())?;
        Ok(connection)
    }

    pub(super) fn get(&self, ns: &str, key: &str) -> Result<Option<String>, StoreError> {
        let pooled = self.connection()?;
        let mut statement = pooled
            .get()
            .prepare_cached("SELECT value FROM kv WHERE ns = ?1 AND key = ?2")
            .map_err(|e| self.failed(e))?;
        statement
            .query_row(params![ns, key], |row| row.get(0))
            .optional()
            .map_err(|e| self.failed(e))
    }

    pub(super) fn set(&self, ns: &str, key: &str, text: &str) -> Result<(), StoreError> {
        let pooled = self.connection()?;
        pooled
            .get()
            .prepare_cached("INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?1, ?2, ?3)")
            .and_then(|mut statement| statement.execute(params![ns, key, text]))
            .map_err(|e| self.failed(e))?;
        Ok(())
    }

    pub(super) fn delete(&self, ns: &str, key: &str) -> Result<bool, StoreError> {
        let pooled = self.connection()?;
        let removed = pooled
            .get()
            .prepare_cached("DELETE FROM kv WHERE ns = ?1 AND key = ?2")
            .and_then(|mut statement| statement.execute(params![ns, key]))
            .map_err(|e| self.failed(e))?;
        Ok(removed > 0)
    }

    pub(super) fn list(
        &self,
        ns: &str,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let pooled = self.connection()?;
        // A range scan on the primary key: keys >= prefix, stopping at the first that does
        // not start with it (no LIKE: prefixes may hold % and _).
        let mut statement = pooled
            .get()
            .prepare_cached("SELECT key FROM kv WHERE ns = ?1 AND key >= ?2 ORDER BY key")
            .map_err(|e| self.failed(e))?;
        let rows = statement
            .query_map(params![ns, prefix], |row| row.get::<_, String>(0))
            .map_err(|e| self.failed(e))?;
        let mut keys = Vec::new();
        for row in rows {
            let key = row.map_err(|e| self.failed(e))?;
            if !key.starts_with(prefix) || keys.len() >= limit {
                break;
            }
            keys.push(key);
        }
        Ok(keys)
    }

    /// Reads, changes and writes `key` in one immediate transaction: other writers (other
    /// processes too) wait; an error from `change` rolls back.
    pub(super) fn update<T>(
        &self,
        ns: &str,
        key: &str,
        change: impl FnOnce(Option<String>) -> Result<(T, Option<String>), StoreError>,
    ) -> Result<T, StoreError> {
        let mut pooled = self.connection()?;
        let transaction = pooled
            .get_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.failed(e))?;
        let old: Option<String> = transaction
            .query_row(
                "SELECT value FROM kv WHERE ns = ?1 AND key = ?2",
                params![ns, key],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.failed(e))?;
        // Dropping the transaction on an error rolls it back.
        let (result, new) = change(old)?;
        match new {
            Some(text) => transaction.execute(
                "INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?1, ?2, ?3)",
                params![ns, key, text],
            ),
            None => transaction.execute(
                "DELETE FROM kv WHERE ns = ?1 AND key = ?2",
                params![ns, key],
            ),
        }
        .map_err(|e| self.failed(e))?;
        transaction.commit().map_err(|e| self.failed(e))?;
        Ok(result)
    }
}

/// A connection lent out; it goes back to the pool when dropped.
struct Pooled<'a> {
    owner: &'a Sqlite,
    connection: Option<Connection>,
}

impl Pooled<'_> {
    fn get(&self) -> &Connection {
        self.connection.as_ref().expect("held until dropped")
    }

    fn get_mut(&mut self) -> &mut Connection {
        self.connection.as_mut().expect("held until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            let mut idle = self.owner.idle.lock();
            // A handful is plenty: one per VM thread at most uses one at a time.
            if idle.len() < 16 {
                idle.push(connection);
            }
        }
    }
}
