//! Authoring resources and prompts through the real binary: `toolhost new --resource` /
//! `--prompt` scaffolds, `discover` and `check` reporting them, and a plugin's resource
//! running with the plugin's grants (docs/cli.md, docs/lua-api.md).

mod common;

use common::Fixture;
use serde_json::Value;

const CONTENT: &str = r##"
registry.register{ name = "echo", toolset = "demo",
  schema = { parameters = { type = "object" } }, handler = function(a) return a end }
registry.resource{ uri = "notes://{id}", name = "note", read = function(p) return p.id end }
registry.resource{ uri = "notes://all", name = "all", read = function() return "all" end }
registry.prompt{ name = "review", render = function() return "Review" end }
"##;

fn stdout(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_new_resource_scaffold_passes_check_and_its_test() {
    let fx = Fixture::new();
    fx.toolhost()
        .args(["new", "notes_db", "--resource"])
        .assert()
        .success();
    let checked = stdout(fx.toolhost().args(["check"]));
    assert!(
        checked.contains("0 tools, 1 resource, 0 prompts"),
        "{checked}"
    );
    let tested = stdout(fx.toolhost().args(["test"]));
    assert!(tested.contains("2 passed, 0 failed"), "{tested}");
    let read = stdout(fx.toolhost().args(["read", "notes-db://items/3"]));
    assert!(read.contains("# Item 3"), "{read}");
}

#[test]
fn a_new_prompt_scaffold_passes_check_and_its_test() {
    let fx = Fixture::new();
    fx.toolhost()
        .args(["new", "explain", "--prompt", "--toolset", "teach"])
        .assert()
        .success();
    let checked = stdout(fx.toolhost().args(["check"]));
    assert!(
        checked.contains("0 tools, 0 resources, 1 prompt"),
        "{checked}"
    );
    let tested = stdout(fx.toolhost().args(["test"]));
    assert!(tested.contains("2 passed, 0 failed"), "{tested}");
}

#[test]
fn new_refuses_resource_and_prompt_together() {
    let fx = Fixture::new();
    fx.toolhost()
        .args(["new", "x", "--resource", "--prompt"])
        .assert()
        .code(2);
}

#[test]
fn discover_json_names_each_files_resources_and_prompts() {
    let fx = Fixture::new();
    fx.tool("content.lua", CONTENT);
    fx.tool("plain.lua", &common::simple_tool("plain", "demo", "x"));
    let listed: Value =
        serde_json::from_str(&stdout(fx.toolhost().args(["discover", "--json"]))).expect("JSON");
    let row = |suffix: &str| {
        listed
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
            .cloned()
            .unwrap_or_else(|| panic!("no row for {suffix}: {listed}"))
    };
    let content = row("content.lua");
    assert_eq!(
        content["resources"],
        serde_json::json!(["notes://all", "notes://{id}"])
    );
    assert_eq!(content["prompts"], serde_json::json!(["review"]));
    assert_eq!(row("plain.lua")["resources"], serde_json::json!([]));
}

#[test]
fn discover_prints_the_counts_and_each_files_registrations() {
    let fx = Fixture::new();
    fx.tool("content.lua", CONTENT);
    let table = stdout(fx.toolhost().args(["discover"]));
    assert!(
        table.contains("echo, notes://all, notes://{id}, review"),
        "{table}"
    );
    assert!(table.contains("2 resources, 1 prompt"), "{table}");
}

#[test]
fn check_counts_resources_and_prompts() {
    let fx = Fixture::new();
    fx.tool("content.lua", CONTENT);
    let checked = stdout(fx.toolhost().args(["check"]));
    assert_eq!(
        checked.trim(),
        "ok: 1 file checked, 1 tool, 2 resources, 1 prompt"
    );
}

#[test]
fn a_plugin_resource_is_refused_an_ungranted_capability_while_others_work() {
    let fx = Fixture::new();
    fx.write("data.txt", "secret");
    fx.write(
        "plugins/notes/notes.lua",
        r#"
registry.resource{ uri = "plug://file", name = "file",
  read = function() return fs.read("data.txt") end }
registry.resource{ uri = "plug://time", name = "time",
  read = function() return "granted: " .. type(time.now()) end }
"#,
    );
    fx.tool(
        "builtin.lua",
        r#"registry.resource{ uri = "builtin://file", name = "file",
             read = function() return fs.read("data.txt") end }"#,
    );
    fx.write(
        "toolhost.toml",
        "[plugins.notes]\ndir = \"plugins/notes\"\n",
    );
    let refused = fx
        .toolhost()
        .args(["read", "plug://file"])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let refused = String::from_utf8_lossy(&refused);
    assert!(refused.contains("handler_error"), "{refused}");
    assert!(refused.contains("notes.lua:3"), "{refused}");
    assert!(
        refused.contains("[plugins.notes] capabilities"),
        "{refused}"
    );
    let granted = stdout(fx.toolhost().args(["read", "plug://time"]));
    assert!(granted.contains("granted: number"), "{granted}");
    let builtin = stdout(fx.toolhost().args(["read", "builtin://file"]));
    assert!(builtin.contains("secret"), "{builtin}");
}
