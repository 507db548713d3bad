//! Resources and prompts written in Lua (docs/lua-api.md), through the real binary:
//! `toolhost resources`, `read`, `prompts`, `prompt` (docs/cli.md).

mod common;

use assert_cmd::Command;
use common::Fixture;
use serde_json::{Value, json};

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

fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.assert().success().get_output().clone();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

const NOTES: &str = r##"
registry.register{ name = "echo", toolset = "demo",
  schema = { parameters = { type = "object" } }, handler = function(a) return a end }
registry.resource{
  uri = "notes://{id}", name = "note", title = "Note", mime_type = "text/markdown",
  read = function(params, ctx) return "# note " .. params.id end,
  complete = { id = function(prefix) return { prefix .. "1" } end },
}
registry.resource{ uri = "img://logo", name = "logo",
  read = function() return { blob = "aGk=", mime_type = "image/png" } end }
registry.prompt{
  name = "review", description = "Review a file",
  arguments = { { name = "path", description = "file to review", required = true } },
  render = function(args) return { { role = "user", content = "Review " .. args.path } } end,
}
"##;

#[test]
fn resources_lists_fixed_uris_and_templates() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    let listed = json_of(toolhost(&fx).args(["resources", "--json"]));
    let uris: Vec<(&str, bool)> = listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| (r["uri"].as_str().unwrap_or(""), r["template"] == true))
        .collect();
    assert_eq!(uris, [("img://logo", false), ("notes://{id}", true)]);
    assert_eq!(listed[1]["mime_type"], "text/markdown");
    assert_eq!(listed[1]["line"], 4);
}

#[test]
fn read_passes_template_variables_as_params() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    let read = json_of(toolhost(&fx).args(["read", "notes://a%20b"]));
    assert_eq!(
        read,
        json!([{ "uri": "notes://a%20b", "mimeType": "text/markdown", "text": "# note a b" }])
    );
}

#[test]
fn read_returns_a_blob() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    let read = json_of(toolhost(&fx).args(["read", "img://logo"]));
    assert_eq!(
        read,
        json!([{ "uri": "img://logo", "mimeType": "image/png", "blob": "aGk=" }])
    );
}

#[test]
fn read_of_an_unknown_uri_is_resource_not_found() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    let out = toolhost(&fx)
        .args(["read", "notes://a/b"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("resource_not_found"), "{stderr}");
}

#[test]
fn a_read_that_raises_is_a_handler_error_naming_the_line() {
    let fx = Fixture::new();
    fx.tool(
        "bad.lua",
        "registry.resource{ uri = 'x://y', name = 'y',\n read = function() error('disk on fire') end }",
    );
    let out = toolhost(&fx)
        .args(["read", "x://y"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("handler_error")
            && stderr.contains("bad.lua:2")
            && stderr.contains("disk on fire"),
        "{stderr}"
    );
}

#[test]
fn a_read_returning_a_bad_blob_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "bad.lua",
        "registry.resource{ uri = 'x://y', name = 'y', read = function() return { blob = 'not base64!' } end }",
    );
    let out = toolhost(&fx)
        .args(["read", "x://y"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("'blob' must be base64"), "{stderr}");
}

#[test]
fn prompt_renders_with_arguments() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    let listed = json_of(toolhost(&fx).args(["prompts", "--json"]));
    assert_eq!(
        listed[0]["arguments"],
        json!([{ "name": "path", "description": "file to review", "required": true }])
    );
    let rendered = json_of(toolhost(&fx).args(["prompt", "review", r#"{"path":"a.rs"}"#]));
    assert_eq!(
        rendered,
        json!({ "description": "Review a file", "messages": [
            { "role": "user", "content": { "type": "text", "text": "Review a.rs" } }
        ] })
    );
}

#[test]
fn prompt_without_a_required_argument_is_refused() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    let out = toolhost(&fx)
        .args(["prompt", "review", "{}"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("missing required argument 'path'"),
        "{stderr}"
    );
}

#[test]
fn a_broken_resource_file_names_file_line_and_field_while_others_serve() {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    fx.tool(
        "broken.lua",
        "registry.resource{\n  uri = 'x://y', name = 'y',\n  reed = function() end,\n}",
    );
    let out = toolhost(&fx)
        .arg("check")
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("broken.lua:3: resource: unknown field 'reed' — did you mean 'read'?"),
        "{stdout}"
    );
    let read = json_of(toolhost(&fx).args(["read", "notes://1"]));
    assert_eq!(read[0]["text"], "# note 1");
}

#[test]
fn a_resource_file_is_atomic() {
    let fx = Fixture::new();
    fx.tool(
        "half.lua",
        "registry.resource{ uri = 'a://ok', name = 'ok', read = function() return 'x' end }\n\
         registry.prompt{ name = 'p', render = 'not a function' }",
    );
    let listed = json_of(toolhost(&fx).args(["resources", "--json"]));
    assert_eq!(listed, json!([]));
}

#[test]
fn the_same_uri_from_another_toolset_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "a.lua",
        "registry.resource{ uri = 'a://x', name = 'a', read = function() return 'a' end }",
    );
    fx.tool(
        "b.lua",
        "registry.resource{ uri = 'a://x', name = 'b', toolset = 'other',\n read = function() return 'b' end }",
    );
    let out = toolhost(&fx)
        .arg("check")
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("b.lua:1") && stdout.contains("would shadow"),
        "{stdout}"
    );
    let read = json_of(toolhost(&fx).args(["read", "a://x"]));
    assert_eq!(read[0]["text"], "a");
}

#[test]
fn a_read_that_never_returns_times_out() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", "[runtime]\ntimeout_ms = 200\n");
    fx.tool(
        "spin.lua",
        "registry.resource{ uri = 'x://spin', name = 'spin', read = function() while true do end end }",
    );
    let out = toolhost(&fx)
        .args(["read", "x://spin"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("timeout"), "{stderr}");
}
