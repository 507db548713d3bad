//! Messages that tell a tool author where and what: did-you-mean for unknown fields, what
//! to use instead of what the sandbox removed, a position shown once.

mod common;

use common::{Fixture, call};
use serde_json::json;

fn error_of_handler(body: &str) -> String {
    let fx = Fixture::new();
    fx.tool(
        "t.lua",
        &format!(
            "registry.register{{ name = \"t\", toolset = \"t\",\n  schema = {{ description = \"d\", parameters = {{ type = \"object\" }} }},\n  handler = function()\n{body}\nend }}"
        ),
    );
    let host = fx.host();
    let out = call(&host, "t", json!({}));
    out["error"].as_str().unwrap_or_default().to_string()
}

/// `toolhost check` in the fixture, which must exit 1: its stdout and stderr.
fn failing_check(fx: &Fixture) -> (String, String) {
    let out = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "check"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn an_unknown_field_suggests_the_closest_one() {
    let fx = Fixture::new();
    fx.tool(
        "greet.lua",
        "registry.register{ name = 'greet', toolset = 't',\n  schema = { parameters = { type = 'object' } },\n  hanlder = function() return 'hi' end }",
    );
    let (stdout, stderr) = failing_check(&fx);
    let printed = stdout + &stderr;
    assert!(
        printed.contains("unknown field 'hanlder' — did you mean 'handler'?"),
        "{printed}"
    );
}

#[test]
fn using_what_the_sandbox_removed_says_what_to_use_instead() {
    let cases = [
        ("return io.open('x')", "use fs.read / fs.write"),
        ("return os.execute('ls')", "use proc.run"),
        ("return os.getenv('HOME')", "use env.get"),
        (
            "return require('socket')",
            "require loads Lua modules from lib/",
        ),
    ];
    for (body, hint) in cases {
        let message = error_of_handler(body);
        assert!(message.contains(hint), "{body}: {message}");
    }
}

#[test]
fn a_rethrown_error_names_its_position_once() {
    // Caught and raised again on the same line: Lua adds the position a second time.
    let message =
        error_of_handler("local ok, err = pcall(fs.read, '/definitely/not/here') error(err)");
    assert_eq!(message.matches("t.lua:").count(), 1, "{message}");
}

#[test]
fn check_prints_each_problem_once_in_plain_english() {
    let fx = Fixture::new();
    fx.tool(
        "bad.lua",
        "registry.register{ name = 'bad', toolset = 't' }",
    );
    let (stdout, stderr) = failing_check(&fx);
    let printed = stdout + &stderr;
    assert_eq!(
        printed.matches("'schema' is required").count(),
        1,
        "{printed}"
    );
    assert!(printed.contains("1 problem in 1 file checked"), "{printed}");
}

#[test]
fn check_reports_files_that_mean_to_register_but_do_not() {
    let fx = Fixture::new();
    let body = "{ name = 'x', toolset = 't', schema = { parameters = { type = 'object' } }, handler = function() return 'x' end }";
    fx.tool("colon.lua", &format!("-- a tool\nregistry:register{body}"));
    fx.tool("typo.lua", &format!("registry.regsiter{body}"));
    fx.tool(
        "nested.lua",
        &format!("local enabled = true\nif enabled then\n  registry.register{body}\nend"),
    );
    let (printed, _) = failing_check(&fx);
    assert!(
        printed.contains("colon.lua:2: does not register: `registry:register` is a method call"),
        "{printed}"
    );
    assert!(
        printed.contains(
            "typo.lua:1: does not register: `registry.regsiter` — did you mean `registry.register`?"
        ),
        "{printed}"
    );
    assert!(
        printed.contains(
            "nested.lua:3: does not register: `registry.register` is not called at the top level"
        ),
        "{printed}"
    );
    assert!(
        printed.contains("3 problems in 3 files checked"),
        "{printed}"
    );
}

#[test]
fn a_load_error_points_at_the_line_of_the_offending_field() {
    let fx = Fixture::new();
    fx.tool(
        "greet.lua",
        "registry.register{\n  name = \"greet\",\n  toolset = \"demo\",\n  schema = {\n    parameters = { type = \"object\", properties = {\n      who = { type = \"strng\" },\n    } },\n  },\n  handler = function(args) return args.who end,\n}\n",
    );
    let host = fx.host();
    let error = common::error_of(&host, "greet.lua");
    assert!(
        error.ends_with(
            "greet.lua:6: register: schema.parameters.properties.who.type: \"strng\" is not a \
             JSON-Schema type (string, number, integer, boolean, array, object, null)"
        ),
        "{error}"
    );
}

#[test]
fn a_check_fn_may_say_why_a_tool_is_unavailable() {
    let fx = Fixture::new();
    fx.tool(
        "t.lua",
        "registry.register{ name = \"t\", toolset = \"t\",\n  schema = { description = \"d\", parameters = { type = \"object\" } },\n  check_fn = function() return false, \"set [x] y first\" end,\n  handler = function() return \"x\" end }",
    );
    let host = fx.host();
    assert_eq!(
        host.unavailable_reason("t", None).as_deref(),
        Some("set [x] y first")
    );
}

#[test]
fn run_commands_unavailability_names_the_config_key_that_enables_it() {
    let cache = tempfile::tempdir().unwrap();
    let host = toolhost::Host::builder()
        .tools_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tools-lua"))
        .cache_dir(cache.path())
        .memory_store()
        .default_config()
        .build()
        .unwrap();
    let reason = host
        .unavailable_reason("run_command", None)
        .unwrap_or_default();
    assert!(reason.contains("[sandbox] commands"), "{reason}");
}

#[test]
fn handler_errors_name_the_file_relative_to_its_tool_directory() {
    // The fixture's tool directory is an absolute temp path.
    let error = error_of_handler("local x = nil\nreturn x.y");
    assert!(
        error.contains("tools-lua/t.lua:5: attempt to index"),
        "{error}"
    );
    assert!(!error.contains(": /"), "no absolute host path: {error}");
}
