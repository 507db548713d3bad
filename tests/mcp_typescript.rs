//! `toolhost serve` with the official TypeScript MCP client (tests/mcp/ts_client.mjs;
//! `@modelcontextprotocol/client`, pinned in tests/common/ts_client.rs), each revision
//! forced: a 2025-11-25 session (`legacy`) and 2026-07-28 (`versionNegotiation: { pin }`),
//! over stdio and streamable HTTP. One server per test, several steps per server.
//!
//! Tasks: the TypeScript client 2.4.0 has no API for the Tasks extension (no task-augmented
//! `callTool`, no `tasks/get` helper), so the task test sends the extension's requests
//! through the client's generic `request`, with the extension declared in its capabilities.
//! On 2026-07-28 even that is impossible: the client's 2026 codec refuses a `tools/call`
//! result whose `resultType` is `"task"` ("Unsupported result type 'task' for tools/call")
//! before any schema sees it, so tasks are tested on 2025-11-25 sessions only here (the
//! Python client covers 2026-07-28 in tests/mcp_tasks.rs).

mod common;

use common::mcp_client::step;
use common::ts_client::run_script;
use common::{Fixture, ask_scenarios};
use serde_json::{Value, json};

const LEGACY: &str = "legacy";
const MODERN: &str = "2026-07-28";

const TOOLS: &str = r#"
registry.register{ name = "ping", toolset = "t",
  schema = { description = "Answers pong", parameters = { type = "object" } },
  handler = function() return "pong" end }
registry.register{ name = "greet", toolset = "t", needs = { "elicitation" },
  schema = { description = "Asks a name", parameters = { type = "object" } },
  handler = function(args, ctx)
    local r = ctx.ask{ message = "Your name?", schema = { properties = { name = { type = "string" } }, required = { "name" } } }
    if r.action ~= "accept" then return "no name: " .. r.action end
    return "Hello, " .. r.content.name
  end }
registry.register{ name = "guarded", toolset = "t", requires_approval = true,
  schema = { description = "Writes a marker", parameters = { type = "object", properties = { path = { type = "string" } } } },
  handler = function(args) fs.write(args.path, "done") return "wrote" end }
registry.register{ name = "peek", toolset = "t", needs = { "roots" },
  schema = { description = "Reads a file", parameters = { type = "object", properties = { path = { type = "string" } } } },
  handler = function(args, ctx)
    local roots = ctx.roots()
    return #roots .. " root(s): " .. fs.read(args.path)
  end }
registry.register{ name = "stall", toolset = "t", is_async = true,
  schema = { description = "Reports progress, then waits", parameters = { type = "object" } },
  handler = function(args, ctx)
    ctx.progress(1, 2, "started")
    time.sleep(30000)
    return "finished"
  end }
registry.register{ name = "brew", toolset = "t", task = "optional", is_async = true,
  schema = { description = "A task that waits ms", parameters = { type = "object", properties = { ms = { type = "number" } } } },
  handler = function(args) time.sleep(args.ms or 0) return "brewed" end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx
}

/// Runs `spec` (see tests/mcp/ts_client.mjs) against `toolhost serve` in `fx`.
fn run(fx: &Fixture, transport: &str, mode: &str, spec: Value) -> Vec<Value> {
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let workdir = fx.root().canonicalize().expect("fixture root");
    run_script(
        "ts_client.mjs",
        &[
            transport,
            mode,
            binary.to_str().expect("utf-8 path"),
            workdir.to_str().expect("utf-8 path"),
            &spec.to_string(),
        ],
    )
}

/// No step saw the client report a protocol error (such as a response to an unknown id).
fn assert_no_client_errors(steps: &[Value]) {
    for s in steps {
        assert_eq!(s["errors"], json!([]), "{steps:#?}");
    }
}

/// A new tool file saved while serving reaches the client as `tools/list_changed`: on
/// 2026-07-28 over a `subscriptions/listen` stream, on 2025-11-25 as the session's
/// notification; the relisted tools include the new one.
fn list_changed_after_a_file_save(transport: &str, mode: &str) {
    let fx = fixture();
    let steps = run(
        &fx,
        transport,
        mode,
        json!({
            "serve_args": ["--watch"],
            "steps": [{
                "name": "saved",
                "list_changed": "tools-lua/added.lua",
                "content": common::simple_tool("added", "t", "new")
            }]
        }),
    );
    let saved = step(&steps, "saved");
    assert!(
        saved["tools"].as_array().unwrap().contains(&json!("added")),
        "{steps:#?}"
    );
    if mode == MODERN {
        assert_eq!(saved["honored"], json!({"toolsListChanged": true}));
    }
    assert_no_client_errors(&steps);
}

#[test]
fn a_file_save_reaches_a_2026_subscription_over_stdio() {
    list_changed_after_a_file_save("stdio", MODERN);
}

#[test]
fn a_file_save_reaches_a_2026_subscription_over_http() {
    list_changed_after_a_file_save("http", MODERN);
}

#[test]
fn a_file_save_reaches_a_2025_session_as_list_changed_over_stdio() {
    list_changed_after_a_file_save("stdio", LEGACY);
}

#[test]
fn a_file_save_reaches_a_2025_session_as_list_changed_over_http() {
    list_changed_after_a_file_save("http", LEGACY);
}

/// The client's one root (`inside/`): a read inside it works, one outside is refused.
fn roots_narrow_fs(transport: &str) {
    let fx = fixture();
    fx.write("inside/a.txt", "inside");
    fx.write("outside.txt", "outside");
    let root = fx.root().canonicalize().unwrap();
    let inside = root.join("inside/a.txt").display().to_string();
    let outside = root.join("outside.txt").display().to_string();
    let steps = run(
        &fx,
        transport,
        MODERN,
        json!({
            "roots": [format!("file://{}", root.join("inside").display())],
            "steps": [
                {"name": "inside", "call": "peek", "args": {"path": inside}},
                {"name": "outside", "call": "peek", "args": {"path": outside}}
            ]
        }),
    );
    assert_eq!(
        step(&steps, "inside")["text"],
        "1 root(s): inside",
        "{steps:#?}"
    );
    let outside = step(&steps, "outside");
    assert!(
        outside["text"]
            .as_str()
            .unwrap()
            .contains("outside the allowed roots"),
        "{outside}"
    );
}

#[test]
fn roots_of_a_2026_client_narrow_fs_over_http() {
    roots_narrow_fs("http");
}

#[test]
fn roots_of_a_2026_client_narrow_fs_over_stdio() {
    roots_narrow_fs("stdio");
}

fn ask_answers_reach_the_handler(transport: &str, mode: &str) {
    let fx = fixture();
    let steps = ask_scenarios::answers_reach_the_handler(|spec| run(&fx, transport, mode, spec));
    assert_no_client_errors(&steps);
}

#[test]
fn ask_answers_reach_the_handler_on_2026_over_http() {
    ask_answers_reach_the_handler("http", MODERN);
}

#[test]
fn ask_answers_reach_the_handler_on_2026_over_stdio() {
    ask_answers_reach_the_handler("stdio", MODERN);
}

#[test]
fn ask_answers_reach_the_handler_on_a_2025_session_over_stdio() {
    ask_answers_reach_the_handler("stdio", LEGACY);
}

#[test]
fn ask_answers_reach_the_handler_on_a_2025_session_over_http() {
    ask_answers_reach_the_handler("http", LEGACY);
}

fn approval_asks(transport: &str, mode: &str) {
    let fx = fixture();
    let steps = ask_scenarios::approval_asks(&fx, |spec| run(&fx, transport, mode, spec));
    assert_no_client_errors(&steps);
}

#[test]
fn the_approval_gate_asks_and_honours_decline_on_2026() {
    approval_asks("http", MODERN);
}

#[test]
fn the_approval_gate_asks_and_honours_decline_on_a_2025_session() {
    approval_asks("stdio", LEGACY);
}

/// A task of `brew` polled to its result, and one cancelled while it runs.
fn task_created_polled_and_cancelled(transport: &str, mode: &str) {
    let fx = fixture();
    let steps = run(
        &fx,
        transport,
        mode,
        json!({
            "tasks": true,
            "steps": [
                {"name": "polled", "task": "brew", "args": {"ms": 50}, "then": "poll"},
                {"name": "cancelled", "task": "brew", "args": {"ms": 60000}, "then": "cancel"}
            ]
        }),
    );
    let polled = step(&steps, "polled");
    assert_eq!(polled["created"]["status"], "working", "{steps:#?}");
    assert_eq!(polled["created"]["taskId"].as_str().map(str::len), Some(32));
    assert_eq!(polled["final"]["status"], "completed", "{polled}");
    assert_eq!(
        polled["final"]["result"]["content"][0]["text"], "brewed",
        "{polled}"
    );
    let cancelled = step(&steps, "cancelled");
    assert_eq!(cancelled["created"]["status"], "working", "{steps:#?}");
    assert_eq!(cancelled["final"]["status"], "cancelled", "{cancelled}");
    assert_no_client_errors(&steps);
}

#[test]
fn a_task_is_created_polled_and_cancelled_on_a_2025_session_over_stdio() {
    task_created_polled_and_cancelled("stdio", LEGACY);
}

#[test]
fn a_task_is_created_polled_and_cancelled_on_a_2025_session_over_http() {
    task_created_polled_and_cancelled("http", LEGACY);
}

/// A stdio call aborted at its first progress report: a later call answers, and the client
/// never sees an answer for the cancelled id (the SDK would report "Received a response for
/// an unknown message ID"). That the handler stops is tests/mcp_ask.rs's and
/// tests/cancel.rs's concern.
fn a_cancelled_stdio_call_gets_no_result(mode: &str) {
    let fx = fixture();
    let steps = run(
        &fx,
        "stdio",
        mode,
        json!({
            "steps": [{"name": "cancel", "cancel": "stall"}]
        }),
    );
    let cancelled = step(&steps, "cancel");
    assert_eq!(cancelled["aborted"], "aborted", "{steps:#?}");
    assert_eq!(cancelled["after"], "pong");
    assert_no_client_errors(&steps);
}

#[test]
fn a_cancelled_stdio_call_gets_no_result_on_a_2025_session() {
    a_cancelled_stdio_call_gets_no_result(LEGACY);
}

#[test]
fn a_cancelled_stdio_call_gets_no_result_on_2026() {
    a_cancelled_stdio_call_gets_no_result(MODERN);
}

/// Resources, templates, prompts and completion for the TypeScript client (beside the
/// tools of [`TOOLS`]).
const CONTENT: &str = r##"
registry.resource{ uri_template = "notes://{id}", name = "note", mime_type = "text/markdown",
  read = function(p) return "# note " .. p.id end,
  list = function() return { { uri = "notes://first", name = "first" } } end,
  complete = { id = function(prefix) return { prefix .. "1", prefix .. "2" } end } }
registry.resource{ uri = "img://logo", name = "logo",
  read = function() return { blob = "aGk=", mime_type = "image/png" } end }
registry.prompt{ name = "review", description = "Review a file",
  arguments = { { name = "path", description = "file to review", required = true } },
  render = function(args)
    return { { role = "user", content = { type = "resource", resource = {
      uri = "file:///" .. args.path, mimeType = "text/plain", text = "fn main() {}" } } },
      { role = "user", content = "Review " .. args.path } }
  end,
  complete = { path = function(prefix) return { prefix .. "main.rs" } end } }
"##;

fn content_steps() -> Value {
    json!([
        { "name": "resources", "request": "resources/list" },
        { "name": "templates", "request": "resources/templates/list" },
        { "name": "read_text", "request": "resources/read", "params": { "uri": "notes://a" } },
        { "name": "read_blob", "request": "resources/read", "params": { "uri": "img://logo" } },
        { "name": "prompts", "request": "prompts/list" },
        { "name": "prompt", "request": "prompts/get",
          "params": { "name": "review", "arguments": { "path": "src/main.rs" } } },
        { "name": "complete", "request": "completion/complete", "params": {
            "ref": { "type": "ref/resource", "uri": "notes://{id}" },
            "argument": { "name": "id", "value": "ab" } } },
    ])
}

fn assert_content(steps: &[Value]) {
    assert_no_client_errors(steps);
    let uris: Vec<&str> = step(steps, "resources")["result"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["img://logo", "notes://first"], "{steps:?}");
    assert_eq!(
        step(steps, "templates")["result"]["resourceTemplates"][0]["uriTemplate"],
        "notes://{id}"
    );
    assert_eq!(
        step(steps, "read_text")["result"]["contents"][0]["text"],
        "# note a"
    );
    assert_eq!(
        step(steps, "read_blob")["result"]["contents"][0]["blob"],
        "aGk="
    );
    assert_eq!(
        step(steps, "prompts")["result"]["prompts"][0]["arguments"][0]["name"],
        "path"
    );
    let messages = &step(steps, "prompt")["result"]["messages"];
    assert_eq!(messages[0]["content"]["type"], "resource", "{messages}");
    assert_eq!(messages[1]["content"]["text"], "Review src/main.rs");
    assert_eq!(
        step(steps, "complete")["result"]["completion"]["values"],
        json!(["ab1", "ab2"])
    );
}

fn content_fixture() -> Fixture {
    let fx = fixture();
    fx.tool("content.lua", CONTENT);
    fx
}

#[test]
fn resources_prompts_and_completion_on_a_2025_session_over_stdio() {
    let fx = content_fixture();
    let steps = run(&fx, "stdio", LEGACY, json!({ "steps": content_steps() }));
    assert_content(&steps);
}

#[test]
fn resources_prompts_and_completion_on_2026_over_http() {
    let fx = content_fixture();
    let steps = run(&fx, "http", MODERN, json!({ "steps": content_steps() }));
    assert_content(&steps);
}

/// A save of the file that defines a subscribed resource reaches the client.
fn assert_update_after_save(transport: &str, mode: &str) -> Vec<Value> {
    let fx = content_fixture();
    let steps = run(
        &fx,
        transport,
        mode,
        json!({ "serve_args": ["--watch"], "steps": [{
            "name": "updated", "updated": "tools-lua/content.lua",
            "content": CONTENT.replace("# note", "# edited note"), "uri": "notes://7" }] }),
    );
    assert_no_client_errors(&steps);
    assert_eq!(step(&steps, "updated")["uri"], "notes://7", "{steps:?}");
    steps
}

#[test]
fn a_saved_resource_file_updates_a_2025_subscriber_over_stdio() {
    assert_update_after_save("stdio", LEGACY);
}

#[test]
fn a_saved_resource_file_updates_a_2026_listener_over_http() {
    let steps = assert_update_after_save("http", MODERN);
    assert_eq!(
        step(&steps, "updated")["honored"],
        json!({ "resourceSubscriptions": ["notes://7"] })
    );
}
