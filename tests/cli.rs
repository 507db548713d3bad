//! The real `toolhost` binary (docs/cli.md): output shapes, exit codes and flags.

mod common;

use assert_cmd::Command;
use common::{Fixture, simple_tool};
use serde_json::Value;

fn toolhost(fx: &Fixture) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    cmd.current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env("XDG_CACHE_HOME", fx.root().join("xdg"))
        .env_remove("TOOLHOST_LOG");
    cmd
}

fn stdout_json(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn sample(fx: &Fixture) {
    fx.tool(
        "echo.lua",
        r#"registry.register{ name = "echo", toolset = "debug", emoji = "🔁",
  schema = { parameters = { type = "object" } },
  handler = function(args) print("to stderr") return args end }"#,
    );
    fx.tool("fail.lua", "registry.register{ name = 'fail', toolset = 't',\n schema = { parameters = { type = 'object' } },\n handler = function() error('nope') end }");
    fx.tool("helper.lua", "return {}");
    fx.tool("broken.lua", "registry.register{ name = ");
}

#[test]
fn list_prints_a_table_and_json() {
    let fx = Fixture::new();
    sample(&fx);
    let out = toolhost(&fx)
        .arg("list")
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(
        text.contains("echo")
            && text.contains("🔁")
            && text.contains("fail")
            && text.contains("⚡")
    );
    let out = toolhost(&fx)
        .args(["list", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let rows = stdout_json(&out);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let echo = &rows[0];
    let mut keys: Vec<&str> = echo
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "annotations",
            "annotations_derived",
            "available",
            "effects",
            "emoji",
            "file",
            "name",
            "source",
            "toolset",
            "unavailable_reason"
        ]
    );
    assert_eq!(echo["name"], "echo");
    assert_eq!(echo["available"], true);
    assert_eq!(echo["source"], "builtin");
    assert!(
        echo["file"]
            .as_str()
            .unwrap()
            .ends_with("tools-lua/echo.lua")
    );
    // The broken file is reported on stderr but does not change the exit code.
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.lua"));
}

#[test]
fn discover_json_has_one_sorted_object_per_candidate() {
    let fx = Fixture::new();
    sample(&fx);
    let out = toolhost(&fx)
        .args(["discover", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let rows = stdout_json(&out);
    let rows = rows.as_array().unwrap();
    let paths: Vec<&str> = rows.iter().map(|r| r["path"].as_str().unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    assert!(paths.iter().all(|p| p.starts_with('/')));
    let by_name = |name: &str| {
        rows.iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(name))
            .unwrap()
    };
    assert_eq!(by_name("echo.lua")["reason"], "registers");
    assert_eq!(by_name("echo.lua")["tools"], serde_json::json!(["echo"]));
    assert_eq!(by_name("echo.lua")["cached"], false);
    assert_eq!(by_name("echo.lua")["error"], Value::Null);
    assert_eq!(by_name("helper.lua")["reason"], "prefilter");
    assert_eq!(by_name("broken.lua")["reason"], "parse_error");
    assert!(
        by_name("broken.lua")["error"]
            .as_str()
            .unwrap()
            .contains("broken.lua:1")
    );
    // Second run: verdicts come from the cache in $XDG_CACHE_HOME/toolhost.
    let out = toolhost(&fx)
        .args(["discover", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out)[1]["cached"], true);
    assert!(fx.root().join("xdg/toolhost/discovery.json").is_file());
}

#[test]
fn check_exits_one_on_any_problem() {
    let fx = Fixture::new();
    sample(&fx);
    let out = toolhost(&fx)
        .arg("check")
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stdout).contains("broken.lua:1"));
    std::fs::remove_file(fx.tools().join("broken.lua")).unwrap();
    toolhost(&fx).arg("check").assert().success();
    toolhost(&fx)
        .args(["check", "tools-lua/echo.lua"])
        .assert()
        .success();
    let out = toolhost(&fx)
        .args(["check", "tools-lua/helper.lua"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stdout).contains("does not register"));
}

#[test]
fn call_prints_results_and_sets_exit_codes() {
    let fx = Fixture::new();
    sample(&fx);
    let out = toolhost(&fx)
        .args(["call", "echo", r#"{"x": [1]}"#])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"x\":[1]}\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("to stderr"),
        "print goes to the log"
    );
    toolhost(&fx)
        .args(["call", "echo", "-"])
        .write_stdin(r#"{"from":"stdin"}"#)
        .assert()
        .success()
        .stdout("{\"from\":\"stdin\"}\n");
    toolhost(&fx)
        .args(["call", "echo"])
        .assert()
        .success()
        .stdout("{}\n");
    let out = toolhost(&fx)
        .args(["call", "fail"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out)["error_type"], "handler_error");
    let out = toolhost(&fx)
        .args(["call", "missing"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out)["error"], "Unknown tool: missing");
    toolhost(&fx)
        .args(["call", "echo", "{not json"])
        .assert()
        .code(2);
    toolhost(&fx).args(["call"]).assert().code(2);
}

#[test]
fn config_errors_are_setup_errors_naming_the_key() {
    let fx = Fixture::new();
    sample(&fx);
    fx.write("toolhost.toml", "[runtime]\nvms = 2\nbogus_key = 1\n");
    let out = toolhost(&fx)
        .arg("list")
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bogus_key") && err.contains("line 3"), "{err}");
    toolhost(&fx)
        .args(["--config", "missing.toml", "list"])
        .assert()
        .code(2);
    fx.write("other.toml", "[sandbox]\nenv = []\n");
    toolhost(&fx)
        .args(["--config", "other.toml", "list"])
        .assert()
        .success();
    toolhost(&fx)
        .env("TOOLHOST_CONFIG", "other.toml")
        .arg("list")
        .assert()
        .success();
}

#[test]
fn tools_dir_is_repeatable_and_cache_dir_is_honoured() {
    let fx = Fixture::new();
    fx.write("one/a.lua", simple_tool("from_one", "t", "1"));
    fx.write("two/b.lua", simple_tool("from_two", "t", "2"));
    let out = toolhost(&fx)
        .args([
            "--tools-dir",
            "one",
            "--tools-dir",
            "two",
            "--cache-dir",
            "mycache",
            "list",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let names: Vec<String> = stdout_json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["from_one", "from_two"]);
    assert!(fx.root().join("mycache/discovery.json").is_file());
    toolhost(&fx)
        .args(["--tools-dir", "two", "call", "from_two"])
        .assert()
        .success()
        .stdout("2\n");
}

#[test]
fn scope_flag_selects_the_overlay() {
    let fx = Fixture::new();
    fx.tool(
        "s.lua",
        &simple_tool("scoped", "t", "in scope")
            .replace("registry.register{", "registry.register{ scope = 'team',"),
    );
    toolhost(&fx).args(["call", "scoped"]).assert().code(1);
    toolhost(&fx)
        .args(["--scope", "team", "call", "scoped"])
        .assert()
        .success()
        .stdout("in scope\n");
}

#[test]
fn schema_prints_the_selected_definitions_in_each_format() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a_tool", "alpha", "x"));
    fx.tool("b.lua", &simple_tool("b_tool", "beta", "x"));
    fx.tool(
        "off.lua",
        "registry.register{ name = 'off', toolset = 'beta', schema = { parameters = { type = 'object' } },\n  check_fn = function() return false end, handler = function() return 'x' end }",
    );
    let out = toolhost(&fx)
        .arg("schema")
        .assert()
        .success()
        .get_output()
        .clone();
    let list = stdout_json(&out);
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["type"], "function");
    assert_eq!(list[0]["function"]["name"], "a_tool");
    let out = toolhost(&fx)
        .args([
            "schema",
            "--toolsets",
            "alpha,beta",
            "--disable",
            "alpha",
            "--format",
            "anthropic",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(
        stdout_json(&out),
        serde_json::json!([{"name": "b_tool", "description": "d", "input_schema": {"type": "object", "properties": {}}}])
    );
    let out = toolhost(&fx)
        .args(["schema", "--format", "mcp"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out)[1]["inputSchema"]["type"], "object");
    toolhost(&fx)
        .args(["schema", "--format", "xml"])
        .assert()
        .code(2);
    let out = toolhost(&fx)
        .args(["list", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let rows = stdout_json(&out);
    let off = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "off")
        .unwrap()
        .clone();
    assert_eq!(off["available"], false);
    assert_eq!(off["unavailable_reason"], "check_fn returned false");
}

#[test]
fn list_aligns_columns_by_display_width_with_emoji() {
    use unicode_width::UnicodeWidthStr;
    let fx = Fixture::new();
    fx.tool(
        "a.lua",
        "registry.register{ name = 'wide', toolset = 't', emoji = '📄',\n  schema = { parameters = { type = 'object' } }, handler = function() return 'x' end }\nregistry.register{ name = 'plain', toolset = 't',\n  schema = { parameters = { type = 'object' } }, handler = function() return 'x' end }",
    );
    let out = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "list"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The AVAILABLE column starts at the same display column on every line.
    let starts: Vec<usize> = stdout
        .lines()
        .map(|line| {
            let at = line.find("AVAILABLE").or_else(|| line.find("yes")).unwrap();
            line[..at].width()
        })
        .collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{stdout}");
}

#[test]
fn log_lines_name_the_lua_caller_file_and_line() {
    let fx = Fixture::new();
    fx.tool(
        "logs.lua",
        "registry.register{ name = 'logs', toolset = 't',\n schema = { parameters = { type = 'object' } },\n handler = function()\n  log.warn('from the handler')\n  return 'ok' end }",
    );
    let out = toolhost(&fx)
        .args(["call", "logs"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("from the handler"))
        .unwrap_or_else(|| panic!("no log line: {stderr}"));
    assert!(line.contains("logs.lua:4"), "{line}");
    assert!(!line.contains("[C]"), "{line}");
}
