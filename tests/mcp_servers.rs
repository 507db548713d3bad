//! `[mcp_servers.NAME]`: tools of other MCP servers in the registry and the pipeline.
//! The server is a real one: `tests/mcp/fixture_server.py`, written with the official
//! SDK's MCPServer (FastMCP, renamed in mcp 2) and run in the test venv; and `toolhost
//! serve` itself (toolhost aggregating toolhost).

mod common;

use common::fixture_server::py_server;
use common::mcp_client::{python, run_script, step};
use common::{Fixture, call, simple_tool, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// A structured result's object (a model sees it as JSON text).
fn structured(out: Value) -> Value {
    match &out {
        Value::String(text) => serde_json::from_str(text).unwrap_or(out),
        _ => out,
    }
}

#[test]
fn external_tools_are_registered_with_toolset_source_and_schema() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    let echo = host
        .tools(None)
        .into_iter()
        .find(|t| t.name == "mcp__py__echo")
        .expect("mcp__py__echo is registered");
    assert_eq!(echo.toolset, "mcp-py");
    assert_eq!(echo.source, "mcp:py");
    assert_eq!(echo.description, "Say the text back.");
    assert_eq!(host.unavailable_reason("mcp__py__echo", None), None);
}

#[test]
fn a_call_returns_the_servers_text() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    assert_eq!(
        structured(call(&host, "mcp__py__echo", json!({"text": "hi"}))),
        json!({"result": "hi"})
    );
}

#[test]
fn structured_content_is_kept_for_a_tool_with_an_output_schema() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    assert_eq!(
        structured(call(&host, "mcp__py__add", json!({"a": 2, "b": 3}))),
        json!({"result": 5})
    );
}

#[test]
fn is_error_becomes_handler_error_carrying_the_servers_text() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    let out = call(&host, "mcp__py__fail", json!({}));
    assert_eq!(out["error_type"], "handler_error");
    assert!(
        out["error"].as_str().unwrap().contains("disk full"),
        "{out}"
    );
}

#[test]
fn an_image_becomes_the_multimodal_envelope() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    let out = call(&host, "mcp__py__picture", json!({}));
    assert_eq!(out["_multimodal"], true);
    assert_eq!(out["content"][0]["type"], "image");
    assert_eq!(out["content"][0]["mime_type"], "image/png");
}

#[test]
fn arguments_are_validated_before_they_reach_the_server() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    let out = call(&host, "mcp__py__add", json!({"a": 1, "b": "two"}));
    assert_eq!(out["error_type"], "invalid_arguments");
    assert_eq!(out["path"], "$.b");
}

#[test]
fn lua_hooks_see_and_modify_external_calls() {
    let fx = Fixture::new();
    fx.tool(
        "hook.lua",
        r#"registry.hook("pre_tool_call", function(call)
  if call.tool_name == "mcp__py__echo" then
    return { action = "modify", args = { text = call.args.text .. "!" } }
  end
end)"#,
    );
    let host = fx.host_with(&py_server(&fx, ""));
    assert_eq!(
        structured(call(&host, "mcp__py__echo", json!({"text": "hi"}))),
        json!({"result": "hi!"})
    );
}

#[test]
fn approval_policy_applies_to_external_tools() {
    let fx = Fixture::new();
    let toml = format!(
        "[approval]\ntools = [\"mcp__py__note_drop\"]\n{}",
        py_server(&fx, "")
    );
    let host = fx.host_with(&toml);
    let out = call(&host, "mcp__py__note_drop", json!({"text": "x"}));
    assert_eq!(out["error_type"], "approval_denied", "{out}");
}

#[test]
fn include_and_exclude_globs_pick_the_tools() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(
        &fx,
        "tools = { include = [\"note_*\", \"echo\"], exclude = [\"note_drop\"] }",
    ));
    let mut names: Vec<String> = host
        .tools(None)
        .into_iter()
        .map(|t| t.name)
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    names.sort();
    assert_eq!(names, ["mcp__py__echo", "mcp__py__note_add"]);
}

#[test]
fn a_server_that_never_starts_does_not_stop_the_host() {
    let fx = Fixture::new();
    fx.tool("local.lua", &simple_tool("local_tool", "t", "here"));
    let toml = format!(
        "[mcp_servers.broken]\ncommand = [\"{}/no-such-server\"]\n{}",
        fx.root().display(),
        py_server(&fx, "")
    );
    let host = fx.host_with(&toml);
    assert_eq!(call(&host, "local_tool", json!({})), json!("here"));
    assert_eq!(
        structured(call(&host, "mcp__py__echo", json!({"text": "ok"}))),
        json!({"result": "ok"})
    );
}

#[test]
fn discover_reports_why_a_server_failed_to_start() {
    let fx = Fixture::new();
    fx.write(
        "toolhost.toml",
        "[mcp_servers.broken]\ncommand = [\"/no/such/server\"]\n",
    );
    let out = fx.toolhost().args(["discover", "--json"]).output().unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "mcp:broken")
        .expect("a row for the server");
    let error = row["error"].as_str().unwrap();
    assert!(
        error.starts_with("MCP server 'broken' failed to start: "),
        "{error}"
    );
}

#[test]
fn remembered_tools_of_a_server_that_fails_are_listed_unavailable_with_the_reason() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    fx.toolhost().arg("list").assert().success();
    // Same section, but now the server exits at start.
    fx.write("refuse", "");
    let out = fx.toolhost().args(["list", "--json"]).output().unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let echo = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "mcp__py__echo")
        .unwrap_or_else(|| panic!("the remembered tool is listed: {rows}"));
    assert_eq!(echo["available"], false);
    let reason = echo["unavailable_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("MCP server 'py' failed to start"),
        "{reason}"
    );
}

#[test]
fn a_changed_section_forgets_the_remembered_listing() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    fx.toolhost().arg("list").assert().success();
    fx.write("refuse", "");
    fx.write("toolhost.toml", py_server(&fx, "timeout_ms = 5000"));
    let out = fx.toolhost().args(["list", "--json"]).output().unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r["source"] != "mcp:py"),
        "{rows}"
    );
}

#[test]
fn list_shows_the_reason_for_a_server_with_no_known_tools() {
    let fx = Fixture::new();
    fx.write(
        "toolhost.toml",
        "[mcp_servers.broken]\ncommand = [\"/no/such/server\"]\n",
    );
    let out = fx.toolhost().arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("MCP server 'broken' failed to start"),
        "{text}"
    );
}

/// `toolhost list` under `toml`, which must be refused (exit 2); its stderr.
fn config_error(toml: &str) -> String {
    let fx = Fixture::new();
    fx.write("toolhost.toml", toml);
    let out = fx.toolhost().arg("list").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn both_command_and_url_is_a_config_error_naming_the_key() {
    let err =
        config_error("[mcp_servers.x]\ncommand = [\"a\"]\nurl = \"http://127.0.0.1:1/mcp\"\n");
    assert!(err.contains("mcp_servers.x"), "{err}");
}

#[test]
fn an_unknown_key_in_a_server_section_is_a_config_error() {
    let err = config_error("[mcp_servers.x]\ncommand = [\"a\"]\ncomand = [\"b\"]\n");
    assert!(err.contains("comand"), "{err}");
}

#[test]
fn ctx_call_runs_an_external_tool_through_the_pipeline() {
    let fx = Fixture::new();
    fx.tool(
        "shout.lua",
        r#"registry.register{
  name = "shout", toolset = "demo",
  schema = { description = "Echo loudly", parameters = { type = "object",
    properties = { text = { type = "string" } }, required = { "text" } } },
  handler = function(args, ctx)
    local out = ctx.call("mcp__py__echo", { text = args.text })
    return { loud = out.result:upper(), id = ctx.tool_call_id }
  end,
}"#,
    );
    let host = fx.host_with(&py_server(&fx, ""));
    let ctx = toolhost::CallContext::default().with_tool_call_id("call-1");
    let out = structured(common::call_in(&host, "shout", json!({"text": "hi"}), &ctx));
    assert_eq!(out, json!({"loud": "HI", "id": "call-1"}));
}

#[test]
fn ctx_call_returns_errors_as_tables() {
    let fx = Fixture::new();
    fx.tool(
        "relay.lua",
        r#"registry.register{
  name = "relay", toolset = "demo",
  schema = { description = "Relay", parameters = { type = "object" } },
  handler = function(args, ctx)
    local out = ctx.call("no_such_tool", {})
    return { got = out.error_type }
  end,
}"#,
    );
    let host = fx.host();
    assert_eq!(
        structured(call(&host, "relay", json!({}))),
        json!({"got": "unknown_tool"})
    );
}

#[test]
fn ctx_call_chains_stop_at_depth_8() {
    let fx = Fixture::new();
    fx.tool(
        "deep.lua",
        r#"registry.register{
  name = "deep", toolset = "demo",
  schema = { description = "Recurse", parameters = { type = "object",
    properties = { n = { type = "integer" } } } },
  handler = function(args, ctx)
    local n = args.n or 0
    local out = ctx.call("deep", { n = n + 1 })
    if out.depth then return out end -- a deeper level's answer, passed up
    return { depth = n, error_type = out.error_type, error = out.error }
  end,
}"#,
    );
    let host = fx.host();
    let out = structured(call(&host, "deep", json!({})));
    assert_eq!(out["depth"], 8, "{out}");
    assert_eq!(out["error_type"], "blocked");
    assert!(out["error"].as_str().unwrap().contains("too deep"), "{out}");
}

#[test]
fn toolhost_aggregates_toolhost() {
    let fx = Fixture::new();
    let inner = fx.root().join("inner");
    std::fs::create_dir_all(inner.join("tools-lua")).unwrap();
    std::fs::write(
        inner.join("tools-lua/greet.lua"),
        simple_tool("greet", "inner", "hello from inside"),
    )
    .unwrap();
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    fx.write(
        "toolhost.toml",
        format!(
            "[mcp_servers.inner]\ncommand = [{:?}, \"--tools-dir\", \"tools-lua\", \"--cache-dir\", \"cache\", \"serve\"]\ncwd = {:?}\n",
            binary.display().to_string(),
            inner.display().to_string()
        ),
    );
    let out = fx
        .toolhost()
        .args(["call", "mcp__inner__greet", "{}"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello from inside",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_timeout_answers_timeout_and_cancels_the_request_on_the_server() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, "timeout_ms = 1000"));
    let steps = run_script(
        "aggregate.py",
        &[
            assert_cmd::cargo::cargo_bin!("toolhost").to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "timeout",
        ],
    );
    let slow = step(&steps, "slow");
    assert!(
        slow["text"].as_str().unwrap().contains("\"timeout\""),
        "{slow}"
    );
    assert_eq!(step(&steps, "after")["error"], false);
    assert!(
        wait_until(Duration::from_secs(10), || fx
            .root()
            .join("cancelled")
            .exists()),
        "the server never saw notifications/cancelled"
    );
}

#[test]
fn a_servers_list_changed_reaches_our_own_clients() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let steps = run_script(
        "aggregate.py",
        &[
            assert_cmd::cargo::cargo_bin!("toolhost").to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "list_changed",
        ],
    );
    let relisted = step(&steps, "relisted")["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(relisted.contains(&json!("mcp__py__extra")), "{relisted:?}");
    assert_eq!(step(&steps, "extra")["text"], "{\"result\":\"extra here\"}");
}

/// How many times the fixture server has been asked for its tools.
fn listings(fx: &Fixture) -> usize {
    std::fs::read_to_string(fx.root().join("listings"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_server_repeating_list_changed_is_listed_at_a_bounded_pace() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    let before = listings(&fx);
    // 1.5 s of announcements, one a millisecond: hundreds, nothing changed.
    let sent = call(&host, "mcp__py__flood", json!({"seconds": 1.5}));
    // Then a real change; once it is registered, every announcement before it is handled.
    call(&host, "mcp__py__grow", json!({}));
    assert!(wait_until(Duration::from_secs(10), || host
        .tools(None)
        .iter()
        .any(|tool| tool.name == "mcp__py__extra")));
    // One listing per 500 ms at most: ≤ 4 during the flood, one for the change.
    let listed = listings(&fx) - before;
    assert!(listed <= 6, "{listed} listings for {sent}");
}

#[test]
fn a_killed_server_goes_unavailable_and_comes_back() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let steps = run_script(
        "aggregate.py",
        &[
            assert_cmd::cargo::cargo_bin!("toolhost").to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "restart",
        ],
    );
    let down = step(&steps, "down");
    assert!(
        down["text"].as_str().unwrap().contains("\"unavailable\""),
        "{down}"
    );
    let back = step(&steps, "back");
    assert_eq!(back["error"], false, "{back}");
    assert_ne!(
        back["text"],
        json!(format!("{{\"result\":\"{}\"}}", step(&steps, "pid")["pid"])),
        "a new process serves"
    );
}

/// The pids of `parent`'s children.
fn children_of(parent: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
        return pids;
    };
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    pids
}

/// Whether `pid` is gone (or a zombie about to be reaped).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn no_server_process_outlives_a_killed_host() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let mut host = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Vec::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            child = children_of(host.id());
            !child.is_empty()
        }),
        "the MCP server child never started"
    );
    host.kill().unwrap(); // SIGKILL: no destructor runs in the host
    host.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || child
            .iter()
            .all(|pid| is_gone(*pid))),
        "server processes {child:?} outlived the host"
    );
}

/// The pids the fixture server recorded at each start.
fn recorded_pids(fx: &Fixture) -> Vec<u32> {
    std::fs::read_to_string(fx.root().join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Whether a process `pid` exists at all (a zombie counts: it has not been reaped).
fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn no_server_process_outlives_a_cli_command() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    // Normal exit, error exit (the tool fails: exit 1), and a command that lists.
    let commands: [&[&str]; 3] = [
        &["call", "mcp__py__echo", "{\"text\": \"x\"}"],
        &["call", "mcp__py__fail", "{}"],
        &["list"],
    ];
    for run in 0..12 {
        let args = commands[run % commands.len()];
        let out = fx.toolhost().args(args).output().unwrap();
        assert!(
            out.status.code().is_some(),
            "run {run}: toolhost {args:?} died of a signal"
        );
        // Checked at once, not waited for: the command has exited, so its server must
        // already be gone (a killed server still running, or a zombie, is what leaked).
        let pids = recorded_pids(&fx);
        assert_eq!(
            pids.len(),
            run + 1,
            "run {run}: one server start per command"
        );
        for pid in pids {
            assert!(
                !exists(pid),
                "run {run}: server {pid} outlived `toolhost {}`",
                args.join(" ")
            );
        }
    }
}

#[test]
fn no_server_helper_outlives_a_cli_command() {
    // The server proper is the shell's child: a helper of the child we started, in its
    // process group; orphaned when the shell is killed.
    let fx = Fixture::new();
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/raw_server.py");
    fx.write(
        "toolhost.toml",
        format!(
            "[mcp_servers.sh]\ncommand = [\"sh\", \"-c\", \"python3 '{}'; echo ended\"]\nenv = {{ FIXTURE_DIR = {:?} }}\n",
            raw.display(),
            fx.root().display().to_string()
        ),
    );
    for run in 0..5 {
        let out = fx
            .toolhost()
            .args(["call", "mcp__sh__echo", "{\"text\": \"x\"}"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "x");
        let pids = recorded_pids(&fx);
        assert_eq!(pids.len(), run + 1);
        for pid in pids {
            assert!(
                !exists(pid),
                "run {run}: server helper {pid} outlived `toolhost call`"
            );
        }
    }
}

#[test]
fn no_server_process_outlives_a_terminated_host() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let mut host = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || !recorded_pids(&fx).is_empty()
            && !children_of(host.id()).is_empty()),
        "the MCP server child never started"
    );
    let pid = i32::try_from(host.id()).unwrap();
    // SAFETY: sends SIGTERM to the host we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = host.wait().unwrap();
    assert!(
        status.code().is_some(),
        "SIGTERM ends serve in order: {status}"
    );
    for pid in recorded_pids(&fx) {
        assert!(!exists(pid), "server {pid} outlived the terminated host");
    }
}

#[test]
fn no_server_process_outlives_an_interrupted_call() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let fx = Fixture::new();
        fx.write("toolhost.toml", py_server(&fx, ""));
        let mut host = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
            .current_dir(fx.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .args([
                "--cache-dir",
                "cache",
                "call",
                "mcp__py__slow",
                "{\"seconds\": 60}",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The call is under way once the server has listed its tools (the call follows).
        assert!(
            wait_until(Duration::from_secs(30), || listings(&fx) > 0),
            "the MCP server never listed its tools"
        );
        let pid = i32::try_from(host.id()).unwrap();
        // SAFETY: sends a signal to the process we started.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let status = host.wait().unwrap();
        assert_eq!(status.code(), Some(128 + signal), "{status}");
        for pid in recorded_pids(&fx) {
            assert!(
                !exists(pid),
                "server {pid} outlived the interrupted call ({signal})"
            );
        }
    }
}

/// `toolhost serve --http` on a free port with a tools dir holding `greet`, requiring the
/// bearer token in its `INNER_TOKEN`; returns the process and its URL.
fn inner_http_server(fx: &Fixture, token: &str) -> (std::process::Child, String) {
    let inner = fx.root().join("inner");
    std::fs::create_dir_all(inner.join("tools-lua")).unwrap();
    std::fs::write(
        inner.join("tools-lua/greet.lua"),
        simple_tool("greet", "inner", "hello over http"),
    )
    .unwrap();
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(&inner)
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env("INNER_TOKEN", token)
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"])
        .args(["--auth-token-env", "INNER_TOKEN"]);
    common::spawn_http_server(command)
}

#[test]
fn a_streamable_http_server_is_reached_with_its_bearer_token() {
    let fx = Fixture::new();
    let (mut inner, url) = inner_http_server(&fx, "s3cret");
    fx.write(
        "toolhost.toml",
        format!("[mcp_servers.remote]\nurl = {url:?}\nbearer_token_env = \"REMOTE_TOKEN\"\n"),
    );
    let out = fx
        .toolhost()
        .env("REMOTE_TOKEN", "s3cret")
        .args(["call", "mcp__remote__greet", "{}"])
        .output()
        .unwrap();
    inner.kill().unwrap();
    inner.wait().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello over http",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_missing_bearer_token_is_the_reason_the_server_is_down() {
    let fx = Fixture::new();
    fx.write(
        "toolhost.toml",
        "[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"NO_SUCH_TOKEN_VAR\"\n",
    );
    let out = fx
        .toolhost()
        .env_remove("NO_SUCH_TOKEN_VAR")
        .arg("list")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("NO_SUCH_TOKEN_VAR"), "{text}");
}

#[test]
fn editing_one_servers_section_restarts_just_that_server() {
    let fx = Fixture::new();
    let section = |name: &str, extra: &str| {
        py_server(&fx, extra).replace("[mcp_servers.py]", &format!("[mcp_servers.{name}]"))
    };
    let host = fx.host_with(&format!("{}{}", section("a", ""), section("b", "")));
    let pid = |tool: &str| structured(call(&host, tool, json!({})))["result"].clone();
    let (a, b) = (pid("mcp__a__pid"), pid("mcp__b__pid"));
    assert!(a.is_string() && b.is_string(), "{a} {b}");
    fx.write(
        "toolhost.toml",
        format!("{}{}", section("a", "timeout_ms = 20000"), section("b", "")),
    );
    host.reload();
    assert!(
        wait_until(Duration::from_secs(30), || {
            let now = pid("mcp__a__pid");
            now.is_string() && now != a
        }),
        "server a was not restarted"
    );
    assert_eq!(pid("mcp__b__pid"), b, "server b kept running");
}

/// `inner_http_server` behind `tests/mcp/tls_proxy.py` (a throwaway CA in `ca.pem`);
/// returns both processes and the https URL.
fn inner_https_server(fx: &Fixture) -> (std::process::Child, std::process::Child, String) {
    use std::io::BufRead;
    let (inner, url) = inner_http_server(fx, "tls-token");
    let port = url
        .trim_end_matches("/mcp")
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let mut proxy = std::process::Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/tls_proxy.py"))
        .arg(fx.root())
        .arg(&port)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = proxy.stdout.take().unwrap();
    let line = std::io::BufReader::new(stdout)
        .lines()
        .next()
        .expect("the proxy prints its port")
        .unwrap();
    let proxy_port = line.trim_start_matches("listening ").trim().to_string();
    (inner, proxy, format!("https://localhost:{proxy_port}/mcp"))
}

#[test]
fn an_https_server_is_reached_with_a_trusted_certificate() {
    let fx = Fixture::new();
    let (mut inner, mut proxy, url) = inner_https_server(&fx);
    fx.write(
        "toolhost.toml",
        format!("[mcp_servers.tls]\nurl = {url:?}\nbearer_token_env = \"TLS_TOKEN\"\n"),
    );
    let out = fx
        .toolhost()
        .env("SSL_CERT_FILE", fx.root().join("ca.pem"))
        .env("TLS_TOKEN", "tls-token")
        .args(["call", "mcp__tls__greet", "{}"])
        .output()
        .unwrap();
    for child in [&mut inner, &mut proxy] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello over http",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_untrusted_certificate_is_the_reason_the_server_is_down() {
    let fx = Fixture::new();
    let (mut inner, mut proxy, url) = inner_https_server(&fx);
    fx.write(
        "toolhost.toml",
        format!("[mcp_servers.tls]\nurl = {url:?}\nbearer_token_env = \"TLS_TOKEN\"\n"),
    );
    let out = fx
        .toolhost()
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .env("TLS_TOKEN", "tls-token")
        .args(["discover", "--json"])
        .output()
        .unwrap();
    for child in [&mut inner, &mut proxy] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "mcp:tls")
        .and_then(|r| r["error"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(error.contains("certificate"), "{error}");
}

/// A built-in tool `secret` and a plugin `acme` whose tool `relay` ctx.calls the tool named
/// in its arguments; `capabilities` are acme's.
fn plugin_relay_host(fx: &Fixture, capabilities: &str) -> toolhost::Host {
    fx.tool("secret.lua", &simple_tool("secret", "core", "the secret"));
    fx.write(
        "acme/relay.lua",
        r#"registry.register{ name = "relay", toolset = "acme",
  schema = { description = "Relays", parameters = { type = "object",
    properties = { to = { type = "string" } } } },
  handler = function(args, ctx) return { got = ctx.call(args.to, {}) } end }
registry.register{ name = "acme_own", toolset = "acme",
  schema = { description = "Own", parameters = { type = "object" } },
  handler = function() return "mine" end }"#,
    );
    fx.host_with(&format!(
        "[plugins.acme]\ndir = \"acme\"\ncapabilities = {capabilities}\n"
    ))
}

#[test]
fn a_plugin_may_ctx_call_only_its_own_tools_without_the_call_capability() {
    let fx = Fixture::new();
    let host = plugin_relay_host(&fx, "[\"json\"]");
    let out = structured(call(&host, "relay", json!({"to": "secret"})));
    assert_eq!(out["got"]["error_type"], "blocked", "{out}");
    assert!(
        out["got"]["error"]
            .as_str()
            .unwrap()
            .contains("add \"call\" to [plugins.acme] capabilities"),
        "{out}"
    );
    let own = structured(call(&host, "relay", json!({"to": "acme_own"})));
    assert_eq!(own["got"], "mine", "{own}");
}

#[test]
fn the_call_capability_lets_a_plugin_ctx_call_other_tools() {
    let fx = Fixture::new();
    let host = plugin_relay_host(&fx, "[\"json\", \"call\"]");
    let out = structured(call(&host, "relay", json!({"to": "secret"})));
    assert_eq!(out["got"], "the secret", "{out}");
}

/// A consumed server's progress and log line during a call reach the MCP client that called
/// the tool through toolhost: the progress under the client's own token, the log line as
/// the tool's `notifications/message` at the client's level.
#[test]
fn a_servers_progress_and_log_reach_the_client_that_called_through_toolhost() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let steps = run_script(
        "aggregate.py",
        &[
            assert_cmd::cargo::cargo_bin!("toolhost").to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "notify",
        ],
    );
    let report = step(&steps, "report");
    assert_eq!(report["error"], false, "{report}");
    // The official SDK wraps a plain return as `{"result": ...}` without FastMCP's marker:
    // it stays structured.
    assert_eq!(report["text"], r#"{"result":"reported"}"#, "{report}");
    // Progress is throttled to the latest report; the last one always goes out.
    let progress = report["progress"].as_array().expect("progress list");
    assert_eq!(
        progress.last(),
        Some(&json!({"done": 2.0, "total": 2.0, "message": "done"})),
        "{report}"
    );
    let logged = report["logged"].as_array().expect("log list");
    assert_eq!(logged.len(), 1, "{report}");
    assert_eq!(logged[0]["level"], "info", "{report}");
    assert_eq!(logged[0]["logger"], "mcp__py__report", "{report}");
    assert_eq!(
        logged[0]["data"],
        json!({"message": "report is halfway", "at": "mcp:py"}),
        "{report}"
    );
}

/// A FastMCP-wrapped plain value (`{"result": 42}` under an output schema marked
/// `x-fastmcp-wrap-result`) is the plain `42` to the pipeline, as FastMCP's clients see it.
#[test]
fn a_fastmcp_wrapped_value_comes_through_plain() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    // A tool result is a string or an object: a number is its JSON text, as in FastMCP's
    // own text block.
    assert_eq!(call(&host, "mcp__py__wrapped", json!({})), json!("42"));
}

/// Through `toolhost serve`, our MCP client gets the plain value as text, and the tool
/// declares no output schema (an object schema no longer describes it).
#[test]
fn a_fastmcp_wrapped_value_reaches_our_mcp_clients_plain() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let steps = run_script(
        "aggregate.py",
        &[
            assert_cmd::cargo::cargo_bin!("toolhost").to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "wrapped",
        ],
    );
    let wrapped = step(&steps, "wrapped");
    assert_eq!(wrapped["error"], false, "{wrapped}");
    assert_eq!(wrapped["text"], "42", "{wrapped}");
    assert_eq!(wrapped["structured"], Value::Null, "{wrapped}");
    assert_eq!(wrapped["output_schema"], Value::Null, "{wrapped}");
}

/// A consumed server's question during a call (`elicitation/create`) is asked of the MCP
/// client that called the tool through toolhost, and its answer goes back to the server:
/// accepted with content, then declined.
fn a_servers_question_reaches_the_client_that_called(transport: &str) {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let steps = run_script(
        "aggregate.py",
        &[
            assert_cmd::cargo::cargo_bin!("toolhost").to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "elicit",
            transport,
        ],
    );
    let elicit = step(&steps, "elicit");
    assert_eq!(elicit["error"], false, "{elicit}");
    assert_eq!(
        elicit["accepted"], r#"{"result":"accept:teal"}"#,
        "{elicit}"
    );
    assert_eq!(elicit["declined"], r#"{"result":"decline"}"#, "{elicit}");
    let asked = elicit["asked"].as_array().expect("questions");
    assert_eq!(asked.len(), 2, "{elicit}");
    assert_eq!(asked[0]["message"], "Which colour?", "{elicit}");
    assert_eq!(asked[0]["properties"], json!(["colour"]), "{elicit}");
}

#[test]
fn a_servers_question_reaches_a_stdio_client_that_called_through_toolhost() {
    a_servers_question_reaches_the_client_that_called("stdio");
}

#[test]
fn a_servers_question_reaches_an_http_client_that_called_through_toolhost() {
    a_servers_question_reaches_the_client_that_called("http");
}

/// A consumed server's question is an input request of the call like `ctx.ask`'s: the
/// embedder's asker answers it, under the key `mcp.SERVER.N` (the N-th question of the
/// call), and the answer reaches the server.
#[test]
fn a_servers_question_is_answered_by_the_calls_asker() {
    let fx = Fixture::new();
    let host = fx.host_with(&py_server(&fx, ""));
    let asker = toolhost::ScriptedAsker::from_json(
        &json!({ "mcp.py.1": { "action": "accept", "content": { "colour": "plum" } } }),
    )
    .expect("answers");
    let ctx = toolhost::CallContext::default().with_asker(std::sync::Arc::new(asker));
    let out = common::call_in(&host, "mcp__py__confirm", json!({}), &ctx);
    assert_eq!(structured(out), json!({ "result": "accept:plum" }));
}

/// A `toolhost serve` over piped stdio taking raw 2026-07-28 requests (no session; each
/// request's `_meta` declares `capabilities`).
struct Raw2026 {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    meta: Value,
    next_id: u64,
}

impl Raw2026 {
    fn start(fx: &Fixture, capabilities: Value) -> Self {
        use std::io::{BufRead, BufReader};
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
            .current_dir(fx.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .args(["--cache-dir", "cache", "-q", "serve"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("toolhost serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" }
        });
        Self {
            child,
            stdin,
            lines,
            meta,
            next_id: 0,
        }
    }

    /// The answer to `method` with `params` (and this client's `_meta`), within 60 s.
    fn request(&mut self, method: &str, mut params: Value) -> Value {
        use std::io::Write;
        self.next_id += 1;
        let id = self.next_id;
        params["_meta"] = self.meta.clone();
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        writeln!(self.stdin, "{request}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }
}

impl Drop for Raw2026 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// On 2026-07-28 a consumed server's question reaches our client as an input request of
/// the call's round (`input_required`), and the answer the client sends back with the
/// sealed state reaches the server when the call is made again.
#[test]
fn a_servers_question_reaches_a_2026_client_as_an_input_request() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    let mut client = Raw2026::start(&fx, json!({ "elicitation": {} }));
    let call = json!({ "name": "mcp__py__confirm", "arguments": {} });
    let first = client.request("tools/call", call.clone());
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let question = &result["inputRequests"]["mcp.py.1"];
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert_eq!(question["params"]["message"], "Which colour?", "{first}");
    let state = result["requestState"].as_str().expect("a sealed state");
    let mut retry = call;
    retry["requestState"] = json!(state);
    retry["inputResponses"] =
        json!({ "mcp.py.1": { "action": "accept", "content": { "colour": "teal" } } });
    let second = client.request("tools/call", retry);
    let result = &second["result"];
    assert_eq!(result["resultType"], "complete", "{second}");
    assert_eq!(result["isError"], false, "{second}");
    assert_eq!(
        result["content"][0]["text"], r#"{"result":"accept:teal"}"#,
        "{second}"
    );
}

/// Inside a task, a consumed server's question (made through `ctx.call`) puts the task in
/// `input_required`; `tasks/update` answers it and the server gets the answer.
#[test]
fn a_servers_question_inside_a_task_is_answered_by_tasks_update() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", py_server(&fx, ""));
    fx.tool(
        "relay.lua",
        r#"registry.register{ name = "colour_task", toolset = "t", task = "optional",
  timeout_ms = 60000,
  schema = { description = "Asks the py server's question", parameters = { type = "object" } },
  handler = function(_, ctx) return ctx.call("mcp__py__confirm", {}) end }"#,
    );
    let tasks = "io.modelcontextprotocol/tasks";
    let mut client = Raw2026::start(
        &fx,
        json!({ "elicitation": {}, "extensions": { tasks: {} } }),
    );
    let created = client.request(
        "tools/call",
        json!({ "name": "colour_task", "arguments": {} }),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();
    let waiting = wait_for_status(&mut client, &id, "input_required");
    let keys: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .map(|requests| requests.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["c1.mcp.py.1"], "{waiting}");
    let ack = client.request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": {
            "c1.mcp.py.1": { "action": "accept", "content": { "colour": "plum" } } } }),
    );
    assert!(ack.get("result").is_some(), "{ack}");
    let done = wait_for_status(&mut client, &id, "completed");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("accept:plum"), "{done}");
}

/// Polls `tasks/get` until the task has `status` (within 30 s).
fn wait_for_status(client: &mut Raw2026, id: &str, status: &str) -> Value {
    let start = std::time::Instant::now();
    loop {
        let answer = client.request("tasks/get", json!({ "taskId": id }));
        let task = answer["result"].clone();
        if task["status"] == status {
            return task;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not {status}: {answer}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
