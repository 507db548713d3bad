//! Shared workload setup: the tool directories generated from `../shared/bench/` by
//! `scripts/gen-workload` (run on first use, kept under `target/bench-workloads/`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use toolhost::Host;

/// The crate root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The manifest of workload `n` (133 or 1000).
pub fn manifest(n: usize) -> PathBuf {
    let shared = std::env::var_os("TOOLHOST_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared"));
    shared.join(format!("bench/workload-{n}.json"))
}

/// The generated directory for workload `n` (contains `tools-lua/` and `toolhost.toml`).
pub fn workload(n: usize) -> PathBuf {
    let out = root().join(format!("target/bench-workloads/{n}"));
    if !out.join("tools-lua").is_dir() {
        let status = Command::new("python3")
            .arg(root().join("scripts/gen-workload"))
            .arg(manifest(n))
            .arg(&out)
            .status()
            .expect("python3 runs scripts/gen-workload");
        assert!(status.success(), "gen-workload failed for {n}");
    }
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
    Host::builder()
        .tools_dir(dir.join("tools-lua"))
        .cache_dir(cache)
        .config_file(path)
        .vms(1)
        .build()
        .expect("workload host builds")
}

/// The `bench_calls` entry of workload `n`.
pub fn bench_calls(n: usize) -> serde_json::Value {
    let text = std::fs::read_to_string(manifest(n)).expect("manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    manifest["bench_calls"].clone()
}
