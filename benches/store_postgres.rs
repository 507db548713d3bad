//! The store on PostgreSQL (the local test server of scripts/pg-setup.sh, a database of
//! its own, dropped at the end): one get and one atomic update through `Host::store`, the
//! code Lua tools use. Without a server it says so and measures nothing (scripts/bench.sh
//! then reports no PostgreSQL figures).

use serde_json::json;
use std::process::Command;
use toolhost::Host;

/// The role and password scripts/pg-setup.sh creates (a test secret, not a real one).
const USER: &str = "toolhost_test";
const PASSWORD: &str = "toolhost-test-secret";
const PORT: u16 = 5432;

fn main() {
    let db = BenchDb::create();
    if db.is_none() {
        eprintln!(
            "store_postgres: no PostgreSQL on 127.0.0.1:{PORT} for {USER} (run \
             scripts/pg-setup.sh as root); skipped"
        );
        return;
    }
    divan::main();
}

fn psql(db: &str, sql: &str) -> bool {
    Command::new("psql")
        .args([
            "-X",
            "-q",
            "-At",
            "-h",
            "127.0.0.1",
            "-p",
            &PORT.to_string(),
        ])
        .args(["-U", USER, "-d", db, "-c", sql])
        .env("PGPASSWORD", PASSWORD)
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// The bench's database, dropped with the value.
struct BenchDb;

impl BenchDb {
    fn name() -> String {
        format!("th_bench_{}", std::process::id())
    }

    fn create() -> Option<Self> {
        psql("postgres", &format!("CREATE DATABASE {}", Self::name())).then_some(Self)
    }
}

impl Drop for BenchDb {
    fn drop(&mut self) {
        psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", Self::name()),
        );
    }
}

fn host(dir: &std::path::Path) -> Host {
    let tools = dir.join("tools-lua");
    std::fs::create_dir_all(&tools).expect("tools dir");
    Host::builder()
        .tools_dir(tools)
        .cache_dir(dir.join("cache"))
        .postgres_store(format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{PORT}/{}?sslmode=disable",
            BenchDb::name()
        ))
        .default_config()
        .build()
        .expect("host")
}

#[divan::bench]
fn store_get_postgres(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = host(dir.path()).store();
    store
        .set("k", &json!({"n": 1, "text": "hello"}))
        .expect("set");
    bencher.bench_local(|| store.get("k").expect("get"));
}

#[divan::bench]
fn store_update_postgres(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = host(dir.path()).store();
    bencher.bench_local(|| {
        store
            .update("count", |old| {
                let n = old.and_then(|v| v.as_i64()).unwrap_or(0);
                Ok(Some(json!(n + 1)))
            })
            .expect("update")
    });
}
