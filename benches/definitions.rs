//! Tool definitions on the generated workloads: recompute (memo miss, availability answers
//! cached) versus memo hit.

mod common;

use toolhost::{Host, Selection};

fn main() {
    divan::main();
}

fn host(n: usize) -> (Host, tempfile::TempDir) {
    let cache = tempfile::tempdir().expect("temp dir");
    let host = common::host(n, cache.path());
    // Warm the availability cache so that "recompute" measures the definitions work.
    host.tool_definitions(&Selection::default());
    (host, cache)
}

#[divan::bench(args = [133, 1000])]
fn recompute(bencher: divan::Bencher, n: usize) {
    let (host, _cache) = host(n);
    bencher.bench_local(|| host.tool_definitions_uncached(&Selection::default()));
}

#[divan::bench(args = [133, 1000])]
fn memo_hit(bencher: divan::Bencher, n: usize) {
    let (host, _cache) = host(n);
    let selection = Selection::default();
    bencher.bench_local(|| host.tool_definitions(&selection));
}

/// One `tool_search` call (three queries) over the 1000-tool workload, where search is on.
#[divan::bench]
fn tool_search_1000(bencher: divan::Bencher) {
    let cache = tempfile::tempdir().expect("temp dir");
    let host = common::host_with(1000, cache.path(), "on");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = toolhost::CallContext::default();
    let args = serde_json::json!({"queries": ["archive file", "list users", "weather forecast"]});
    bencher.bench_local(|| {
        runtime.block_on(host.handle_function_call("tool_search", args.clone(), &ctx))
    });
}
