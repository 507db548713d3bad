//! The PostgreSQL backend (`[store] backend = "postgres"`): rows in `<pg_schema>.kv`,
//! shared by every process (replica) using the same database.
//!
//! - [`connect`]: the URL, TLS, the pool; [`schema`]: the tables and their migrations;
//!   [`ops`]: the operations as SQL; [`call`]: the backend's own runtime, bounds and
//!   abandoned connections; [`errors`]: what failures become (never showing the password).
//! - `update` is one transaction holding the row (`SELECT … FOR UPDATE`, a missing key's
//!   row inserted first) while the update function runs on the caller's thread: concurrent
//!   updates from any process never lose a write, and updates of different keys do not
//!   wait for each other (no lock in this process: the row locks do it).
//! - PostgreSQL unreachable or restarting: calls fail with [`StoreError::Postgres`] naming
//!   the server; the pool makes new connections when it is back.

mod call;
pub(crate) mod connect;
mod errors;
mod ops;
mod schema;
mod statements;

use super::StoreError;
use super::backend::{Backend, Change, Health, Row};
use super::wait::Wait;
use call::Runner;
use connect::Settings;
use errors::Failure;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Longest a health check waits for the server.
const HEALTH_BOUND: Duration = Duration::from_secs(2);
/// Bound of export pages, imports and migrations (not lock waits of tool calls: the
/// operator runs them, and a large import takes a while).
const ADMIN_BOUND: Duration = Duration::from_secs(600);

/// What the runtime side shares: the pool, the names, the server's label.
pub(super) struct Db {
    pool: deadpool_postgres::Pool,
    server: errors::Server,
    /// The schema name (checked).
    schema: String,
    /// The operations' SQL on `"schema".kv`.
    sql: statements::Statements,
    /// Set once the schema is at this toolhost's version.
    migrated: tokio::sync::OnceCell<()>,
    /// For cancel requests of abandoned connections.
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    runner_handle: tokio::runtime::Handle,
}

/// Migrates once per store (the first call, bounded by its `until`; a failure is retried
/// by the next call).
async fn ensure_migrated(db: &Arc<Db>, until: Instant) -> Result<(), Failure> {
    db.migrated
        .get_or_try_init(|| schema::migrate(db, until))
        .await
        .map(drop)
}

/// The backend.
pub(super) struct Postgres {
    db: Arc<Db>,
    runner: Runner,
}

impl Postgres {
    /// A store in the database `settings.url` names (no connection is made until a call
    /// needs one: the host starts while PostgreSQL is down). The error names what is wrong
    /// without the URL.
    pub(super) fn new(settings: &Settings) -> Result<Self, String> {
        connect::check_schema(&settings.schema).map_err(|e| format!("pg_schema: {e}"))?;
        let target = connect::parse(&settings.url)?;
        let runner = Runner::new(target.server.label.clone())
            .map_err(|e| format!("cannot start its runtime: {e}"))?;
        // The system's root certificates are read once per store.
        let tls = connect::tls();
        let pool = connect::pool(&target, settings, tls.clone())?;
        let schema = settings.schema.clone();
        let db = Arc::new(Db {
            pool,
            server: target.server,
            sql: statements::Statements::for_table(&format!("{}.kv", schema::quote(&schema))),
            schema,
            migrated: tokio::sync::OnceCell::new(),
            tls,
            runner_handle: runner.handle().clone(),
        });
        Ok(Self { db, runner })
    }

    /// Refuses what PostgreSQL's text cannot hold (SQLite can): the NUL character.
    fn check_text(&self, ns: &str, key: &str) -> Result<(), StoreError> {
        if ns.contains('\0') || key.contains('\0') {
            return Err(self
                .db
                .server
                .error("keys cannot hold the NUL character (\\0) in PostgreSQL"));
        }
        Ok(())
    }

    fn until(wait: &Wait) -> Instant {
        wait.until(Instant::now())
    }
}

impl Backend for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn location(&self) -> String {
        self.db.server.label.clone()
    }

    fn get(&self, ns: &str, key: &str, wait: &Wait) -> Result<Option<String>, StoreError> {
        self.check_text(ns, key)?;
        let until = Self::until(wait);
        let work = ops::get(self.db.clone(), ns.into(), key.into(), until);
        self.runner.run(wait, until, work)
    }

    fn set(&self, ns: &str, key: &str, text: &str, wait: &Wait) -> Result<(), StoreError> {
        self.check_text(ns, key)?;
        let until = Self::until(wait);
        let work = ops::set(self.db.clone(), ns.into(), key.into(), text.into(), until);
        self.runner.run(wait, until, work)
    }

    fn delete(&self, ns: &str, key: &str, wait: &Wait) -> Result<bool, StoreError> {
        self.check_text(ns, key)?;
        let until = Self::until(wait);
        let work = ops::delete(self.db.clone(), ns.into(), key.into(), until);
        self.runner.run(wait, until, work)
    }

    fn list(
        &self,
        ns: &str,
        prefix: &str,
        limit: usize,
        wait: &Wait,
    ) -> Result<Vec<String>, StoreError> {
        self.check_text(ns, prefix)?;
        let until = Self::until(wait);
        let work = ops::list(self.db.clone(), ns.into(), prefix.into(), limit, until);
        self.runner.run(wait, until, work)
    }

    fn update(
        &self,
        ns: &str,
        key: &str,
        wait: &Wait,
        change: Change<'_>,
    ) -> Result<(), StoreError> {
        self.check_text(ns, key)?;
        let started = Instant::now();
        let until = wait.until(started);
        let (old_sender, old_receiver) = std::sync::mpsc::sync_channel(1);
        let (new_sender, new_receiver) = oneshot::channel();
        let work = ops::update(
            self.db.clone(),
            ns.into(),
            key.into(),
            until,
            old_sender,
            new_receiver,
        );
        let pending = self.runner.start(wait, until, work);
        // The old value comes once the row is held; the transaction ends early (an error,
        // out of time) when it does not: then its result says why.
        let left = (until + call::SERVER_FIRST).saturating_duration_since(Instant::now());
        let Ok(old) = old_receiver.recv_timeout(left) else {
            drop(new_sender);
            // An `Ok` here would be a transaction that got the row just too late and
            // rolled back when it found no new value coming: the update did not happen.
            return match pending.wait(wait, started) {
                Ok(()) => Err(wait.gave_up(started)),
                Err(error) => Err(error),
            };
        };
        // On this thread: it is a Lua function, holding the row until it returns.
        let new = change(old)?;
        if new_sender.send(new).is_err() {
            // The transaction ended while the function ran (out of time, cancelled):
            // nothing was written.
            return match pending.wait(wait, started) {
                Ok(()) => Err(wait.gave_up(started)),
                Err(error) => Err(error),
            };
        }
        pending.wait(wait, started)
    }

    fn rows(
        &self,
        after: Option<(&str, &str)>,
        page: usize,
        wait: &Wait,
    ) -> Result<Vec<Row>, StoreError> {
        let until = Instant::now() + ADMIN_BOUND;
        let after = after.map(|(ns, key)| (ns.to_string(), key.to_string()));
        let work = ops::rows(self.db.clone(), after, page, until);
        self.runner.run(wait, until, work)
    }

    fn load(&self, rows: &[Row], wait: &Wait) -> Result<(), StoreError> {
        for row in rows {
            self.check_text(&row.ns, &row.key)?;
        }
        let until = Instant::now() + ADMIN_BOUND;
        let work = ops::load(self.db.clone(), rows.to_vec(), until);
        self.runner.run(wait, until, work)
    }

    fn health(&self) -> Health {
        let until = Instant::now() + HEALTH_BOUND;
        match self
            .runner
            .run(&Wait::default(), until, ops::ping(self.db.clone(), until))
        {
            Ok(()) => Health::ok(),
            Err(StoreError::Postgres { message, .. }) => {
                Health::failing(format!("PostgreSQL at {}: {message}", self.db.server.label))
            }
            Err(other) => {
                Health::failing(format!("PostgreSQL at {}: {other}", self.db.server.label))
            }
        }
    }

    fn migrate(&self, wait: &Wait) -> Result<(), StoreError> {
        let until = Instant::now() + ADMIN_BOUND;
        let db = self.db.clone();
        self.runner.run(
            wait,
            until,
            async move { ensure_migrated(&db, until).await },
        )
    }
}
