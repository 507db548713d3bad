//! The durable `store` (SQLite): values survive restarts and are shared by processes,
//! updates are atomic across sessions and processes, a killed process loses no
//! acknowledged write, namespaces isolate plugins, limits and broken files give clear
//! errors.

mod common;

use common::{Fixture, call};
use serde_json::{Value, json};

const TOOLS: &str = r#"
registry.register{ name = "put", toolset = "t", parallel_safe = true,
  schema = { description = "d", parameters = { type = "object",
    properties = { key = { type = "string" }, value = {} }, required = { "key" } } },
  handler = function(args) store.set(args.key, args.value) return "ok" end }
registry.register{ name = "get", toolset = "t", parallel_safe = true,
  schema = { description = "d", parameters = { type = "object",
    properties = { key = { type = "string" } }, required = { "key" } } },
  handler = function(args) return json.encode({ value = store.get(args.key) }) end }
registry.register{ name = "bump", toolset = "t", parallel_safe = true,
  schema = { description = "d", parameters = { type = "object" } },
  handler = function()
    return tostring(store.update("count", function(old) return (old or 0) + 1 end))
  end }
registry.register{ name = "fail_update", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function()
    store.update("count", function(old) error("changed my mind") end)
  end }
registry.register{ name = "plain", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return "fine" end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("store.lua", TOOLS);
    fx
}

fn value_of(host: &toolhost::Host, key: &str) -> Value {
    let out = call(host, "get", json!({"key": key}));
    let parsed: Value = serde_json::from_str(out.as_str().unwrap_or("{}")).unwrap_or(out);
    parsed["value"].clone()
}

#[test]
fn values_survive_a_host_restart() {
    let fx = fixture();
    {
        let host = fx.host();
        assert_eq!(
            call(&host, "put", json!({"key": "k", "value": {"n": 1}})),
            json!("ok")
        );
    }
    let host = fx.host();
    assert_eq!(value_of(&host, "k"), json!({"n": 1}));
}

#[test]
fn another_process_sees_the_writes() {
    let fx = fixture();
    fx.write("toolhost.toml", "[store]\npath = \"store.sqlite3\"\n");
    assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        .args([
            "--cache-dir",
            "cache",
            "call",
            "put",
            r#"{"key": "from_cli", "value": 7}"#,
        ])
        .assert()
        .success();
    // This process, on the same file.
    let host = fx.host();
    assert_eq!(value_of(&host, "from_cli"), json!(7));
    call(&host, "put", json!({"key": "from_host", "value": "x"}));
    let out = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        .args([
            "--cache-dir",
            "cache",
            "call",
            "get",
            r#"{"key": "from_host"}"#,
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"value":"x"}"#
    );
}

#[test]
fn a_raising_update_writes_nothing() {
    let fx = fixture();
    let host = fx.host();
    assert_eq!(call(&host, "bump", json!({})), json!("1"));
    let out = call(&host, "fail_update", json!({}));
    assert_eq!(out["error_type"], "handler_error");
    assert!(
        out["error"].as_str().unwrap().contains("changed my mind"),
        "{out}"
    );
    assert_eq!(call(&host, "bump", json!({})), json!("2"));
}

#[test]
fn concurrent_updates_in_one_process_are_exact() {
    let fx = fixture();
    let host = fx.host();
    let runtime = common::two_worker_runtime();
    runtime.block_on(async {
        let ctx = toolhost::CallContext::default();
        let calls = (0..400)
            .map(|_| toolhost::FunctionCall::new("bump", json!({})))
            .collect::<Vec<_>>();
        let outs = host.handle_function_calls(calls, &ctx).await;
        assert!(outs.iter().all(|o| !o.is_error()), "{outs:?}");
    });
    assert_eq!(call(&host, "bump", json!({})), json!("401"));
}

#[test]
fn plugins_cannot_read_or_clobber_each_others_keys() {
    let fx = Fixture::new();
    fx.tool(
        "core.lua",
        r#"registry.register{ name = "core_get", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return json.encode({ v = store.get("secret") }) end }"#,
    );
    for (id, value) in [("alpha", "a"), ("beta", "b")] {
        fx.write(
            &format!("{id}/tool.lua"),
            format!(
                r#"registry.register{{ name = "{id}_set", toolset = "{id}",
  schema = {{ description = "d", parameters = {{ type = "object" }} }},
  handler = function() store.set("secret", "{value}") return "set" end }}
registry.register{{ name = "{id}_get", toolset = "{id}",
  schema = {{ description = "d", parameters = {{ type = "object" }} }},
  handler = function() return json.encode({{ v = store.get("secret") }}) end }}"#
            ),
        );
    }
    let host = fx.host_with(
        "[plugins.alpha]\ndir = \"alpha\"\ncapabilities = [\"store\", \"json\"]\n\
         [plugins.beta]\ndir = \"beta\"\ncapabilities = [\"store\", \"json\"]\n",
    );
    assert_eq!(call(&host, "alpha_set", json!({})), json!("set"));
    assert_eq!(call(&host, "alpha_get", json!({})), json!(r#"{"v":"a"}"#));
    assert_eq!(
        call(&host, "beta_get", json!({})),
        json!("{}"),
        "beta sees nothing"
    );
    assert_eq!(
        call(&host, "core_get", json!({})),
        json!("{}"),
        "builtin sees nothing"
    );
    assert_eq!(call(&host, "beta_set", json!({})), json!("set"));
    assert_eq!(
        call(&host, "alpha_get", json!({})),
        json!(r#"{"v":"a"}"#),
        "not clobbered"
    );
    // The embedder shares the built-in namespace.
    host.store().set("secret", &json!("core")).unwrap();
    assert_eq!(call(&host, "core_get", json!({})), json!(r#"{"v":"core"}"#));
}

#[test]
fn limits_give_errors_naming_them() {
    let fx = fixture();
    let host = fx.host_with("[store]\nmax_value_bytes = 100\n");
    let long_key = "k".repeat(513);
    let out = call(&host, "put", json!({"key": long_key, "value": 1}));
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("key of 513 bytes is over the limit of 512 bytes"),
        "{out}"
    );
    let out = call(
        &host,
        "put",
        json!({"key": "big", "value": "x".repeat(200)}),
    );
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("over [store] max_value_bytes (100)"),
        "{out}"
    );
    assert_eq!(value_of(&host, "big"), Value::Null, "nothing written");
}

#[test]
fn a_corrupt_store_file_is_reported_and_left_untouched() {
    let fx = fixture();
    let garbage = b"this is not a database, but the user may want it back".repeat(100);
    fx.write("store.sqlite3", &garbage);
    let host = fx.host();
    let out = call(&host, "put", json!({"key": "k", "value": 1}));
    let message = out["error"].as_str().unwrap();
    assert!(
        message.contains("store.sqlite3 is not usable (left untouched)"),
        "{message}"
    );
    assert_eq!(
        call(&host, "plain", json!({})),
        json!("fine"),
        "other tools work"
    );
    assert_eq!(
        std::fs::read(fx.store_file()).unwrap(),
        garbage,
        "never overwritten"
    );
    assert!(!fx.root().join("store.sqlite3-wal").exists());
}

#[test]
fn a_killed_process_loses_no_acknowledged_write() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let fx = fixture();
    fx.write("toolhost.toml", "[store]\npath = \"store.sqlite3\"\n");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        .args(["--cache-dir", "cache", "-q", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":"init","method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw","version":"1"}}}}}}"#
    )
    .unwrap();
    lines.next().expect("initialize answered").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    // A burst of writes, all in flight at once.
    for i in 0..400 {
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"put","arguments":{{"key":"k{i}","value":{i}}}}}}}"#
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 100 {
        let line = lines.next().expect("an answer").unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        if answer["result"]["content"][0]["text"] == "ok" {
            acknowledged.push(answer["id"].as_u64().unwrap());
        }
    }
    child.kill().unwrap(); // SIGKILL, in the middle of the burst
    child.wait().unwrap();
    let host = fx.host();
    for i in acknowledged {
        assert_eq!(
            value_of(&host, &format!("k{i}")),
            json!(i),
            "acknowledged write k{i}"
        );
    }
}

/// `sessions` MCP sessions over `servers` processes, 200 increments each.
fn increments_over_mcp(servers: usize, sessions: usize) -> Value {
    let fx = fixture();
    fx.write("toolhost.toml", "[store]\npath = \"store.sqlite3\"\n");
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = common::mcp_client::run_script(
        "store_load.py",
        &[
            binary.to_str().unwrap(),
            fx.root().to_str().unwrap(),
            &servers.to_string(),
            &sessions.to_string(),
            "200",
        ],
    );
    common::mcp_client::step(&steps, "store_load").clone()
}

#[test]
fn sixteen_mcp_sessions_of_200_increments_count_exactly_3200() {
    let load = increments_over_mcp(1, 16);
    assert_eq!(load["failed"], 0, "{load}");
    assert_eq!(load["count"], 3200, "{load}");
}

#[test]
fn two_processes_sharing_the_file_count_exactly_3200() {
    let load = increments_over_mcp(2, 16);
    assert_eq!(load["failed"], 0, "{load}");
    assert_eq!(load["count"], 3200, "{load}");
}
