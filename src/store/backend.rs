//! The one storage trait (DESIGN.md: "state outside the process is a backend behind one
//! trait"): memory, SQLite and PostgreSQL keep JSON *texts* under (namespace, key); the
//! store above them (`StoreInner`) checks keys and sizes, encodes and decodes JSON and
//! refuses nested calls, once for every backend.
//!
//! Every method is called on a thread that may block (a VM's thread, or an embedder's call
//! moved off the async workers), and every wait it makes ends within its [`Wait`].

use super::StoreError;
use super::gcra::{self, Decision, Gcra};
use super::wait::Wait;

/// One stored row: a value's JSON text under a key of a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct Row {
    /// The namespace (`builtin`, `plugin:<id>`, `host:tasks`).
    pub ns: String,
    /// The key.
    pub key: String,
    /// The value's JSON text.
    pub value: String,
}

/// What an `update` does with the old value's text: the new text (`None`: delete the key),
/// or an error, in which case nothing is written. It runs on the caller's thread, holding
/// the key's lock.
pub(crate) type Change<'a> =
    Box<dyn FnOnce(Option<String>) -> Result<Option<String>, StoreError> + 'a>;

/// Whether a backend can serve calls now (for `/healthz`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct Health {
    /// True when a call would reach the data.
    pub ok: bool,
    /// Why not (never a secret: no password, no URL).
    pub message: Option<String>,
}

#[cfg_attr(not(feature = "http"), allow(dead_code))]
impl Health {
    /// Healthy.
    pub(crate) fn ok() -> Self {
        Self {
            ok: true,
            message: None,
        }
    }

    /// Unhealthy, because of `message`.
    pub(crate) fn failing(message: impl Into<String>) -> Self {
        Self {
            ok: false,
            message: Some(message.into()),
        }
    }
}

/// Where the store's values live.
pub(crate) trait Backend: Send + Sync {
    /// The backend's name as `[store] backend` spells it.
    fn name(&self) -> &'static str;

    /// Where the data is, for messages (a file, or `host:port/database`; never a secret).
    fn location(&self) -> String;

    /// The text under `key` in `ns`.
    fn get(&self, ns: &str, key: &str, wait: &Wait) -> Result<Option<String>, StoreError>;

    /// Stores `text` under `key` in `ns`.
    fn set(&self, ns: &str, key: &str, text: &str, wait: &Wait) -> Result<(), StoreError>;

    /// Removes `key` from `ns`; true when it was there.
    fn delete(&self, ns: &str, key: &str, wait: &Wait) -> Result<bool, StoreError>;

    /// Keys of `ns` starting with `prefix`, in byte order, at most `limit`.
    fn list(
        &self,
        ns: &str,
        prefix: &str,
        limit: usize,
        wait: &Wait,
    ) -> Result<Vec<String>, StoreError>;

    /// Reads `key`, runs `change` on this thread and writes its answer, all holding the
    /// key against every other writer (threads of this process and other processes); an
    /// error from `change` (or from the write) leaves the old value.
    fn update(
        &self,
        ns: &str,
        key: &str,
        wait: &Wait,
        change: Change<'_>,
    ) -> Result<(), StoreError>;

    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    /// Up to `page` rows after `after` (by namespace, then key, in byte order; from the
    /// first row when `None`): export reads every row, page by page.
    fn rows(
        &self,
        after: Option<(&str, &str)>,
        page: usize,
        wait: &Wait,
    ) -> Result<Vec<Row>, StoreError>;

    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    /// Writes every row (replacing what is under their keys) in one transaction: all of
    /// them or none.
    fn load(&self, rows: &[Row], wait: &Wait) -> Result<(), StoreError>;

    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    /// Whether calls would reach the data now, answered within a short bound.
    fn health(&self) -> Health;

    /// One step of the shared rate limiter (GCRA) on the row `key` of the host's
    /// `host:limits` namespace, atomic against every other writer (threads and processes)
    /// and bounded by `wait` like any store call. The default reads and writes the row
    /// under [`update`](Self::update), which holds it in every backend.
    /// The row holds the TAT as a JSON number; a row that is not one counts as fresh.
    fn rate_take(&self, key: &str, rate: Gcra, wait: &Wait) -> Result<Decision, StoreError> {
        let mut decision = Decision::Allowed;
        self.update(
            gcra::LIMITS,
            key,
            wait,
            Box::new(|old: Option<String>| {
                let tat = old.and_then(|text| text.trim().parse::<u64>().ok());
                // The clock is read holding the row, so one key's TATs only move forward.
                let (new, decided) = rate.step(tat, gcra::now_ns());
                decision = decided;
                Ok(Some(new.or(tat).unwrap_or(0).to_string()))
            }),
        )?;
        Ok(decision)
    }

    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    /// Creates or upgrades what the backend keeps its rows in (tables, schema), if it has
    /// such a thing; otherwise nothing to do.
    fn migrate(&self, wait: &Wait) -> Result<(), StoreError> {
        let _ = wait;
        Ok(())
    }
}
