//! The audit log (`[audit]`, docs/telemetry.md#audit-log): the real binary serving MCP on
//! stdio, its audit lines read back field by field; rotation; a path that cannot be
//! written at the start, and a write that fails while serving.

mod common;

use common::Fixture;
use common::raw_http::{INITIALIZE, INITIALIZED, tools_call};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

const TOOLS: &str = r#"
registry.register{ name = "echo", toolset = "t",
  schema = { description = "Echo", parameters = { type = "object" } },
  handler = function(args) return args end }
registry.register{ name = "guarded", toolset = "t", requires_approval = true,
  schema = { description = "Needs approval", parameters = { type = "object" } },
  handler = function() return "done" end }
registry.register{ name = "fails", toolset = "t",
  schema = { description = "Raises", parameters = { type = "object" } },
  handler = function() error("broken on purpose") end }
registry.register{ name = "outer", toolset = "t",
  schema = { description = "Calls echo twice", parameters = { type = "object" } },
  handler = function(_, ctx)
    ctx.call("echo", { word = "inner" })
    return ctx.call("echo", { block = true })
  end }
registry.register{ name = "summed", toolset = "t", task = "optional",
  schema = { description = "A task that calls echo", parameters = { type = "object" } },
  handler = function(_, ctx) return ctx.call("echo", { n = 1 }) end }
registry.hook("pre_tool_call", function(call)
  if call.args.block then return { action = "block", message = "no" } end
end)
"#;

/// A stdio server in the fixture's root, past `initialize`.
struct Server {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
    stderr: std::io::Lines<BufReader<std::process::ChildStderr>>,
}

impl Server {
    fn start(fx: &Fixture, config: &str) -> Self {
        Self::start_with(fx, config, INITIALIZE)
    }

    /// [`Self::start`] with the client's own `initialize` request (id 0).
    fn start_with(fx: &Fixture, config: &str, initialize: &str) -> Self {
        std::fs::create_dir_all(fx.root().join("tools")).unwrap();
        fx.write("tools/t.lua", TOOLS);
        fx.write("toolhost.toml", config);
        let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
            .current_dir(fx.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .args(["--tools-dir", "tools", "--cache-dir", "cache", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut server = Self {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()).lines(),
            stderr: BufReader::new(child.stderr.take().unwrap()).lines(),
            child,
        };
        server.send(initialize);
        server.answer(0);
        server.send(INITIALIZED);
        server
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn answer(&mut self, id: u64) -> Value {
        loop {
            let line = self.stdout.next().expect("an answer").unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, id: u64, name: &str, args: &str) -> Value {
        self.send(&tools_call(id, name, args));
        self.answer(id)
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&request.to_string());
        self.answer(id)
    }

    /// Closes stdin and waits for the exit; the rest of stderr.
    fn finish(mut self) -> String {
        drop(self.stdin);
        self.child.wait().unwrap();
        self.stderr
            .map_while(Result::ok)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn sha256(canonical: &str) -> String {
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn each_call_writes_one_audit_line_with_every_field() {
    let fx = Fixture::new();
    let mut server = Server::start(
        &fx,
        "[audit]\npath = \"audit.log\"\n[approval]\nmcp = \"allow\"\n",
    );
    // Audited before the answer is sent: the line is there once the answer is.
    let answer = server.call(1, "echo", r#"{"z":1,"a":{"y":2,"x":"secret"}}"#);
    assert_eq!(answer["result"]["isError"], false);
    let first = lines(&fx.root().join("audit.log"));
    assert_eq!(first.len(), 1);
    server.call(2, "guarded", "{}");
    server.call(3, "echo", r#"{"block":true}"#);
    server.call(4, "fails", "{}");
    server.call(5, "no_such_tool", "{}");
    server.finish();
    let audit = lines(&fx.root().join("audit.log"));
    assert_eq!(audit.len(), 5, "{audit:#?}");

    let echo = &audit[0];
    let fields: Vec<&str> = echo
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "time",
        "request_id",
        "parent",
        "task_id",
        "caller",
        "client",
        "transport",
        "session_id",
        "tool",
        "arguments_sha256",
        "hooks",
        "approval",
        "outcome",
        "error_type",
        "duration_ms",
        "replica",
    ];
    expected.sort_unstable();
    let mut fields = fields;
    fields.sort_unstable();
    assert_eq!(fields, expected, "no raw arguments unless asked");
    let time = echo["time"].as_str().unwrap();
    assert!(
        time.len() == 24 && time.ends_with('Z') && &time[10..11] == "T",
        "RFC 3339 UTC: {time}"
    );
    assert_eq!(echo["request_id"], "1");
    assert_eq!(echo["parent"], Value::Null, "the client's own call");
    assert_eq!(echo["task_id"], Value::Null);
    assert_eq!(echo["caller"], json!({"id": "local", "kind": "local"}));
    assert_eq!(echo["client"], json!({"name": "raw", "version": "1"}));
    assert_eq!(echo["transport"], "stdio");
    assert_eq!(echo["session_id"], Value::Null);
    assert_eq!(echo["tool"], "echo");
    // The digest of the canonical arguments: keys sorted at every level, no spaces.
    assert_eq!(
        echo["arguments_sha256"],
        sha256(r#"{"a":{"x":"secret","y":2},"z":1}"#)
    );
    assert!(!echo.to_string().contains("secret"));
    assert_eq!(echo["hooks"], "proceed");
    assert_eq!(echo["approval"], Value::Null, "echo needs no approval");
    assert_eq!(echo["outcome"], "ok");
    assert_eq!(echo["error_type"], Value::Null);
    assert!(echo["duration_ms"].is_u64());
    let replica = echo["replica"].as_str().unwrap();
    let pid = replica.rsplit(':').next().unwrap();
    assert!(pid.parse::<u32>().is_ok(), "hostname:pid, got {replica}");

    assert_eq!(audit[1]["tool"], "guarded");
    assert_eq!(audit[1]["approval"], "approved");
    assert_eq!(audit[2]["hooks"], "blocked");
    assert_eq!(audit[2]["outcome"], "error");
    assert_eq!(audit[2]["error_type"], "blocked");
    assert_eq!(audit[3]["outcome"], "error");
    assert_eq!(audit[3]["error_type"], "handler_error");
    assert_eq!(audit[4]["error_type"], "unknown_tool");
    assert_eq!(audit[4]["hooks"], Value::Null, "stopped before the hooks");
}

#[test]
fn a_denied_approval_is_audited() {
    let fx = Fixture::new();
    let mut server = Server::start(
        &fx,
        "[audit]\npath = \"audit.log\"\n[approval]\nmcp = \"deny\"\n",
    );
    server.call(1, "guarded", "{}");
    server.finish();
    let audit = lines(&fx.root().join("audit.log"));
    assert_eq!(audit[0]["approval"], "denied");
    assert_eq!(audit[0]["outcome"], "error");
}

#[test]
fn raw_arguments_are_written_only_when_asked() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx, "[audit]\npath = \"audit.log\"\narguments = true\n");
    server.call(1, "echo", r#"{"word":"visible"}"#);
    server.finish();
    let audit = lines(&fx.root().join("audit.log"));
    assert_eq!(audit[0]["arguments"], json!({"word": "visible"}));
}

#[test]
fn the_audit_log_rotates_once_it_would_pass_max_bytes() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx, "[audit]\npath = \"audit.log\"\nmax_bytes = 700\n");
    for id in 1..=3 {
        server.call(id, "echo", "{}");
    }
    server.finish();
    let current = lines(&fx.root().join("audit.log"));
    let rotated = lines(&fx.root().join("audit.log.1"));
    // About 450 bytes a line: each line past the first starts a new file.
    assert_eq!(current.len(), 1);
    assert_eq!(rotated.len(), 1);
    assert_eq!(rotated[0]["request_id"], "2");
    assert_eq!(current[0]["request_id"], "3");
    let size = std::fs::metadata(fx.root().join("audit.log"))
        .unwrap()
        .len();
    assert!(size <= 700);
}

#[test]
fn an_audit_path_that_cannot_be_written_stops_the_start() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.root().join("tools")).unwrap();
    fx.write("tools/t.lua", TOOLS);
    fx.write(
        "toolhost.toml",
        "[audit]\npath = \"no-such-dir/audit.log\"\n",
    );
    let out = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--tools-dir", "tools", "serve"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("[audit] path"), "{stderr}");
    assert!(stderr.contains("no-such-dir/audit.log"), "{stderr}");
}

#[test]
fn a_failed_audit_write_is_reported_and_the_call_still_answers() {
    if !std::path::Path::new("/dev/full").exists() {
        return; // Linux's always-full device is the failing disk here.
    }
    let fx = Fixture::new();
    let mut server = Server::start(&fx, "[audit]\npath = \"/dev/full\"\n");
    let answer = server.call(1, "echo", r#"{"ok":true}"#);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let stderr = server.finish();
    assert!(
        stderr.contains("cannot write the audit line of echo (request 1)"),
        "{stderr}"
    );
}

#[test]
fn audit_lines_can_go_to_stderr() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx, "[audit]\npath = \"stderr\"\n");
    server.call(1, "echo", "{}");
    let stderr = server.finish();
    let line = stderr
        .lines()
        .find_map(|line| serde_json::from_str::<Value>(line).ok())
        .unwrap_or_else(|| panic!("no audit line in {stderr}"));
    assert_eq!(line["tool"], "echo");
}

#[test]
fn each_ctx_call_writes_its_own_line_naming_its_parent() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx, "[audit]\npath = \"audit.log\"\n");
    server.call(7, "outer", "{}");
    server.finish();
    let audit = lines(&fx.root().join("audit.log"));
    // The children end (and are written) before their caller.
    assert_eq!(audit.len(), 3, "{audit:#?}");
    let (first, second, outer) = (&audit[0], &audit[1], &audit[2]);
    assert_eq!(outer["tool"], "outer");
    assert_eq!(outer["request_id"], "7");
    assert_eq!(outer["parent"], Value::Null);
    assert_eq!(outer["outcome"], "ok", "the caller's own result is fine");

    assert_eq!(first["tool"], "echo");
    assert_eq!(first["request_id"], "7/1");
    assert_eq!(first["parent"], "7");
    assert_eq!(first["task_id"], Value::Null);
    assert_eq!(first["arguments_sha256"], sha256(r#"{"word":"inner"}"#));
    assert_eq!(first["hooks"], "proceed", "its own decisions");
    assert_eq!(first["outcome"], "ok");
    assert_eq!(first["error_type"], Value::Null);
    // Who and where are the caller's.
    assert_eq!(first["caller"], json!({"id": "local", "kind": "local"}));
    assert_eq!(first["client"], json!({"name": "raw", "version": "1"}));
    assert_eq!(first["transport"], "stdio");
    assert!(first["duration_ms"].is_u64());
    assert_eq!(first["replica"], outer["replica"]);

    assert_eq!(second["request_id"], "7/2");
    assert_eq!(second["parent"], "7");
    assert_eq!(second["hooks"], "blocked");
    assert_eq!(second["outcome"], "error");
    assert_eq!(second["error_type"], "blocked");
}

#[test]
fn a_task_call_is_audited_when_it_ends_with_its_task_id() {
    let fx = Fixture::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let mut server = Server::start_with(
        &fx,
        "[audit]\npath = \"audit.log\"\n",
        &initialize.to_string(),
    );
    let created = server.request(1, "tools/call", json!({"name": "summed", "arguments": {}}));
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();
    // The line is written before the task's end is recorded: once `tasks/get` shows the
    // end, the line is there.
    let mut id = 1;
    loop {
        id += 1;
        let task = server.request(id, "tasks/get", json!({"taskId": task_id}));
        if task["result"]["status"] != "working" {
            assert_eq!(task["result"]["status"], "completed", "{task}");
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let audit = lines(&fx.root().join("audit.log"));
    assert_eq!(audit.len(), 2, "{audit:#?}");
    let (child, task) = (&audit[0], &audit[1]);
    assert_eq!(task["tool"], "summed");
    assert_eq!(task["request_id"], "1");
    assert_eq!(task["task_id"], task_id.as_str());
    assert_eq!(task["parent"], Value::Null);
    assert_eq!(task["hooks"], "proceed");
    assert_eq!(task["outcome"], "ok");
    assert_eq!(task["transport"], "stdio");
    assert_eq!(child["tool"], "echo");
    assert_eq!(child["parent"], "1");
    assert_eq!(child["task_id"], task_id.as_str(), "it ran inside the task");
    server.finish();
}
