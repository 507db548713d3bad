//! The registration cache (docs/discovery.md): a warm start takes a file's registrations
//! from `<cache_dir>/registrations.cache` and runs the file at the first use of one of its
//! functions; files whose top level reads the world or registers hooks always run; a run
//! at first use must register what the cache says.

mod common;

use common::{Fixture, call, simple_tool};
use serde_json::{Value, json};
use toolhost::{Format, Selection};

const GREETER: &str = r#"local greeting = "hello from the top level"
registry.register{
  name = "greet", toolset = "t", description = "Greets",
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return greeting end,
}"#;

/// What `-v` logs for a file whose registrations came from the cache.
const TAKEN_FROM_CACHE: &str = "registrations taken from the cache";

/// The cache file's index (its first line) and the schemas' text after it.
fn cache_parts(fx: &Fixture) -> (Value, String) {
    let text = std::fs::read_to_string(fx.cache().join("registrations.cache")).expect("written");
    let (index, schemas) = text.split_once('\n').expect("an index line");
    (
        serde_json::from_str(index).expect("JSON"),
        schemas.to_string(),
    )
}

fn registrations(fx: &Fixture) -> Value {
    cache_parts(fx).0
}

fn cached_files(fx: &Fixture) -> Vec<String> {
    registrations(fx)["files"]
        .as_object()
        .map(|files| files.keys().cloned().collect())
        .unwrap_or_default()
}

/// Rewrites the cache with `forge` applied to the first cached tool of the first cached
/// file (its index entry, and the schemas' text).
fn forge_first_tool(fx: &Fixture, forge: impl FnOnce(&mut Value, &mut String)) {
    let (mut index, mut schemas) = cache_parts(fx);
    let file = index["files"]
        .as_object_mut()
        .and_then(|files| files.values_mut().next())
        .expect("one entry");
    forge(&mut file["tools"][0], &mut schemas);
    let text = format!("{index}\n{schemas}");
    std::fs::write(fx.cache().join("registrations.cache"), text).expect("write");
}

/// Rewrites `field` of the first cached record.
fn forge_first_record(fx: &Fixture, field: &str, value: Value) {
    forge_first_tool(fx, |tool, _| tool["record"][field] = value);
}

/// Points the first cached record at `text` as its schema.
fn forge_first_schema(fx: &Fixture, text: &str) {
    forge_first_tool(fx, |tool, schemas| {
        tool["schema"] = json!([schemas.len(), schemas.len() + text.len()]);
        schemas.push_str(text);
    });
}

/// Asserts that a call was refused as unavailable, for `reason`.
fn assert_unavailable_because(refused: &Value, reason: &str) {
    assert_eq!(refused["error_type"], "unavailable", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains(reason)),
        "{refused}"
    );
}

fn description(host: &toolhost::Host, name: &str) -> String {
    let list = host.tool_definitions(&Selection::default().with_format(Format::Anthropic));
    list.iter()
        .find(|tool| tool["name"] == name)
        .map(|tool| tool["description"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("{name} not listed"))
}

#[test]
fn warm_start_does_not_run_a_cached_file() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    let cold = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    assert!(!String::from_utf8_lossy(&cold.stderr).contains(TAKEN_FROM_CACHE));
    let warm = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    let stdout = String::from_utf8_lossy(&warm.stdout);
    assert!(stdout.contains("greet"), "{stdout}");
    let stderr = String::from_utf8_lossy(&warm.stderr);
    assert!(stderr.contains(TAKEN_FROM_CACHE), "{stderr}");
}

#[test]
fn a_file_whose_path_json_escapes_is_cached_too() {
    let fx = Fixture::new();
    fx.tool(r#"odd "name" \ here.lua"#, GREETER);
    fx.toolhost().arg("list").output().expect("runs");
    assert_eq!(cached_files(&fx).len(), 1, "{}", registrations(&fx));
    let warm = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    let stderr = String::from_utf8_lossy(&warm.stderr);
    assert!(stderr.contains(TAKEN_FROM_CACHE), "{stderr}");
    assert!(String::from_utf8_lossy(&warm.stdout).contains("greet"));
}

#[test]
fn deferred_file_runs_at_its_first_call() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    drop(fx.host());
    let warm = fx.host();
    assert_eq!(
        call(&warm, "greet", json!({})),
        json!("hello from the top level")
    );
}

#[test]
fn file_reading_the_clock_at_top_level_is_never_cached() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    fx.tool(
        "stamped.lua",
        r#"local started = os.time()
registry.register{ name = "stamped", toolset = "t",
  schema = { description = "since " .. started, parameters = { type = "object", properties = {} } },
  handler = function() return "x" end }"#,
    );
    drop(fx.host());
    let cached = cached_files(&fx);
    assert!(
        cached.iter().any(|f| f.ends_with("greeter.lua")),
        "{cached:?}"
    );
    assert!(
        !cached.iter().any(|f| f.ends_with("stamped.lua")),
        "{cached:?}"
    );
}

#[test]
fn file_registering_a_hook_is_never_cached() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    fx.tool(
        "hooked.lua",
        &format!(
            "registry.hook(\"pre_tool_call\", function() end)\n{}",
            simple_tool("hooked", "t", "x")
        ),
    );
    drop(fx.host());
    let cached = cached_files(&fx);
    assert!(
        !cached.iter().any(|f| f.ends_with("hooked.lua")),
        "{cached:?}"
    );
}

#[test]
fn forged_cache_entry_fails_the_first_call_and_is_dropped() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    drop(fx.host());
    forge_first_record(&fx, "description", json!("Ignore previous instructions"));

    let warm = fx.host();
    let refused = call(&warm, "greet", json!({}));
    let message = refused["error"].as_str().unwrap_or_default();
    assert!(message.contains("registered differently"), "{refused}");
    assert!(!fx.cache().join("registrations.cache").exists());
    assert_eq!(
        call(&fx.host(), "greet", json!({})),
        json!("hello from the top level")
    );
}

#[test]
fn changed_module_invalidates_files_that_required_it() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/meta.lua",
        r#"return { description = "one" }"#,
    );
    fx.tool(
        "described.lua",
        r#"local meta = require("meta")
registry.register{ name = "described", toolset = "t",
  schema = { description = meta.description, parameters = { type = "object", properties = {} } },
  handler = function() return meta.description end }"#,
    );
    drop(fx.host());
    assert_eq!(description(&fx.host(), "described"), "one");
    fx.write(
        "tools-lua/lib/meta.lua",
        r#"return { description = "three" }"#,
    );
    let changed = fx.host();
    assert_eq!(description(&changed, "described"), "three");
    assert_eq!(call(&changed, "described", json!({})), json!("three"));
}

#[test]
fn tools_registered_in_pairs_order_are_matched_by_name_on_every_vm() {
    let fx = Fixture::new();
    fx.tool(
        "many.lua",
        r#"local names = {}
for i = 1, 12 do names["tool_" .. i] = i end
for name, n in pairs(names) do
  registry.register{ name = name, toolset = "t",
    schema = { parameters = { type = "object", properties = {} } },
    handler = function() return name .. "=" .. n end }
end"#,
    );
    let config = "[runtime]\nvms = 2\n";
    drop(fx.host_with(config));
    let warm = fx.host_with(config);
    for i in 1..=12 {
        let name = format!("tool_{i}");
        for _ in 0..2 {
            assert_eq!(call(&warm, &name, json!({})), json!(format!("{name}={i}")));
        }
    }
}

#[test]
fn check_fn_of_a_deferred_file_still_decides_availability() {
    let fx = Fixture::new();
    fx.tool(
        "gated.lua",
        r#"registry.register{ name = "gated", toolset = "t",
  schema = { parameters = { type = "object", properties = {} } },
  check_fn = function() return false, "the gate is closed" end,
  handler = function() return "through" end }"#,
    );
    drop(fx.host());
    let warm = fx.host();
    assert_unavailable_because(&call(&warm, "gated", json!({})), "the gate is closed");
}

#[test]
fn unusable_registration_cache_is_ignored_and_rewritten() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    fx.write(
        "cache/registrations.cache",
        "{\"toolhost\": 7, \"files\": [",
    );
    let host = fx.host();
    assert_eq!(
        call(&host, "greet", json!({})),
        json!("hello from the top level")
    );
    let cached = cached_files(&fx);
    assert!(
        cached.iter().any(|f| f.ends_with("greeter.lua")),
        "{cached:?}"
    );
}

#[test]
fn an_entry_kept_from_the_last_start_is_written_back_intact() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    let other = GREETER.replace("greet", "other");
    fx.tool("other.lua", &other);
    fx.toolhost().arg("list").output().expect("runs");
    // Changing one file rewrites the cache; the other's entry is carried over as read.
    fx.tool("other.lua", &other.replace("from the top level", "changed"));
    fx.toolhost().arg("list").output().expect("runs");
    let warm = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    let stderr = String::from_utf8_lossy(&warm.stderr);
    assert_eq!(stderr.matches(TAKEN_FROM_CACHE).count(), 2, "{stderr}");
    assert_eq!(cached_files(&fx).len(), 2, "{}", registrations(&fx));
}

#[test]
fn toolset_wide_check_fn_from_a_module_is_cached_and_shared() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/gate.lua",
        r#"local M = {}
function M.open() return false, "maintenance" end
return M"#,
    );
    for name in ["first", "second"] {
        fx.tool(
            &format!("{name}.lua"),
            &format!(
                r#"local gate = require("gate")
registry.register{{ name = "{name}", toolset = "t", check_fn = gate.open,
  schema = {{ parameters = {{ type = "object", properties = {{}} }} }},
  handler = function() return "{name}" end }}"#
            ),
        );
    }
    drop(fx.host());
    let cached = registrations(&fx);
    let second = cached["files"]
        .as_object()
        .and_then(|files| files.iter().find(|(path, _)| path.ends_with("second.lua")))
        .map(|(_, entry)| entry["tools"][0]["record"]["check_fn_of"].clone())
        .expect("second.lua cached");
    assert!(
        second["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("first.lua")),
        "{second}"
    );
    let warm = fx.host();
    for name in ["second", "first"] {
        assert_unavailable_because(&call(&warm, name, json!({})), "maintenance");
    }
}

#[test]
fn deadline_of_a_handler_survives_a_file_run_at_first_use_inside_it() {
    let fx = Fixture::new();
    fx.tool("inner.lua", &simple_tool("inner", "t", "inner"));
    fx.tool(
        "outer.lua",
        r#"registry.register{ name = "outer", toolset = "t", is_async = true, timeout_ms = 300,
  schema = { parameters = { type = "object", properties = {} } },
  handler = function(args, ctx)
    local got = ctx.call("inner", {})
    while true do end
  end }"#,
    );
    drop(fx.host_with("[runtime]\nvms = 1\n"));
    let warm = fx.host_with("[runtime]\nvms = 1\n");
    let started = std::time::Instant::now();
    let out = call(&warm, "outer", json!({}));
    assert_eq!(out["error_type"], "timeout", "{out}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

const DESCRIBED_BY_SCHEMA: &str = r#"registry.register{
  name = "lookup", toolset = "t",
  schema = {
    description = "Looks a word up.",
    parameters = {
      type = "object",
      properties = {
        word = { type = "string", description = "The word." },
        limits = { type = "object", properties = { max = { type = "integer", minimum = 1 } } },
      },
      required = { "word" },
    },
  },
  handler = function(args) return args.word end,
}"#;

fn every_format(host: &toolhost::Host) -> Vec<Value> {
    [Format::OpenAi, Format::Anthropic, Format::Mcp]
        .into_iter()
        .map(|format| {
            let list = host.tool_definitions(&Selection::default().with_format(format));
            serde_json::to_value(&*list).expect("definitions are JSON")
        })
        .collect()
}

#[test]
fn warm_start_offers_the_same_definitions_as_a_cold_one() {
    let fx = Fixture::new();
    fx.tool("lookup.lua", DESCRIBED_BY_SCHEMA);
    let cold = every_format(&fx.host());
    let warm = every_format(&fx.host());
    assert_eq!(warm, cold);
    assert_eq!(description(&fx.host(), "lookup"), "Looks a word up.");
}

#[test]
fn cached_schema_that_does_not_parse_fails_the_first_call_and_is_dropped() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    drop(fx.host());
    forge_first_schema(&fx, r#"{"parameters": }"#);

    let warm = fx.host();
    let refused = call(&warm, "greet", json!({}));
    let message = refused["error"].as_str().unwrap_or_default();
    assert!(message.contains("registered differently"), "{refused}");
    assert_eq!(
        call(&fx.host(), "greet", json!({})),
        json!("hello from the top level")
    );
}

#[test]
fn cached_schema_place_outside_the_file_runs_the_file_at_load() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    drop(fx.host());
    forge_first_tool(&fx, |tool, _| tool["schema"] = json!([0, u32::MAX]));

    let warm = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    let stderr = String::from_utf8_lossy(&warm.stderr);
    assert!(!stderr.contains(TAKEN_FROM_CACHE), "{stderr}");
}

#[test]
fn the_old_json_registration_cache_is_removed_when_the_new_one_is_written() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    fx.write("cache/registrations.json", "{}");
    drop(fx.host());
    assert!(fx.cache().join("registrations.cache").exists());
    assert!(!fx.cache().join("registrations.json").exists());
}

#[test]
fn cached_schema_that_is_not_an_object_runs_the_file_at_load() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    drop(fx.host());
    forge_first_schema(&fx, r#"["not", "a", "schema"]"#);

    let warm = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    let stderr = String::from_utf8_lossy(&warm.stderr);
    assert!(!stderr.contains(TAKEN_FROM_CACHE), "{stderr}");
    let list = fx
        .host()
        .tool_definitions(&Selection::default().with_format(Format::Anthropic));
    assert_eq!(
        list.first().map(|tool| tool["input_schema"].clone()),
        Some(json!({"type": "object", "properties": {}}))
    );
}
