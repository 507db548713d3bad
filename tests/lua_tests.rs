//! `toolhost test`: Lua test files run tools through the whole pipeline without a model.

mod common;

use common::Fixture;
use serde_json::Value;
use std::path::Path;

const GREET: &str = r#"registry.register{ name = "greet", toolset = "t",
  schema = { description = "Greets", parameters = { type = "object",
    properties = { who = { type = "string" } }, required = { "who" } } },
  handler = function(args) return "Hello, " .. args.who .. "!" end }"#;

#[test]
fn every_shipped_tool_passes_its_tests() {
    let fx = Fixture::new();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools-lua");
    let out = fx
        .toolhost()
        .arg("--tools-dir")
        .arg(&shipped)
        .arg("test")
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(", 0 failed"), "{stdout}");
    // Every shipped tool file has a test file.
    for entry in std::fs::read_dir(&shipped).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".lua") && !name.ends_with("_test.lua") {
            let test = shipped.join(name.replace(".lua", "_test.lua"));
            assert!(test.is_file(), "{} has no test file", path.display());
        }
    }
}

#[test]
fn a_failing_assertion_names_its_line_and_what_was_expected() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    fx.tool(
        "greet_test.lua",
        "test(\"greets\", function(t)\n  local out = t.call(\"greet\", { who = \"Ada\" })\n  t.eq(out, \"Hi, Ada!\")\nend)\ntest(\"needs a name\", function(t)\n  t.error_type(t.call(\"greet\", {}), \"invalid_arguments\")\nend)\n",
    );
    let out = fx
        .toolhost()
        .arg("test")
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAIL  greets"), "{stdout}");
    assert!(
        stdout.contains("greet_test.lua:3: expected \"Hi, Ada!\", got \"Hello, Ada!\""),
        "{stdout}"
    );
    assert!(stdout.contains("ok    needs a name"), "{stdout}");
    assert!(stdout.contains("1 passed, 1 failed"), "{stdout}");
}

#[test]
fn json_output_lists_every_test() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    fx.tool(
        "greet_test.lua",
        "test(\"a\", function(t) t.ok(true) end)\ntest(\"b\", function(t) t.ok(false, \"b fails\") end)\n",
    );
    let out = fx
        .toolhost()
        .args(["test", "--json"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["passed"], 1);
    assert_eq!(report["failed"], 1);
    assert_eq!(report["tests"][1]["name"], "b");
    assert!(
        report["tests"][1]["message"]
            .as_str()
            .unwrap()
            .contains("b fails"),
        "{report}"
    );
}

#[test]
fn each_test_gets_a_fresh_file_system_root() {
    let fx = Fixture::new();
    fx.tool(
        "files.lua",
        r#"registry.register{ name = "peek", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return tostring(fs.exists("left.txt")) end }"#,
    );
    fx.tool(
        "files_test.lua",
        "test(\"writes\", function(t)\n  t.write(\"left.txt\", \"x\")\n  t.eq(t.call(\"peek\", {}), \"true\")\nend)\ntest(\"sees nothing of the first\", function(t)\n  t.eq(t.call(\"peek\", {}), \"false\")\nend)\n",
    );
    fx.toolhost().arg("test").assert().success();
}

#[test]
fn test_files_are_never_tools() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    fx.tool(
        "greet_test.lua",
        "registry.register{ name = 'sneaky', toolset = 't', schema = { parameters = { type = 'object' } }, handler = print }\n",
    );
    let out = fx
        .toolhost()
        .args(["list", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 1, "{tools}");
}

const SAY: &str = r#"registry.register{ name = "say", toolset = "t",
  requires_env = { "TOOLHOST_TEST_GREETING" },
  schema = { description = "Says the greeting", parameters = { type = "object" } },
  handler = function() return env.get("TOOLHOST_TEST_GREETING") end }
registry.register{ name = "status", toolset = "t",
  schema = { description = "git status", parameters = { type = "object" } },
  handler = function()
    local r = proc.run{ argv = { "git", "status", "--short" } }
    return r.stdout .. "|" .. tostring(r.code)
  end }
registry.register{ name = "other", toolset = "t",
  schema = { description = "runs ls", parameters = { type = "object" } },
  handler = function() return proc.run{ argv = { "ls" } }.stdout end }"#;

fn run_lua_tests(fx: &Fixture) -> (bool, String) {
    let out = fx
        .toolhost()
        .env_remove("TOOLHOST_TEST_GREETING")
        .args(["test", "--json"])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[test]
fn t_env_sets_variables_for_that_test_only() {
    let fx = Fixture::new();
    fx.tool("say.lua", SAY);
    fx.tool(
        "say_test.lua",
        r#"test("with the variable", function(t)
  t.env{ TOOLHOST_TEST_GREETING = "hi" }
  t.eq(t.call("say", {}), "hi")
end)
test("without it", function(t)
  t.error_type(t.call("say", {}), "unavailable")
end)"#,
    );
    let (ok, stdout) = run_lua_tests(&fx);
    assert!(ok, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["passed"], 2, "{stdout}");
}

#[test]
fn t_proc_scripts_proc_run_and_refuses_unscripted_runs() {
    let fx = Fixture::new();
    fx.tool("say.lua", SAY);
    fx.tool(
        "say_test.lua",
        r#"test("scripted", function(t)
  t.proc{ { argv = { "git", "status" }, stdout = " M a.txt", code = 0 } }
  t.eq(t.call("status", {}), " M a.txt|0")
  local out = t.call("other", {})
  t.error_type(out, "handler_error")
  t.contains(out.error, "no scripted answer for \"ls\"")
end)"#,
    );
    let (ok, stdout) = run_lua_tests(&fx);
    assert!(ok, "{stdout}");
}

#[test]
fn t_env_after_the_first_call_is_an_error_at_the_tests_line() {
    let fx = Fixture::new();
    fx.tool("say.lua", SAY);
    fx.tool(
        "say_test.lua",
        "test(\"late\", function(t)\n  t.call(\"say\", {})\n  t.env{ TOOLHOST_TEST_GREETING = \"x\" }\nend)",
    );
    let (ok, stdout) = run_lua_tests(&fx);
    assert!(!ok);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let message = report["tests"][0]["message"].as_str().unwrap();
    assert!(message.contains("say_test.lua:3"), "{message}");
    assert!(
        message.contains("before the test's first t.call"),
        "{message}"
    );
}

/// Runs `toolhost test --json [FILES]` and returns each test's (name, ok, message).
fn outcomes(fx: &Fixture, files: &[&str]) -> Vec<(String, bool, String)> {
    let out = fx
        .toolhost()
        .args(["test", "--json"])
        .args(files)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_string(),
                t["ok"] == true,
                t["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn assert_all_pass(fx: &Fixture) {
    let outcomes = outcomes(fx, &[]);
    assert!(!outcomes.is_empty());
    for (name, ok, message) in &outcomes {
        assert!(ok, "{name}: {message}");
    }
}

#[test]
fn test_files_run_in_the_tool_sandbox() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    let marker = fx.root().join("escaped");
    fx.tool(
        "greet_test.lua",
        &format!(
            r#"test("no way out of the sandbox", function(t)
  t.eq(type(io), "nil", "io")
  t.eq(type(os.execute), "nil", "os.execute")
  t.eq(type(os.remove), "nil", "os.remove")
  t.eq(type(dofile), "nil", "dofile")
  t.eq(type(loadfile), "nil", "loadfile")
  t.eq(type(debug), "nil", "debug")
  t.eq(type(string.dump), "nil", "string.dump")
  t.eq(load(string.char(27) .. "Lua"), nil, "binary chunks")
  pcall(function() os.execute("touch {marker}") end)
  pcall(function() io.open("{marker}", "w"):write("x") end)
  t.eq(t.call("greet", {{ who = "Ada" }}), "Hello, Ada!")
end)
test("registering is not for test files", function(t)
  local ok, err = pcall(registry.register, {{ name = "sneaky" }})
  t.eq(ok, false)
end)
test("t.write stays inside the test's root", function(t)
  local ok, err = pcall(t.write, "../outside.txt", "x")
  t.eq(ok, false)
  t.contains(err, "inside the test's root only")
end)"#,
            marker = marker.display()
        ),
    );
    assert_all_pass(&fx);
    assert!(!marker.exists(), "test code ran a command or wrote a file");
}

/// A plugin `p` (default capabilities: json, log, time) with a tool that reads a file and a
/// test file beside it.
#[test]
fn a_plugins_tests_run_with_the_plugins_grants() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", "[plugins.p]\ndir = \"plugin\"\n");
    fx.write(
        "plugin/peek.lua",
        r#"registry.register{ name = "peek", toolset = "p",
  schema = { description = "Reads data.txt", parameters = { type = "object" } },
  handler = function() return fs.read("data.txt") end }"#,
    );
    fx.write(
        "plugin/peek_test.lua",
        r#"test("the plugin's tools have the plugin's capabilities", function(t)
  t.write("data.txt", "secret")
  local out = t.call("peek", {})
  t.error_type(out, "handler_error")
  t.contains(out.error, "capability 'fs' is not granted to plugin 'p'")
end)
test("the test file has the plugin's capabilities", function(t)
  local ok, err = pcall(function() return fs.read("data.txt") end)
  t.eq(ok, false)
  t.contains(err, "capability 'fs' is not granted to plugin 'p'")
  local ok2, err2 = pcall(function() return store.get("k") end)
  t.eq(ok2, false)
  t.contains(err2, "capability 'store' is not granted to plugin 'p'")
  t.eq(json.encode({ 1 }), "[1]")
end)"#,
    );
    assert_all_pass(&fx);
    // The same file named on the command line gets the same grants.
    let out = fx
        .toolhost()
        .args(["test", "--json", "plugin/peek_test.lua"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn proc_run_in_a_test_without_t_proc_is_refused_pointing_at_t_proc() {
    let fx = Fixture::new();
    let marker = fx.root().join("ran");
    fx.write("toolhost.toml", "[sandbox]\ncommands = [\"touch\"]\n");
    fx.tool(
        "touch.lua",
        &format!(
            r#"registry.register{{ name = "touch", toolset = "t",
  schema = {{ description = "touches", parameters = {{ type = "object" }} }},
  handler = function() return proc.run{{ argv = {{ "touch", "{}" }} }}.code end }}"#,
            marker.display()
        ),
    );
    fx.tool(
        "touch_test.lua",
        r#"test("unscripted", function(t)
  local out = t.call("touch", {})
  t.error_type(out, "handler_error")
  t.contains(out.error, "t.proc")
end)"#,
    );
    assert_all_pass(&fx);
    assert!(!marker.exists(), "a test started a real program");
}

#[test]
fn t_call_converts_results_like_handler_arguments() {
    let fx = Fixture::new();
    fx.tool(
        "lists.lua",
        r#"registry.register{ name = "lists", toolset = "t",
  schema = { description = "Lists", parameters = { type = "object" } },
  handler = function() return { empty = json.array({}), some = { 1, 2 } } end }"#,
    );
    fx.tool(
        "lists_test.lua",
        r#"test("an empty list stays a list", function(t)
  local out = t.call("lists", {})
  t.eq(json.encode(out.empty), "[]")
  t.eq(#out.some, 2)
end)"#,
    );
    assert_all_pass(&fx);
}

/// A plugin's test file that is a symlink to a file outside every tool directory still runs
/// with the plugin's grants (the folder it was found in), and one that resolves into
/// another trust domain's folder is refused.
#[test]
fn a_symlinked_test_file_cannot_borrow_other_grants() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", "[plugins.p]\ndir = \"plugin\"\n");
    fx.write(
        "plugin/own.lua",
        r#"registry.register{ name = "own", toolset = "p",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return "mine" end }"#,
    );
    let outside = fx.write(
        "elsewhere/escape.lua",
        r#"test("still the plugin's grants", function(t)
  local ok, err = pcall(function() return fs.exists("x") end)
  t.eq(ok, false)
  t.contains(err, "capability 'fs' is not granted to plugin 'p'")
end)"#,
    );
    std::os::unix::fs::symlink(&outside, fx.root().join("plugin/escape_test.lua")).unwrap();
    let builtin = fx.tool("greet_test.lua", "test('x', function(t) end)");
    std::os::unix::fs::symlink(&builtin, fx.root().join("plugin/borrow_test.lua")).unwrap();
    // Named on the command line (the default search lists regular files only).
    let outcomes = outcomes(&fx, &["plugin/escape_test.lua", "plugin/borrow_test.lua"]);
    let find = |prefix: &str| {
        outcomes
            .iter()
            .find(|(name, _, _)| name.starts_with(prefix))
            .unwrap_or_else(|| panic!("no outcome {prefix}: {outcomes:?}"))
            .clone()
    };
    let (_, ok, message) = find("still the plugin's grants");
    assert!(ok, "{message}");
    let (_, ok, message) = find("plugin/borrow_test.lua");
    assert!(!ok);
    assert!(message.contains("resolves into"), "{message}");
}

const NOTES: &str = r##"
registry.resource{ uri = "notes://{id}", name = "note",
  read = function(p) if p.id == "gone" then return nil end return "# " .. p.id end }
registry.prompt{ name = "review", arguments = { { name = "path", required = true } },
  render = function(args) return "Review " .. args.path end }
"##;

#[test]
fn t_read_and_t_prompt_answer_contents_and_typed_errors() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    fx.tool(
        "notes_test.lua",
        r##"
test("read", function(t)
  t.eq(t.read("notes://7"), { { uri = "notes://7", text = "# 7" } })
  t.error_type(t.read("notes://gone"), "resource_not_found")
  t.error_type(t.read("other://7"), "resource_not_found")
end)
test("prompt", function(t)
  t.eq(t.prompt("review", { path = "a.rs" }).messages,
    { { role = "user", content = { type = "text", text = "Review a.rs" } } })
  t.error_type(t.prompt("review", {}), "invalid_arguments")
  t.error_type(t.prompt("nope"), "resource_not_found")
end)
"##,
    );
    assert_all_pass(&fx);
}
