//! Workload setup: the tool directories of the generated workloads (`workload.rs`, seed
//! [`workload::SEED`]), written on first use under `target/bench-workloads/N/` with their
//! manifest beside them (`workload.json`, which `scripts/bench.sh` hands to the MCP bench).
#![allow(dead_code)]

pub mod workload;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use toolhost::Host;

/// The crate root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The manifest of workload `n` (133 or 1000).
pub fn manifest(n: usize) -> serde_json::Value {
    workload::manifest(n, workload::SEED)
}

/// The generated directory for workload `n` (contains `tools-lua/`, `toolhost.toml` and
/// `workload.json`). Rewritten whenever its manifest differs from what the generator draws
/// now, so an edited generator never leaves stale files behind. Checked once per process:
/// benches call this inside measured loops.
pub fn workload(n: usize) -> PathBuf {
    static CHECKED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    let out = root().join(format!("target/bench-workloads/{n}"));
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if checked.contains(&n) {
        return out;
    }
    let stamp = out.join("workload.json");
    let text = serde_json::to_string_pretty(&manifest(n)).expect("manifest serialises");
    let current = std::fs::read_to_string(&stamp).ok();
    if current.as_deref() != Some(text.as_str()) || !out.join("tools-lua").is_dir() {
        // The manifest goes last: it marks a complete directory.
        let _ = std::fs::remove_file(&stamp);
        workload::write_lua(&manifest(n), &out)
            .unwrap_or_else(|e| panic!("writing workload {n} into {}: {e}", out.display()));
        std::fs::write(&stamp, text).expect("workload manifest written");
    }
    checked.push(n);
    out
}

/// A host over workload `n` with its cache in `cache`. Tool search is off, so definitions
/// list every tool, as the reference registry's do.
pub fn host(n: usize, cache: &Path) -> Host {
    host_with(n, cache, "off")
}

/// A host over workload `n` with `[tool_search] enabled = mode` ("on", "off", "auto"), on
/// one VM (what a one-shot process or a single agent loop uses; the pool's scaling is
/// measured separately). The workload's config, so changed, is written beside the cache.
pub fn host_with(n: usize, cache: &Path, mode: &str) -> Host {
    build(n, cache, &config(n, cache, mode))
}

/// Writes workload `n`'s config with `[tool_search] enabled = mode` beside the cache and
/// returns its path. Benches that time a build write it once, before the timed loop: a
/// rewritten file costs the file system hundreds of microseconds (a truncated file is
/// flushed when closed), which is the harness's and not a start's.
pub fn config(n: usize, cache: &Path, mode: &str) -> PathBuf {
    let dir = workload(n);
    let text = std::fs::read_to_string(dir.join("toolhost.toml")).expect("workload config");
    let mut config: toml::Table = text.parse().expect("workload config is TOML");
    let search = config
        .entry("tool_search")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(search) = search {
        search.insert("enabled".into(), toml::Value::String(mode.into()));
    }
    std::fs::create_dir_all(cache).expect("cache dir");
    let path = cache.join(format!("toolhost-{n}-{mode}.toml"));
    std::fs::write(&path, config.to_string()).expect("bench config written");
    path
}

/// A host over workload `n` with its cache in `cache` and the config file `config` (from
/// [`config`]), on one VM: what a start does, and nothing else.
pub fn build(n: usize, cache: &Path, config: &Path) -> Host {
    Host::builder()
        .tools_dir(workload(n).join("tools-lua"))
        .cache_dir(cache)
        .config_file(config)
        .vms(1)
        .build()
        .expect("workload host builds")
}

/// Threads this process has now.
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |tasks| tasks.count())
}

/// Waits until this process is back to at most `baseline` threads (for a second at most):
/// a dropped host's VM thread closes its VM on its own, and a build timed meanwhile shares
/// the machine's second core with that teardown, which no process start does.
pub fn settle(baseline: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while threads() > baseline && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// The `bench_calls` entry of workload `n`.
pub fn bench_calls(n: usize) -> serde_json::Value {
    manifest(n)["bench_calls"].clone()
}
