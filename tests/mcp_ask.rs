//! Input requests over MCP with the official Python client (tests/mcp/ask.py), each
//! revision forced: on a 2025-11-25 session `ctx.ask` is an awaited `elicitation/create`;
//! on 2026-07-28 a call is multi-round (`input_required`, a sealed `requestState`, the
//! handler run again with the recorded answers). A hostile client's changed or replayed
//! state is refused; a second server holding the same key continues a round; a tool whose
//! `needs` the client lacks answers -32021 (HTTP 400 on 2026 HTTP); the approval gate asks
//! the user and honours a refusal.

mod common;

use common::mcp_client::{run_script, step};
use common::raw_http::RawHttp;
use common::{Fixture, ask_scenarios};
use serde_json::{Value, json};

const LEGACY: &str = "legacy";
const MODERN: &str = "2026-07-28";

/// A 32-byte-plus request-state key shared by a fleet in the tests.
const KEY: &str = "toolhost-test-key-0123456789abcdef";

const TOOLS: &str = r#"
registry.register{ name = "greet", toolset = "t", needs = { "elicitation" },
  schema = { description = "Greets", parameters = { type = "object", properties = { greeting = { type = "string" } } } },
  handler = function(args, ctx)
    local r = ctx.ask{ message = "Your name?", schema = { properties = { name = { type = "string" } }, required = { "name" } } }
    if r.action ~= "accept" then return "no name: " .. r.action end
    return (args.greeting or "Hello") .. ", " .. r.content.name
  end }
registry.register{ name = "pair", toolset = "t",
  schema = { description = "Two questions at once", parameters = { type = "object" } },
  handler = function(args, ctx)
    local form = { properties = { v = { type = "string" } } }
    local a, b = ctx.all(
      function() return ctx.ask{ message = "A?", schema = form } end,
      function() return ctx.ask{ key = "bee", message = "B?", schema = form } end)
    return a.action .. "/" .. b.action
  end }
registry.register{ name = "impatient", toolset = "t", needs = { "elicitation" }, timeout_ms = 500,
  schema = { description = "Asks with a short deadline", parameters = { type = "object" } },
  handler = function(args, ctx) return ctx.ask{ message = "Quick?", schema = {} }.action end }
registry.register{ name = "capital", toolset = "t", needs = { "sampling" },
  schema = { description = "Asks the client's model", parameters = { type = "object" } },
  handler = function(args, ctx)
    local r = ctx.sample{ messages = { { role = "user", content = "Capital of France?" } }, max_tokens = 20, system = "Be brief" }
    return r.role .. " (" .. r.model .. "): " .. r.content
  end }
registry.register{ name = "guarded", toolset = "t", requires_approval = true,
  schema = { description = "Writes a marker", parameters = { type = "object", properties = { path = { type = "string" } } } },
  handler = function(args) fs.write(args.path, "done") return "wrote" end }
registry.register{ name = "delegating", toolset = "t", requires_approval = true,
  schema = { description = "Calls guarded", parameters = { type = "object", properties = { path = { type = "string" } } } },
  handler = function(args, ctx) local r = ctx.call("guarded", { path = args.path }) return type(r) == "table" and r.error_type or r end }
registry.register{ name = "peek", toolset = "t", needs = { "roots" },
  schema = { description = "Reads a file", parameters = { type = "object", properties = { path = { type = "string" } } } },
  handler = function(args, ctx)
    local roots = ctx.roots() -- first: on 2026-07-28 the answer narrows fs from the next run on
    return #roots .. " root(s): " .. fs.read(args.path)
  end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx
}

/// Runs `spec` (see tests/mcp/ask.py) against `toolhost serve` in `fx`.
fn run(fx: &Fixture, transport: &str, mode: &str, spec: Value) -> Vec<Value> {
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let workdir = fx.root().canonicalize().unwrap();
    run_script(
        "ask.py",
        &[
            transport,
            mode,
            binary.to_str().unwrap(),
            workdir.to_str().unwrap(),
            &spec.to_string(),
        ],
    )
}

fn answers_reach_the_handler(transport: &str, mode: &str) {
    let fx = fixture();
    ask_scenarios::answers_reach_the_handler(|spec| run(&fx, transport, mode, spec));
}

#[test]
fn ask_answers_reach_the_handler_on_a_2025_session_over_stdio() {
    answers_reach_the_handler("stdio", LEGACY);
}

#[test]
fn ask_answers_reach_the_handler_on_a_2025_session_over_http() {
    answers_reach_the_handler("http", LEGACY);
}

#[test]
fn ask_answers_reach_the_handler_on_2026_over_stdio() {
    answers_reach_the_handler("stdio", MODERN);
}

#[test]
fn ask_answers_reach_the_handler_on_2026_over_http() {
    answers_reach_the_handler("http", MODERN);
}

#[test]
fn ctx_all_sends_its_requests_in_one_round_on_2026() {
    let fx = fixture();
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "elicitation": [{"action": "decline"}, {"action": "accept", "content": {"v": "x"}}],
            "steps": [
                {"name": "round", "round": "pair"},
                {"name": "done", "round": "pair", "state": "last", "answer": true}
            ]
        }),
    );
    let round = step(&steps, "round");
    assert_eq!(round["result_type"], "input_required", "{steps:#?}");
    assert_eq!(round["keys"], json!(["bee", "q1.1.1"]));
    // Answered in key order: `bee` declined, `q1.1.1` accepted; results in call order.
    assert_eq!(step(&steps, "done")["text"], "accept/decline", "{steps:#?}");
}

#[test]
fn a_multi_round_call_answers_input_required_with_a_sealed_state() {
    let fx = fixture();
    let steps = run(
        &fx,
        "stdio",
        MODERN,
        json!({
            "elicitation": [{"action": "accept", "content": {"name": "Ada"}}],
            "steps": [
                {"name": "round", "round": "greet", "args": {"greeting": "Hi"}},
                {"name": "done", "round": "greet", "args": {"greeting": "Hi"}, "state": "last", "answer": true}
            ]
        }),
    );
    let round = step(&steps, "round");
    assert_eq!(round["result_type"], "input_required", "{steps:#?}");
    assert_eq!(round["methods"], json!(["elicitation/create"]));
    assert!(
        round["state"].as_str().unwrap().starts_with("rs1."),
        "{round}"
    );
    assert_eq!(step(&steps, "done")["text"], "Hi, Ada", "{steps:#?}");
}

/// `round`, then a retry of it as `retry` says (state changed, other arguments, ...).
fn refused_retry(retry: Value) -> Value {
    let fx = fixture();
    let mut retry = retry;
    retry["name"] = json!("retry");
    retry["round"] = json!("greet");
    retry["answer"] = json!(true);
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "elicitation": [{"action": "accept", "content": {"name": "Mallory"}}],
            "steps": [{"name": "round", "round": "greet", "args": {"greeting": "Hi"}}, retry]
        }),
    );
    step(&steps, "retry")["error"].clone()
}

#[test]
fn a_tampered_state_is_refused() {
    let error = refused_retry(json!({"args": {"greeting": "Hi"}, "state": "tampered"}));
    assert_eq!(error["code"], -32602, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("requestState does not verify"),
        "{error}"
    );
}

#[test]
fn a_state_replayed_with_other_arguments_is_refused() {
    let error = refused_retry(json!({"args": {"greeting": "Bye"}, "state": "last"}));
    assert_eq!(error["code"], -32602, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("with other arguments"),
        "{error}"
    );
}

#[test]
fn a_state_replayed_against_another_tool_is_refused() {
    let fx = fixture();
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "elicitation": [{"action": "decline"}],
            "steps": [
                {"name": "round", "round": "pair"},
                {"name": "retry", "round": "greet", "state": "last"}
            ]
        }),
    );
    let error = &step(&steps, "retry")["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("belongs to a call of tool 'pair', not 'greet'"),
        "{error}"
    );
}

/// A round sealed by the first of two `serve --http` processes, answered to the second.
fn resumed_by_a_second_server(config: &str) -> Value {
    let fx = fixture();
    fx.write("toolhost.toml", config);
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "servers": 2,
            "env": {"TOOLHOST_TEST_STATE_KEY": KEY},
            "elicitation": [{"action": "accept", "content": {"name": "Ada"}}],
            "steps": [
                {"name": "round", "round": "greet", "server": 0},
                {"name": "resumed", "round": "greet", "state": "last", "answer": true, "server": 1}
            ]
        }),
    );
    step(&steps, "resumed").clone()
}

#[test]
fn a_second_server_holding_the_same_key_continues_the_round() {
    let resumed =
        resumed_by_a_second_server("[serve]\nstate_key_env = \"TOOLHOST_TEST_STATE_KEY\"\n");
    assert_eq!(resumed["text"], "Hello, Ada", "{resumed}");
}

#[test]
fn without_a_shared_key_a_second_server_refuses_the_state() {
    let resumed = resumed_by_a_second_server("");
    assert_eq!(resumed["error"]["code"], -32602, "{resumed}");
}

/// `greet` (which needs elicitation) called by a client without it.
fn missing_capability(transport: &str, mode: &str) -> Value {
    let fx = fixture();
    let steps = run(
        &fx,
        transport,
        mode,
        json!({"elicitation": null, "steps": [{"name": "call", "call": "greet"}]}),
    );
    step(&steps, "call")["error"].clone()
}

#[test]
fn a_client_without_elicitation_gets_32021_on_a_2025_session() {
    let error = missing_capability("stdio", LEGACY);
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[test]
fn a_client_without_elicitation_gets_32021_on_2026() {
    let error = missing_capability("http", MODERN);
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[test]
fn a_missing_capability_on_2026_http_is_a_400() {
    let fx = fixture();
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (mut child, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "greet", "arguments": {},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    }}});
    let reply = RawHttp::connect(&authority).request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "greet"),
        ],
        call.to_string().as_bytes(),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.message()["error"]["code"], -32021);
}

fn approval_asks(transport: &str, mode: &str) {
    let fx = fixture();
    ask_scenarios::approval_asks(&fx, |spec| run(&fx, transport, mode, spec));
}

#[test]
fn the_approval_gate_asks_the_user_and_honours_decline_on_a_2025_session() {
    approval_asks("stdio", LEGACY);
}

#[test]
fn the_approval_gate_asks_the_user_and_honours_decline_on_2026() {
    approval_asks("http", MODERN);
}

#[test]
fn approval_mcp_deny_refuses_without_asking() {
    let fx = fixture();
    fx.write("toolhost.toml", "[approval]\nmcp = \"deny\"\n");
    let steps = run(
        &fx,
        "stdio",
        LEGACY,
        json!({
            "elicitation": [{"action": "accept", "content": {}}],
            "steps": [{"name": "call", "call": "guarded", "args": {"path": "m.txt"}}]
        }),
    );
    let call = step(&steps, "call");
    assert_eq!(call["ok"], false, "{call}");
    assert_eq!(call["asked"], json!([]));
    assert!(!fx.root().join("m.txt").exists());
}

#[test]
fn a_client_without_elicitation_falls_back_to_approval_default() {
    let fx = fixture();
    fx.write("toolhost.toml", "[approval]\ndefault = \"allow\"\n");
    let steps = run(
        &fx,
        "stdio",
        LEGACY,
        json!({"elicitation": null, "steps": [{"name": "call", "call": "guarded", "args": {"path": "m.txt"}}]}),
    );
    assert_eq!(step(&steps, "call")["text"], "wrote", "{steps:#?}");
}

#[test]
fn roots_asked_on_2026_narrow_fs_for_the_rest_of_the_call() {
    let fx = fixture();
    fx.write("inside/a.txt", "inside");
    fx.write("outside.txt", "outside");
    let root = fx.root().canonicalize().unwrap();
    let inside = root.join("inside/a.txt").display().to_string();
    let outside = root.join("outside.txt").display().to_string();
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "roots": [format!("file://{}", root.join("inside").display())],
            "steps": [
                {"name": "first", "round": "peek", "args": {"path": inside}},
                {"name": "inside", "call": "peek", "args": {"path": inside}},
                {"name": "outside", "call": "peek", "args": {"path": outside}}
            ]
        }),
    );
    let first = step(&steps, "first");
    assert_eq!(first["keys"], json!(["q1"]), "{steps:#?}");
    assert_eq!(first["methods"], json!(["roots/list"]));
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
fn a_client_that_never_answers_meets_the_calls_deadline() {
    let fx = fixture();
    let steps = run(
        &fx,
        "stdio",
        LEGACY,
        json!({
            "elicitation": [{"action": "hang"}],
            "steps": [{"name": "call", "call": "impatient"}]
        }),
    );
    let call = step(&steps, "call");
    assert_eq!(call["ok"], false, "{call}");
    assert!(
        call["text"]
            .as_str()
            .unwrap()
            .contains("\"error_type\":\"timeout\""),
        "{call}"
    );
}

#[test]
fn approving_a_tool_on_2026_does_not_approve_the_tool_it_calls() {
    let fx = fixture();
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "elicitation": [{"action": "accept", "content": {}}, {"action": "decline"}],
            "steps": [{"name": "call", "call": "delegating", "args": {"path": "m.txt"}}]
        }),
    );
    let call = step(&steps, "call");
    assert_eq!(call["text"], "approval_denied", "{call}");
    assert_eq!(
        call["asked"],
        json!([
            "Allow delegating with {\"path\":\"m.txt\"}?",
            "Allow guarded with {\"path\":\"m.txt\"}?"
        ])
    );
    assert!(!fx.root().join("m.txt").exists(), "the declined child ran");
}

/// `capital` answered by the client's (scripted) model.
fn sampling_reaches_the_handler(transport: &str, mode: &str) {
    let fx = fixture();
    let steps = run(
        &fx,
        transport,
        mode,
        json!({"sampling": "Paris", "steps": [{"name": "call", "call": "capital"}]}),
    );
    let call = step(&steps, "call");
    assert_eq!(call["text"], "assistant (scripted-model): Paris", "{call}");
    assert_eq!(call["asked"], json!(["sampling: user: Capital of France?"]));
}

#[test]
fn sampling_reaches_the_handler_on_a_2025_session() {
    sampling_reaches_the_handler("stdio", LEGACY);
}

#[test]
fn sampling_reaches_the_handler_on_2026() {
    sampling_reaches_the_handler("http", MODERN);
}

#[test]
fn ctx_roots_lists_the_clients_roots_on_a_2025_session() {
    let fx = fixture();
    fx.write("inside/a.txt", "inside");
    let root = fx.root().canonicalize().unwrap();
    let inside = root.join("inside/a.txt").display().to_string();
    let steps = run(
        &fx,
        "stdio",
        LEGACY,
        json!({
            "roots": [format!("file://{}", root.join("inside").display())],
            "steps": [{"name": "call", "call": "peek", "args": {"path": inside}}]
        }),
    );
    assert_eq!(
        step(&steps, "call")["text"],
        "1 root(s): inside",
        "{steps:#?}"
    );
}

#[test]
fn serve_refuses_to_start_with_a_short_state_key() {
    let fx = fixture();
    fx.write(
        "toolhost.toml",
        "[serve]\nstate_key_env = \"TOOLHOST_TEST_STATE_KEY\"\n",
    );
    let out = fx
        .toolhost()
        .env("TOOLHOST_TEST_STATE_KEY", "too short")
        .arg("serve")
        .write_stdin("")
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[serve] state_key_env: the key in $TOOLHOST_TEST_STATE_KEY is unusable"),
        "{stderr}"
    );
    assert!(stderr.contains("at least 32 bytes"), "{stderr}");
}

#[test]
fn responses_that_answer_nothing_asked_are_asked_again() {
    let fx = fixture();
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "elicitation": [],
            "steps": [{"name": "stray", "round": "greet",
                       "responses": {"wrong_key": {"action": "accept", "content": {"name": "x"}}}}]
        }),
    );
    let stray = step(&steps, "stray");
    assert_eq!(stray["result_type"], "input_required", "{stray}");
    assert_eq!(stray["keys"], json!(["q1"]));
}

#[test]
fn an_answer_offered_before_it_is_asked_answers_that_request() {
    let fx = fixture();
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "elicitation": [],
            "steps": [{"name": "offered", "round": "greet",
                       "responses": {"q1": {"action": "accept", "content": {"name": "Ada"}},
                                     "extra": {"action": "accept", "content": {}}}}]
        }),
    );
    assert_eq!(step(&steps, "offered")["text"], "Hello, Ada", "{steps:#?}");
}

#[test]
fn an_approval_offered_before_it_is_asked_is_not_taken() {
    let fx = fixture();
    let steps = run(
        &fx,
        "http",
        MODERN,
        json!({
            "elicitation": [],
            "steps": [{"name": "offered", "round": "guarded", "args": {"path": "m.txt"},
                       "responses": {"toolhost/approval": {"action": "accept", "content": {}}}}]
        }),
    );
    let offered = step(&steps, "offered");
    assert_eq!(offered["keys"], json!(["toolhost/approval"]), "{offered}");
    assert!(
        !fx.root().join("m.txt").exists(),
        "an unasked approval ran the tool"
    );
}
