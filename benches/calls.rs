//! One echo call through the pipeline, and the raw mlua JSON→Lua→JSON round trip that is
//! its floor.

mod common;

use toolhost::CallContext;

fn main() {
    divan::main();
}

#[divan::bench]
fn call_echo(bencher: divan::Bencher) {
    let cache = tempfile::tempdir().expect("temp dir");
    let host = common::host(133, cache.path());
    let args = common::bench_calls(133)["plain_args"].clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let ctx = CallContext::default();
    bencher.bench_local(|| runtime.block_on(host.handle_function_call("echo", args.clone(), &ctx)));
}

#[divan::bench]
fn call_echo_coerce(bencher: divan::Bencher) {
    let cache = tempfile::tempdir().expect("temp dir");
    let host = common::host(133, cache.path());
    let calls = common::bench_calls(133);
    let args = calls["coerce_args"].clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let ctx = CallContext::default();
    let expected: serde_json::Value = calls["coerce_expected"].clone();
    let out = runtime.block_on(host.handle_function_call("echo", args.clone(), &ctx));
    let got: serde_json::Value = serde_json::from_str(&out.text().expect("text")).expect("json");
    assert_eq!(
        got, expected,
        "coercion gives the manifest's expected arguments"
    );
    bencher.bench_local(|| runtime.block_on(host.handle_function_call("echo", args.clone(), &ctx)));
}

#[divan::bench]
fn raw_lua_echo(bencher: divan::Bencher) {
    use mlua::{Lua, LuaSerdeExt};
    let lua = Lua::new();
    let echo: mlua::Function = lua
        .load("return function(args) return args end")
        .eval()
        .expect("echo");
    let args = common::bench_calls(133)["plain_args"].clone();
    bencher.bench_local(|| {
        let table = lua.to_value(&args).expect("to lua");
        let out: mlua::Value = echo.call(table).expect("call");
        let json: serde_json::Value = lua.from_value(out).expect("from lua");
        json
    });
}

/// A batch of two CPU-bound parallel_safe calls on a pool of `vms` VMs (multi-thread
/// runtime with two workers): the speedup of 2 VMs over 1 is the pool's scaling.
#[divan::bench(args = [1, 2], sample_count = 20)]
fn cpu_batch_of_two(bencher: divan::Bencher, vms: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let tools = dir.path().join("tools-lua");
    std::fs::create_dir_all(&tools).expect("tools dir");
    std::fs::write(
        tools.join("spin.lua"),
        r#"registry.register{ name = "spin", toolset = "bench", parallel_safe = true,
  schema = { parameters = { type = "object" } },
  handler = function() local x = 0 for i = 1, 3000000 do x = x + i % 7 end return tostring(x) end }"#,
    )
    .expect("tool file");
    let host = toolhost::Host::builder()
        .tools_dir(&tools)
        .cache_dir(dir.path().join("cache"))
        .default_config()
        .vms(vms)
        .build()
        .expect("host");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = CallContext::default();
    bencher.bench_local(|| {
        let calls = vec![toolhost::FunctionCall::new("spin", serde_json::json!({})); 2];
        runtime.block_on(host.handle_function_calls(calls, &ctx))
    });
}
