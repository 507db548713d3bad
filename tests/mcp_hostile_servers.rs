//! `[mcp_servers.NAME]` against servers that misbehave: endless or huge tool listings,
//! tools nested too deeply or unreadable, answers that cannot be parsed. The server is
//! `tests/mcp/raw_server.py` (JSON-RPC by hand, to send what no SDK would), its listing
//! chosen by the file `listing` in the fixture directory.

mod common;

use common::{Fixture, call, simple_tool, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// `[mcp_servers.raw]` running the raw server, with `extra` lines in its section.
fn raw_server(fx: &Fixture, extra: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/raw_server.py");
    format!(
        "[mcp_servers.raw]\ncommand = [\"python3\", {:?}]\nenv = {{ FIXTURE_DIR = {:?} }}\n{extra}\n",
        script.display().to_string(),
        fx.root().display().to_string(),
    )
}

/// The highest page cursor the server was asked for (0: only first pages).
fn deepest_page(fx: &Fixture) -> u64 {
    std::fs::read_to_string(fx.root().join("pages"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1)?.parse().ok())
        .max()
        .unwrap_or(0)
}

/// `discover --json`'s row for the server `mcp:raw`.
fn server_row(fx: &Fixture) -> Value {
    let out = fx.toolhost().args(["discover", "--json"]).output().unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "discover --json: {e}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    rows.as_array()
        .unwrap()
        .iter()
        .find(|row| row["path"] == "mcp:raw")
        .cloned()
        .unwrap_or_else(|| panic!("no row for mcp:raw: {rows}"))
}

/// The reason the server `raw` is down, as `discover` reports it.
fn down_reason(fx: &Fixture) -> String {
    let row = server_row(fx);
    assert_eq!(row["registers"], false, "the server is down: {row}");
    row["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn an_endless_listing_marks_the_server_down_after_the_limit() {
    let fx = Fixture::new();
    fx.write("listing", "endless");
    fx.write("toolhost.toml", raw_server(&fx, ""));
    let reason = down_reason(&fx);
    assert!(
        reason.starts_with(
            "MCP server 'raw' failed to start: it lists more than 1000 tools (max_tools)"
        ),
        "{reason}"
    );
    // 500 tools a page: the third page is over the limit, and no fourth is asked for.
    assert_eq!(deepest_page(&fx), 2);
}

#[test]
fn an_endless_listing_after_list_changed_marks_the_server_down_and_other_tools_work() {
    let fx = Fixture::new();
    fx.tool("local.lua", &simple_tool("local_tool", "t", "here"));
    let host = fx.host_with(&raw_server(&fx, ""));
    assert_eq!(host.unavailable_reason("mcp__raw__echo", None), None);
    fx.write("listing", "endless");
    call(&host, "mcp__raw__grow", json!({}));
    let mut reason = None;
    assert!(
        wait_until(Duration::from_secs(30), || {
            reason = host.unavailable_reason("mcp__raw__echo", None);
            reason.is_some()
        }),
        "the server was never marked down"
    );
    let reason = reason.unwrap();
    assert!(
        reason.contains("it lists more than 1000 tools (max_tools)"),
        "{reason}"
    );
    // The third page (1,500 tools) was over the limit: no fourth asked for.
    assert_eq!(deepest_page(&fx), 2);
    assert_eq!(call(&host, "local_tool", json!({})), json!("here"));
}

#[test]
fn a_huge_listing_marks_the_server_down_with_the_reason() {
    let fx = Fixture::new();
    fx.write("listing", "huge");
    fx.write("toolhost.toml", raw_server(&fx, ""));
    let reason = down_reason(&fx);
    assert!(
        reason.contains("it lists more than 1000 tools (max_tools)"),
        "{reason}"
    );
}

#[test]
fn a_listing_over_max_list_bytes_marks_the_server_down() {
    let fx = Fixture::new();
    fx.write("listing", "bytes");
    fx.write("toolhost.toml", raw_server(&fx, ""));
    let reason = down_reason(&fx);
    assert!(
        reason.contains("its tool list is larger than 8388608 bytes (max_list_bytes)"),
        "{reason}"
    );
}

#[test]
fn a_single_message_over_the_size_limit_marks_the_server_down_at_once() {
    let fx = Fixture::new();
    fx.write("listing", "big_line");
    // A connect timeout far beyond the test's patience: the reason must not be a timeout.
    fx.write(
        "toolhost.toml",
        raw_server(&fx, "connect_timeout_ms = 120000"),
    );
    let reason = down_reason(&fx);
    assert!(
        reason.contains("it sent a message longer than 16777216 bytes"),
        "{reason}"
    );
}

#[test]
fn a_tool_nested_too_deeply_or_unreadable_is_left_out_and_the_rest_kept() {
    let fx = Fixture::new();
    fx.write("listing", "deep");
    fx.write(
        "toolhost.toml",
        raw_server(&fx, "connect_timeout_ms = 120000"),
    );
    let row = server_row(&fx);
    assert_eq!(row["registers"], true, "{row}");
    let tools: Vec<&str> = row["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"mcp__raw__echo"), "{tools:?}");
    let out = fx.toolhost().arg("discover").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for (tool, why) in [
        ("deep_input", "nested 304 levels deep (at most 64)"),
        ("deep_output", "nested 304 levels deep"),
        ("deep_annotations", "nested 302 levels deep"),
        ("deep_meta", "nested 302 levels deep"),
        ("deep_nodesc", "nested 304 levels deep"),
        ("moderately_deep", "nested 84 levels deep"),
        ("schema_list", "it cannot be read: invalid type: sequence"),
        ("schema_string", "it cannot be read: invalid type: string"),
        ("schema_null", "it cannot be read: invalid type: null"),
        ("schema_of_a_string", "must be a JSON-Schema object"),
    ] {
        assert!(
            !tools.contains(&format!("mcp__raw__{tool}").as_str()),
            "{tool} is left out: {tools:?}"
        );
        let line = format!("MCP server 'raw': tool '{tool}' left out: ");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&line) && l.contains(why)),
            "{line}{why} in:\n{text}"
        );
    }
    let echo = fx
        .toolhost()
        .args(["call", "mcp__raw__echo", "{\"text\": \"still here\"}"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&echo.stdout).trim(), "still here");
}

#[test]
fn an_answer_that_cannot_be_read_is_an_error_naming_the_server_not_a_timeout() {
    let fx = Fixture::new();
    let host = fx.host_with(&raw_server(&fx, "timeout_ms = 120000"));
    let out = call(&host, "mcp__raw__deep_result", json!({}));
    assert_eq!(out["error_type"], "handler_error", "{out}");
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains("MCP server 'raw'") && error.contains("the answer cannot be read"),
        "{error}"
    );
    // The session goes on.
    assert_eq!(
        call(&host, "mcp__raw__echo", json!({"text": "next"})),
        json!("next")
    );
}

#[test]
fn a_zero_listing_limit_is_a_config_error_naming_the_key() {
    for key in ["max_tools", "max_list_bytes", "list_timeout_ms"] {
        let fx = Fixture::new();
        fx.write(
            "toolhost.toml",
            format!("[mcp_servers.x]\ncommand = [\"a\"]\n{key} = 0\n"),
        );
        let out = fx.toolhost().arg("list").output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("mcp_servers.x.{key}")), "{err}");
    }
}

/// `tests/mcp/raw_http_server.py` (the raw server's answers as SSE events), killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(fx: &Fixture) -> Self {
        use std::io::BufRead;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/raw_http_server.py");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .env("FIXTURE_DIR", fx.root())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().trim_start_matches("listening ").to_string();
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn over_http_a_tool_nested_too_deeply_is_left_out_and_the_rest_kept() {
    let fx = Fixture::new();
    let server = HttpServer::start(&fx);
    fx.write("listing", "deep");
    fx.write(
        "toolhost.toml",
        format!(
            "[mcp_servers.raw]\nurl = {:?}\nconnect_timeout_ms = 120000\n",
            server.url
        ),
    );
    let row = server_row(&fx);
    assert_eq!(row["registers"], true, "{row}");
    let tools: Vec<&str> = row["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"mcp__raw__echo"), "{tools:?}");
    assert!(!tools.contains(&"mcp__raw__deep_input"), "{tools:?}");
    let out = fx.toolhost().arg("discover").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("MCP server 'raw': tool 'deep_input' left out: nested 304 levels deep"),
        "{text}"
    );
}

#[test]
fn over_http_an_answer_that_cannot_be_read_is_an_error_not_a_timeout() {
    let fx = Fixture::new();
    let server = HttpServer::start(&fx);
    let host = fx.host_with(&format!(
        "[mcp_servers.raw]\nurl = {:?}\ntimeout_ms = 120000\n",
        server.url
    ));
    let out = call(&host, "mcp__raw__deep_result", json!({}));
    assert_eq!(out["error_type"], "handler_error", "{out}");
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains("MCP server 'raw'") && error.contains("the answer cannot be read"),
        "{error}"
    );
    assert_eq!(
        call(&host, "mcp__raw__echo", json!({"text": "next"})),
        json!("next")
    );
}
