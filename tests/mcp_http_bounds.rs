//! `serve --http` stays bounded and answering under what a hostile or careless client can
//! hold (docs/reliability.md): half-sent requests and idle connections
//! (`[serve] header_timeout_ms`, `max_connections`), sessions (`max_sessions`,
//! `session_idle_ms`); and a call over a session is not slowed by Nagle's algorithm.
//! Raw sockets against the real binary, so what is on the wire is what is checked.

mod common;

use common::Fixture;
use common::raw_http::{RawHttp, tools_call};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const TOOLS: &str = r#"
registry.register{ name = "echo", toolset = "t",
  schema = { description = "Echo", parameters = { type = "object" } },
  handler = function(args) return args end }
"#;

/// The server, killed when dropped.
struct Server {
    child: Child,
    authority: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toolhost serve --http` on a free loopback port in a fixture with `config`; with
/// `open_files`, under that open-files limit (set in the child's shell, not here).
fn serve(config: &str, open_files: Option<u32>) -> (Fixture, Server) {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", config);
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let mut command = match open_files {
        Some(limit) => {
            let mut shell = Command::new("sh");
            shell.args([
                "-c",
                &format!("ulimit -n {limit} && exec \"$0\" \"$@\""),
                binary.to_str().unwrap(),
            ]);
            shell
        }
        None => Command::new(binary),
    };
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (child, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    (fx, Server { child, authority })
}

/// A connection that sends the start of a request line and nothing more.
fn half_sent(authority: &str) -> TcpStream {
    let mut socket = TcpStream::connect(authority).expect("connect");
    socket.write_all(b"GET /heal").expect("send");
    socket
}

/// True when the server has closed `socket` (end of stream or reset), waiting at most
/// `bound` for it.
fn closed_within(socket: &mut TcpStream, bound: Duration) -> bool {
    socket.set_read_timeout(Some(bound)).unwrap();
    let mut byte = [0u8; 64];
    loop {
        match socket.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => continue, // e.g. a 408 answer before the close
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// True when the server has already closed `socket` (no waiting).
fn already_closed(socket: &mut TcpStream) -> bool {
    socket.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 64];
    let closed = loop {
        match socket.read(&mut byte) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    socket.set_nonblocking(false).unwrap();
    closed
}

fn healthz(authority: &str) -> u16 {
    RawHttp::connect(authority)
        .request("GET", "/healthz", &[], b"")
        .status
}

/// Each answer to a call over a session is an SSE stream written in pieces; with Nagle's
/// algorithm on, every one waited ~40 ms for the client's delayed ACK (200 calls took
/// 8.8 s). The bound is a liveness bound: ~20x what it takes.
#[test]
fn stateful_calls_do_not_wait_for_delayed_acks() {
    let (_fx, server) = serve("", None);
    let mut client = RawHttp::connect(&server.authority);
    let session = client.open_session();
    let started = Instant::now();
    for id in 1..=200 {
        let reply = client.mcp(Some(&session), &tools_call(id, "echo", r#"{"n":1}"#));
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.message()["id"], id, "{}", reply.text());
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "200 sequential calls over one session took {took:?}"
    );
}

/// Connections that never finish their headers used to stay open forever: enough of them
/// used up the server's file descriptors and nobody else was served, not even `/healthz`.
/// Now each is closed after `header_timeout_ms`, and new clients are served meanwhile.
#[test]
fn half_sent_requests_neither_lock_clients_out_nor_stay_open() {
    let (_fx, server) = serve("[serve]\nheader_timeout_ms = 1000\n", Some(256));
    let mut flood: Vec<TcpStream> = (0..400).map(|_| half_sent(&server.authority)).collect();

    assert_eq!(healthz(&server.authority), 200);
    let mut client = RawHttp::connect(&server.authority);
    let session = client.open_session();
    let call = client.mcp(Some(&session), &tools_call(1, "echo", r#"{"n":1}"#));
    assert_eq!(call.status, 200, "{}", call.text());
    assert_eq!(
        call.message()["result"]["isError"],
        false,
        "{}",
        call.text()
    );

    for socket in &mut flood {
        assert!(
            closed_within(socket, Duration::from_secs(30)),
            "a connection that never finished its headers is still open"
        );
    }
}

/// Over `max_connections` a new connection waits to be accepted until one closes — here
/// one of two idle connections, at its header timeout: when the third client's answer
/// comes, one of them has been closed already.
#[test]
fn a_connection_over_the_cap_is_served_once_another_closes() {
    let (_fx, server) = serve(
        "[serve]\nmax_connections = 2\nheader_timeout_ms = 1000\n",
        None,
    );
    let mut first = half_sent(&server.authority);
    let mut second = half_sent(&server.authority);
    assert_eq!(healthz(&server.authority), 200);
    assert!(
        already_closed(&mut first) || already_closed(&mut second),
        "a third connection was served while two were open (max_connections = 2)"
    );
}

/// A request body that never arrives does not hold its connection either.
#[test]
fn a_withheld_body_gets_408_and_the_connection_closes() {
    let (_fx, server) = serve("[serve]\nheader_timeout_ms = 1000\n", None);
    let mut socket = TcpStream::connect(&server.authority).unwrap();
    write!(
        socket,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{{\"jsonrpc\"",
        server.authority
    )
    .unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut answer = Vec::new();
    socket
        .read_to_end(&mut answer)
        .expect("the server answers and closes the connection");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 408"), "{answer}");
    assert!(answer.contains("header_timeout_ms"), "{answer}");
}

/// Sessions were unbounded (20,000 `initialize`s took the server past 1.1 GB). Over
/// `max_sessions` an `initialize` gets 503 with a JSON-RPC error carrying its id, the open
/// sessions keep answering, and ending one makes room.
#[test]
fn an_initialize_over_max_sessions_is_refused_while_open_sessions_keep_working() {
    let (_fx, server) = serve("[serve]\nmax_sessions = 3\n", None);
    let mut client = RawHttp::connect(&server.authority);
    let sessions: Vec<String> = (0..3).map(|_| client.open_session()).collect();

    let over = client.mcp(
        None,
        r#"{"jsonrpc":"2.0","id":"over","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    assert_eq!(over.status, 503, "{}", over.text());
    let refusal = over.message();
    assert_eq!(refusal["id"], "over", "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_sessions"), "{refusal}");

    for (id, session) in sessions.iter().enumerate() {
        let call = client.mcp(Some(session), &tools_call(id as u64, "echo", "{}"));
        assert_eq!(call.status, 200, "{}", call.text());
        assert_eq!(
            call.message()["result"]["isError"],
            false,
            "{}",
            call.text()
        );
    }

    let ended = client.request("DELETE", "/mcp", &[("Mcp-Session-Id", &sessions[0])], b"");
    assert!(ended.status < 300, "{} {}", ended.status, ended.text());
    let mut again = RawHttp::connect(&server.authority);
    again.open_session();
}

/// A session without traffic for `session_idle_ms` is closed: its id then gets 404 and a
/// new session can be opened. Every message to a session restarts its idle time, so the
/// test stays idle (1 s, over three times the setting) before each look.
#[test]
fn an_idle_session_expires() {
    let (_fx, server) = serve("[serve]\nsession_idle_ms = 300\n", None);
    let session = RawHttp::connect(&server.authority).open_session();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 0;
    loop {
        std::thread::sleep(Duration::from_secs(1));
        id += 1;
        let call =
            RawHttp::connect(&server.authority).mcp(Some(&session), &tools_call(id, "echo", "{}"));
        match call.status {
            404 => break,
            200 => assert!(
                Instant::now() < deadline,
                "the session is still open after 30 s of 1 s pauses (session_idle_ms = 300)"
            ),
            other => panic!("unexpected status {other}: {}", call.text()),
        }
    }
    RawHttp::connect(&server.authority).open_session();
}

/// A body over `max_request_bytes` gets 413 with a JSON-RPC error carrying the request's
/// id (read from the body's first bytes, as on stdio), not rmcp's plain text.
#[test]
fn an_oversized_body_is_refused_with_its_own_id() {
    let (_fx, server) = serve("[serve]\nmax_request_bytes = 4000\n", None);
    let mut client = RawHttp::connect(&server.authority);
    let session = client.open_session();
    let text = "x".repeat(20_000);
    let reply = client.mcp(
        Some(&session),
        &tools_call(41, "echo", &format!(r#"{{"text":"{text}"}}"#)),
    );
    assert_eq!(reply.status, 413, "{}", reply.text());
    let refusal = reply.message();
    assert_eq!(refusal["id"], 41, "{refusal}");
    assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_request_bytes"), "{refusal}");
}

/// Keep-alive clients answered at once (a cheap `/healthz`) could hold every connection
/// slot for as long as they kept asking, and a new client waited without end. At the cap,
/// open connections are asked to close after their running request. The bound is a
/// liveness bound: the keep-alive idle limit (`header_timeout_ms`) is 60 s here, so without
/// that the third client would wait a minute.
#[test]
fn keep_alive_clients_at_the_cap_make_room_for_a_new_one() {
    let (_fx, server) = serve(
        "[serve]\nmax_connections = 2\nheader_timeout_ms = 60000\n",
        None,
    );
    let mut holders: Vec<RawHttp> = (0..2)
        .map(|_| RawHttp::connect(&server.authority))
        .collect();
    for holder in &mut holders {
        assert_eq!(holder.request("GET", "/healthz", &[], b"").status, 200);
    }
    let started = Instant::now();
    assert_eq!(healthz(&server.authority), 200);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "a new client waited {took:?} behind two keep-alive connections"
    );
}

/// Names of the threads of process `pid` that serve HTTP connections besides the one
/// accepting them.
fn http_threads_of(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the server's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .filter(|name| name.starts_with("toolhost-http-"))
        .collect();
    names.sort();
    names
}

/// `[serve] http_threads` is how many threads serve connections, the accepting one
/// included: the others are started, and connections handed to each in turn are answered.
#[test]
fn http_threads_start_that_many_serving_threads_and_each_answers() {
    // Five: not the default (one per core) of any machine this runs on.
    let (_fx, server) = serve("[serve]\nhttp_threads = 5\n", None);
    let mut clients: Vec<RawHttp> = (0..5)
        .map(|_| RawHttp::connect(&server.authority))
        .collect();
    for client in &mut clients {
        let session = client.open_session();
        let reply = client.mcp(Some(&session), &tools_call(7, "echo", r#"{"n":1}"#));
        assert_eq!(reply.message()["id"], 7, "{}", reply.text());
    }
    assert_eq!(
        http_threads_of(server.child.id()),
        [
            "toolhost-http-1",
            "toolhost-http-2",
            "toolhost-http-3",
            "toolhost-http-4"
        ]
    );
}

/// A session lives on the thread whose connection opened it; requests of that session
/// over connections served by the other threads reach it and are answered.
#[test]
fn a_session_opened_on_one_connection_is_served_over_the_others() {
    let (_fx, server) = serve("[serve]\nhttp_threads = 2\n", None);
    let mut opener = RawHttp::connect(&server.authority);
    let session = opener.open_session();
    for id in 1..=4 {
        let mut other = RawHttp::connect(&server.authority);
        let reply = other.mcp(Some(&session), &tools_call(id, "echo", r#"{"n":1}"#));
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.message()["id"], id, "{}", reply.text());
    }
}
