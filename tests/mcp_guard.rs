//! Every JSON-RPC request gets an answer (docs/mcp-server.md, docs/reliability.md): raw
//! exchanges with the real `toolhost serve` over stdio, each hostile message followed by a
//! `ping` that must still be answered.

mod common;

use common::Fixture;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":"ping","method":"ping"}"#;

/// `toolhost serve` in `fx`, speaking on piped stdin/stdout.
fn spawn_serve(fx: &Fixture) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "-q", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("toolhost serve starts")
}

struct Server {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Server {
    fn start(fx: &Fixture) -> Self {
        let mut child = spawn_serve(fx);
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
        let stdin = child.stdin.take();
        let mut server = Self {
            child: Some(child),
            stdin,
            lines,
        };
        let init = server.request(INITIALIZE);
        assert!(init.contains("\"result\""), "{init}");
        server.send(INITIALIZED.as_bytes());
        server
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line the server writes (fails after 20 s instead of hanging).
    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the server answered")
    }

    fn request(&mut self, line: &str) -> String {
        self.send(line.as_bytes());
        self.next_line()
    }

    fn assert_alive(&mut self) {
        let pong = self.request(PING);
        let pong: Value = serde_json::from_str(&pong).expect("JSON");
        assert_eq!(pong["id"], "ping", "{pong}");
        assert!(pong.get("result").is_some(), "{pong}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool(
        "echo.lua",
        r#"registry.register{ name = "echo", toolset = "t",
  schema = { parameters = { type = "object", properties = { text = { type = "string" } } } },
  handler = function(args) return args.text or "" end }
registry.register{ name = "spin", toolset = "t", timeout_ms = 3000, parallel_safe = true,
  schema = { parameters = { type = "object" } },
  handler = function() while true do pcall(string.rep, "x", 10) end end }
registry.register{ name = "shape", toolset = "t",
  schema = { parameters = { type = "object" } },
  output_schema = { type = "object", properties = { sides = { type = "integer" } } },
  handler = function() return { sides = 3 } end }
registry.register{ name = "nap", toolset = "t", timeout_ms = 60000,
  schema = { parameters = { type = "object" } },
  handler = function() time.sleep(60000) return "woke" end }"#,
    );
    fx
}

fn error_of(line: &str) -> (Value, i64, String) {
    let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let code = value["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error: {line}"));
    let message = value["error"]["message"].as_str().unwrap_or("").to_string();
    (value["id"].clone(), code, message)
}

#[test]
fn malformed_json_gets_a_parse_error_and_the_server_goes_on() {
    let mut server = Server::start(&fixture());
    for bad in [
        b"{not json".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\xff\xfe}".to_vec(),
        br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\ud800"}}"#.to_vec(),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
    ] {
        server.send(&bad);
        let (id, code, _) = error_of(&server.next_line());
        assert_eq!((id, code), (Value::Null, -32700));
        server.assert_alive();
    }
}

#[test]
fn invalid_requests_get_invalid_request_with_their_id() {
    let mut server = Server::start(&fixture());
    for (line, id) in [
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
        (r#""just a string""#, Value::Null),
        (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
        (r#"{"id":4,"method":"ping"}"#, json!(4)),
        (r#"{"jsonrpc":"2.0","id":5,"method":7}"#, json!(5)),
        (r#"{"jsonrpc":"2.0","id":6}"#, json!(6)),
    ] {
        let (got_id, code, _) = error_of(&server.request(line));
        assert_eq!((got_id, code), (id, -32600), "{line}");
        server.assert_alive();
    }
}

#[test]
fn bad_tools_call_params_get_invalid_params_naming_the_field() {
    let mut server = Server::start(&fixture());
    for (params, field) in [
        (
            r#"{"name":"echo","arguments":"text"}"#,
            "'arguments' must be an object, got string",
        ),
        (
            r#"{"name":"echo","arguments":[1,2]}"#,
            "'arguments' must be an object, got array",
        ),
        (r#"{"arguments":{}}"#, "'name' is required"),
        (r#"{"name":42}"#, "'name' must be a string, got number"),
        (r#""echo""#, "'params' must be an object"),
    ] {
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{params}}}"#);
        let (id, code, message) = error_of(&server.request(&line));
        assert_eq!((id, code), (json!("c"), -32602), "{params}");
        assert!(message.contains(field), "{params}: {message}");
        server.assert_alive();
    }
}

#[test]
fn any_legal_id_is_echoed_back_exactly() {
    let mut server = Server::start(&fixture());
    for id in [
        "18446744073709551615",
        "123456789012345678901234567890",
        "-9223372036854775809",
        "1.5",
        "2e3",
        "\"text id\"",
        "0",
    ] {
        let answer = server.request(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert!(
            answer.starts_with(&format!("{{\"id\":{id},")),
            "{id}: {answer}"
        );
        assert!(answer.contains("\"result\""), "{answer}");
    }
    let call = server.request(
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
    );
    assert!(call.starts_with("{\"id\":18446744073709551615,"), "{call}");
    assert!(call.contains("\"hi\""), "{call}");
}

#[test]
fn an_over_long_line_gets_an_error_reply() {
    let mut server = Server::start(&fixture());
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(20 * 1024 * 1024)
    );
    server.send(huge.as_bytes());
    let (id, code, message) = error_of(&server.next_line());
    assert_eq!((id, code), (json!(9), -32600));
    assert!(message.contains("max_request_bytes"), "{message}");
    server.assert_alive();
}

/// The refusal of an over-long line carries the request's id, read from the line's first
/// bytes, so the client waiting for that id is released. Only the envelope's own `id`
/// counts (not one inside `params`), and only when the kept prefix shows it whole; else
/// the id stays `null`.
#[test]
fn an_over_long_request_is_refused_with_its_own_id() {
    let fx = fixture();
    fx.write("toolhost.toml", "[serve]\nmax_request_bytes = 4096\n");
    let mut server = Server::start(&fx);
    let filler = "x".repeat(64 * 1024);
    let cases = [
        // The id before the params, as clients write it: a string with an escape.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":"r\"1","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{filler}"}}}}}}"#
            ),
            json!("r\"1"),
        ),
        // A huge integer id, after the method.
        (
            format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","id":18446744073709551616,"params":{{"name":"echo","arguments":{{"text":"{filler}"}}}}}}"#
            ),
            json!(18446744073709551616u128 as f64),
        ),
        // An `id` inside params first; the envelope's id only after the limit: unknown.
        (
            format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"id":666,"name":"echo","arguments":{{"text":"{filler}"}}}},"id":7}}"#
            ),
            Value::Null,
        ),
        // Not an object at all.
        (format!(r#"[{{"id":5,"text":"{filler}"}}]"#), Value::Null),
    ];
    for (line, expected) in cases {
        server.send(line.as_bytes());
        let answer = server.next_line();
        let (id, code, message) = error_of(&answer);
        assert_eq!(code, -32600, "{answer}");
        assert_eq!(id, expected, "{answer}");
        assert!(message.contains("max_request_bytes"), "{message}");
        if expected.is_number() {
            // Byte for byte, as the client wrote it.
            assert!(
                answer.starts_with("{\"id\":18446744073709551616,"),
                "{answer}"
            );
        }
    }
    server.assert_alive();
}

#[test]
fn serve_exits_promptly_when_stdin_closes_during_a_long_call() {
    let mut server = Server::start(&fixture());
    server.send(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nap","arguments":{}}}"#,
    );
    server.assert_alive();
    let mut child = server.child.take().expect("child");
    let (exited, exit) = channel();
    std::thread::spawn(move || {
        let _ = exited.send(child.wait());
    });
    drop(server.stdin.take());
    // Liveness bound only: the call would run 60 s.
    let status = exit
        .recv_timeout(Duration::from_secs(10))
        .expect("serve exited after stdin closed")
        .expect("wait");
    assert!(status.success(), "{status}");
}

#[test]
fn ping_is_answered_while_every_vm_runs_a_runaway_handler() {
    let fx = fixture();
    fx.write("toolhost.toml", "[runtime]\nvms = 2\n");
    let mut server = Server::start(&fx);
    for id in [1, 2] {
        server.send(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"spin","arguments":{{}}}}}}"#)
                .as_bytes(),
        );
    }
    // Both VMs spin until their 3 s deadline; the runtime that answers the protocol does not.
    let pong = server.request(PING);
    assert!(
        pong.starts_with(r#"{"id":"ping","#),
        "answered after the calls: {pong}"
    );
    for _ in 0..2 {
        let line = server.next_line();
        assert!(line.contains("timed out after 3000 ms"), "{line}");
    }
}

impl Server {
    /// Sends SIGTERM to the server.
    fn terminate(&self) {
        let pid = self.child.as_ref().expect("running").id() as libc::pid_t;
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    }

    /// Waits (at most 20 s) for the server to exit and returns its status code.
    fn exit_code(&mut self) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Waits (at most 20 s) until `path` exists: the tool has started.
fn wait_for_file(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn shutdown_fixture(drain_ms: u64, nap_ms: u64) -> Fixture {
    let fx = Fixture::new();
    fx.tool(
        "nap.lua",
        &format!(
            r#"registry.register{{ name = "nap", toolset = "t", timeout_ms = 60000,
  schema = {{ parameters = {{ type = "object" }} }},
  handler = function() fs.write("started", "yes") time.sleep({nap_ms}) return "rested" end }}"#
        ),
    );
    fx.write("toolhost.toml", format!("[serve]\ndrain_ms = {drain_ms}\n"));
    fx
}

#[test]
fn sigterm_lets_a_running_call_answer_then_exits_zero() {
    let fx = shutdown_fixture(10_000, 500);
    let mut server = Server::start(&fx);
    server.send(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nap"}}"#);
    wait_for_file(&fx.root().join("started"));
    server.terminate();
    let answer: Value = serde_json::from_str(&server.next_line()).expect("JSON");
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "rested");
    assert_eq!(server.exit_code(), Some(0));
}

#[test]
fn a_call_outlasting_the_drain_period_answers_cancelled() {
    let fx = shutdown_fixture(200, 30_000);
    let mut server = Server::start(&fx);
    server.send(br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nap"}}"#);
    wait_for_file(&fx.root().join("started"));
    server.terminate();
    let answer: Value = serde_json::from_str(&server.next_line()).expect("JSON");
    assert_eq!(answer["id"], 8, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let error: Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error_type"], "cancelled", "{error}");
    assert_eq!(server.exit_code(), Some(0));
}

#[test]
fn call_ids_reach_handlers_as_the_client_wrote_them() {
    let fx = Fixture::new();
    fx.tool(
        "id.lua",
        r#"registry.register{ name = "whoami", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function(_, ctx) return ctx.tool_call_id end }"#,
    );
    let mut server = Server::start(&fx);
    for (id, expected) in [(r#""abc""#, r#""abc""#), ("42", "42")] {
        let line = server.request(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"whoami"}}}}"#
        ));
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(answer["result"]["content"][0]["text"], expected, "{answer}");
    }
}

#[test]
fn a_server_started_from_the_filesystem_root_grants_no_fs_access() {
    // Many clients start servers from `/`: the implicit root must not be the whole disk.
    let fx = Fixture::new();
    fx.tool(
        "peek.lua",
        r#"registry.register{ name = "peek", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function() return fs.read("/etc/hostname") end }"#,
    );
    let tools = fx.tools();
    let cache = fx.cache();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir("/")
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .arg("--tools-dir")
        .arg(&tools)
        .arg("--cache-dir")
        .arg(&cache)
        .args(["-q", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("toolhost serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let requests = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek"}}"#,
    ];
    for request in requests {
        writeln!(stdin, "{request}").expect("write");
    }
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let answer = loop {
        let line = lines.next().expect("an answer").expect("a line");
        let value: Value = serde_json::from_str(&line).expect("JSON");
        if value["id"] == 1 {
            break value;
        }
    };
    drop(stdin);
    let _ = child.wait();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("set [sandbox] fs_roots"), "{text}");
}

/// The answer's members after its id.
fn after_id(line: &str) -> &str {
    line.strip_prefix("{\"id\":1,")
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn a_call_the_guard_answers_matches_the_one_rmcp_answers() {
    let mut server = Server::start(&fixture());
    // rmcp answers nothing before it has seen `initialized`: from here on plain calls are
    // the guard's own.
    server.assert_alive();
    for params in [
        r#"{"name":"echo","arguments":{"text":"hi \"there\""}}"#,
        r#"{"name":"shape","arguments":{}}"#,
        r#"{"name":"no_such_tool"}"#,
        r#"{"name":"echo","arguments":{"text":{"not":"text"}}}"#,
    ] {
        let call = format!(r#""method":"tools/call","params":{params}"#);
        let direct = server.request(&format!(r#"{{"jsonrpc":"2.0","id":1,{call}}}"#));
        // A member the guard's reader does not know sends the same call through rmcp.
        let through_rmcp = server.request(&format!(r#"{{"jsonrpc":"2.0","id":1,"x":0,{call}}}"#));
        assert_eq!(after_id(&direct), after_id(&through_rmcp), "{params}");
    }
}

/// After `notifications/cancelled` the request gets no answer (a receiver should not answer
/// a cancelled request), whether the guard or rmcp runs the call; and the call is stopped:
/// with one call at a time per session, the next one could not start otherwise.
#[test]
fn a_cancelled_request_gets_no_answer_and_its_call_stops() {
    let fx = Fixture::new();
    fx.tool(
        "nap.lua",
        r#"registry.register{ name = "nap", toolset = "t", timeout_ms = 60000,
  schema = { parameters = { type = "object", properties = { tag = { type = "string" } } } },
  handler = function(args) fs.write("started-" .. args.tag, "yes") time.sleep(60000) return "woke" end }
registry.register{ name = "echo", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function() return "here" end }"#,
    );
    fx.write("toolhost.toml", "[serve]\nmax_session_calls = 1\n");
    let mut server = Server::start(&fx);
    server.assert_alive();
    // The first is answered by the guard itself, the second (an extra member) by rmcp.
    for (id, extra) in [(r#""direct""#, ""), ("77", r#","x":0"#)] {
        let tag = id.trim_matches('"');
        server.send(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id}{extra},"method":"tools/call","params":{{"name":"nap","arguments":{{"tag":"{tag}"}}}}}}"#
            )
            .as_bytes(),
        );
        // The 60 s nap of the previous round would keep this one from starting.
        wait_for_file(&fx.root().join(format!("started-{tag}")));
        server.send(
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
            )
            .as_bytes(),
        );
        server.send(PING.as_bytes());
        let cancelled_id: Value = serde_json::from_str(id).unwrap();
        loop {
            let line = server.next_line();
            let message: Value = serde_json::from_str(&line).expect("JSON");
            assert_ne!(
                message["id"], cancelled_id,
                "a cancelled request was answered: {line}"
            );
            if message["id"] == "ping" {
                break;
            }
        }
    }
    let answer = server
        .request(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}}"#);
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer["id"], 9, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "here", "{answer}");
}

#[test]
fn a_client_that_stops_reading_answers_stops_being_read_and_then_gets_every_answer() {
    const CALLS: usize = 5000;
    let fx = fixture();
    fx.write(
        "toolhost.toml",
        "[serve]\nmax_session_calls = 1\nmax_queued_calls = 4\n",
    );
    let mut child = spawn_serve(&fx);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    writeln!(stdin, "{INITIALIZE}\n{INITIALIZED}\n{PING}").expect("write");
    for _ in 0..2 {
        line.clear();
        stdout.read_line(&mut line).expect("answer");
    }
    assert!(line.starts_with(r#"{"id":"ping","#), "{line}");

    // 5,000 calls of 8 KiB each, and nobody reads the answers meanwhile.
    let (written, all_written) = channel();
    std::thread::spawn(move || {
        let text = "x".repeat(8 * 1024);
        for id in 0..CALLS {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
            );
            if writeln!(stdin, "{call}").is_err() {
                break;
            }
        }
        let _ = written.send(stdin);
    });
    // The server holds a bounded number of answers, then stops reading: the writer blocks.
    // (Without that it would have read all 40 MB and queued every answer by now.)
    assert!(
        all_written.recv_timeout(Duration::from_secs(3)).is_err(),
        "the server read every call although none of its answers was read"
    );

    // Reading again: every call gets exactly one answer.
    let mut answered = std::collections::HashSet::new();
    while answered.len() < CALLS {
        line.clear();
        let read = stdout.read_line(&mut line).expect("answer");
        assert!(
            read > 0,
            "the server ended after {} answers",
            answered.len()
        );
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        let id = answer["id"].as_u64().unwrap_or_else(|| panic!("{line}"));
        assert!(answered.insert(id), "answered twice: {id}");
    }
    let stdin = all_written
        .recv_timeout(Duration::from_secs(20))
        .expect("every call was written");
    drop(stdin);
    let _ = child.wait();
}

/// Shrinks the pipe behind `stdout` to one page (4 KiB): a server's output fills it early,
/// whatever the platform's default pipe size.
fn shrink_pipe(stdout: &std::process::ChildStdout) {
    use std::os::fd::AsRawFd;
    // SAFETY: changes the buffer size of a pipe whose read end this process owns.
    let size = unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(size > 0, "F_SETPIPE_SZ");
}

/// Waits at most `bound` for `child` to exit (a liveness bound); kills it otherwise, so a
/// failed test leaves no server behind.
fn exit_within(mut child: Child, bound: Duration) -> std::process::ExitStatus {
    let pid = child.id() as libc::pid_t;
    let (exited, exit) = channel();
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = exited.send(status);
    });
    match exit.recv_timeout(bound) {
        Ok(status) => status.expect("wait"),
        Err(_) => {
            // SAFETY: signals our own child, which has not been reaped (it has not exited).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("serve did not exit within {bound:?}");
        }
    }
}

#[test]
fn serve_exits_when_stdin_closes_while_nobody_reads_its_last_answer() {
    use std::io::Read;
    let fx = fixture();
    let mut child = spawn_serve(&fx);
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    shrink_pipe(&stdout);
    let mut stdout = BufReader::new(stdout);
    // A 95,000-character answer (results spill to a file above 100,000) against a 4 KiB
    // pipe: once its first bytes are read, the rest waits for a reader that never comes.
    let text = "x".repeat(95_000);
    writeln!(
        stdin,
        "{INITIALIZE}\n{INITIALIZED}\n{}",
        format_args!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
        )
    )
    .expect("write");
    let (started, answer_started) = channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let mut first = [0; 1024];
        let read = stdout.read_exact(&mut first);
        // The output stays open, unread.
        let _ = started.send((read.map(|()| first), stdout));
    });
    let (first, _stdout) = answer_started
        .recv_timeout(Duration::from_secs(20))
        .expect("the answer started");
    let first = first.expect("1 KiB of the answer");
    assert!(
        first.starts_with(br#"{"id":1,"#),
        "{}",
        String::from_utf8_lossy(&first[..64])
    );
    drop(stdin);
    // Liveness bound only (the server stops writing 5 to 7.5 s after the client stopped
    // reading); without a bound it waited on the full pipe for good.
    let status = exit_within(child, Duration::from_secs(30));
    assert!(status.success(), "{status}");
}

#[test]
fn serve_exits_when_stdin_closes_while_nobody_reads_the_answers_rmcp_sends() {
    const LISTS: usize = 3000;
    let fx = fixture();
    let mut child = spawn_serve(&fx);
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    shrink_pipe(&stdout);
    // `tools/list` is answered by rmcp, whose answers then wait on the same full output:
    // the session must still end once the client has closed its input.
    std::thread::spawn(move || {
        let _ = writeln!(stdin, "{INITIALIZE}\n{INITIALIZED}");
        for id in 0..LISTS {
            let list = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
            if writeln!(stdin, "{list}").is_err() {
                break;
            }
        }
    });
    // Liveness bound only (rmcp's own drain takes 5 s, the stall is told within 7.5 s).
    let status = exit_within(child, Duration::from_secs(40));
    assert!(status.success(), "{status}");
    drop(stdout);
}

/// Bytes waiting in the pipe behind `fd` (either end).
fn pipe_holds(fd: &impl std::os::fd::AsRawFd) -> usize {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes the pipe's unread byte count into `queued`.
    unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut queued) };
    usize::try_from(queued).unwrap_or(0)
}

#[test]
fn sigterm_ends_serve_while_a_client_that_keeps_stdin_open_reads_nothing() {
    const LINES: usize = 20_000;
    let fx = fixture();
    let mut child = spawn_serve(&fx);
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    shrink_pipe(&stdout);
    // Lines the guard answers itself (parse errors): their answers fill the output and its
    // queue, and the reader then waits to hand one on, where it does not see a shutdown.
    // stdin stays open until the test ends.
    let stdin = std::sync::Arc::new(stdin);
    let writing = stdin.clone();
    let (done, keep_open) = channel::<()>();
    std::thread::spawn(move || {
        let mut stdin = &*writing;
        let _ = writeln!(stdin, "{INITIALIZE}\n{INITIALIZED}");
        for _ in 0..LINES {
            if writeln!(stdin, "not json").is_err() {
                return;
            }
        }
        let _ = keep_open.recv();
    });
    // The reader is stuck once the server reads no more (its stdin pipe fills up) while
    // its output is full (the pipe holds nearly its 4 KiB: a line is written whole or not
    // at all, so the last ≈100 bytes stay free).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while pipe_holds(&stdout) < 4096 - 256 || pipe_holds(&*stdin) < 32 * 1024 {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never stopped reading"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: signals our own child, which is running.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    // Liveness bound only (5 to 7.5 s without the client reading after the signal).
    let status = exit_within(child, Duration::from_secs(40));
    assert!(status.success(), "{status}");
    drop(done);
    drop(stdout);
}

/// A stdin that delivers one message per read (a `SOCK_SEQPACKET` socket; a packet-mode
/// pipe is alike) reads short while more is queued: each message is still answered without
/// the client writing again. (The server forgets a stream's readiness after a short read,
/// which only a byte stream allows.)
#[test]
fn each_message_of_a_packet_stdin_is_answered_without_waiting_for_the_next() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let fx = fixture();
    let mut ends = [0; 2];
    // SAFETY: socketpair writes two new descriptors into `ends`, owned below.
    let made =
        unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, ends.as_mut_ptr()) };
    assert_eq!(made, 0, "a SEQPACKET socket pair");
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "-q", "serve"])
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("toolhost serve starts");
    let mut input = std::os::unix::net::UnixStream::from(ours);
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (answers, answered) = channel();
    std::thread::spawn(move || {
        while let Some(Ok(line)) = lines.next() {
            if answers.send(line).is_err() {
                break;
            }
        }
    });
    let mut packet = |message: &str| {
        input
            .write_all(format!("{message}\n").as_bytes())
            .expect("send")
    };
    packet(INITIALIZE);
    let init = answered
        .recv_timeout(Duration::from_secs(20))
        .expect("initialized");
    assert!(init.contains("\"result\""), "{init}");
    // Two packets back to back: both queued before the server reads the first.
    packet(INITIALIZED);
    packet(PING);
    let pong = answered.recv_timeout(Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let pong = pong.expect("the ping was answered without another write");
    assert!(pong.contains("\"ping\""), "{pong}");
}

/// Calls the guard answers itself write their answer from the VM's thread when nothing is
/// queued before it (docs/performance.md): with many calls overlapping, each reporting
/// progress, every call still gets exactly one answer, and its last progress report comes
/// before it.
#[test]
fn overlapping_calls_progress_goes_out_before_each_answer() {
    const CALLS: usize = 40;
    const STEPS: usize = 20;
    let fx = Fixture::new();
    fx.tool(
        "steps.lua",
        r#"registry.register{ name = "steps", toolset = "t", parallel_safe = true,
  schema = { parameters = { type = "object", properties = { n = { type = "integer" } } } },
  handler = function(args, ctx)
    for i = 1, args.n do ctx.progress(i, args.n) end
    return "done " .. args.n
  end }"#,
    );
    fx.write("toolhost.toml", "[runtime]\nvms = 2\n");
    let mut server = Server::start(&fx);
    server.assert_alive();
    let calls: String = (0..CALLS)
        .map(|id| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"steps","arguments":{{"n":{STEPS}}},"_meta":{{"progressToken":"p{id}"}}}}}}"#
            ) + "\n"
        })
        .collect();
    server.send(calls.trim_end().as_bytes());
    let mut last_progress = std::collections::HashMap::new();
    let mut answered = std::collections::HashSet::new();
    while answered.len() < CALLS {
        let line = server.next_line();
        let message: Value = serde_json::from_str(&line).expect("JSON");
        if message["method"] == "notifications/progress" {
            let token = message["params"]["progressToken"].as_str().expect("token");
            let progress = message["params"]["progress"].as_f64().expect("progress");
            last_progress.insert(token.to_string(), progress);
            continue;
        }
        let id = message["id"].as_u64().unwrap_or_else(|| panic!("{line}"));
        assert_eq!(
            message["result"]["content"][0]["text"],
            format!("done {STEPS}"),
            "{line}"
        );
        assert_eq!(
            last_progress.get(&format!("p{id}")),
            Some(&(STEPS as f64)),
            "call {id} answered before its last progress report"
        );
        assert!(answered.insert(id), "answered twice: {id}");
    }
    server.assert_alive();
}
