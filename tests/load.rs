//! Load: thousands of calls from concurrent tasks while reloads keep swapping the tools in;
//! every call returns its own answer and memory settles back into its band.

mod common;

use common::Fixture;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use toolhost::{CallContext, Host};

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn tools(fx: &Fixture, version: u32) {
    for t in 0..8 {
        fx.tool(
            &format!("t{t}.lua"),
            &format!(
                "registry.register{{ name = 'tool{t}', toolset = 'load', parallel_safe = true,\n  schema = {{ parameters = {{ type = 'object', properties = {{ id = {{ type = 'integer' }} }}, required = {{ 'id' }} }} }},\n  handler = function(args) return 'v{version}:tool{t}:' .. args.id end }}\n"
            ),
        );
    }
}

/// Runs `per_task` calls on each of 16 tasks; returns how many answers were right.
fn round(host: &Host, runtime: &tokio::runtime::Runtime, per_task: usize, offset: usize) -> usize {
    runtime.block_on(async {
        let tasks: Vec<_> = (0..16)
            .map(|task| {
                let host = host.clone();
                tokio::spawn(async move {
                    let mut right = 0;
                    for i in 0..per_task {
                        let id = offset + task * per_task + i;
                        let tool = format!("tool{}", (id * 7 + task) % 8);
                        let out = host
                            .handle_function_call(
                                &tool,
                                json!({ "id": id }),
                                &CallContext::default(),
                            )
                            .await;
                        let toolhost::ToolResult::Text(text) = &out else {
                            panic!("call {id} failed: {out}")
                        };
                        // Each call returns its own id from the tool it asked, whatever version.
                        assert!(
                            text.ends_with(&format!(":{tool}:{id}")),
                            "{text} for {tool}/{id}"
                        );
                        right += 1;
                    }
                    right
                })
            })
            .collect();
        let mut total = 0;
        for task in tasks {
            total += task.await.expect("task finished");
        }
        total
    })
}

#[test]
fn ten_thousand_calls_during_reloads_lose_nothing_and_memory_settles() {
    let fx = Fixture::new();
    tools(&fx, 0);
    let host = fx.builder().vms(2).build().unwrap();
    let runtime = common::two_worker_runtime();

    let reloading = Arc::new(AtomicBool::new(true));
    let reloader = {
        let host = host.clone();
        let reloading = reloading.clone();
        let root = fx.root().to_path_buf();
        std::thread::spawn(move || {
            let mut version = 1;
            let mut reloads = 0;
            while reloading.load(Ordering::Relaxed) {
                for t in 0..8 {
                    let path = root.join(format!("tools-lua/t{t}.lua"));
                    let text = std::fs::read_to_string(&path).unwrap();
                    let next =
                        text.replacen(&format!("'v{}:", version - 1), &format!("'v{version}:"), 1);
                    std::fs::write(&path, next).unwrap();
                }
                let event = host.reload();
                assert!(event.errors.is_empty(), "{event:?}");
                version += 1;
                reloads += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            reloads
        })
    };

    let warmup = round(&host, &runtime, 100, 0);
    assert_eq!(warmup, 1600);
    let baseline = rss_bytes();
    let mut answered = 0;
    for r in 0..4 {
        answered += round(&host, &runtime, 157, 10_000 + r * 16 * 157);
        // Give the reloader room to swap generations between rounds too.
        std::thread::sleep(Duration::from_millis(120));
    }
    reloading.store(false, Ordering::Relaxed);
    let reloads = reloader.join().expect("reloader finished");
    assert_eq!(answered + warmup, 1600 + 4 * 16 * 157);
    assert!(answered + warmup >= 10_000);
    assert!(reloads >= 2, "reloads happened during the run: {reloads}");
    // Memory back in its band: old generations are freed once their calls finish.
    let after = rss_bytes();
    assert!(
        after < baseline + 96 * 1024 * 1024,
        "rss grew from {} MiB to {} MiB",
        baseline / 1_048_576,
        after / 1_048_576
    );
}
