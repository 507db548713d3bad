//! Resources, prompts and completion over MCP (docs/mcp-server.md), stdio and streamable
//! HTTP, with the official Python client against the real binary.

mod common;

use common::mcp_client::{run_script, step};
use serde_json::{Value, json};

const NOTES: &str = r##"
registry.register{ name = "echo", toolset = "demo",
  schema = { parameters = { type = "object" } }, handler = function(a) return a end }
registry.resource{
  uri = "notes://{id}", name = "note", title = "Note", mime_type = "text/markdown",
  read = function(params, ctx) return "# note " .. params.id end,
  list = function(ctx) return { { uri = "notes://first", name = "first" } } end,
  complete = { id = function(prefix) return { prefix .. "1", prefix .. "2" } end },
}
registry.resource{ uri = "img://logo", name = "logo",
  read = function() return { blob = "aGk=", mime_type = "image/png" } end }
registry.prompt{
  name = "review", description = "Review a file",
  arguments = { { name = "path", description = "file to review", required = true } },
  render = function(args) return { { role = "user", content = "Review " .. args.path } } end,
  complete = { path = function(prefix) return { prefix .. "main.rs" } end },
}
"##;

fn run(transport: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("tools-lua")).expect("tools dir");
    std::fs::write(dir.path().join("tools-lua/notes.lua"), NOTES).expect("tool file");
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let workdir = dir.path().to_str().expect("utf-8 temp dir");
    run_script(
        "resources.py",
        &[transport, binary.to_str().expect("utf-8 path"), workdir],
    )
}

fn check(steps: &[Value]) {
    let capabilities = &step(steps, "capabilities")["capabilities"];
    assert!(
        capabilities.get("resources").is_some()
            && capabilities.get("prompts").is_some()
            && capabilities.get("completions").is_some(),
        "{capabilities}"
    );
    let uris: Vec<&str> = step(steps, "resources")["result"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["img://logo", "notes://first"]);
    assert_eq!(
        step(steps, "templates")["result"]["resourceTemplates"][0]["uriTemplate"],
        "notes://{id}"
    );
    assert_eq!(
        step(steps, "read_text")["result"]["contents"],
        json!([{ "uri": "notes://a%20b", "mimeType": "text/markdown", "text": "# note a b" }])
    );
    assert_eq!(
        step(steps, "read_blob")["result"]["contents"],
        json!([{ "uri": "img://logo", "mimeType": "image/png", "blob": "aGk=" }])
    );
    assert_eq!(step(steps, "read_missing")["error"]["code"], -32002);
    assert_eq!(
        step(steps, "prompts")["result"]["prompts"][0]["arguments"],
        json!([{ "name": "path", "description": "file to review", "required": true }])
    );
    assert_eq!(
        step(steps, "prompt")["result"]["messages"],
        json!([{ "role": "user", "content": { "type": "text", "text": "Review a.rs" } }])
    );
    assert_eq!(step(steps, "prompt_missing_arg")["error"]["code"], -32602);
    assert_eq!(
        step(steps, "complete_resource")["result"]["completion"]["values"],
        json!(["ab1", "ab2"])
    );
    assert_eq!(
        step(steps, "complete_prompt")["result"]["completion"]["values"],
        json!(["src/main.rs"])
    );
}

#[test]
fn resources_prompts_and_completion_over_stdio() {
    check(&run("stdio"));
}

#[test]
fn resources_prompts_and_completion_over_http() {
    check(&run("http"));
}

#[test]
fn no_resource_or_prompt_capability_without_registrations() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("tools-lua")).expect("tools dir");
    std::fs::write(
        dir.path().join("tools-lua/echo.lua"),
        "registry.register{ name = 'echo', toolset = 't', schema = { parameters = { type = 'object' } }, handler = function(a) return a end }",
    )
    .expect("tool file");
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "resources.py",
        &[
            "capabilities-only",
            binary.to_str().expect("utf-8 path"),
            dir.path().to_str().expect("utf-8 temp dir"),
        ],
    );
    let capabilities = &step(&steps, "capabilities")["capabilities"];
    assert!(
        capabilities.get("resources").is_none()
            && capabilities.get("prompts").is_none()
            && capabilities.get("completions").is_none(),
        "{capabilities}"
    );
}

/// One 2026-07-28 request (its `_meta` declares the revision; no `initialize`) to a fresh
/// `toolhost serve` over stdio, and the answer.
fn ask_2026(dir: &std::path::Path, method: &str, params: Value) -> Value {
    converse_2026(dir, method, params, |_| None).0
}

/// A 2026-07-28 request to a fresh `toolhost serve` over stdio and its answer, then the
/// request `follow` makes of that answer (the same method; `None`: none) and its answer.
fn converse_2026(
    dir: &std::path::Path,
    method: &str,
    params: Value,
    follow: impl FnOnce(&Value) -> Option<Value>,
) -> (Value, Value) {
    use std::io::{BufRead, BufReader, Write};
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" },
    });
    let mut params = params;
    params["_meta"] = meta.clone();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(dir)
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("toolhost serve starts");
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{request}").expect("request written");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut answer_to = |id: u64| {
        lines
            .find_map(|line| {
                let message: Value = serde_json::from_str(&line.ok()?).ok()?;
                (message["id"] == id).then_some(message)
            })
            .expect("an answer")
    };
    let answer = answer_to(1);
    let second = match follow(&answer) {
        Some(mut params) => {
            params["_meta"] = meta;
            let request = json!({ "jsonrpc": "2.0", "id": 2, "method": method, "params": params });
            writeln!(stdin, "{request}").expect("request written");
            answer_to(2)
        }
        None => Value::Null,
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    (answer, second)
}

fn notes_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("tools-lua")).expect("tools dir");
    std::fs::write(dir.path().join("tools-lua/notes.lua"), NOTES).expect("tool file");
    dir
}

#[test]
fn an_unknown_uri_on_2026_is_invalid_params_naming_the_uri() {
    let dir = notes_dir();
    let answer = ask_2026(dir.path(), "resources/read", json!({ "uri": "nope://x" }));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["error"]["data"]["uri"], "nope://x", "{answer}");
}

#[test]
fn listings_on_2026_carry_caching_hints() {
    let dir = notes_dir();
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let answer = ask_2026(dir.path(), method, json!({}));
        let result = &answer["result"];
        assert!(
            result["ttlMs"].is_u64() && result["cacheScope"] == "private",
            "{method}: {answer}"
        );
    }
}

#[test]
fn a_prompt_that_asks_answers_input_required_then_renders_with_the_answer_on_2026() {
    let dir = notes_dir();
    std::fs::write(
        dir.path().join("tools-lua/asking.lua"),
        r#"registry.prompt{ name = "brief",
  render = function(_, ctx)
    local r = ctx.ask{ key = "topic", message = "Which topic?",
      schema = { properties = { topic = { type = "string" } }, required = { "topic" } } }
    return "Brief on " .. r.content.topic
  end }"#,
    )
    .expect("prompt file");
    let (first, second) = converse_2026(
        dir.path(),
        "prompts/get",
        json!({ "name": "brief" }),
        |first| {
            Some(json!({
                "name": "brief",
                "requestState": first["result"]["requestState"],
                "inputResponses": { "topic": { "action": "accept", "content": { "topic": "tides" } } },
            }))
        },
    );
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["topic"]["method"], "elicitation/create",
        "{first}"
    );
    assert_eq!(
        second["result"]["messages"][0]["content"]["text"], "Brief on tides",
        "{second}"
    );
}

#[test]
fn a_prompts_request_state_does_not_continue_another_prompt() {
    let dir = notes_dir();
    std::fs::write(
        dir.path().join("tools-lua/asking.lua"),
        r#"local function ask(_, ctx)
  local r = ctx.ask{ key = "topic", message = "Which topic?",
    schema = { properties = { topic = { type = "string" } }, required = { "topic" } } }
  return "Brief on " .. r.content.topic
end
registry.prompt{ name = "brief", render = ask }
registry.prompt{ name = "other", render = ask }"#,
    )
    .expect("prompt file");
    let (_, second) = converse_2026(
        dir.path(),
        "prompts/get",
        json!({ "name": "brief" }),
        |first| {
            Some(json!({
                "name": "other",
                "requestState": first["result"]["requestState"],
                "inputResponses": { "topic": { "action": "accept", "content": { "topic": "x" } } },
            }))
        },
    );
    assert_eq!(second["error"]["code"], -32602, "{second}");
}

#[test]
fn a_resource_read_that_asks_answers_input_required_then_reads_on_2026() {
    let dir = notes_dir();
    std::fs::write(
        dir.path().join("tools-lua/vault.lua"),
        r#"registry.resource{ uri = "vault://door", name = "door",
  read = function(_, ctx)
    local r = ctx.ask{ key = "pin", message = "PIN?",
      schema = { properties = { pin = { type = "string" } }, required = { "pin" } } }
    return "opened with " .. r.content.pin
  end }"#,
    )
    .expect("resource file");
    let (first, second) = converse_2026(
        dir.path(),
        "resources/read",
        json!({ "uri": "vault://door" }),
        |first| {
            Some(json!({
                "uri": "vault://door",
                "requestState": first["result"]["requestState"],
                "inputResponses": { "pin": { "action": "accept", "content": { "pin": "1234" } } },
            }))
        },
    );
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(
        second["result"]["contents"][0]["text"], "opened with 1234",
        "{second}"
    );
}
