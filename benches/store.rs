//! The durable store (SQLite file in a temp dir, WAL): one get, one set, one atomic update,
//! through the same code Lua tools use (here via `Host::store`).

use serde_json::json;
use toolhost::Host;

fn main() {
    divan::main();
}

fn host(dir: &std::path::Path) -> Host {
    let tools = dir.join("tools-lua");
    std::fs::create_dir_all(&tools).expect("tools dir");
    Host::builder()
        .tools_dir(tools)
        .cache_dir(dir.join("cache"))
        .store_file(dir.join("store.sqlite3"))
        .default_config()
        .build()
        .expect("host")
}

#[divan::bench]
fn store_get(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = host(dir.path()).store();
    store
        .set("k", &json!({"n": 1, "text": "hello"}))
        .expect("set");
    bencher.bench_local(|| store.get("k").expect("get"));
}

#[divan::bench]
fn store_set(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = host(dir.path()).store();
    let value = json!({"n": 1, "text": "hello"});
    bencher.bench_local(|| store.set("k", &value).expect("set"));
}

#[divan::bench]
fn store_update(bencher: divan::Bencher) {
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
