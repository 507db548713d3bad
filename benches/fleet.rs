//! A fleet's throughput: echo calls (2026-07-28, one request per connection) from 16
//! callers through the round-robin proxy of benches/common/fleet_net.rs to one and to
//! three `toolhost serve --http --stateless` replicas sharing one SQLite store. On a
//! two-core machine the replicas share the CPU with the callers and the proxy, so the
//! figures are reported, never asserted. Prints one JSON line:
//! `{"fleet_calls_per_s_1": …, "fleet_calls_per_s_3": …}`.

#[path = "common/fleet_net.rs"]
mod fleet_net;

use fleet_net::{Proxy, post_once};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const CALLERS: usize = 16;
const CALLS_EACH: usize = 100;
const ECHO: &str = r#"
registry.register{ name = "echo", toolset = "t",
  schema = { description = "Echoes text", parameters = { type = "object",
    properties = { text = { type = "string" } } } },
  handler = function(args) return args.text end }
"#;

/// A replica, killed when dropped.
struct Replica(Child);

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir_all(dir.path().join("tools-lua")).expect("tools dir");
    std::fs::write(dir.path().join("tools-lua/echo.lua"), ECHO).expect("echo tool");
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[store]\npath = \"store.sqlite3\"\n[tool_search]\nenabled = \"off\"\n",
    )
    .expect("config");
    let one = calls_per_s(dir.path(), 1);
    let three = calls_per_s(dir.path(), 3);
    println!(
        "{}",
        serde_json::json!({ "fleet_calls_per_s_1": one, "fleet_calls_per_s_3": three })
    );
}

/// Calls per second through the proxy to `replicas` replicas.
fn calls_per_s(dir: &std::path::Path, replicas: usize) -> f64 {
    let started: Vec<(Replica, String)> = (0..replicas).map(|i| start(dir, i)).collect();
    let proxy = Proxy::start(started.iter().map(|(_, a)| a.clone()).collect());
    // Warm every replica (its VMs, caches and store connection) before timing.
    for _ in 0..replicas * 4 {
        echo(&proxy.authority);
    }
    let begin = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..CALLERS {
            scope.spawn(|| {
                for _ in 0..CALLS_EACH {
                    echo(&proxy.authority);
                }
            });
        }
    });
    let seconds = begin.elapsed().as_secs_f64();
    ((CALLERS * CALLS_EACH) as f64 / seconds * 10.0).round() / 10.0
}

fn echo(authority: &str) {
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "hello" }, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "fleet-bench", "version": "1" } } } });
    let answer = post_once(
        authority,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ],
        body.to_string().as_bytes(),
    )
    .expect("an answer");
    let message = answer.message().expect("a JSON-RPC message");
    assert_eq!(
        message["result"]["content"][0]["text"], "hello",
        "{message}"
    );
}

/// Starts replica `index` in `dir`; returns it with its address once it listens.
fn start(dir: &std::path::Path, index: usize) -> (Replica, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir)
        .env_remove("TOOLHOST_CONFIG")
        // The workload's tools only, as the other figures measure.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", &format!("cache-{index}"), "serve", "--http"])
        .args(["127.0.0.1:0", "--stateless"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolhost serve starts");
    let authority = fleet_net::serving_authority(&mut child);
    (Replica(child), authority)
}
