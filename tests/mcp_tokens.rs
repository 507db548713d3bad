//! Named static tokens (`[[serve.tokens]]`, `auth_token_env` as `default`) with the real
//! `toolhost serve --http`: each token is its own caller (`ctx.caller`), whose tasks the
//! others cannot see; a token whose variable is unset stops the start naming the token and
//! the variable (never a value); config mistakes name their key.

mod common;

use common::Fixture;
use common::raw_http::{RawHttp, Reply, tools_call};
use serde_json::{Value, json};
use std::process::{Child, Command};

const TASKS: &str = "io.modelcontextprotocol/tasks";

const TOOLS: &str = r#"
registry.register{ name = "whoami", toolset = "t",
  schema = { description = "Who is calling", parameters = { type = "object" } },
  handler = function(args, ctx)
    return { id = ctx.caller.id, kind = ctx.caller.kind,
             has_scopes = ctx.caller.scopes ~= nil }
  end }
registry.register{ name = "sum", toolset = "t", task = "optional",
  schema = { description = "Adds", parameters = { type = "object",
    properties = { a = { type = "integer" }, b = { type = "integer" } } } },
  handler = function(args) return tostring(args.a + args.b) end }
"#;

const CONFIG: &str = r#"
[serve]
auth_token_env = "MAIN_TOKEN"
task_ttl_ms = 600000

[[serve.tokens]]
name = "ci"
token_env = "CI_TOKEN"

[[serve.tokens]]
name = "nightly"
token_env = "NIGHTLY_TOKEN"
"#;

struct Server {
    child: Child,
    authority: String,
    _fx: Fixture,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", CONFIG);
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env("MAIN_TOKEN", "main-secret")
        .env("CI_TOKEN", "ci-secret")
        .env("NIGHTLY_TOKEN", "nightly-secret")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (child, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    Server {
        child,
        authority,
        _fx: fx,
    }
}

/// A session opened with one token.
struct Session {
    http: RawHttp,
    id: String,
    authorization: String,
}

impl Session {
    fn open(server: &Server, token: &str) -> Self {
        let mut session = Self {
            http: RawHttp::connect(&server.authority),
            id: String::new(),
            authorization: format!("Bearer {token}"),
        };
        let init = session.send(common::raw_http::INITIALIZE);
        assert_eq!(init.status, 200, "{}", init.text());
        session.id = init
            .header("mcp-session-id")
            .expect("a session")
            .to_string();
        let done = session.send(common::raw_http::INITIALIZED);
        assert_eq!(done.status, 202, "{}", done.text());
        session
    }

    fn send(&mut self, body: &str) -> Reply {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", self.authorization.as_str()),
        ];
        if !self.id.is_empty() {
            headers.push(("Mcp-Session-Id", self.id.as_str()));
        }
        self.http.request("POST", "/mcp", &headers, body.as_bytes())
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let body = json!({ "jsonrpc": "2.0", "id": 11, "method": method, "params": params });
        let reply = self.send(&body.to_string());
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.message()
    }

    fn whoami(&mut self) -> Value {
        let reply = self.send(&tools_call(5, "whoami", "{}"));
        let message = reply.message();
        let text = message["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        serde_json::from_str(text).unwrap_or_else(|_| panic!("{message}"))
    }
}

#[test]
fn each_named_token_is_its_own_caller() {
    let server = start();
    let callers: Vec<Value> = ["main-secret", "ci-secret", "nightly-secret"]
        .iter()
        .map(|token| Session::open(&server, token).whoami())
        .collect();
    let expected = ["default", "ci", "nightly"]
        .map(|id| json!({ "id": id, "kind": "token", "has_scopes": false }));
    assert_eq!(callers, expected);
}

#[test]
fn a_token_none_of_the_named_ones_is_refused() {
    let server = start();
    let mut http = RawHttp::connect(&server.authority);
    let reply = http.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", "Bearer ci-secre"),
        ],
        common::raw_http::INITIALIZE.as_bytes(),
    );
    assert_eq!(reply.status, 401, "{}", reply.text());
}

#[test]
fn one_tokens_tasks_are_invisible_to_another() {
    let server = start();
    let declared = json!({ "io.modelcontextprotocol/clientCapabilities":
                           { "extensions": { TASKS: {} } } });
    let mut ci = Session::open(&server, "ci-secret");
    let created = ci.request(
        "tools/call",
        json!({ "name": "sum", "arguments": { "a": 2, "b": 3 }, "_meta": declared }),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();
    let mut nightly = Session::open(&server, "nightly-secret");
    for method in ["tasks/get", "tasks/cancel"] {
        let answer = nightly.request(method, json!({ "taskId": id, "_meta": declared }));
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }
    // Its owner reads it, also from another session.
    let mut ci_again = Session::open(&server, "ci-secret");
    let own = ci_again.request("tasks/get", json!({ "taskId": id, "_meta": declared }));
    assert_eq!(own["result"]["taskId"], id, "{own}");
}

#[test]
fn a_session_opened_with_one_token_is_unknown_to_another() {
    let server = start();
    let ci = Session::open(&server, "ci-secret");
    let mut borrowed = Session {
        http: RawHttp::connect(&server.authority),
        id: ci.id.clone(),
        authorization: "Bearer nightly-secret".to_string(),
    };
    let reply = borrowed.send(&tools_call(8, "whoami", "{}"));
    assert_eq!(reply.status, 404, "{}", reply.text());
    // A refusal closes its connection: the stream is asked for on a new one.
    let stream = RawHttp::connect(&server.authority).request(
        "GET",
        "/mcp",
        &[
            ("Accept", "text/event-stream"),
            ("Authorization", "Bearer nightly-secret"),
            ("Mcp-Session-Id", ci.id.as_str()),
        ],
        b"",
    );
    assert_eq!(stream.status, 404, "{}", stream.text());
    // Its owner goes on using it.
    let mut owner = ci;
    assert_eq!(owner.whoami()["id"], "ci");
}

#[test]
fn a_named_token_whose_variable_is_unset_stops_the_start_naming_it() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", CONFIG);
    let output = fx
        .toolhost()
        .env("MAIN_TOKEN", "main-secret")
        .env("CI_TOKEN", "ci-secret")
        .env_remove("NIGHTLY_TOKEN")
        .args(["serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("serve.tokens[1].token_env"), "{stderr}");
    assert!(stderr.contains("\"nightly\""), "{stderr}");
    assert!(stderr.contains("$NIGHTLY_TOKEN"), "{stderr}");
    assert!(!stderr.contains("ci-secret"), "{stderr}");
}

#[test]
fn a_bad_token_entry_is_an_error_naming_its_key() {
    let cases = [
        (
            "[[serve.tokens]]\nname = \"a\"\ntoken_env = \"A\"\n[[serve.tokens]]\nname = \"b\"\n",
            "serve.tokens[1].token_env",
        ),
        (
            "[[serve.tokens]]\ntoken_env = \"A\"\n",
            "serve.tokens[0].name",
        ),
        (
            "[[serve.tokens]]\nname = \"a\"\ntoken_env = \"A\"\n[[serve.tokens]]\nname = \"a\"\ntoken_env = \"B\"\n",
            "serve.tokens[1].name: a token named \"a\" is already defined",
        ),
        (
            "[serve]\nauth_token_env = \"T\"\n[[serve.tokens]]\nname = \"default\"\ntoken_env = \"B\"\n",
            "serve.tokens[0].name: a token named \"default\"",
        ),
        (
            "[[serve.tokens]]\nname = \"a\"\ntoken_env = \"A\"\ntoken = \"inline\"\n",
            "token",
        ),
    ];
    common::assert_configs_refused(TOOLS, cases);
}

#[test]
fn a_stdio_caller_is_local() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let output = fx
        .toolhost()
        .args(["call", "whoami", "{}"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let caller: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{stdout}"));
    assert_eq!(
        caller,
        json!({ "id": "local", "kind": "local", "has_scopes": false })
    );
}
