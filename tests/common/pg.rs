//! A real PostgreSQL for the tests: each [`TestDb`] is a database of its own (unique name),
//! created on the local server and dropped when the value is dropped.
//!
//! The server is Debian's `postgresql`, made ready by `scripts/pg-setup.sh` (which `.ci/run`
//! runs; a test that finds nothing listening runs it once itself, under a lock, as the
//! Python tests make their venv on first use). Databases are made with the `psql` program,
//! so the tests need no database driver of their own.

use std::path::Path;
use std::process::Command;
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};

/// The cluster every test database lives on.
pub const MAIN_PORT: u16 = 5432;
/// The cluster a test may restart (the fleet test's outage): nothing else uses it.
pub const RESTART_PORT: u16 = 5433;
/// The test role (scripts/pg-setup.sh).
pub const USER: &str = "toolhost_test";
/// Its password: a secret the host must never print.
pub const PASSWORD: &str = "toolhost-test-secret";

/// A database of one test, dropped (connections and all) with the value.
pub struct TestDb {
    /// The database's name.
    pub name: String,
    /// The port of its cluster.
    pub port: u16,
}

impl TestDb {
    /// A new, empty database on the main cluster.
    pub fn new() -> Self {
        Self::on(MAIN_PORT)
    }

    /// A new, empty database on the cluster at `port`.
    pub fn on(port: u16) -> Self {
        ready(port);
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "th_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        psql(port, "postgres", &format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("creating test database {name}: {e}"));
        Self { name, port }
    }

    /// The URL of this database (with the password in it).
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{}",
            self.port, self.name
        )
    }

    /// Runs `sql` in this database; its output (tuples only, unaligned).
    pub fn query(&self, sql: &str) -> String {
        psql(self.port, &self.name, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Default for TestDb {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // FORCE ends the connections a killed replica's pool left behind.
        let _ = psql(
            self.port,
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// `psql -At -c sql` against `db` on the cluster at `port`, as the test role.
pub fn psql(port: u16, db: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"])
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            USER,
            "-d",
            db,
        ])
        .args(["-c", sql])
        .env("PGPASSWORD", PASSWORD)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .map_err(|e| format!("psql could not run ({e}): is PostgreSQL installed?"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// Makes sure the cluster at `port` answers, running scripts/pg-setup.sh once (under a
/// lock shared by the parallel test binaries) when it does not.
fn ready(port: u16) {
    static SETUP: Once = Once::new();
    if psql(port, "postgres", "SELECT 1").is_ok() {
        return;
    }
    SETUP.call_once(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let lock = root.join("target").join("pg-setup.lock");
        let status = Command::new("flock")
            .arg(&lock)
            .arg("bash")
            .arg(root.join("scripts").join("pg-setup.sh"))
            .status()
            .unwrap_or_else(|e| panic!("running scripts/pg-setup.sh: {e}"));
        assert!(status.success(), "scripts/pg-setup.sh failed: {status}");
    });
    if let Err(e) = psql(port, "postgres", "SELECT 1") {
        panic!("PostgreSQL on 127.0.0.1:{port} does not answer after scripts/pg-setup.sh: {e}");
    }
}

/// Exclusive use of the restart cluster (port [`RESTART_PORT`]) while held: tests in any
/// test binary that stop or restart it take this first, so no two outages overlap.
pub struct RestartCluster {
    _lock: std::fs::File,
}

impl RestartCluster {
    /// Waits for exclusive use of the restart cluster and makes sure it runs.
    pub fn exclusive() -> Self {
        ready(RESTART_PORT);
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join("pg-restart.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this function owns; released when it closes.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock {}", path.display());
        let cluster = Self { _lock: file };
        cluster.start();
        cluster
    }

    /// Stops the cluster (fast shutdown: connections are cut, as in a crash or restart).
    pub fn stop(&self) {
        pg_ctlcluster("stop", &["-m", "fast"]);
    }

    /// Starts it again and waits until it answers.
    pub fn start(&self) {
        pg_ctlcluster("start", &[]);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while psql(RESTART_PORT, "postgres", "SELECT 1").is_err() {
            assert!(
                std::time::Instant::now() < until,
                "the restart cluster did not come back"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for RestartCluster {
    fn drop(&mut self) {
        // Leave it running for the next test, whatever happened.
        pg_ctlcluster("start", &[]);
    }
}

/// `pg_ctlcluster VERSION restart ACTION ARGS` (an action on a running or stopped cluster
/// that is already in that state is not an error here).
fn pg_ctlcluster(action: &str, args: &[&str]) {
    let version = std::fs::read_dir("/usr/lib/postgresql")
        .ok()
        .and_then(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter_map(|v| v.parse::<u32>().ok())
                .max()
        })
        .expect("PostgreSQL is installed under /usr/lib/postgresql");
    let _ = Command::new("pg_ctlcluster")
        .arg(version.to_string())
        .arg("restart")
        .arg(action)
        .args(args)
        .status();
}
