//! The runtime (docs/runtime.md): deadlines that no Lua trick escapes, memory limits, the VM staying
//! usable afterwards.

mod common;

use common::{Fixture, call};
use serde_json::json;
use std::time::{Duration, Instant};

fn runaway(name: &str, body: &str) -> String {
    format!(
        "registry.register{{ name = '{name}', toolset = 'r', timeout_ms = 200,\n  schema = {{ parameters = {{ type = 'object' }} }},\n  handler = function(args)\n{body}\nend }}\n"
    )
}

#[test]
fn every_runaway_shape_is_stopped_and_the_host_keeps_answering() {
    let fx = Fixture::new();
    let shapes = [
        ("plain", "while true do end"),
        (
            "pcall_loop",
            "while true do pcall(function() while true do end end) end",
        ),
        ("pcall_error_loop", "while true do pcall(error, 'x') end"),
        (
            "sort",
            "local t = {} for i = 1, 100 do t[i] = i end\ntable.sort(t, function(a, b) while true do end end)",
        ),
        (
            "sort_pcall",
            "local t = {3, 1, 2}\nwhile true do pcall(table.sort, t, function(a, b) while true do pcall(function() while true do end end) end end) end",
        ),
        (
            "coroutine",
            "coroutine.wrap(function() while true do end end)()",
        ),
        (
            "coroutine_pcall",
            "local co = coroutine.create(function() while true do pcall(function() while true do end end) end end)\nwhile true do coroutine.resume(co) end",
        ),
        (
            "gsub",
            "string.gsub(string.rep('a', 10), 'a', function() while true do end end)",
        ),
        (
            "metamethod",
            "local t = setmetatable({}, { __index = function() while true do end end })\nreturn t.x",
        ),
        (
            "close",
            "local guard <close> = setmetatable({}, { __close = function() while true do end end })\nwhile true do end",
        ),
        ("sleep", "time.sleep(60000) return 'woke'"),
        ("sleep_loop", "while true do pcall(time.sleep, 60000) end"),
    ];
    let mut file = String::new();
    for (name, body) in shapes {
        file.push_str(&runaway(name, body));
    }
    file.push_str("registry.register{ name = 'fine', toolset = 'r', schema = { parameters = { type = 'object' } },\n  handler = function() return 'still answering' end }\n");
    fx.tool("runaway.lua", &file);
    let host = fx.host();
    for (name, _) in shapes {
        let started = Instant::now();
        let out = call(&host, name, json!({}));
        let took = started.elapsed();
        assert_eq!(out["error_type"], "timeout", "{name}: {out}");
        assert_eq!(
            out["error"],
            format!("[TOOL_ERROR] Tool execution failed: {name} timed out after 200 ms")
        );
        // Liveness bound only: stopped within 5 s of a 200 ms deadline.
        assert!(took < Duration::from_secs(5), "{name} took {took:?}");
        assert_eq!(
            call(&host, "fine", json!({})),
            json!("still answering"),
            "after {name}"
        );
    }
}

#[test]
fn a_handler_within_its_deadline_is_untouched() {
    let fx = Fixture::new();
    fx.tool(
        "ok.lua",
        &runaway(
            "busy",
            "local n = 0 for i = 1, 200000 do n = n + i end\ntime.sleep(20)\nreturn tostring(n)",
        ),
    );
    let host = fx.host();
    assert_eq!(call(&host, "busy", json!({})), json!("20000100000"));
}

#[test]
fn the_default_deadline_comes_from_the_config() {
    let fx = Fixture::new();
    fx.tool(
        "slow.lua",
        "registry.register{ name = 'slow', toolset = 'r', schema = { parameters = { type = 'object' } },\n  handler = function() while true do end end }",
    );
    let host = fx.host_with("[runtime]\ntimeout_ms = 150\n");
    let out = call(&host, "slow", json!({}));
    assert_eq!(
        out["error"],
        "[TOOL_ERROR] Tool execution failed: slow timed out after 150 ms"
    );
}

#[test]
fn a_memory_bomb_then_a_normal_call_on_the_same_vm() {
    let fx = Fixture::new();
    fx.tool(
        "bomb.lua",
        "local keep = {}\nregistry.register{ name = 'bomb', toolset = 'x', schema = { parameters = { type = 'object' } },\n  handler = function() local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 4096) .. i end end }\nregistry.register{ name = 'alloc', toolset = 'x', schema = { parameters = { type = 'object' } },\n  handler = function() local t = {} for i = 1, 1000 do t[i] = string.rep('y', 1024) .. i end return tostring(#t) end }",
    );
    let host = fx.host_with("[runtime]\nmemory_mb = 64\nvms = 1\n");
    for _ in 0..3 {
        assert_eq!(call(&host, "bomb", json!({}))["error_type"], "memory");
        assert_eq!(call(&host, "alloc", json!({})), json!("1000"));
    }
}

const BUSY: &str = r#"
local function busy(ms)
  local started = time.now()
  while time.now() - started < ms do end
  return { start = started, finish = time.now() }
end
registry.register{ name = "busy_a", toolset = "p", parallel_safe = true,
  schema = { parameters = { type = "object" } }, handler = function() return busy(300) end }
registry.register{ name = "busy_b", toolset = "p", parallel_safe = true,
  schema = { parameters = { type = "object" } }, handler = function() return busy(300) end }
registry.register{ name = "exclusive", toolset = "p",
  schema = { parameters = { type = "object" } }, handler = function() return busy(100) end }
"#;

fn interval(result: &serde_json::Value) -> (i64, i64) {
    let parsed: serde_json::Value =
        serde_json::from_str(result.as_str().expect("text result")).unwrap();
    (
        parsed["start"].as_i64().unwrap(),
        parsed["finish"].as_i64().unwrap(),
    )
}

fn overlaps(a: (i64, i64), b: (i64, i64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

#[test]
fn parallel_safe_calls_overlap_on_two_vms_and_others_run_alone() {
    let fx = Fixture::new();
    fx.tool("busy.lua", BUSY);
    let host = fx.builder().vms(2).build().unwrap();
    assert_eq!(host.vm_count(), 2);
    let runtime = common::two_worker_runtime();
    use toolhost::FunctionCall;
    let batch = vec![
        FunctionCall::new("busy_a", json!({})),
        FunctionCall::new("busy_b", json!({})),
        FunctionCall::new("exclusive", json!({})),
        FunctionCall::new("missing", json!({})),
        FunctionCall::new("busy_a", json!({})),
    ];
    let results = common::json_all(
        runtime.block_on(host.handle_function_calls(batch, &toolhost::CallContext::default())),
    );
    assert_eq!(results.len(), 5);
    assert_eq!(
        results[3]["error_type"], "unknown_tool",
        "results keep request order"
    );
    let (a, b, exclusive, a2) = (
        interval(&results[0]),
        interval(&results[1]),
        interval(&results[2]),
        interval(&results[4]),
    );
    assert!(
        overlaps(a, b),
        "two parallel_safe calls on two VMs overlap: {a:?} {b:?}"
    );
    for other in [a, b, a2] {
        assert!(
            !overlaps(exclusive, other),
            "the exclusive call runs alone: {exclusive:?} {other:?}"
        );
    }
    assert!(
        exclusive.0 >= a.1.min(b.1),
        "it starts after the calls before it"
    );
    assert!(a2.0 >= exclusive.1, "and the calls after it start after it");
}

#[test]
fn one_vm_runs_the_same_batch_one_at_a_time() {
    let fx = Fixture::new();
    fx.tool("busy.lua", BUSY);
    let host = fx.builder().vms(1).build().unwrap();
    let runtime = common::two_worker_runtime();
    use toolhost::FunctionCall;
    let batch = vec![
        FunctionCall::new("busy_a", json!({})),
        FunctionCall::new("busy_b", json!({})),
    ];
    let results = common::json_all(
        runtime.block_on(host.handle_function_calls(batch, &toolhost::CallContext::default())),
    );
    assert!(!overlaps(interval(&results[0]), interval(&results[1])));
}

#[test]
fn calls_interleave_on_one_vm_while_they_await() {
    let fx = Fixture::new();
    fx.tool(
        "sleepy.lua",
        "registry.register{ name = 'nap', toolset = 'p', parallel_safe = true, is_async = true,\n  schema = { parameters = { type = 'object' } },\n  handler = function() local s = time.now() time.sleep(300) return { start = s, finish = time.now() } end }",
    );
    let host = fx.builder().vms(1).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    use toolhost::FunctionCall;
    let batch = (0..4)
        .map(|_| FunctionCall::new("nap", json!({})))
        .collect();
    let results = common::json_all(
        runtime.block_on(host.handle_function_calls(batch, &toolhost::CallContext::default())),
    );
    let spans: Vec<(i64, i64)> = results.iter().map(interval).collect();
    assert!(
        spans.windows(2).all(|w| overlaps(w[0], w[1])),
        "sleeping calls share the VM: {spans:?}"
    );
}

#[test]
fn deadlines_and_sleep_work_without_the_runtimes_timers() {
    let fx = Fixture::new();
    fx.tool(
        "t.lua",
        &(runaway("spin", "while true do end")
            + &runaway("nap", "time.sleep(20) return 'rested'")
            + &runaway("parked", "time.sleep(60000)")),
    );
    let host = fx.host();
    // A bare runtime: no `enable_time`, no IO.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let ctx = toolhost::CallContext::default();
    let spin = runtime
        .block_on(host.handle_function_call("spin", json!({}), &ctx))
        .into_json();
    assert_eq!(spin["error_type"], "timeout");
    let nap = runtime
        .block_on(host.handle_function_call("nap", json!({}), &ctx))
        .into_json();
    assert_eq!(nap, json!("rested"));
    let started = Instant::now();
    let parked = runtime
        .block_on(host.handle_function_call("parked", json!({}), &ctx))
        .into_json();
    assert_eq!(parked["error_type"], "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
}
