//! SSE polling (SEP-1699, `[serve] sse_poll_after_ms`): a long `tools/call`'s POST stream is
//! ended by the server with a priming event (event id, `retry`), and the client gets the
//! progress and the answer by resuming with `GET` + `Last-Event-ID`. Hostile resumptions (a
//! garbage id, another session's id) get an empty stream and change nothing. Raw HTTP
//! against the real binary, so what is on the wire is what is checked.

mod common;

use common::Fixture;
use common::mcp_client::{run_script, step};
use common::raw_http::{RawHttp, Reply, tools_call};
use serde_json::Value;
use std::process::{Child, Command};

const TOOLS: &str = r#"
registry.register{ name = "slow", toolset = "t",
  schema = { description = "Reports progress, then answers after ms milliseconds",
             parameters = { type = "object", properties = { ms = { type = "integer" } } } },
  handler = function(args, ctx)
    ctx.progress(1, 2)
    time.sleep(args.ms)
    return "slept " .. args.ms
  end }
registry.register{ name = "slow_then_mark", toolset = "t",
  schema = { description = "Answers after ms milliseconds, writing done.txt just before",
             parameters = { type = "object", properties = { ms = { type = "integer" } } } },
  handler = function(args)
    time.sleep(args.ms)
    fs.write("done.txt", "done")
    return "marked"
  end }
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

/// `toolhost serve --http` on a free loopback port in a fixture with `config`.
fn serve(config: &str) -> (Fixture, Server) {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", config);
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
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

const POLLING: &str = "[serve]\nsse_poll_after_ms = 200\n";

/// One SSE event: its id, `retry` and data (lines joined).
#[derive(Debug, Default)]
struct Event {
    id: Option<String>,
    retry: Option<u64>,
    data: String,
}

impl Event {
    fn message(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

fn events(reply: &Reply) -> Vec<Event> {
    reply
        .text()
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = Event::default();
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => event.id = Some(value.to_string()),
                    "retry" => event.retry = value.parse().ok(),
                    "data" => event.data.push_str(value),
                    _ => {}
                }
            }
            event
        })
        .collect()
}

/// The answer to request `id` among `events`, if there.
fn answer(events: &[Event], id: u64) -> Option<Value> {
    events
        .iter()
        .filter_map(Event::message)
        .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
}

fn resume(http: &mut RawHttp, session: &str, last_event_id: &str) -> Reply {
    http.request(
        "GET",
        "/mcp",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", session),
            ("Last-Event-ID", last_event_id),
        ],
        b"",
    )
}

/// The call `id`'s answer, resuming from `last` (and from each stream's last event id in
/// turn) until it comes; every event seen on the way is added to `seen`.
fn resume_until_answered(
    http: &mut RawHttp,
    session: &str,
    mut last: String,
    id: u64,
    seen: &mut Vec<Event>,
) -> Value {
    // Liveness bound only: the call takes about 1 s and each stream lasts 0.2 s.
    for _ in 0..200 {
        let reply = resume(http, session, &last);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let got = events(&reply);
        if let Some(found) = answer(&got, id) {
            seen.extend(got);
            return found;
        }
        last = got
            .iter()
            .rev()
            .find_map(|e| e.id.clone())
            .unwrap_or_else(|| panic!("a resumed stream without an event id: {}", reply.text()));
        seen.extend(got);
    }
    panic!("no answer to call {id} after 200 resumptions");
}

/// A call past the polling time: its POST stream starts with a priming event, ends with
/// another (id and `retry`) and no answer; resuming from that id brings the answer.
#[test]
fn a_long_call_s_stream_is_ended_and_its_answer_comes_on_resumption() {
    let (_fx, server) = serve(POLLING);
    let mut http = RawHttp::connect(&server.authority);
    let session = http.open_session();
    let call = tools_call(7, "slow", r#"{"ms":1000}"#);
    let posted = http.mcp(Some(&session), &call);
    assert_eq!(posted.status, 200, "{}", posted.text());
    let first = events(&posted);
    assert!(
        answer(&first, 7).is_none(),
        "answered on the POST: {}",
        posted.text()
    );
    let (opening, closing) = (&first[0], first.last().unwrap());
    assert!(opening.id.is_some() && opening.data.is_empty(), "{first:?}");
    assert!(closing.data.is_empty(), "{first:?}");
    assert!(closing.retry.is_some(), "no retry hint: {first:?}");
    let last = closing.id.clone().expect("the closing event has an id");

    let mut seen = Vec::new();
    let found = resume_until_answered(&mut http, &session, last, 7, &mut seen);
    assert_eq!(
        found["result"]["content"][0]["text"], "slept 1000",
        "{found}"
    );
}

/// A call that answers while the client holds no stream (after its POST stream was ended,
/// before the client resumes) still has its answer delivered on resumption: the events are
/// kept past the answer, not dropped with it.
#[test]
fn an_answer_that_comes_between_streams_is_kept_for_the_resumption() {
    let (fx, server) = serve(POLLING);
    let mut http = RawHttp::connect(&server.authority);
    let session = http.open_session();
    let posted = http.mcp(
        Some(&session),
        &tools_call(6, "slow_then_mark", r#"{"ms":600}"#),
    );
    let first = events(&posted);
    assert!(
        answer(&first, 6).is_none(),
        "answered on the POST: {}",
        posted.text()
    );
    let last = first
        .last()
        .and_then(|e| e.id.clone())
        .expect("an event id");
    // The handler's last act: once the file is there, the answer is (about to be) sent
    // while no stream of this call is open.
    let marker = fx.root().join("done.txt");
    let waited = std::time::Instant::now();
    while !marker.exists() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(30),
            "the tool never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let reply = resume(&mut http, &session, &last);
    let found = answer(&events(&reply), 6)
        .unwrap_or_else(|| panic!("no answer on the first resumption: {}", reply.text()));
    assert_eq!(found["result"]["content"][0]["text"], "marked", "{found}");
}

/// The progress a long call reports before its stream is ended reaches the client, on the
/// POST stream or a resumed one.
#[test]
fn a_long_call_s_progress_reaches_the_client_across_resumptions() {
    let (_fx, server) = serve(POLLING);
    let mut http = RawHttp::connect(&server.authority);
    let session = http.open_session();
    let call = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1000},"_meta":{"progressToken":"p8"}}}"#;
    let posted = http.mcp(Some(&session), call);
    let mut seen = events(&posted);
    let last = seen.last().and_then(|e| e.id.clone()).expect("an event id");
    resume_until_answered(&mut http, &session, last, 8, &mut seen);
    let progress: Vec<Value> = seen
        .iter()
        .filter_map(Event::message)
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 1, "{progress:?}");
    assert_eq!(progress[0]["params"]["progressToken"], "p8");
}

/// A call that answers before the polling time is answered on its own POST stream.
#[test]
fn a_quick_call_is_answered_on_its_post_stream() {
    let (_fx, server) = serve(POLLING);
    let mut http = RawHttp::connect(&server.authority);
    let session = http.open_session();
    let posted = http.mcp(Some(&session), &tools_call(3, "echo", r#"{"a":1}"#));
    let found = answer(&events(&posted), 3).expect("answered on the POST");
    assert!(found.get("result").is_some(), "{found}");
}

/// Without `sse_poll_after_ms` (the default) a long call's POST stream stays open until the
/// answer.
#[test]
fn without_the_setting_a_long_call_is_answered_on_its_post_stream() {
    let (_fx, server) = serve("");
    let mut http = RawHttp::connect(&server.authority);
    let session = http.open_session();
    let posted = http.mcp(Some(&session), &tools_call(4, "slow", r#"{"ms":500}"#));
    let found = answer(&events(&posted), 4).expect("answered on the POST");
    assert_eq!(
        found["result"]["content"][0]["text"], "slept 500",
        "{found}"
    );
}

/// Hostile: a malformed or unknown `Last-Event-ID` gets 200 with an empty stream (an error
/// status would make an EventSource retry forever), and the session goes on working.
#[test]
fn a_garbage_last_event_id_gets_an_empty_stream() {
    let (_fx, server) = serve(POLLING);
    let mut http = RawHttp::connect(&server.authority);
    let session = http.open_session();
    for garbage in [
        "garbage",
        "99999999999999999999999999/1",
        "0/424242",
        "-1/0",
        "0/0+poll-0-1",
        "",
    ] {
        let reply = resume(&mut http, &session, garbage);
        assert_eq!(reply.status, 200, "{garbage:?}: {}", reply.text());
        let got = events(&reply);
        assert!(
            got.iter().all(|e| e.message().is_none()),
            "{garbage:?} replayed messages: {}",
            reply.text()
        );
    }
    let posted = http.mcp(Some(&session), &tools_call(5, "echo", "{}"));
    assert!(answer(&events(&posted), 5).is_some(), "{}", posted.text());
}

/// Hostile: another session resuming with this session's event id gets nothing of this
/// call, and this session still gets its answer.
#[test]
fn another_session_s_event_id_resumes_nothing() {
    let (_fx, server) = serve(POLLING);
    let mut owner = RawHttp::connect(&server.authority);
    let session = owner.open_session();
    let posted = owner.mcp(Some(&session), &tools_call(9, "slow", r#"{"ms":1000}"#));
    let last = events(&posted)
        .last()
        .and_then(|e| e.id.clone())
        .expect("an event id");

    let mut thief = RawHttp::connect(&server.authority);
    let other = thief.open_session();
    let stolen = resume(&mut thief, &other, &last);
    assert_eq!(stolen.status, 200, "{}", stolen.text());
    assert!(
        events(&stolen).iter().all(|e| e.message().is_none()),
        "another session's events: {}",
        stolen.text()
    );

    let mut seen = Vec::new();
    let found = resume_until_answered(&mut owner, &session, last, 9, &mut seen);
    assert_eq!(
        found["result"]["content"][0]["text"], "slept 1000",
        "{found}"
    );
}

/// The official Python client (which resumes per SEP-1699) gets a long call's answer and
/// its progress, resuming at least once on its own.
#[test]
fn the_python_client_resumes_a_long_call_and_gets_its_answer() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", POLLING);
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "sse_polling.py",
        &[binary.to_str().unwrap(), fx.root().to_str().unwrap()],
    );
    let call = step(&steps, "call");
    assert_eq!(call["text"], "slept 1000", "{call}");
    assert_eq!(call["is_error"], false, "{call}");
    assert_eq!(call["progress"], serde_json::json!([[1.0, 2.0]]), "{call}");
    assert!(call["resumptions"].as_u64() >= Some(1), "{call}");
}
