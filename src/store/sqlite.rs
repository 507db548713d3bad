//! The SQLite backend: one table `kv(ns, key, value)` in WAL mode, connections opened on
//! first use and pooled. A file that cannot be opened as a store (not a database, corrupt,
//! unreadable) is never written to: every operation reports it and the host goes on.
//!
//! Corruption is looked for twice: the first connection runs `PRAGMA quick_check` (every
//! page of the b-tree, O(N); `integrity_check` adds index cross-checks, but the one
//! `WITHOUT ROWID` table has no separate index to cross-check) before anything can write,
//! and reads every row it returns; and any later "malformed" / "not a database" error marks
//! the file unusable from then on. A connection closed after that does not checkpoint its
//! WAL into the damaged file. Another program's database (tables, but no `kv`) is refused
//! the same way before anything is written.

use super::StoreError;
use super::backend::{Backend, Change, Health, Row};
use super::wait::{self, Wait};
use parking_lot::Mutex;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Problems of a failed check shown in the error (the rest are counted).
const SHOWN_PROBLEMS: usize = 3;

/// A store file and its idle connections.
pub(super) struct Sqlite {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Why the file cannot be used, once that is known.
    broken: Mutex<Option<String>>,
    /// The file passed the integrity check (once per host: it reads every page).
    checked: AtomicBool,
    /// Serialises this process's updates: a thread waiting here sleeps on a lock instead
    /// of polling SQLite's busy handler (SQLite's own lock covers other processes).
    writer: Mutex<()>,
}

impl Sqlite {
    pub(super) fn new(path: PathBuf) -> Self {
        // Often inside the working-directory root: `fs` must not reach it.
        crate::fs_roots::keep_private(&path);
        Self {
            path,
            idle: Mutex::new(Vec::new()),
            broken: Mutex::new(None),
            checked: AtomicBool::new(false),
            writer: Mutex::new(()),
        }
    }

    fn unusable(&self, reason: String) -> StoreError {
        StoreError::Unusable {
            file: self.path.clone(),
            reason,
        }
    }

    /// Marks the file unusable: no connection is lent out again, and the idle ones close
    /// without writing their WAL into it.
    fn mark_broken(&self, reason: String) -> StoreError {
        tracing::error!("store {}: {reason}", self.path.display());
        *self.broken.lock() = Some(reason.clone());
        for connection in self.idle.lock().drain(..) {
            close_without_checkpoint(connection);
        }
        self.unusable(reason)
    }

    /// The error for `source`, met by an operation that started at `started` under `wait`:
    /// a lock wait that ended is [`Wait::gave_up`]'s error, damage makes the file unusable.
    fn failed(&self, source: rusqlite::Error, wait: &Wait, started: Instant) -> StoreError {
        match source.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => wait.gave_up(started),
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                self.mark_broken(source.to_string())
            }
            _ => StoreError::Sqlite {
                file: self.path.clone(),
                source,
            },
        }
    }

    /// Runs `work` on an open connection (from the pool, or a new one) with `wait`
    /// bounding its lock waits.
    fn with_connection<T>(
        &self,
        wait: &Wait,
        work: impl FnOnce(&mut Connection, Instant) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        wait.scope(|| {
            let started = Instant::now();
            let mut pooled = self.connection(wait, started)?;
            work(pooled.get_mut(), started)
        })
    }

    /// An open connection (from the pool, or a new one).
    fn connection(&self, wait: &Wait, started: Instant) -> Result<Pooled<'_>, StoreError> {
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
            // Waiting for another writer is not damage: the next call tries again.
            Err(Open::Busy) => Err(wait.gave_up(started)),
            Err(Open::Unusable(reason)) => Err(self.mark_broken(reason)),
        }
    }

    fn open(&self) -> Result<Connection, Open> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Open::Unusable(format!("cannot create {}: {e}", dir.display())))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection = Connection::open_with_flags(&self.path, flags).map_err(Open::from)?;
        connection
            .busy_handler(Some(wait::busy_handler))
            .map_err(Open::from)?;
        if !self.checked.load(Ordering::Acquire) {
            // Until the file passed, closing this connection must not write to it.
            connection
                .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
                .map_err(Open::from)?;
            // Read-only, and the first statement: a file that is not a database or is
            // damaged fails here, before anything is written to it.
            check(&connection)?;
            is_a_store(&connection)?;
            connection
                .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)
                .map_err(Open::from)?;
            self.checked.store(true, Ordering::Release);
        }
        let mode: String = connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(Open::from)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Open::Unusable(format!(
                "cannot switch to WAL mode (journal mode is {mode})"
            )));
        }
        connection
            .execute_batch(
                "PRAGMA synchronous = NORMAL;
                 CREATE TABLE IF NOT EXISTS kv (
                     ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
                     PRIMARY KEY (ns, key)
                 ) WITHOUT ROWID;",
            )
            .map_err(Open::from)?;
        Ok(connection)
    }
}

impl Backend for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn get(&self, ns: &str, key: &str, wait: &Wait) -> Result<Option<String>, StoreError> {
        self.with_connection(wait, |connection, started| {
            connection
                .prepare_cached("SELECT value FROM kv WHERE ns = ?1 AND key = ?2")
                .and_then(|mut statement| {
                    statement
                        .query_row(params![ns, key], |row| row.get(0))
                        .optional()
                })
                .map_err(|e| self.failed(e, wait, started))
        })
    }

    fn set(&self, ns: &str, key: &str, text: &str, wait: &Wait) -> Result<(), StoreError> {
        self.with_connection(wait, |connection, started| {
            connection
                .prepare_cached("INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?1, ?2, ?3)")
                .and_then(|mut statement| statement.execute(params![ns, key, text]))
                .map_err(|e| self.failed(e, wait, started))?;
            Ok(())
        })
    }

    fn delete(&self, ns: &str, key: &str, wait: &Wait) -> Result<bool, StoreError> {
        self.with_connection(wait, |connection, started| {
            let removed = connection
                .prepare_cached("DELETE FROM kv WHERE ns = ?1 AND key = ?2")
                .and_then(|mut statement| statement.execute(params![ns, key]))
                .map_err(|e| self.failed(e, wait, started))?;
            Ok(removed > 0)
        })
    }

    fn list(
        &self,
        ns: &str,
        prefix: &str,
        limit: usize,
        wait: &Wait,
    ) -> Result<Vec<String>, StoreError> {
        self.with_connection(wait, |connection, started| {
            let failed = |e| self.failed(e, wait, started);
            // A range scan on the primary key: keys >= prefix, stopping at the first that
            // does not start with it (no LIKE: prefixes may hold % and _).
            let mut statement = connection
                .prepare_cached("SELECT key FROM kv WHERE ns = ?1 AND key >= ?2 ORDER BY key")
                .map_err(failed)?;
            let rows = statement
                .query_map(params![ns, prefix], |row| row.get::<_, String>(0))
                .map_err(failed)?;
            let mut keys = Vec::new();
            for row in rows {
                let key = row.map_err(failed)?;
                if !key.starts_with(prefix) || keys.len() >= limit {
                    break;
                }
                keys.push(key);
            }
            Ok(keys)
        })
    }

    /// Reads, changes and writes `key` in one immediate transaction: other writers (other
    /// processes too) wait; an error from `change` rolls back.
    fn update(
        &self,
        ns: &str,
        key: &str,
        wait: &Wait,
        change: Change<'_>,
    ) -> Result<(), StoreError> {
        let _writer = wait.lock(&self.writer)?;
        self.with_connection(wait, |connection, started| {
            let failed = |e| self.failed(e, wait, started);
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(failed)?;
            let old: Option<String> = transaction
                .query_row(
                    "SELECT value FROM kv WHERE ns = ?1 AND key = ?2",
                    params![ns, key],
                    |row| row.get(0),
                )
                .optional()
                .map_err(failed)?;
            // Dropping the transaction on an error rolls it back.
            match change(old)? {
                Some(text) => transaction.execute(
                    "INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?1, ?2, ?3)",
                    params![ns, key, text],
                ),
                None => transaction.execute(
                    "DELETE FROM kv WHERE ns = ?1 AND key = ?2",
                    params![ns, key],
                ),
            }
            .map_err(failed)?;
            transaction.commit().map_err(failed)?;
            Ok(())
        })
    }

    fn rows(
        &self,
        after: Option<(&str, &str)>,
        page: usize,
        wait: &Wait,
    ) -> Result<Vec<Row>, StoreError> {
        let (ns, key) = after.unwrap_or(("", ""));
        // The empty namespace cannot hold keys (tools reach `builtin` and `plugin:<id>`),
        // but the row ("", "") could: the first page includes it.
        let op = if after.is_some() { ">" } else { ">=" };
        let sql = format!(
            "SELECT ns, key, value FROM kv WHERE (ns, key) {op} (?1, ?2) ORDER BY ns, key LIMIT ?3"
        );
        self.with_connection(wait, |connection, started| {
            let failed = |e| self.failed(e, wait, started);
            let mut statement = connection.prepare_cached(&sql).map_err(failed)?;
            let rows = statement
                .query_map(params![ns, key, page as i64], |row| {
                    Ok(Row {
                        ns: row.get(0)?,
                        key: row.get(1)?,
                        value: row.get(2)?,
                    })
                })
                .map_err(failed)?;
            rows.collect::<rusqlite::Result<Vec<Row>>>().map_err(failed)
        })
    }

    fn load(&self, rows: &[Row], wait: &Wait) -> Result<(), StoreError> {
        let _writer = wait.lock(&self.writer)?;
        self.with_connection(wait, |connection, started| {
            let failed = |e| self.failed(e, wait, started);
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(failed)?;
            {
                let mut statement = transaction
                    .prepare_cached(
                        "INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?1, ?2, ?3)",
                    )
                    .map_err(failed)?;
                for row in rows {
                    statement
                        .execute(params![row.ns, row.key, row.value])
                        .map_err(failed)?;
                }
            }
            transaction.commit().map_err(failed)
        })
    }

    fn health(&self) -> Health {
        match self.broken.lock().clone() {
            Some(reason) => Health::failing(self.unusable(reason).to_string()),
            None => Health::ok(),
        }
    }
}

/// Why a connection could not be opened.
enum Open {
    /// Another connection held a lock past the wait's bound (nothing is wrong with the
    /// file).
    Busy,
    /// The file cannot be used as a store.
    Unusable(String),
}

impl From<rusqlite::Error> for Open {
    fn from(error: rusqlite::Error) -> Self {
        match error.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Open::Busy,
            _ => Open::Unusable(error.to_string()),
        }
    }
}

/// `PRAGMA quick_check`, every row read: anything but a single `ok` is damage.
fn check(connection: &Connection) -> Result<(), Open> {
    let mut statement = connection.prepare("PRAGMA quick_check")?;
    let mut problems = Vec::new();
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let text: String = row.get(0)?;
        // One row may hold several problems, one a line, under a `*** in database ***`
        // heading.
        problems.extend(
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && *line != "ok" && !line.starts_with("***"))
                .map(str::to_string),
        );
    }
    if problems.is_empty() {
        return Ok(());
    }
    let more = problems.len().saturating_sub(SHOWN_PROBLEMS);
    let mut reason = format!(
        "the integrity check found damage: {}",
        problems[..problems.len().min(SHOWN_PROBLEMS)].join("; ")
    );
    if more > 0 {
        reason.push_str(&format!(" (and {more} more)"));
    }
    Err(Open::Unusable(reason))
}

/// Refuses another program's database (tables, none of them `kv`) and a `kv` table of
/// another shape: the store would switch the file to WAL mode and add its table, writing
/// to a file that is not its own. An empty file is a new store.
fn is_a_store(connection: &Connection) -> Result<(), Open> {
    let tables = connection
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    if tables.is_empty() {
        return Ok(());
    }
    if !tables.iter().any(|name| name == "kv") {
        return Err(Open::Unusable(format!(
            "it is not a toolhost store (it holds the tables {} and no kv table); point \
             [store] path at a file of its own",
            tables.join(", ")
        )));
    }
    let columns = connection
        .prepare("SELECT name FROM pragma_table_info('kv') ORDER BY cid")?
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    if columns != ["ns", "key", "value"] {
        return Err(Open::Unusable(format!(
            "its kv table has the columns ({}), not (ns, key, value): it is not a toolhost \
             store",
            columns.join(", ")
        )));
    }
    Ok(())
}

/// Closes `connection` without checkpointing its WAL into the (damaged) file.
fn close_without_checkpoint(connection: Connection) {
    let _ = connection.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    drop(connection);
}

/// A connection lent out; it goes back to the pool when dropped.
struct Pooled<'a> {
    owner: &'a Sqlite,
    connection: Option<Connection>,
}

impl Pooled<'_> {
    fn get_mut(&mut self) -> &mut Connection {
        self.connection.as_mut().expect("held until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            if self.owner.broken.lock().is_some() {
                close_without_checkpoint(connection);
                return;
            }
            let mut idle = self.owner.idle.lock();
            // A handful is plenty: one per VM thread at most uses one at a time.
            if idle.len() < 16 {
                idle.push(connection);
            }
        }
    }
}
