//! A warm start is observably identical to a cold one (docs/discovery.md): a file is
//! skipped at start-up (its registrations taken from the registration cache) only when its
//! top level provably acts on nothing beyond its own locals and registrations. Files that
//! write into shared modules, seed the random generator, use the store, log or register
//! hooks run on every start. Checked on the issue's example with the real binary, and
//! differentially on generated tool directories.

mod common;

use common::Fixture;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolhost::{CallContext, Host};

const SHARED: &str = "return {}\n";

const WRITER: &str = r#"require("shared").greeting = "hello from a"
registry.register{ name = "a", toolset = "t",
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return "a" end }
"#;

const READER: &str = r#"local shared = require("shared")
registry.register{ name = "b", toolset = "t",
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return tostring(shared.greeting) end }
"#;

fn call_b(fx: &Fixture) -> String {
    let out = fx.toolhost().args(["call", "b"]).output().expect("runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_top_level_write_into_a_shared_module_is_seen_on_every_start() {
    let fx = Fixture::new();
    fx.tool("lib/shared.lua", SHARED);
    fx.tool("a.lua", WRITER);
    fx.tool("b.lua", READER);
    for start in 0..3 {
        assert_eq!(call_b(&fx), "hello from a", "start {start}");
    }
}

#[test]
fn a_module_level_counter_counts_the_same_on_a_warm_start() {
    let fx = Fixture::new();
    fx.tool("lib/shared.lua", "return { loads = 0 }\n");
    for name in ["a", "c"] {
        fx.tool(
            &format!("{name}.lua"),
            &format!(
                r#"local s = require("shared")
s.loads = s.loads + 1
registry.register{{ name = "{name}", toolset = "t",
  schema = {{ parameters = {{ type = "object", properties = {{}} }} }},
  handler = function() return tostring(s.loads) end }}
"#
            ),
        );
    }
    let outputs: Vec<String> = (0..3)
        .map(|_| {
            let out = fx.toolhost().args(["call", "a"]).output().expect("runs");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        })
        .collect();
    assert_eq!(outputs, vec!["2", "2", "2"]);
}

#[test]
fn a_contained_file_is_still_skipped_on_a_warm_start() {
    let fx = Fixture::new();
    fx.tool("lib/shared.lua", SHARED);
    fx.tool("b.lua", READER);
    fx.toolhost().arg("list").output().expect("runs");
    let warm = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    let stderr = String::from_utf8_lossy(&warm.stderr);
    assert!(
        stderr.contains("b.lua: registrations taken from the cache"),
        "{stderr}"
    );
}

/// One top-level action of a generated file; `{i}` is the file's number.
const ACTIONS: &[&str] = &[
    // Effects beyond the file: must run on every start.
    "require('shared').k{i} = 'v{i}'",
    "local s{i} = require('shared'); s{i}.count = (s{i}.count or 0) + 1",
    "math.randomseed({i})",
    "store.incr('loads')",
    "log.info('file {i} loaded')",
    "registry.hook('pre_tool_call', function(call) end)",
    "local t0 = os.time()",
    "local r{i} = math.random(10)",
    // Contained: may be skipped.
    "g{i} = {i}",
    "local M{i} = {{}}; M{i}.x = {i}",
    "local n{i} = string.format('%d', {i})",
    "local lib{i} = require('pure')",
];

/// Builds file `i` from the chosen actions; its tool reports what it can observe.
fn file(i: usize, actions: &[usize]) -> String {
    let mut text = String::new();
    for &action in actions {
        text.push_str(&ACTIONS[action].replace("{i}", &i.to_string()));
        text.push('\n');
    }
    text.push_str(&format!(
        r#"local shared_view = require("shared")
registry.register{{ name = "tool{i}", toolset = "t",
  schema = {{ parameters = {{ type = "object", properties = {{}} }} }},
  handler = function()
    local keys = {{}}
    for k, v in pairs(shared_view) do keys[#keys + 1] = k .. "=" .. tostring(v) end
    table.sort(keys)
    return json.encode({{ shared = table.concat(keys, ","), loads = store.get("loads"),
      seeded = SEEDED and math.random(1000000) or 0 }})
  end }}
"#
    ));
    text
}

/// Every tool's result, in name order, from a host on `fx` (one VM, a fresh memory store).
fn results(fx: &Fixture, tools: usize) -> Vec<Value> {
    let names: Vec<String> = (0..tools).map(|i| format!("tool{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    answers_in_order(fx, &names)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_tool_answers_the_same_on_a_cold_and_a_warm_start(
        files in prop::collection::vec(prop::collection::vec(0..ACTIONS.len(), 0..4), 1..5)
    ) {
        let fx = Fixture::new();
        fx.tool("lib/shared.lua", SHARED);
        fx.tool("lib/pure.lua", "local P = {}\nfunction P.f() return 1 end\nreturn P\n");
        // Random numbers are compared only when some file seeds the generator (else they
        // differ between two cold starts too).
        let seeded = files.iter().flatten().any(|&a| ACTIONS[a].contains("randomseed"));
        for (i, actions) in files.iter().enumerate() {
            let mut text = file(i, actions);
            if seeded {
                text = format!("SEEDED = true\n{text}");
            }
            fx.tool(&format!("f{i}.lua"), &text);
        }
        let cold = results(&fx, files.len());
        let warm = results(&fx, files.len());
        prop_assert_eq!(cold, warm);
    }
}

/// Calls `names` in order on a host over `fx` (one VM, a fresh memory store) and returns
/// their answers.
fn answers_in_order(fx: &Fixture, names: &[&str]) -> Vec<Value> {
    let host = Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .memory_store()
        .default_config()
        .vms(1)
        .build()
        .expect("host builds");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    names
        .iter()
        .map(|name| {
            runtime
                .block_on(host.handle_function_call(name, json!({}), &CallContext::default()))
                .into_json()
        })
        .collect()
}

/// A tool file: `top` at top level, then a registration with `fields` and, when `body` is
/// not empty, a handler running it.
fn tool(name: &str, top: &str, fields: &str, body: &str) -> String {
    let handler = if body.is_empty() {
        String::new()
    } else {
        format!("handler = function() {body} end,")
    };
    format!(
        r#"{top}
registry.register{{ name = "{name}", toolset = "t", {fields} {handler}
  schema = {{ parameters = {{ type = "object", properties = {{}} }} }} }}
"#
    )
}

/// A module whose `hello` other files replace.
const HELLO: &str = "local M = {}\nfunction M.hello() return 'hello' end\nfunction M.open() return true end\nreturn M\n";

#[test]
fn a_module_function_named_in_a_registration_is_the_load_time_one_though_a_handler_changed_it() {
    let fx = Fixture::new();
    fx.tool("lib/shared.lua", HELLO);
    fx.tool(
        "b.lua",
        &tool(
            "b",
            "local p = require('shared')",
            "check_fn = p.open, handler = p.hello,",
            "",
        ),
    );
    fx.tool(
        "c.lua",
        &tool(
            "c",
            "",
            "",
            "local p = require('shared') p.hello = function() return 'changed' end \
             p.open = function() return false, 'closed' end return 'c'",
        ),
    );
    let order = ["c", "b"];
    let cold = answers_in_order(&fx, &order);
    assert_eq!(cold, vec![json!("c"), json!("hello")]);
    let warm = answers_in_order(&fx, &order);
    assert_eq!(warm, cold);
    // b.lua is skipped on a warm start (naming a module's function does not force a run).
    fx.toolhost().arg("list").output().expect("runs");
    let out = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("b.lua: registrations taken from the cache"),
        "{stderr}"
    );
}

#[test]
fn a_module_function_named_in_a_registration_follows_top_level_writes_in_load_order() {
    let fx = Fixture::new();
    fx.tool("lib/shared.lua", HELLO);
    // Runs before b (path order): b registers a's function.
    fx.tool(
        "a.lua",
        &tool(
            "a",
            "require('shared').hello = function() return 'from a' end",
            "",
            "return 'a'",
        ),
    );
    fx.tool(
        "b.lua",
        &tool("b", "local s = require('shared')", "handler = s.hello,", ""),
    );
    // Runs after b: b must not register z's function.
    fx.tool(
        "z.lua",
        &tool(
            "z",
            "require('shared').hello = function() return 'from z' end",
            "",
            "return 'z'",
        ),
    );
    let cold = answers_in_order(&fx, &["b"]);
    assert_eq!(cold, vec![json!("from a")]);
    assert_eq!(answers_in_order(&fx, &["b"]), cold);
}

#[test]
fn a_module_function_named_before_any_writer_is_the_one_the_module_made() {
    let fx = Fixture::new();
    fx.tool("lib/shared.lua", HELLO);
    fx.tool(
        "b.lua",
        &tool("b", "local s = require('shared')", "handler = s.hello,", ""),
    );
    fx.tool(
        "z.lua",
        &tool(
            "z",
            "require('shared').hello = function() return 'from z' end",
            "",
            "return require('shared').hello()",
        ),
    );
    let order = ["z", "b"];
    let cold = answers_in_order(&fx, &order);
    assert_eq!(cold, vec![json!("from z"), json!("hello")]);
    assert_eq!(answers_in_order(&fx, &order), cold);
}
