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
    assert!(
        missing["body"]["error"]
            .as_str()
            .unwrap()
            .contains("missing bearer token"),
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

#[test]
fn a_public_bind_without_a_token_refuses_to_start() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let out = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
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
