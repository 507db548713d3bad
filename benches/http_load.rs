//! MCP calls per second over streamable HTTP with a light client: `toolhost serve --http`
//! with sessions and `--stateless`, and — when `FASTMCP_PYTHON` names a Python with the
//! `mcp<2` package (scripts/bench.sh makes one) — FastMCP's streamable-HTTP server in both
//! modes (scripts/fastmcp_echo_server.py): the same 133-tool workload, the same client, the
//! same run, rounds alternating between the servers.
//!
//! The official Python client costs about a millisecond of CPU per call, more than either
//! server, so with it the ratio of two servers says little about them (toolhost 1.5× FastMCP
//! in `mcp_http_calls_per_s`). Here each of [`CALLERS`] threads drives one keep-alive
//! HTTP/1.1 connection (tests/common/raw_http.rs: a few microseconds per call), opens its
//! session (or not, stateless) and makes [`CALLS`] echo calls; on two cores the callers
//! share the CPU with the server, so the figures are the whole machine's, reported and
//! never asserted. Also the server's CPU per call under that load (all its threads).
//!
//! Prints one JSON line: `mcp_http_load_calls_per_s[_fastmcp][_stateless]` and
//! `mcp_http_load_cpu_us_per_call[...]`. `BENCH_TOOLHOST` names another toolhost binary to
//! measure (an A/B of two builds with the same client).

#[path = "common/mod.rs"]
mod common;
#[path = "common/fleet_net.rs"]
mod fleet_net;
#[allow(dead_code)]
#[path = "../tests/common/raw_http.rs"]
mod raw_http;

use raw_http::{INITIALIZE, INITIALIZED, RawHttp, tools_call};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Concurrent callers, each with a connection (and a session) of its own.
const CALLERS: usize = 8;
/// Calls per caller and round.
const CALLS: usize = 500;
/// Rounds per server and mode; the median is reported.
const ROUNDS: usize = 3;
const ARGUMENTS: &str = r#"{"text":"hello","count":3}"#;

/// A server process, killed when dropped.
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

fn main() {
    let workload = common::workload(133);
    let dir = tempfile::tempdir().expect("a temp dir");
    // Tool search off: every tool is listed, as FastMCP lists them.
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[tool_search]\nenabled = \"off\"\n",
    )
    .expect("config");
    let fastmcp = std::env::var_os("FASTMCP_PYTHON");
    let mut figures = serde_json::Map::new();
    for stateless in [false, true] {
        let mode = if stateless { "_stateless" } else { "" };
        let mut toolhost = Vec::new();
        let mut reference = Vec::new();
        for _ in 0..ROUNDS {
            toolhost.push(load(&start_toolhost(dir.path(), &workload, stateless)));
            if let Some(python) = &fastmcp {
                reference.push(load(&start_fastmcp(python.as_ref(), &workload, stateless)));
            }
        }
        for (name, rounds) in [("", toolhost), ("_fastmcp", reference)] {
            if rounds.is_empty() {
                continue;
            }
            let (rate, cpu) = medians(rounds);
            figures.insert(
                format!("mcp_http_load_calls_per_s{name}{mode}"),
                rate.into(),
            );
            figures.insert(
                format!("mcp_http_load_cpu_us_per_call{name}{mode}"),
                cpu.into(),
            );
        }
    }
    println!("{}", serde_json::Value::Object(figures));
}

/// Calls per second of [`CALLERS`] callers against `server`, and the server's CPU per
/// call (µs) meanwhile.
fn load(server: &Server) -> (f64, f64) {
    let ready = Barrier::new(CALLERS + 1);
    let done = Barrier::new(CALLERS + 1);
    std::thread::scope(|scope| {
        for _ in 0..CALLERS {
            scope.spawn(|| {
                let mut client = RawHttp::connect(&server.authority);
                let session = open(&mut client);
                for id in 0..20 {
                    call(&mut client, session.as_deref(), id);
                }
                ready.wait();
                for id in 0..CALLS as u64 {
                    call(&mut client, session.as_deref(), id + 100);
                }
                done.wait();
            });
        }
        ready.wait();
        let (started, cpu) = (Instant::now(), cpu_ns(server.child.id()));
        done.wait();
        let seconds = started.elapsed().as_secs_f64();
        let calls = (CALLERS * CALLS) as f64;
        let cpu_us = (cpu_ns(server.child.id()) - cpu) as f64 / 1000.0 / calls;
        (calls / seconds, cpu_us)
    })
}

/// `initialize` and `notifications/initialized`: the session's id, if the server made one.
fn open(client: &mut RawHttp) -> Option<String> {
    let reply = client.mcp(None, INITIALIZE);
    assert_eq!(reply.status, 200, "initialize: {}", reply.text());
    let session = reply.header("mcp-session-id").map(str::to_string);
    let done = client.mcp(session.as_deref(), INITIALIZED);
    assert!(done.status < 300, "initialized: {}", done.text());
    session
}

fn call(client: &mut RawHttp, session: Option<&str>, id: u64) {
    let reply = client.mcp(session, &tools_call(id, "echo", ARGUMENTS));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.message()["id"], id, "{}", reply.text());
}

/// CPU time of every thread of `pid` so far (ns), from the scheduler's statistics.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The median calls/s and CPU per call of `rounds`, rounded.
fn medians(rounds: Vec<(f64, f64)>) -> (f64, f64) {
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let rate = median(rounds.iter().map(|r| r.0).collect());
    let cpu = median(rounds.iter().map(|r| r.1).collect());
    ((rate * 10.0).round() / 10.0, (cpu * 10.0).round() / 10.0)
}

/// `toolhost serve --http` over the workload's tools, on a free loopback port.
fn start_toolhost(dir: &Path, workload: &Path, stateless: bool) -> Server {
    let binary =
        std::env::var_os("BENCH_TOOLHOST").unwrap_or_else(|| env!("CARGO_BIN_EXE_toolhost").into());
    let mut command = Command::new(binary);
    command
        .current_dir(dir)
        .env_remove("TOOLHOST_CONFIG")
        .env("TOOLHOST_NO_LIBRARY", "1")
        .arg("--tools-dir")
        .arg(workload.join("tools-lua"))
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"])
        .args(stateless.then_some("--stateless"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("toolhost serve starts");
    let authority = fleet_net::serving_authority(&mut child);
    Server { child, authority }
}

/// FastMCP's streamable-HTTP server over the same workload, once it accepts connections.
fn start_fastmcp(python: &Path, workload: &Path, stateless: bool) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let script = common::root().join("scripts/fastmcp_echo_server.py");
    let child = Command::new(python)
        .arg(script)
        .arg(workload.join("workload.json"))
        .args(["http", &port.to_string()])
        .args(stateless.then_some("stateless"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the FastMCP server starts");
    let server = Server {
        child,
        authority: format!("127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&server.authority).is_err() {
        assert!(
            Instant::now() < deadline,
            "the FastMCP server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}
