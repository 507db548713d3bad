//! The store's backends for one parameterised suite: each test body runs against memory,
//! SQLite and PostgreSQL (a [`TestDb`] of its own) through [`Backend`], and a way to hold a
//! key's lock from outside the host as another process would ([`Backend::hold_lock`]).

use super::Fixture;
use super::pg::{self, TestDb};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolhost::{Host, HostBuilder};

/// Which backend a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

/// A backend under test: for PostgreSQL, its own database (dropped with it).
pub struct Backend {
    pub kind: Kind,
    pub db: Option<TestDb>,
}

impl Backend {
    /// `memory`, `sqlite` or `postgres` (a test's name).
    pub fn named(name: &str) -> Self {
        let kind = match name {
            "memory" => Kind::Memory,
            "sqlite" => Kind::Sqlite,
            "postgres" => Kind::Postgres,
            other => panic!("no backend {other}"),
        };
        Self {
            kind,
            db: (kind == Kind::Postgres).then(TestDb::new),
        }
    }

    /// The database (PostgreSQL only).
    pub fn db(&self) -> &TestDb {
        self.db.as_ref().expect("a PostgreSQL backend")
    }

    /// True when another process sees this store (not memory).
    pub fn shared(&self) -> bool {
        self.kind != Kind::Memory
    }

    /// `builder` using this store.
    pub fn apply(&self, builder: HostBuilder, fx: &Fixture) -> HostBuilder {
        match self.kind {
            Kind::Memory => builder.memory_store(),
            Kind::Sqlite => builder.store_file(fx.store_file()),
            Kind::Postgres => builder.postgres_store(self.db().url()),
        }
    }

    /// The fixture's builder (its tools, no config file) using this store.
    pub fn builder(&self, fx: &Fixture) -> HostBuilder {
        self.apply(
            Host::builder()
                .tools_dir(fx.tools())
                .cache_dir(fx.cache())
                .default_config(),
            fx,
        )
    }

    pub fn host(&self, fx: &Fixture) -> Host {
        self.builder(fx).build().expect("host builds")
    }

    /// A host configured by `toml` (written to `toolhost.toml`), using this store.
    pub fn host_with(&self, fx: &Fixture, toml: &str) -> Host {
        let path = fx.write("toolhost.toml", toml);
        self.apply(
            Host::builder()
                .tools_dir(fx.tools())
                .cache_dir(fx.cache())
                .config_file(path),
            fx,
        )
        .build()
        .expect("host builds")
    }

    /// The `[store]` section that makes the binary use this store (with [`Backend::env`]).
    pub fn config(&self) -> &'static str {
        match self.kind {
            Kind::Memory => "[store]\nbackend = \"memory\"\n",
            Kind::Sqlite => "[store]\npath = \"store.sqlite3\"\n",
            Kind::Postgres => "[store]\nbackend = \"postgres\"\n",
        }
    }

    /// The variables the binary needs for this store (the URL, for PostgreSQL).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match &self.db {
            Some(db) => vec![("TOOLHOST_DATABASE_URL", db.url())],
            None => Vec::new(),
        }
    }

    /// Holds the lock another process's transaction would hold on `key` of the `builtin`
    /// namespace (SQLite: the file's write lock; PostgreSQL: the row, from `psql`, which
    /// must exist), until the value is dropped.
    pub fn hold_lock(&self, fx: &Fixture, key: &str) -> Holder {
        match self.kind {
            Kind::Memory => panic!("no other process can lock a memory store"),
            Kind::Sqlite => {
                let holder = rusqlite::Connection::open(fx.store_file()).unwrap();
                holder.execute_batch("BEGIN IMMEDIATE").unwrap();
                Holder::Sqlite(holder)
            }
            Kind::Postgres => Holder::Postgres(RowLock::hold(self.db(), key)),
        }
    }

    /// Waits (30 s at most) until something else holds `key`'s lock.
    pub fn until_locked(&self, fx: &Fixture, key: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let locked = || match self.kind {
            Kind::Memory => panic!("cannot observe a memory store's lock"),
            Kind::Sqlite => {
                let probe = rusqlite::Connection::open(fx.store_file()).unwrap();
                probe.busy_timeout(Duration::ZERO).unwrap();
                probe.execute_batch("BEGIN IMMEDIATE; ROLLBACK").is_err()
            }
            Kind::Postgres => row_locked(self.db(), key),
        };
        while !locked() {
            assert!(Instant::now() < deadline, "the lock was never taken");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A lock held from outside the host.
pub enum Holder {
    Sqlite(rusqlite::Connection),
    Postgres(RowLock),
}

/// True when `key`'s row of `builtin` is locked by another transaction.
fn row_locked(db: &TestDb, key: &str) -> bool {
    let sql = format!(
        "SELECT 1 FROM toolhost.kv WHERE ns = 'builtin' AND key = '{}' FOR UPDATE NOWAIT",
        key.replace('\'', "''")
    );
    match pg::psql(db.port, &db.name, &sql) {
        Ok(_) => false,
        Err(e) if e.contains("could not obtain lock") => true,
        Err(e) => panic!("probing the row lock: {e}"),
    }
}

/// A `psql` session holding a row lock (`BEGIN; SELECT … FOR UPDATE; SELECT pg_sleep(30)`)
/// in the background; dropping it ends the session on the server.
pub struct RowLock {
    child: Child,
    port: u16,
    db: String,
    app: String,
}

impl RowLock {
    /// Holds `key`'s row of `builtin` in `db` (it must exist) once this returns.
    pub fn hold(db: &TestDb, key: &str) -> Self {
        let app = format!("rowlock_{}", db.name);
        let sql = format!(
            "BEGIN; SELECT 1 FROM toolhost.kv WHERE ns = 'builtin' AND key = '{}' FOR UPDATE; \
             SELECT pg_sleep(30); COMMIT;",
            key.replace('\'', "''")
        );
        let child = Command::new("psql")
            .args(["-X", "-q", "-At", "-h", "127.0.0.1", "-p"])
            .arg(db.port.to_string())
            .args(["-U", pg::USER, "-d", &db.name, "-c", &sql])
            .env("PGPASSWORD", pg::PASSWORD)
            .env("PGAPPNAME", &app)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("psql runs");
        let lock = Self {
            child,
            port: db.port,
            db: db.name.clone(),
            app,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !row_locked(db, key) {
            assert!(Instant::now() < deadline, "psql never took the row lock");
            std::thread::sleep(Duration::from_millis(10));
        }
        lock
    }
}

impl Drop for RowLock {
    fn drop(&mut self) {
        let _ = pg::psql(
            self.port,
            &self.db,
            &format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = '{}'",
                self.app
            ),
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One test body run against each listed backend: `on_backends!(NAME, [sqlite, postgres],
/// |backend| { … })` makes `NAME::sqlite` and `NAME::postgres`.
#[macro_export]
macro_rules! on_backends {
    ($name:ident, [$($kind:ident),+ $(,)?], |$backend:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn body($backend: &common::stores::Backend) $body
            $(
                #[test]
                fn $kind() {
                    body(&common::stores::Backend::named(stringify!($kind)));
                }
            )+
        }
    };
}
