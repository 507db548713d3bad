//! What a warm start may skip, and what it must not (docs/discovery.md): schemas known to
//! compile (`<cache_dir>/schemas.json`) are compiled at the tool's first call and still
//! validate arguments; an unusable cache changes nothing; `serve` answers from any stdin.

mod common;

use common::{Fixture, call, error_of};
use serde_json::json;

const COUNTED: &str = r#"registry.register{
  name = "counted", toolset = "t",
  schema = { parameters = { type = "object",
    properties = { n = { type = "integer", minimum = 1 } }, required = { "n" } } },
  handler = function(args) return tostring(args.n) end,
}"#;

const BROKEN_SCHEMA: &str = r#"registry.register{
  name = "broken", toolset = "t",
  schema = { parameters = { type = "object", properties = { n = { type = "nope" } } } },
  handler = function() return "x" end,
}"#;

#[test]
fn first_load_records_the_schemas_that_compiled() {
    let fx = Fixture::new();
    fx.tool("counted.lua", COUNTED);
    let _host = fx.host();
    let recorded = std::fs::read_to_string(fx.cache().join("schemas.json")).expect("written");
    let recorded: serde_json::Value = serde_json::from_str(&recorded).expect("JSON");
    assert_eq!(
        recorded["compiled"].as_array().map(Vec::len),
        Some(1),
        "{recorded}"
    );
}

#[test]
fn known_schema_still_validates_arguments_on_a_warm_start() {
    let fx = Fixture::new();
    fx.tool("counted.lua", COUNTED);
    drop(fx.host());
    let warm = fx.host();
    let refused = call(&warm, "counted", json!({"n": 0}));
    assert_eq!(refused["error_type"], "invalid_arguments", "{refused}");
    assert_eq!(call(&warm, "counted", json!({"n": 3})), json!("3"));
}

#[test]
fn schema_that_does_not_compile_is_a_load_error_on_every_start() {
    let fx = Fixture::new();
    fx.tool("broken.lua", BROKEN_SCHEMA);
    fx.tool("counted.lua", COUNTED);
    drop(fx.host());
    let warm = fx.host();
    let error = error_of(&warm, "broken.lua");
    assert!(
        error.contains("schema.parameters.properties.n.type"),
        "{error}"
    );
    assert_eq!(call(&warm, "counted", json!({"n": 2})), json!("2"));
}

#[test]
fn unusable_schema_cache_is_ignored_and_rewritten() {
    let fx = Fixture::new();
    fx.tool("broken.lua", BROKEN_SCHEMA);
    fx.tool("counted.lua", COUNTED);
    fx.write("cache/schemas.json", "{not json");
    let host = fx.host();
    assert!(error_of(&host, "broken.lua").contains("is not a JSON-Schema type"));
    let refused = call(&host, "counted", json!({"n": "many"}));
    assert_eq!(refused["error_type"], "invalid_arguments", "{refused}");
    let rewritten = std::fs::read_to_string(fx.cache().join("schemas.json")).expect("read");
    assert!(rewritten.contains("\"compiled\""), "{rewritten}");
}

#[test]
fn serve_answers_every_request_read_from_a_regular_file() {
    let fx = Fixture::new();
    fx.tool("counted.lua", COUNTED);
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"file","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"counted","arguments":{"n":7}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    ];
    let input = fx.write("requests.jsonl", requests.join("\n") + "\n");
    let output = fx
        .toolhost()
        .args(["-q", "serve"])
        .pipe_stdin(input)
        .expect("stdin file")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("serve runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answers: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    // Requests run concurrently: answers come in any order.
    let mut ids: Vec<i64> = answers.iter().filter_map(|a| a["id"].as_i64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3], "{stdout}");
    let called = answers.iter().find(|a| a["id"] == 2).expect("answer 2");
    assert_eq!(called["result"]["content"][0]["text"], "7", "{stdout}");
}

#[test]
fn serve_keeps_reading_a_pipe_when_stdout_is_a_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let fx = Fixture::new();
    fx.tool("counted.lua", COUNTED);
    let answers = fx.root().join("answers.jsonl");
    let out = std::fs::File::create(&answers).expect("answers file");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "-q", "serve"])
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}"#;
    writeln!(stdin, "{initialize}").expect("write");
    // The second request is written only once the first is answered: the server must wait
    // on the pipe for it, not take the empty pipe for its end.
    let answered = |count: usize| {
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(30) {
            let text = std::fs::read_to_string(&answers).unwrap_or_default();
            if text.lines().count() >= count {
                return text;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("no answer {count} within 30 s");
    };
    answered(1);
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).expect("write");
    let text = answered(2);
    drop(stdin);
    assert!(child.wait().expect("serve exits").success());
    assert!(text.contains(r#""id":2"#), "{text}");
}
