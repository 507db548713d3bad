//! `toolhost serve --http`: auth, Origin, body limit, /healthz, refusing an unauthenticated
//! public bind, and a graceful shutdown that lets a running call answer.

mod common;

use common::Fixture;
use common::mcp_client::{run_script, step};
use serde_json::json;

const TOOLS: &str = r#"
registry.register{ name = "nap", toolset = "t", timeout_ms = 20000,
  schema = { description = "Naps", parameters = { type = "object" } },
  handler = function() fs.write("started", "yes") time.sleep(800) return "rested" end }
registry.register{ name = "echo", toolset = "t",
  schema = { description = "Echo", parameters = { type = "object" } },
  handler = function(args) return args end }
"#;

#[test]
fn http_guards_and_graceful_shutdown() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", "[serve]\nmax_request_bytes = 4000\n");
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "http_edges.py",
        &[binary.to_str().unwrap(), fx.root().to_str().unwrap()],
    );

    let health = step(&steps, "healthz");
    assert_eq!(health["status"], 200);
    assert_eq!(health["body"]["status"], "ok");
    assert_eq!(health["body"]["tools"], 2);

    let missing = step(&steps, "no_token");
    assert_eq!(missing["status"], 401);
    assert_eq!(
        missing["body"]["error"]["message"], "missing bearer token",
        "{missing}"
    );
    assert_eq!(step(&steps, "wrong_token")["status"], 401);
    assert_eq!(step(&steps, "evil_origin")["status"], 403);
    assert_eq!(step(&steps, "local_origin")["status"], 200);
    assert_eq!(step(&steps, "oversized")["status"], 413);
    assert_eq!(step(&steps, "authorized")["names"], json!(["echo", "nap"]));

    let drained = step(&steps, "drained");
    assert_eq!(drained["is_error"], false, "{drained}");
    assert_eq!(drained["text"], "rested");
    assert_eq!(step(&steps, "exit")["code"], 0);
}

/// A 401 is an answer an MCP client can read: `WWW-Authenticate: Bearer` and a JSON-RPC
/// error with the request's id. Where the token comes from is for the server's log only.
#[test]
fn an_unauthenticated_request_gets_a_json_rpc_401_that_names_no_variable() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env("EDGE_SECRET_VAR", "s3cret")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"])
        .args(["--auth-token-env", "EDGE_SECRET_VAR"]);
    let (mut server, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let call = common::raw_http::tools_call(7, "echo", "{}");
    let cases = [
        (None, call.clone(), json!(7), "missing bearer token"),
        (Some("Bearer nope"), call, json!(7), "invalid bearer token"),
        (
            Some("Basic czNjcmV0"),
            r#"{"jsonrpc":"2.0","id":"a-b","method":"tools/list"}"#.to_string(),
            json!("a-b"),
            "missing bearer token",
        ),
        (
            None,
            "not json".to_string(),
            json!(null),
            "missing bearer token",
        ),
    ];
    for (authorization, body, id, message) in cases {
        let mut http = common::raw_http::RawHttp::connect(&authority);
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(authorization) = authorization {
            headers.push(("Authorization", authorization));
        }
        let reply = http.request("POST", "/mcp", &headers, body.as_bytes());
        assert_eq!(reply.status, 401, "{}", reply.text());
        // RFC 6750 §3: a sent token that is refused is an `invalid_token`.
        let challenge = match message {
            "invalid bearer token" => "Bearer error=\"invalid_token\"",
            _ => "Bearer",
        };
        assert_eq!(reply.header("www-authenticate"), Some(challenge));
        assert!(
            reply
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json"))
        );
        let text = reply.text();
        assert!(!text.contains("EDGE_SECRET_VAR"), "{text}");
        assert!(!text.contains("auth_token_env"), "{text}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32001, "message": message}}),
        );
    }
    // A GET (the SSE stream) has no body: the id is null.
    let mut http = common::raw_http::RawHttp::connect(&authority);
    let reply = http.request("GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    assert_eq!(reply.status, 401);
    assert_eq!(reply.message()["id"], json!(null));
    server.kill().unwrap();
    server.wait().unwrap();
}

/// The official Python client shows the 401's message in its exception; the server's log
/// says which variable holds the token.
#[test]
fn a_refused_python_client_sees_why() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "http_edges.py",
        &[
            binary.to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "auth",
        ],
    );
    for (name, message) in [
        ("sdk_missing", "missing bearer token"),
        ("sdk_invalid", "invalid bearer token"),
    ] {
        let error = step(&steps, name)["error"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(error.contains(message), "{name}: {error}");
        assert!(!error.contains("EDGE_TOKEN"), "{name}: {error}");
    }
    let log = step(&steps, "server_log")["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(log.contains("WARN") && log.contains("$EDGE_TOKEN"), "{log}");
}

#[test]
fn a_public_bind_without_a_token_refuses_to_start() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let out = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["serve", "--http", "0.0.0.0:0"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("auth_token_env"), "{stderr}");
}

#[test]
fn sixteen_sessions_lose_no_call_while_the_tools_reload() {
    let fx = Fixture::new();
    fx.tool(
        "load.lua",
        r#"registry.register{ name = "echo", toolset = "t", parallel_safe = true,
  schema = { description = "Echo", parameters = { type = "object",
    properties = { text = { type = "string" } } } },
  handler = function(args) return args.text end }
registry.register{ name = "nap5", toolset = "t", parallel_safe = true,
  schema = { description = "Naps 5 ms", parameters = { type = "object" } },
  handler = function() time.sleep(5) return "ok" end }"#,
    );
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "load.py",
        &[
            binary.to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "16",
            "300",
        ],
    );
    let load = step(&steps, "load");
    assert_eq!(load["failed"], 0, "{load}");
    assert_eq!(load["ok"], 16 * 300, "{load}");
    assert!(load["edits"].as_u64().unwrap() >= 1, "{load}");
}

#[test]
fn a_stateless_server_lists_and_calls() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "http_edges.py",
        &[
            binary.to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "stateless",
        ],
    );
    let stateless = step(&steps, "stateless");
    assert_eq!(stateless["names"], json!(["echo", "nap"]));
    assert_eq!(stateless["is_error"], false, "{stateless}");
    assert_eq!(stateless["text"], r#"{"text":"hi"}"#);
}

/// `--stateless` (2025-11-25): `notifications/cancelled` stops the call it names, as on a
/// stateful server — with one call at a time, the next call runs only if the cancelled one
/// stopped, and the marker it would write after its nap stays absent — and the server logs
/// no error for it.
#[test]
fn a_cancelled_stateless_call_stops_without_error_noise() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.tool(
        "long_nap.lua",
        r#"registry.register{ name = "long_nap", toolset = "t", timeout_ms = 120000,
  schema = { description = "Naps a minute", parameters = { type = "object" } },
  handler = function() fs.write("started", "yes") time.sleep(60000) fs.write("finished", "yes") return "rested" end }"#,
    );
    fx.write("toolhost.toml", "[serve]\nmax_calls = 1\n");
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "http_edges.py",
        &[
            binary.to_str().unwrap(),
            fx.root().to_str().unwrap(),
            "stateless_cancel",
        ],
    );
    let after = step(&steps, "after_cancel");
    assert_eq!(after["is_error"], false, "{after}");
    assert_eq!(after["text"], r#"{"text":"after"}"#, "{after}");
    assert_eq!(after["finished"], false, "{after}");
    let log = step(&steps, "server_log")["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!log.contains("ERROR"), "{log}");
    assert!(!log.contains("pending response"), "{log}");
}

/// A keep-alive client must learn that a refused request's connection is closing: the guard
/// answers before the body arrives, so the server cannot reuse the connection, and a
/// client that did would see its next request fail with "server disconnected".
#[test]
fn a_refused_request_tells_the_client_the_connection_closes() {
    use std::io::{Read, Write};
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (mut server, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();

    let mut socket = std::net::TcpStream::connect(&authority).unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    // The headers of a request from a foreign origin; its body is never sent.
    write!(
        socket,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nOrigin: http://evil.example\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 200\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let read = socket.read_to_end(&mut answer);
    server.kill().unwrap();
    server.wait().unwrap();
    read.expect("the server closes the connection after its answer");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 403"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
}
