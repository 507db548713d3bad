//! The durable `store` (docs/store.md): JSON values under string keys, kept in SQLite (WAL mode)
//! so they survive restarts and are shared by every process using the same file, or in
//! memory (`[store] backend = "memory"`). Each trust domain has its own namespace: built-in
//! tools (and the embedder, [`Store`]) share `builtin`, each plugin has `plugin:<id>`.
//!
//! Durability: a write is committed before the call returns; in WAL mode with
//! `synchronous = NORMAL` a committed write survives the process being killed at any point
//! (SIGKILL, a panic), and the file never becomes corrupt; a power loss or OS crash may lose
//! the last few commits, never more.
//!
//! Store calls run on the thread that makes them — a VM's own thread for Lua tools, never an
//! async worker of the host's runtime. Every wait for a lock (this process's writer lock,
//! another process's write lock on the file) ends at the calling code's deadline or
//! cancellation, and after [`BUSY_TIMEOUT`] at most (see [`Wait`]). Store calls from inside
//! an `update` function are refused at once (see `nested`).

mod backend;
mod gcra;
mod memory;
mod nested;
mod observed;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
#[cfg(feature = "cli")]
mod transfer;
mod wait;

pub(crate) use backend::{Health, Row};
pub(crate) use gcra::{Decision, Gcra};
pub(crate) use nested::inside_update;
#[cfg(feature = "postgres")]
pub(crate) use postgres::connect::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA, Settings as PostgresSettings,
    check_schema as check_pg_schema,
};
#[cfg(feature = "cli")]
pub(crate) use transfer::{export, import};
pub(crate) use wait::Wait;

use backend::Backend;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// Default `[store] max_value_bytes`.
pub(crate) const DEFAULT_MAX_VALUE_BYTES: usize = 1 << 20;
/// Longest key, in bytes.
pub(crate) const MAX_KEY_BYTES: usize = 512;
/// Most keys `list` returns.
pub(crate) const MAX_LIST: usize = 10_000;
/// Longest wait for a lock (another process's write lock, another thread's update), also
/// when the caller's deadline is further away.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The namespace of built-in tools and the embedder.
pub(crate) const BUILTIN: &str = "builtin";
/// The namespace of the MCP server's task records (Tasks extension). Tools reach only
/// `builtin` and `plugin:<id>`, so no `store.get` can read or forge a task.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) const TASKS: &str = "host:tasks";

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The key is longer than 512 bytes.
    #[error("key of {len} bytes is over the limit of {limit} bytes")]
    KeyTooLong {
        /// The key's length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The value's JSON text is longer than `[store] max_value_bytes`.
    #[error("value of {size} bytes is over [store] max_value_bytes ({limit})")]
    ValueTooLarge {
        /// The value's size as JSON text.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// `incr` found a value that is not a number.
    #[error("the value under '{key}' is not a number")]
    NotANumber {
        /// The key.
        key: String,
    },
    /// The store file cannot be used (unreadable, not a database, corrupt); it is left as
    /// it is.
    #[error("the store file {} is not usable (left untouched): {reason}", file.display())]
    Unusable {
        /// The file.
        file: PathBuf,
        /// What went wrong opening it.
        reason: String,
    },
    /// SQLite refused an operation.
    #[error("store ({}): {source}", file.display())]
    Sqlite {
        /// The file.
        file: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The `update` function failed with this error; nothing was written.
    #[error("{0}")]
    Aborted(Box<dyn std::error::Error + Send + Sync>),
    /// A store call was made from inside an `update` function (see [`Store::update`]).
    #[error(
        "store calls are refused inside a store.update function (the update holds the \
         store's write lock until the function returns): compute the new value from the \
         old one it is given"
    )]
    Nested,
    /// The caller's deadline passed (or it was cancelled) while the call waited for a lock.
    #[error(
        "out of time while waiting for the store's write lock (the deadline passed or the call was cancelled)"
    )]
    OutOfTime,
    /// PostgreSQL could not be reached, or refused an operation. `server` is
    /// `host:port/database`: never the URL or the password.
    #[error("store (PostgreSQL at {server}): {message}")]
    Postgres {
        /// The server and database.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// Another writer kept the lock for 5 s (the longest wait, also when the caller's
    /// deadline is further away).
    #[error(
        "the store stayed locked by another writer for {} ms (another process's \
         transaction, or a long store.update)",
        waited.as_millis()
    )]
    Locked {
        /// How long the call waited.
        waited: Duration,
    },
}

/// The host's store: every namespace, one backend.
pub(crate) struct StoreInner {
    backend: Box<dyn Backend>,
    max_value_bytes: usize,
}

/// The store as an embedder sees it: the `builtin` namespace, shared with the built-in Lua
/// tools. Operations block briefly (SQLite, PostgreSQL); called on a worker of a
/// multi-threaded tokio runtime they run under `block_in_place`, so the worker's other
/// tasks move elsewhere. A wait for another writer's lock ends after 5 s with
/// [`StoreError::Locked`].
#[derive(Clone)]
pub struct Store {
    inner: std::sync::Arc<StoreInner>,
    namespace: std::sync::Arc<str>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for StoreInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "StoreInner({}: {})",
            self.backend.name(),
            self.backend.location()
        )
    }
}

impl StoreInner {
    /// A store in memory.
    pub(crate) fn memory(max_value_bytes: usize) -> Self {
        Self::with_backend(Box::new(memory::Memory::default()), max_value_bytes)
    }

    /// A store in the SQLite file `path` (opened on first use).
    pub(crate) fn sqlite(path: PathBuf, max_value_bytes: usize) -> Self {
        Self::with_backend(Box::new(sqlite::Sqlite::new(path)), max_value_bytes)
    }

    /// A store in the PostgreSQL database `settings` names (connected on first use). The
    /// error says what is wrong without the URL.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(
        settings: &PostgresSettings,
        max_value_bytes: usize,
    ) -> Result<Self, String> {
        let backend = postgres::Postgres::new(settings)?;
        Ok(Self::with_backend(Box::new(backend), max_value_bytes))
    }

    fn with_backend(backend: Box<dyn Backend>, max_value_bytes: usize) -> Self {
        Self {
            backend,
            max_value_bytes,
        }
    }

    /// The backend's name (`memory`, `sqlite`, `postgres`), as `/healthz` and the metrics
    /// label it.
    pub(crate) fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Whether the backend can serve calls now (answered within a short bound).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn health(&self) -> Health {
        self.backend.health()
    }

    /// Where the data is, for messages (never a secret).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn location(&self) -> String {
        self.backend.location()
    }

    /// Up to `page` rows after `after`, in (namespace, key) byte order (export).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn rows(
        &self,
        after: Option<(&str, &str)>,
        page: usize,
    ) -> Result<Vec<Row>, StoreError> {
        self.backend.rows(after, page, &Wait::default())
    }

    /// Writes every row in one transaction (import): each key and value is checked as
    /// `set` checks them before anything is written (the caller made the values JSON
    /// text).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn load(&self, rows: &[Row]) -> Result<(), StoreError> {
        for row in rows {
            self.check_row(row)?;
        }
        self.backend.load(rows, &Wait::default())
    }

    /// `[store] max_value_bytes`.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn max_value_bytes(&self) -> usize {
        self.max_value_bytes
    }

    /// Checks a row as `set` checks a key and a value.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn check_row(&self, row: &Row) -> Result<(), StoreError> {
        Self::check_key(&row.key)?;
        if row.value.len() > self.max_value_bytes {
            return Err(StoreError::ValueTooLarge {
                size: row.value.len(),
                limit: self.max_value_bytes,
            });
        }
        Ok(())
    }

    /// Creates or upgrades the backend's tables now (PostgreSQL; others: nothing to do).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn migrate(&self) -> Result<(), StoreError> {
        self.backend.migrate(&Wait::default())
    }

    fn check_key(key: &str) -> Result<(), StoreError> {
        match key.len() {
            len if len > MAX_KEY_BYTES => Err(StoreError::KeyTooLong {
                len,
                limit: MAX_KEY_BYTES,
            }),
            _ => Ok(()),
        }
    }

    fn encode(&self, value: &Value) -> Result<String, StoreError> {
        let text = value.to_string();
        if text.len() > self.max_value_bytes {
            return Err(StoreError::ValueTooLarge {
                size: text.len(),
                limit: self.max_value_bytes,
            });
        }
        Ok(text)
    }

    /// The value under `key` in `ns`.
    pub(crate) fn get(
        &self,
        ns: &str,
        key: &str,
        wait: &Wait,
    ) -> Result<Option<Value>, StoreError> {
        nested::refuse_inside_update()?;
        Self::check_key(key)?;
        let text = self.backend.get(ns, key, wait)?;
        Ok(text.and_then(|text| serde_json::from_str(&text).ok()))
    }

    /// Stores `value` under `key` in `ns`.
    pub(crate) fn set(
        &self,
        ns: &str,
        key: &str,
        value: &Value,
        wait: &Wait,
    ) -> Result<(), StoreError> {
        nested::refuse_inside_update()?;
        Self::check_key(key)?;
        let text = self.encode(value)?;
        self.backend.set(ns, key, &text, wait)
    }

    /// Removes `key` from `ns`; true when it was there.
    pub(crate) fn delete(&self, ns: &str, key: &str, wait: &Wait) -> Result<bool, StoreError> {
        nested::refuse_inside_update()?;
        Self::check_key(key)?;
        self.backend.delete(ns, key, wait)
    }

    /// Keys of `ns` starting with `prefix`, sorted, at most `limit` (capped at
    /// [`MAX_LIST`]).
    pub(crate) fn list(
        &self,
        ns: &str,
        prefix: &str,
        limit: usize,
        wait: &Wait,
    ) -> Result<Vec<String>, StoreError> {
        nested::refuse_inside_update()?;
        let limit = limit.min(MAX_LIST);
        self.backend.list(ns, prefix, limit, wait)
    }

    /// Atomically replaces the value under `key` with `change(old)` (`None`: delete). If
    /// `change` fails nothing is written. Other writers — threads of this process and
    /// other processes — wait until it is done (each within its own bound). A store call
    /// from inside `change` fails at once with [`StoreError::Nested`].
    pub(crate) fn update(
        &self,
        ns: &str,
        key: &str,
        change: impl FnOnce(
            Option<Value>,
        ) -> Result<Option<Value>, Box<dyn std::error::Error + Send + Sync>>,
        wait: &Wait,
    ) -> Result<Option<Value>, StoreError> {
        nested::refuse_inside_update()?;
        Self::check_key(key)?;
        let mut new = None;
        self.backend.update(
            ns,
            key,
            wait,
            Box::new(|old: Option<String>| {
                let old = old.and_then(|text| serde_json::from_str(&text).ok());
                let changed = {
                    let _inside = nested::InsideUpdate::enter();
                    change(old)
                }
                .map_err(StoreError::Aborted)?;
                let text = changed
                    .as_ref()
                    .map(|value| self.encode(value))
                    .transpose()?;
                new = changed;
                Ok(text)
            }),
        )?;
        Ok(new)
    }

    /// One step of the shared rate limiter on `key` (a limit's name and the key it
    /// counts, e.g. `limits.tools.search|local`): allowed, or when to retry. A key over
    /// [`MAX_KEY_BYTES`] is replaced by its digest (callers' ids are not bounded here).
    pub(crate) fn rate_take(
        &self,
        key: &str,
        rate: Gcra,
        wait: &Wait,
    ) -> Result<Decision, StoreError> {
        nested::refuse_inside_update()?;
        if key.len() <= MAX_KEY_BYTES {
            return self.backend.rate_take(key, rate, wait);
        }
        let digest = {
            use std::hash::{Hash, Hasher};
            let mut hasher = crate::digest::hasher();
            key.hash(&mut hasher);
            hasher.finish()
        };
        let head: String = key.chars().take(200).collect();
        self.backend
            .rate_take(&format!("{head}#{digest:016x}"), rate, wait)
    }

    /// Atomically adds `by` to the number under `key` (missing: 0); returns the sum.
    pub(crate) fn incr(
        &self,
        ns: &str,
        key: &str,
        by: &Value,
        wait: &Wait,
    ) -> Result<Value, StoreError> {
        let mut sum = Value::Null;
        self.update(
            ns,
            key,
            |old| {
                let added = add(old.as_ref(), by).ok_or_else(|| StoreError::NotANumber {
                    key: key.to_string(),
                })?;
                sum = added.clone();
                Ok(Some(added))
            },
            wait,
        )
        .map_err(|e| match e {
            StoreError::Aborted(_) => StoreError::NotANumber {
                key: key.to_string(),
            },
            other => other,
        })?;
        Ok(sum)
    }
}

/// `old + by` for JSON numbers (integers stay integers while they fit); `None` when `old`
/// is not a number (a missing value counts as 0).
fn add(old: Option<&Value>, by: &Value) -> Option<Value> {
    let zero = Value::from(0);
    let old = old.unwrap_or(&zero);
    if let (Some(a), Some(b)) = (old.as_i64(), by.as_i64())
        && let Some(sum) = a.checked_add(b)
    {
        return Some(Value::from(sum));
    }
    let sum = old.as_f64()? + by.as_f64()?;
    serde_json::Number::from_f64(sum).map(Value::Number)
}

impl Store {
    pub(crate) fn new(inner: std::sync::Arc<StoreInner>, namespace: &str) -> Self {
        Self {
            inner,
            namespace: namespace.into(),
        }
    }

    /// The value under `key`, if any.
    pub fn get(&self, key: &str) -> Result<Option<Value>, StoreError> {
        crate::blocking::off_async_worker(|| self.inner.get(&self.namespace, key, &Wait::default()))
    }

    /// Stores `value` under `key`.
    pub fn set(&self, key: &str, value: &Value) -> Result<(), StoreError> {
        crate::blocking::off_async_worker(|| {
            self.inner
                .set(&self.namespace, key, value, &Wait::default())
        })
    }

    /// Removes `key`; true when it was there.
    pub fn delete(&self, key: &str) -> Result<bool, StoreError> {
        crate::blocking::off_async_worker(|| {
            self.inner.delete(&self.namespace, key, &Wait::default())
        })
    }

    /// Keys starting with `prefix`, sorted, at most `limit`.
    pub fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        crate::blocking::off_async_worker(|| {
            self.inner
                .list(&self.namespace, prefix, limit, &Wait::default())
        })
    }

    /// Atomically replaces the value under `key` with `change(old)` (`None` deletes it);
    /// an `Err` from `change` writes nothing. `change` runs holding the store's write lock:
    /// store calls from inside it (on any `Store` of this thread) fail at once. Its error
    /// (any error, or a `String`) comes back as [`StoreError::Aborted`].
    pub fn update(
        &self,
        key: &str,
        change: impl FnOnce(
            Option<Value>,
        ) -> Result<Option<Value>, Box<dyn std::error::Error + Send + Sync>>,
    ) -> Result<Option<Value>, StoreError> {
        crate::blocking::off_async_worker(|| {
            self.inner
                .update(&self.namespace, key, change, &Wait::default())
        })
    }

    /// Atomically adds `by` to the number under `key` (missing: 0) and returns the sum.
    pub fn incr(&self, key: &str, by: i64) -> Result<Value, StoreError> {
        crate::blocking::off_async_worker(|| {
            self.inner
                .incr(&self.namespace, key, &Value::from(by), &Wait::default())
        })
    }
}
