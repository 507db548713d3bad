//! `logging/setLevel` decides which of a call's log lines reach the session that set it
//! (docs/mcp-server.md): raw exchanges with the real `toolhost serve` over stdio, the
//! official client over HTTP with two sessions side by side; `--stateless` has no session to keep a level and
//! says so instead of answering `{}`.

mod common;

use common::Fixture;
use common::mcp_client::{run_script, step};
use common::raw_http::{RawHttp, tools_call};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool(
        "chatty.lua",
        r#"registry.register{ name = "chatty", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function()
    log.debug("a debug line") log.info("an info line") log.warn("a warning line")
    log.error("an error line")
    return "done"
  end }"#,
    );
    fx
}

fn set_level(id: u64, level: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"logging/setLevel","params":{{"level":"{level}"}}}}"#
    )
}

/// The levels of the `notifications/message` among `messages`, in order.
fn levels(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["level"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn set_level_decides_which_log_lines_a_stdio_client_gets() {
    let fx = fixture();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "-q", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("toolhost serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (send, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    // Everything the server writes up to and including the answer to `id` (a
    // notification, `None`, has none).
    let mut exchange = |request: &str, id: Option<u64>| -> Vec<Value> {
        writeln!(stdin, "{request}").expect("write");
        stdin.flush().expect("flush");
        let mut seen = Vec::new();
        let Some(id) = id else {
            return seen;
        };
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(20))
                .expect("the server answers");
            let message: Value = serde_json::from_str(&line).expect("JSON");
            let done = message["id"] == id;
            seen.push(message);
            if done {
                return seen;
            }
        }
    };
    exchange(INITIALIZE, Some(0));
    exchange(INITIALIZED, None);

    let default = exchange(&tools_call(1, "chatty", "{}"), Some(1));
    assert_eq!(levels(&default), ["warning", "error"], "{default:?}");
    let set = exchange(&set_level(2, "error"), Some(2));
    assert_eq!(set.last().unwrap()["result"], json!({}), "{set:?}");
    let errors_only = exchange(&tools_call(3, "chatty", "{}"), Some(3));
    assert_eq!(levels(&errors_only), ["error"], "{errors_only:?}");
    // Above anything a tool logs: nothing at all.
    exchange(&set_level(4, "critical"), Some(4));
    let silent = exchange(&tools_call(5, "chatty", "{}"), Some(5));
    assert_eq!(levels(&silent), Vec::<String>::new(), "{silent:?}");
    exchange(&set_level(6, "debug"), Some(6));
    let all = exchange(&tools_call(7, "chatty", "{}"), Some(7));
    assert_eq!(
        levels(&all),
        ["debug", "info", "warning", "error"],
        "{all:?}"
    );
    drop(stdin);
    let _ = child.wait();
}

fn http_server(fx: &Fixture, extra: &[&str]) -> (std::process::Child, String) {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"])
        .args(extra);
    let (server, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    (server, authority)
}

/// Over HTTP log lines go out on each session's own stream: two sessions of the official
/// client, side by side, each get the lines at or above their own level.
#[test]
fn each_http_session_keeps_its_own_level() {
    let fx = fixture();
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "log_level.py",
        &[binary.to_str().unwrap(), fx.root().to_str().unwrap()],
    );
    assert_eq!(step(&steps, "quiet")["levels"], json!(["error"]));
    assert_eq!(
        step(&steps, "chatty")["levels"],
        json!(["info", "warning", "error"])
    );
}

#[test]
fn a_stateless_server_refuses_set_level_instead_of_ignoring_it() {
    let fx = fixture();
    let (mut server, authority) = http_server(&fx, &["--stateless"]);
    let mut http = RawHttp::connect(&authority);
    let reply = http.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        set_level(1, "error").as_bytes(),
    );
    let answer = reply.message();
    assert_eq!(answer["id"], 1, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("logging/setLevel") && message.contains("--stateless"),
        "{answer}"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}

/// A `tools/call` with its own level in `_meta` (`io.modelcontextprotocol/logLevel`).
fn call_at_level(id: u64, level: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"chatty","arguments":{{}},"_meta":{{"io.modelcontextprotocol/logLevel":"{level}"}}}}}}"#
    )
}

/// Every JSON-RPC message of an HTTP answer (a JSON body or an SSE stream).
fn messages(reply: &common::raw_http::Reply) -> Vec<Value> {
    let text = reply.text();
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        return vec![value];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// `--stateless` keeps no level, but a request can carry its own: the call's log lines at
/// or above it come on the call's own answer stream, and the next request without one is
/// back at `warning`.
#[test]
fn a_stateless_request_carries_its_own_level() {
    let fx = fixture();
    let (mut server, authority) = http_server(&fx, &["--stateless"]);
    let post = |body: &str| {
        let mut http = RawHttp::connect(&authority);
        let reply = http.request(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            body.as_bytes(),
        );
        messages(&reply)
    };
    let debug = post(&call_at_level(1, "debug"));
    assert_eq!(
        levels(&debug),
        ["debug", "info", "warning", "error"],
        "{debug:?}"
    );
    let plain = post(&tools_call(2, "chatty", "{}"));
    assert_eq!(levels(&plain), ["warning", "error"], "{plain:?}");
    server.kill().unwrap();
    server.wait().unwrap();
}
