//! The registration cache against hostile or stale files (docs/discovery.md): a file of
//! the previous shape, a truncated one, records hand-edited with their key intact. Each
//! must read as nothing, or be caught at the file's first call, never make a wrong
//! registry; and a warm start lists what a cold one does.

mod common;

use common::Fixture;
use serde_json::{Value, json};

const GREETER: &str = r#"registry.register{
  name = "greet", toolset = "t", description = "Greets",
  annotations = { title = "Greeter" },
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return "hello" end,
}"#;

/// What `-v` logs for a file whose registrations came from the cache.
const TAKEN_FROM_CACHE: &str = "registrations taken from the cache";

fn cache_file(fx: &Fixture) -> std::path::PathBuf {
    fx.cache().join("registrations.cache")
}

/// The cache's index (its first line) and the schemas' text after it.
fn cache_parts(fx: &Fixture) -> (Value, String) {
    let text = std::fs::read_to_string(cache_file(fx)).expect("written");
    let (index, schemas) = text.split_once('\n').expect("an index line");
    (serde_json::from_str(index).expect("JSON"), schemas.into())
}

/// Rewrites the cache with `edit` applied to its index.
fn edit_index(fx: &Fixture, edit: impl FnOnce(&mut Value, &mut String)) {
    let (mut index, mut schemas) = cache_parts(fx);
    edit(&mut index, &mut schemas);
    std::fs::write(cache_file(fx), format!("{index}\n{schemas}")).expect("write");
}

/// The first cached tool (`{"record": …, "schema": [start, end]}`) of the only file.
fn first_tool(index: &mut Value) -> &mut Value {
    let file = index["files"]
        .as_object_mut()
        .and_then(|files| files.values_mut().next())
        .expect("one entry");
    &mut file["tools"][0]
}

/// How many files a warm `list` took from the cache.
fn taken_from_cache(fx: &Fixture) -> usize {
    let out = fx.toolhost().args(["-v", "list"]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr)
        .matches(TAKEN_FROM_CACHE)
        .count()
}

/// One cold start of the command line (the cache's keys cover how files are named, so
/// every start here is one of the same command line).
fn cold_start(fx: &Fixture) {
    let out = fx.toolhost().arg("list").output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fixture whose cache holds the greeter (one cold start).
fn cached_greeter() -> Fixture {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    cold_start(&fx);
    assert_eq!(taken_from_cache(&fx), 1);
    fx
}

/// What `toolhost call NAME {}` printed (stdout, then stderr).
fn call(fx: &Fixture, name: &str) -> String {
    let out = fx
        .toolhost()
        .args(["call", name, "{}"])
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    format!("{stdout}{stderr}")
}

/// Asserts that calling `name` answers the greeter's own "hello".
fn assert_greets(fx: &Fixture, name: &str) {
    let answer = call(fx, name);
    assert!(
        answer.contains("hello") && !answer.contains("registered differently"),
        "{answer}"
    );
}

/// Asserts that calling `name` fails because the file registered something else than
/// the cache said.
fn assert_registered_differently(fx: &Fixture, name: &str) {
    let answer = call(fx, name);
    assert!(answer.contains("registered differently"), "{answer}");
}

#[test]
fn a_cache_of_the_previous_shape_reads_as_empty_and_the_start_is_correct() {
    let fx = cached_greeter();
    // The previous shape: no `format`, each key as 16 hexadecimal digits.
    edit_index(&fx, |index, _| {
        index.as_object_mut().expect("object").remove("format");
        for file in index["files"].as_object_mut().expect("files").values_mut() {
            let key = file["key"].as_u64().expect("a numeric key");
            file["key"] = json!(format!("{key:016x}"));
        }
    });
    assert_eq!(taken_from_cache(&fx), 0);
    assert_greets(&fx, "greet");
    // Rewritten in this version's shape.
    assert_eq!(taken_from_cache(&fx), 1);
}

#[test]
fn a_cache_of_another_format_number_reads_as_empty() {
    let fx = cached_greeter();
    edit_index(&fx, |index, _| index["format"] = json!(1));
    assert_eq!(taken_from_cache(&fx), 0);
    assert_eq!(taken_from_cache(&fx), 1);
}

#[test]
fn a_cache_cut_inside_its_index_reads_as_empty() {
    let fx = cached_greeter();
    let text = std::fs::read(cache_file(&fx)).expect("written");
    let newline = text.iter().position(|b| *b == b'\n').expect("index line");
    std::fs::write(cache_file(&fx), &text[..newline / 2]).expect("write");
    assert_eq!(taken_from_cache(&fx), 0);
    assert_greets(&fx, "greet");
}

#[test]
fn a_cache_cut_inside_its_schemas_runs_the_file_at_load() {
    let fx = cached_greeter();
    let text = std::fs::read(cache_file(&fx)).expect("written");
    std::fs::write(cache_file(&fx), &text[..text.len() - 3]).expect("write");
    assert_eq!(taken_from_cache(&fx), 0);
    assert_greets(&fx, "greet");
}

#[test]
fn a_record_renamed_in_the_cache_is_not_believed_at_its_first_call() {
    let fx = cached_greeter();
    edit_index(&fx, |index, _| {
        first_tool(index)["record"]["name"] = json!("forged");
    });
    assert_registered_differently(&fx, "forged");
    // The forged entry is gone: the file runs and registers what it says.
    assert_greets(&fx, "greet");
}

#[test]
fn a_record_with_a_forged_annotation_is_not_believed_at_its_first_call() {
    let fx = cached_greeter();
    edit_index(&fx, |index, _| {
        first_tool(index)["record"]["registration"]["annotations"]["title"] = json!("Forged");
    });
    assert_registered_differently(&fx, "greet");
    assert_greets(&fx, "greet");
}

#[test]
fn a_record_pointed_at_another_valid_schema_is_not_believed_at_its_first_call() {
    let fx = cached_greeter();
    edit_index(&fx, |index, schemas| {
        let other = r#"{"parameters":{"type":"object","properties":{"x":{"type":"string"}}}}"#;
        first_tool(index)["schema"] = json!([schemas.len(), schemas.len() + other.len()]);
        schemas.push_str(other);
    });
    assert_registered_differently(&fx, "greet");
    assert_greets(&fx, "greet");
}

#[test]
fn a_record_rewritten_to_the_same_fields_is_believed() {
    // The index as `serde_json::Value` prints it: keys sorted, so each record's text
    // differs from what was written, while every field reads the same.
    let fx = cached_greeter();
    edit_index(&fx, |_, _| {});
    assert_eq!(taken_from_cache(&fx), 1);
    assert_greets(&fx, "greet");
}

#[test]
fn a_record_of_the_wrong_type_makes_the_whole_cache_read_as_empty() {
    let fx = Fixture::new();
    fx.tool("greeter.lua", GREETER);
    fx.tool("other.lua", &GREETER.replace("greet", "other"));
    cold_start(&fx);
    assert_eq!(taken_from_cache(&fx), 2);
    edit_index(&fx, |index, _| {
        first_tool(index)["record"]["line"] = json!("one");
    });
    assert_eq!(taken_from_cache(&fx), 0);
    assert_greets(&fx, "other");
}

#[test]
fn a_tool_file_edited_between_two_starts_shows_its_new_registration() {
    let fx = cached_greeter();
    fx.tool("greeter.lua", &GREETER.replace("Greeter", "Greeter two"));
    let listed = fx.list_json();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0]["annotations"]["title"], "Greeter two",
        "{listed:?}"
    );
    assert_eq!(taken_from_cache(&fx), 1);
}

/// Tools with every kind of field a record carries.
const VARIED: &str = r#"registry.register{
  name = "plain", toolset = "a",
  schema = { description = "From the schema.", parameters = { type = "object", properties = {} } },
  handler = function() return 1 end,
}
registry.register{
  name = "rich", toolset = "b", description = "Given \"quoted\" \\ text",
  emoji = "🔧", requires_env = { "HOME" }, parallel_safe = true, timeout_ms = 1500,
  max_result_size_chars = 300,
  annotations = { title = "Rich", read_only = true, idempotent = true },
  output_schema = { type = "object", properties = { n = { type = "number" } } },
  schema = { parameters = { type = "object", properties = { q = { type = "string" } }, required = { "q" } } },
  check_fn = function() return true end,
  handler = function() return { n = 1.5 } end,
}"#;

#[test]
fn a_warm_list_json_is_the_cold_one() {
    let fx = Fixture::new();
    fx.tool("varied.lua", VARIED);
    fx.tool("greeter.lua", GREETER);
    let cold = fx.list_json();
    assert_eq!(taken_from_cache(&fx), 2);
    let warm = fx.list_json();
    assert_eq!(warm, cold);
    assert_eq!(cold.len(), 3, "{cold:?}");
}
