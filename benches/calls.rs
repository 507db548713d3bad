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
