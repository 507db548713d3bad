//! `toolhost mcp-config` (docs/mcp-clients.md): each client's snippet parses as that
//! client's configuration format, names this binary and the project absolutely (stdio) or
//! the URL with the token as a variable reference (HTTP), and the stdio snippet really
//! starts a working server from another directory.

mod common;

use common::{Fixture, mcp_client, simple_tool};
use serde_json::{Value, json};

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("hello.lua", &simple_tool("hello", "t", "hello"));
    fx.write("toolhost.toml", "[runtime]\nvms = 1\n");
    fx
}

fn mcp_config(fx: &Fixture, args: &[&str]) -> std::process::Output {
    fx.toolhost()
        .arg("mcp-config")
        .args(args)
        .output()
        .expect("mcp-config runs")
}

fn snippet(fx: &Fixture, args: &[&str]) -> String {
    let out = mcp_config(fx, args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn json_snippet(fx: &Fixture, args: &[&str]) -> Value {
    let text = snippet(fx, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The stdio server entry's command and args, checked to be absolute and complete.
fn check_stdio(fx: &Fixture, server: &Value) -> (String, Vec<String>) {
    let command = server["command"].as_str().expect("command").to_string();
    assert_eq!(
        std::path::Path::new(&command),
        assert_cmd::cargo::cargo_bin!("toolhost")
            .canonicalize()
            .unwrap()
            .as_path()
    );
    let args: Vec<String> = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect();
    let root = fx.root().canonicalize().unwrap();
    let config = root.join("toolhost.toml").display().to_string();
    let tools = root.join("tools-lua").display().to_string();
    assert_eq!(
        args,
        ["--config", &config, "--tools-dir", &tools, "serve"],
        "{server}"
    );
    (command, args)
}

#[test]
fn claude_desktop_cursor_and_gemini_get_an_mcp_servers_entry_with_the_absolute_command() {
    let fx = fixture();
    for client in ["claude-desktop", "cursor", "gemini"] {
        let doc = json_snippet(&fx, &["--client", client]);
        let server = &doc["mcpServers"]["toolhost"];
        check_stdio(&fx, server);
        assert_eq!(server.get("type"), None, "{client}: {doc}");
    }
}

#[test]
fn claude_code_and_vscode_name_the_stdio_transport() {
    let fx = fixture();
    let code = json_snippet(&fx, &["--client", "claude-code"]);
    check_stdio(&fx, &code["mcpServers"]["toolhost"]);
    assert_eq!(code["mcpServers"]["toolhost"]["type"], "stdio");
    let vscode = json_snippet(&fx, &["--client", "vscode"]);
    check_stdio(&fx, &vscode["servers"]["toolhost"]);
    assert_eq!(vscode["servers"]["toolhost"]["type"], "stdio");
}

#[test]
fn codex_gets_a_toml_mcp_servers_table() {
    let fx = fixture();
    let text = snippet(&fx, &["--client", "codex"]);
    let doc: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let server = serde_json::to_value(&doc["mcp_servers"]["toolhost"]).unwrap();
    check_stdio(&fx, &server);
}

#[test]
fn the_stdio_snippet_starts_a_working_server_from_any_directory() {
    let fx = fixture();
    let doc = json_snippet(&fx, &["--client", "claude-desktop"]);
    let (command, args) = check_stdio(&fx, &doc["mcpServers"]["toolhost"]);
    let elsewhere = tempfile::tempdir().unwrap();
    // A client passes the server only the environment it is configured with.
    let env = json!({
        "HOME": elsewhere.path(),
        "XDG_CACHE_HOME": elsewhere.path().join("cache"),
        "TOOLHOST_NO_LIBRARY": "1",
    });
    let mut script_args = vec![
        elsewhere.path().to_str().unwrap().to_string(),
        env.to_string(),
        "hello".to_string(),
        "{}".to_string(),
        command,
    ];
    script_args.extend(args);
    let refs: Vec<&str> = script_args.iter().map(String::as_str).collect();
    let steps = mcp_client::run_script("installed.py", &refs);
    assert_eq!(mcp_client::step(&steps, "list")["tools"], json!(["hello"]));
    let call = mcp_client::step(&steps, "call");
    assert_eq!(call["is_error"], json!(false), "{call}");
}

#[test]
fn http_snippets_carry_the_url_and_the_token_as_each_clients_variable_reference() {
    let fx = fixture();
    let url = "https://tools.example.test/mcp";
    let http = ["--http", url, "--token-env", "TOOLHOST_TOKEN"];
    let expected = [
        (
            "claude-code",
            "mcpServers",
            "url",
            Some("http"),
            "Bearer ${TOOLHOST_TOKEN}",
        ),
        (
            "cursor",
            "mcpServers",
            "url",
            None,
            "Bearer ${env:TOOLHOST_TOKEN}",
        ),
        (
            "vscode",
            "servers",
            "url",
            Some("http"),
            "Bearer ${env:TOOLHOST_TOKEN}",
        ),
        (
            "gemini",
            "mcpServers",
            "httpUrl",
            None,
            "Bearer ${TOOLHOST_TOKEN}",
        ),
    ];
    for (client, key, url_key, kind, header) in expected {
        let mut args = vec!["--client", client];
        args.extend(http);
        let doc = json_snippet(&fx, &args);
        let server = &doc[key]["toolhost"];
        assert_eq!(server[url_key], url, "{client}: {doc}");
        assert_eq!(server["headers"]["Authorization"], header, "{client}");
        assert_eq!(server.get("type").and_then(Value::as_str), kind, "{client}");
        assert_eq!(server.get("command"), None, "{client}");
    }
}

#[test]
fn codex_over_http_names_the_token_variable() {
    let fx = fixture();
    let text = snippet(
        &fx,
        &[
            "--client",
            "codex",
            "--http",
            "http://127.0.0.1:8080/mcp",
            "--token-env",
            "TOK",
        ],
    );
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let server = &doc["mcp_servers"]["toolhost"];
    assert_eq!(server["url"].as_str(), Some("http://127.0.0.1:8080/mcp"));
    assert_eq!(server["bearer_token_env_var"].as_str(), Some("TOK"));
}

#[test]
fn an_http_snippet_without_token_env_has_no_header() {
    let fx = fixture();
    let doc = json_snippet(
        &fx,
        &["--client", "cursor", "--http", "http://127.0.0.1:1/mcp"],
    );
    assert_eq!(
        doc["mcpServers"]["toolhost"],
        json!({"url": "http://127.0.0.1:1/mcp"})
    );
}

#[test]
fn claude_desktop_over_http_is_refused_with_the_reason() {
    let fx = fixture();
    let out = mcp_config(
        &fx,
        &["--client", "claude-desktop", "--http", "http://h/mcp"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdio servers only"));
}

#[test]
fn a_bad_url_or_variable_name_is_refused_naming_the_flag() {
    let fx = fixture();
    for (args, flag) in [
        (vec!["--http", "ftp://h/mcp"], "--http"),
        (vec!["--http", "http://h/mcp\n[evil]"], "--http"),
        (
            vec!["--http", "http://h/mcp", "--token-env", "A B"],
            "--token-env",
        ),
        (
            vec!["--http", "http://h/mcp", "--token-env", "X}\"evil"],
            "--token-env",
        ),
    ] {
        let mut all = vec!["--client", "codex"];
        all.extend(args);
        let out = mcp_config(&fx, &all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{all:?}: {stderr}");
    }
}

#[test]
fn an_unknown_client_is_a_usage_error_listing_the_known_ones() {
    let fx = fixture();
    let out = mcp_config(&fx, &["--client", "emacs"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("claude-desktop") && stderr.contains("codex"),
        "{stderr}"
    );
}
