//! Hostile and broken inputs: the host never crashes, hangs or loses other tools.

mod common;

use common::{Fixture, call, error_of, names, simple_tool};
use serde_json::json;
use std::time::{Duration, Instant};
use toolhost::Reason;

#[test]
fn nul_bytes_and_binary_files_are_verdicts() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/nul.lua",
        b"registry.register{ name = 'x\x00y' }\x00\x00".as_slice(),
    );
    fx.write(
        "tools-lua/binary.lua",
        [0x1bu8, b'L', b'u', b'a', 0x54, 0x00, 0x19, 0x93].as_slice(),
    );
    fx.tool("good.lua", &simple_tool("good", "t", "ok"));
    let host = fx.host();
    let verdicts = host.discovery();
    let nul = verdicts
        .iter()
        .find(|v| v.path.ends_with("nul.lua"))
        .unwrap();
    assert!(!nul.tools.iter().any(|t| t.contains('\0')));
    assert!(nul.error.is_some(), "{nul:?}");
    let binary = verdicts
        .iter()
        .find(|v| v.path.ends_with("binary.lua"))
        .unwrap();
    assert_eq!(binary.reason, Reason::Prefilter);
    assert_eq!(names(&host, None), ["good"]);
}

#[test]
fn a_file_registering_ten_thousand_tools_loads() {
    let fx = Fixture::new();
    fx.tool(
        "many.lua",
        "for i = 1, 10000 do\n  registry.register{ name = 't' .. i, toolset = 'bulk',\n    schema = { parameters = { type = 'object', properties = { n = { type = 'integer' } } } },\n    handler = function(args) return tostring(i) end }\nend",
    );
    let host = fx.host();
    assert_eq!(host.tools(None).len(), 10_000);
    assert_eq!(call(&host, "t9999", json!({})), json!("9999"));
}

#[test]
fn schemas_holding_cycles_or_functions_are_load_errors() {
    let fx = Fixture::new();
    fx.tool(
        "cycle.lua",
        "local p = { type = 'object', properties = {} }\np.properties.self = p\nregistry.register{ name = 'c', toolset = 't', schema = { parameters = p }, handler = print }",
    );
    fx.tool(
        "func.lua",
        "registry.register{ name = 'f', toolset = 't', schema = { parameters = { type = 'object' }, extra = print }, handler = print }",
    );
    let host = fx.host();
    assert!(
        error_of(&host, "cycle.lua").contains("cycle"),
        "{}",
        error_of(&host, "cycle.lua")
    );
    assert!(error_of(&host, "func.lua").contains("'schema.extra' a function is not JSON"));
}

#[test]
fn looping_schema_overrides_fall_back_to_the_static_schema() {
    let fx = Fixture::new();
    fx.tool(
        "loop.lua",
        "registry.register{ name = 'l', toolset = 't', schema = { description = 'static', parameters = { type = 'object' } },\n  dynamic_schema_overrides = function() while true do end end, handler = function() return 'x' end }",
    );
    let host = fx.host_with("[runtime]\nprobe_timeout_ms = 100\n");
    let started = Instant::now();
    let list = host.tool_definitions(&Default::default());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(list[0]["function"]["description"], "static");
}

#[test]
fn handlers_that_misbehave_get_errors_and_the_host_goes_on() {
    let fx = Fixture::new();
    let tool = |name: &str, body: &str| {
        format!(
            "registry.register{{ name = '{name}', toolset = 'h', schema = {{ parameters = {{ type = 'object' }} }},\n  handler = function(args)\n{body}\nend }}\n"
        )
    };
    let mut file = String::new();
    file.push_str(&tool(
        "recurse",
        "local function f(n) return 1 + f(n + 1) end\nreturn f(1)",
    ));
    file.push_str(&tool("huge", "return string.rep('x', 5000000)"));
    file.push_str(&tool("yields", "coroutine.yield()\nreturn 'resumed'"));
    file.push_str(&tool("error_nil", "error(nil)"));
    file.push_str(&tool(
        "error_table",
        "error(setmetatable({}, { __tostring = function() return 'custom' end }))",
    ));
    file.push_str(&tool("fine", "return 'fine'"));
    fx.tool("h.lua", &file);
    let host = fx.host();
    let recurse = call(&host, "recurse", json!({}));
    assert_eq!(recurse["error_type"], "handler_error");
    assert!(
        recurse["error"]
            .as_str()
            .unwrap()
            .contains("stack overflow"),
        "{recurse}"
    );
    let huge = call(&host, "huge", json!({}));
    assert!(
        huge.as_str().unwrap().starts_with("<persisted-output>"),
        "spilled, not lost"
    );
    assert_eq!(call(&host, "yields", json!({})), json!("resumed"));
    assert_eq!(
        call(&host, "error_nil", json!({}))["error_type"],
        "handler_error"
    );
    assert_eq!(
        call(&host, "error_table", json!({}))["error_type"],
        "handler_error"
    );
    assert_eq!(call(&host, "fine", json!({})), json!("fine"));
}

#[test]
fn concurrent_processes_share_one_cache_safely() {
    let fx = Fixture::new();
    for i in 0..20 {
        fx.tool(
            &format!("t{i}.lua"),
            &simple_tool(&format!("t{i}"), "t", "x"),
        );
    }
    let spawn = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
            .current_dir(fx.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .args(["--cache-dir", "cache", "-q", "discover", "--json"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    for _ in 0..5 {
        let children: Vec<_> = (0..4).map(|_| spawn()).collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            let verdicts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(verdicts.as_array().unwrap().len(), 20);
            assert!(
                verdicts
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|v| v["reason"] == "registers")
            );
        }
        // Touch a file so the next round rewrites the cache.
        fx.tool("t0.lua", &simple_tool("t0", "t", "y"));
    }
    let cache = std::fs::read_to_string(fx.root().join("cache/discovery.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&cache).expect("the cache is whole JSON");
    assert_eq!(parsed.as_object().unwrap().len(), 20);
}

#[test]
fn host_api_tables_cannot_be_replaced_for_other_files() {
    let fx = Fixture::new();
    fx.tool(
        "a.lua",
        &("setmetatable(json, { __index = function() return function() return 'hijacked' end end })\njson.encode = nil\nrawset(fs, 'read', function() return 'fake' end)\n".to_string()
            + &simple_tool("a", "t", "a")),
    );
    fx.tool(
        "b.lua",
        "registry.register{ name = 'b', toolset = 't', schema = { parameters = { type = 'object' } },\n  handler = function() return json.encode({ ok = true }) .. tostring(fs.read == nil) end }",
    );
    let host = fx.host();
    assert_eq!(call(&host, "b", json!({})), json!(r#"{"ok":true}false"#));
}
