//! Truthful annotations (docs/effects.md): a tool's effects read from its code, checked
//! against its annotations at load, filled in when absent, shown by `list --json`,
//! `discover --json` and `explain`, and held at run time for a tool served as read-only.

mod common;

use common::{Fixture, call, error_of};
use serde_json::{Value, json};
use toolhost::{Format, Selection};

/// A tool `name` declaring `annotations` (a Lua table body) whose handler runs `body`.
fn tool(name: &str, annotations: &str, body: &str) -> String {
    format!(
        "registry.register{{ name = '{name}', toolset = 't',\n  annotations = {{ {annotations} }},\n  schema = {{ parameters = {{ type = 'object' }} }},\n  handler = function(args, ctx)\n{body}\n  end }}\n"
    )
}

/// `toolhost list --json` in the fixture, by tool name.
fn listed(fx: &Fixture) -> Vec<Value> {
    fx.list_json()
}

fn listed_tool(fx: &Fixture, name: &str) -> Value {
    listed(fx)
        .into_iter()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

#[test]
fn read_only_with_a_write_is_refused_naming_the_call_and_its_line() {
    let fx = Fixture::new();
    fx.tool(
        "liar.lua",
        &tool(
            "liar",
            "read_only = true",
            "    fs.write('x.txt', 'y')\n    return 'ok'",
        ),
    );
    let error = error_of(&fx.host(), "liar.lua");
    assert!(error.contains("read_only = true"), "{error}");
    assert!(error.contains("tools-lua/liar.lua:5 (fs.write)"), "{error}");
}

#[test]
fn destructive_false_with_a_store_delete_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "eraser.lua",
        &tool(
            "eraser",
            "destructive = false",
            "    store.delete('k')\n    return 'ok'",
        ),
    );
    let error = error_of(&fx.host(), "eraser.lua");
    assert!(error.contains("destructive = false"), "{error}");
    assert!(error.contains("store.delete at "), "{error}");
    assert!(error.contains("tools-lua/eraser.lua:5"), "{error}");
}

#[test]
fn destructive_false_with_a_file_write_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "w.lua",
        &tool(
            "w",
            "destructive = false",
            "    fs.write('x.txt', 'y')\n    return 'ok'",
        ),
    );
    let error = error_of(&fx.host(), "w.lua");
    assert!(error.contains("destructive = false"), "{error}");
    assert!(error.contains("tools-lua/w.lua:5 (fs.write)"), "{error}");
}

#[test]
fn open_world_false_with_a_process_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "runner.lua",
        &tool(
            "runner",
            "open_world = false",
            "    return proc.run{ argv = { 'true' } }.stdout",
        ),
    );
    let error = error_of(&fx.host(), "runner.lua");
    assert!(error.contains("open_world = false"), "{error}");
    assert!(error.contains("tools-lua/runner.lua:5 (proc)"), "{error}");
}

#[test]
fn a_contradiction_under_annotation_check_warn_loads_and_is_still_held_at_run_time() {
    let fx = Fixture::new();
    fx.tool(
        "liar.lua",
        &tool(
            "liar",
            "read_only = true",
            "    fs.write('x.txt', 'y')\n    return 'ok'",
        ),
    );
    let host = fx.host_with("[sandbox]\nannotation_check = \"warn\"\n");
    let verdicts = host.discovery();
    assert!(common::verdict(&verdicts, "liar.lua").error.is_none());
    let out = call(&host, "liar", json!({}));
    assert!(out.to_string().contains("fs.write refused"), "{out}");
    assert!(!fx.root().join("x.txt").exists());
}

#[test]
fn an_unknown_annotation_check_value_names_the_key() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", "[sandbox]\nannotation_check = \"maybe\"\n");
    let out = fx.toolhost().args(["list"]).output().expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("annotation_check"), "{stderr}");
}

#[test]
fn an_effect_reached_through_a_required_module_is_found() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/saver.lua",
        "local M = {}\nfunction M.save(p, s)\n  return fs.write(p, s)\nend\nreturn M\n",
    );
    fx.tool(
        "via.lua",
        &format!(
            "local saver = require('saver')\nlocal function keep(p) return saver.save(p, 'x') end\n{}",
            tool("via", "read_only = true", "    keep('x.txt')\n    return 'ok'")
        ),
    );
    let error = error_of(&fx.host(), "via.lua");
    assert!(
        error.contains("fs.write at tools-lua/lib/saver.lua:3"),
        "{error}"
    );
}

#[test]
fn a_dynamic_tool_is_unknown_and_not_derived_read_only() {
    let fx = Fixture::new();
    fx.tool(
        "dyn.lua",
        &tool("dyn", "title = 'Dynamic'", "    return load('return 1')()"),
    );
    let listed = listed_tool(&fx, "dyn");
    assert_eq!(listed["effects"], json!(["unknown"]));
    assert!(listed["annotations"].get("read_only").is_none(), "{listed}");
}

#[test]
fn a_provably_read_only_tool_gets_derived_annotations_in_list_json_and_the_mcp_listing() {
    let fx = Fixture::new();
    fx.tool(
        "reader.lua",
        "registry.register{ name = 'reader', toolset = 't',\n  schema = { parameters = { type = 'object' } },\n  handler = function() return fs.read('x.txt') end }\n",
    );
    let listed = listed_tool(&fx, "reader");
    assert_eq!(listed["annotations_derived"], true);
    assert_eq!(
        listed["annotations"],
        json!({"read_only": true, "open_world": false})
    );
    assert_eq!(listed["effects"], json!(["fs.read"]));
    let host = fx.host();
    let mcp = host.tool_definitions(&Selection::default().with_format(Format::Mcp));
    assert_eq!(
        mcp[0]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
}

#[test]
fn a_declared_tool_is_not_marked_derived_when_nothing_is_filled_in() {
    let fx = Fixture::new();
    fx.tool(
        "w.lua",
        &tool(
            "w",
            "read_only = false, destructive = true, open_world = false",
            "    fs.write('x.txt', 'y')\n    return 'ok'",
        ),
    );
    let listed = listed_tool(&fx, "w");
    assert_eq!(listed["annotations_derived"], false);
    assert_eq!(listed["effects"], json!(["fs.write"]));
}

#[test]
fn a_run_time_write_from_a_read_only_tool_is_refused() {
    let fx = Fixture::new();
    // `load` hides the write from the analysis: the effects are unknown, the declaration
    // stands, and the sandbox holds the tool to it.
    fx.tool(
        "hidden.lua",
        &tool(
            "hidden",
            "read_only = true",
            "    load('fs.write(\"x.txt\", \"y\")')()\n    return 'ok'",
        ),
    );
    let host = fx.host();
    let out = call(&host, "hidden", json!({}));
    let text = out.to_string();
    assert!(text.contains("fs.write refused"), "{text}");
    assert!(text.contains("'hidden' is served as read-only"), "{text}");
    assert!(!fx.root().join("x.txt").exists());
}

#[test]
fn every_shipped_tool_agrees_with_its_effects() {
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools-lua");
    let cache = tempfile::tempdir().expect("temp dir");
    let host = toolhost::Host::builder()
        .tools_dir(&shipped)
        .cache_dir(cache.path())
        .store_file(cache.path().join("store.sqlite3"))
        .default_config()
        .build()
        .expect("host builds");
    let problems: Vec<String> = host
        .discovery()
        .iter()
        .filter_map(|v| v.error.as_ref().map(ToString::to_string))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(host.tools(None).len() >= 10);
}

#[test]
fn explain_prints_each_effect_with_its_file_and_line() {
    let fx = Fixture::new();
    fx.tool(
        "w.lua",
        &tool(
            "w",
            "read_only = false",
            "    local old = fs.read('x.txt')\n    fs.write('x.txt', old .. '!')\n    return 'ok'",
        ),
    );
    let out = fx.toolhost().args(["explain", "w"]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("annotations: read_only = false"), "{text}");
    let read = text
        .lines()
        .find(|l| l.starts_with("fs.read"))
        .expect("fs.read row");
    assert!(read.ends_with("tools-lua/w.lua:5"), "{text}");
    let write = text
        .lines()
        .find(|l| l.starts_with("fs.write"))
        .expect("fs.write row");
    assert!(write.ends_with("tools-lua/w.lua:6"), "{text}");
}

#[test]
fn explain_of_an_unknown_tool_fails_with_a_suggestion() {
    let fx = Fixture::new();
    fx.tool("w.lua", &tool("writer", "", "    return 'ok'"));
    let out = fx
        .toolhost()
        .args(["explain", "writr"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no tool named writr"), "{stderr}");
    assert!(stderr.contains("did you mean writer"), "{stderr}");
}

#[test]
fn discover_json_carries_each_tools_effects() {
    let fx = Fixture::new();
    fx.tool(
        "two.lua",
        &format!(
            "{}{}",
            tool("reads", "", "    return fs.read('a')"),
            tool("counts", "", "    return tostring(store.incr('n'))")
        ),
    );
    let out = fx
        .toolhost()
        .args(["discover", "--json"])
        .output()
        .expect("runs");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = rows
        .iter()
        .find(|r| r["path"].as_str().is_some_and(|p| p.ends_with("two.lua")))
        .expect("two.lua row");
    assert_eq!(
        row["effects"],
        json!({"reads": ["fs.read"], "counts": ["store.write"]})
    );
}

#[test]
fn a_warm_start_shows_the_same_effects_as_a_cold_one() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/m.lua",
        "return { put = function() store.set('k', 1) end }\n",
    );
    fx.tool(
        "w.lua",
        &tool(
            "w",
            "",
            "    require('m').put()\n    return ctx.call('other', {})",
        ),
    );
    let cold = listed(&fx);
    assert!(fx.cache().join("effects.json").is_file());
    let warm = listed(&fx);
    assert_eq!(cold, warm);
    assert_eq!(cold[0]["effects"], json!(["call:other", "store.write"]));
}

#[test]
fn an_edited_module_is_analysed_again() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/m.lua",
        "return { go = function() return 1 end }\n",
    );
    fx.tool(
        "w.lua",
        &tool("w", "", "    return tostring(require('m').go())"),
    );
    assert_eq!(listed_tool(&fx, "w")["effects"], json!([]));
    fx.write(
        "tools-lua/lib/m.lua",
        "return { go = function() return proc.run{ argv = { 'true' } } end }\n",
    );
    assert_eq!(listed_tool(&fx, "w")["effects"], json!(["proc"]));
}

#[test]
fn a_pathological_file_is_analysed_without_hanging() {
    let fx = Fixture::new();
    // Thousands of functions, each calling the previous one: the handler reaches the
    // first one's read through all of them.
    let mut text = String::from("local M = {}\nfunction M.f0() return fs.read('x') end\n");
    for i in 1..5000 {
        text.push_str(&format!("function M.f{i}() return M.f{}() end\n", i - 1));
    }
    text.push_str(&tool("deep", "", "    return M.f4999()"));
    // A long operator chain: a deep tree the nesting guard lets through.
    text.push_str(&format!("local chain = 1{}\n", " + 1".repeat(100_000)));
    fx.tool("deep.lua", &text);
    let listed = listed_tool(&fx, "deep");
    assert_eq!(listed["effects"], json!(["fs.read"]));
}
