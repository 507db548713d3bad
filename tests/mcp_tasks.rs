//! The MCP Tasks extension (`io.modelcontextprotocol/tasks`, docs/mcp-server.md#tasks) with
//! raw JSON-RPC against the real `toolhost serve` over stdio: a `task` tool called by a
//! client that declares the extension answers with a task, which is polled to its result,
//! cancelled (its handler stopped), refused to clients without the extension when
//! `required`, and read back after the server restarts.

mod common;

use common::Fixture;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A `toolhost serve` over piped stdio, after the handshake.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// 2026-07-28: the `_meta` every request carries (no session).
    meta: Option<Value>,
}

impl Server {
    /// Starts the server in `fx` for a 2025-11-25 session; the client declares the Tasks
    /// extension when `tasks`.
    fn start(fx: &Fixture, tasks: bool) -> Self {
        Self::start_with(fx, tasks, &[])
    }

    /// [`Self::start`] with more `serve` arguments.
    fn start_with(fx: &Fixture, tasks: bool, serve_args: &[&str]) -> Self {
        Self::start_with_env(fx, tasks, serve_args, &[])
    }

    /// [`Self::start_with`] with variables set for the server.
    fn start_with_env(
        fx: &Fixture,
        tasks: bool,
        serve_args: &[&str],
        env: &[(&str, String)],
    ) -> Self {
        let mut server = Self::spawn_env(fx, serve_args, env);
        let capabilities = match tasks {
            true => json!({ "extensions": { TASKS: {} } }),
            false => json!({}),
        };
        let init = server.request(
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": capabilities,
                    "clientInfo": { "name": "raw", "version": "1" } }),
        );
        assert!(init.get("result").is_some(), "{init}");
        server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        server
    }

    /// Starts the server in `fx` for 2026-07-28 requests (no `initialize`; each request's
    /// `_meta` carries the revision and declares the Tasks extension).
    fn start_2026(fx: &Fixture) -> Self {
        let mut server = Self::spawn(fx, &[]);
        server.meta = Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } },
            "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" }
        }));
        server
    }

    fn spawn(fx: &Fixture, serve_args: &[&str]) -> Self {
        Self::spawn_env(fx, serve_args, &[])
    }

    fn spawn_env(fx: &Fixture, serve_args: &[&str], env: &[(&str, String)]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
            .current_dir(fx.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(["--cache-dir", "cache", "-q", "serve"])
            .args(serve_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("toolhost serve starts");
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
        Self {
            child,
            stdin,
            lines,
            next_id: 0,
            meta: None,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends a request and returns its answer (notifications are skipped; fails after
    /// 20 s instead of hanging).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut params = params;
        if let (Some(meta), Some(params)) = (&self.meta, params.as_object_mut()) {
            params.insert("_meta".into(), meta.clone());
        }
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params);
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {answer}"))
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.result(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
    }

    /// Polls `tasks/get` until the task leaves `working` (within 20 s).
    fn settled(&mut self, task_id: &str) -> Value {
        let start = Instant::now();
        loop {
            let task = self.result("tasks/get", json!({ "taskId": task_id }));
            if task["status"] != "working" {
                return task;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "still working: {task}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Closes stdin and waits for the server to exit (within 20 s).
    fn stop(mut self) {
        drop(self.stdin.take());
        let start = Instant::now();
        while self.child.try_wait().expect("wait").is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "serve did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TOOLS: &str = r#"
registry.register{ name = "sum", toolset = "t", task = "optional",
  schema = { description = "Adds", parameters = { type = "object",
    properties = { a = { type = "integer" }, b = { type = "integer" } } } },
  handler = function(args, ctx) ctx.progress(1, 1, "adding") return tostring(args.a + args.b) end }
registry.register{ name = "late_marker", toolset = "t", task = "required", timeout_ms = 60000,
  schema = { description = "Writes a marker after a while", parameters = { type = "object" } },
  handler = function() time.sleep(1500) fs.write("marker.txt", "written") return "done" end }
registry.register{ name = "longer_nap", toolset = "t",
  schema = { description = "Outlasts late_marker", parameters = { type = "object" } },
  handler = function() time.sleep(3000) return "rested" end }
registry.register{ name = "raises", toolset = "t", task = "optional",
  schema = { description = "Fails", parameters = { type = "object" } },
  handler = function() error("no luck") end }
registry.register{ name = "overruns", toolset = "t", task = "optional", timeout_ms = 200,
  schema = { description = "Runs past its deadline", parameters = { type = "object" } },
  handler = function() time.sleep(60000) return "never" end }
registry.register{ name = "doubled", toolset = "t", task = "optional",
  schema = { description = "Doubles in prepare", parameters = { type = "object",
    properties = { a = { type = "integer" } } } },
  prepare = function(args, ctx)
    if args.a < 0 then error("negative: " .. args.a) end
    return { n = args.a * 2, task_seen = ctx.task_id or "none" }
  end,
  handler = function(args, ctx, prepared)
    return { n = prepared.n, prepare_saw = prepared.task_seen, task_id = ctx.task_id }
  end }
registry.register{ name = "halved", toolset = "t", task = "optional",
  schema = { description = "Halves in a prepare of one parameter", parameters = { type = "object",
    properties = { a = { type = "integer" } } } },
  prepare = function(args) return { n = args.a // 2 } end,
  handler = function(args, ctx, prepared) return { n = prepared.n, caller = ctx.caller.id } end }
registry.register{ name = "halfway", toolset = "t", task = "optional", timeout_ms = 60000,
  schema = { description = "Reports progress, then waits for go.txt", parameters = { type = "object" } },
  handler = function(_, ctx)
    ctx.progress(1, 2, "halfway")
    while not fs.exists("go.txt") do time.sleep(10) end
    return "went"
  end }
registry.register{ name = "hog", toolset = "t", task = "optional",
  schema = { description = "Allocates without end", parameters = { type = "object" } },
  handler = function()
    local t = {}
    for i = 1, 1e9 do t[i] = string.rep("x", 1024) .. i end
    return "never"
  end }
registry.register{ name = "forger", toolset = "t",
  schema = { description = "Writes the store", parameters = { type = "object",
    properties = { key = { type = "string" } } } },
  handler = function(args)
    store.set(args.key, { status = "completed", result = { content = {}, forged = true } })
    return "written"
  end }
registry.register{ name = "peek", toolset = "t",
  schema = { description = "Reads the store", parameters = { type = "object",
    properties = { key = { type = "string" } } } },
  handler = function(args)
    return { found = store.get(args.key) ~= nil, keys = #store.list("") }
  end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write(
        "toolhost.toml",
        "[runtime]\nvms = 2\n[serve]\ntask_ttl_ms = 600000\n",
    );
    fx
}

/// Calls `name` as a task and returns the created task.
fn start_task(server: &mut Server, name: &str, arguments: Value) -> Value {
    let created = server.call(name, arguments);
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(
        created["taskId"].as_str().is_some_and(|id| id.len() >= 32),
        "{created}"
    );
    created
}

#[test]
fn a_task_tool_call_answers_with_a_task_polled_to_its_result() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let listed = server.result("tools/list", json!({}));
    let sum = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "sum")
        .cloned()
        .unwrap();
    assert_eq!(sum["_meta"][TASKS]["taskSupport"], "optional", "{sum}");
    let created = start_task(&mut server, "sum", json!({ "a": 1, "b": 2 }));
    assert_eq!(created["status"], "working", "{created}");
    assert_eq!(created["ttlMs"], 600000, "{created}");
    assert!(
        created["createdAt"].as_str().unwrap().ends_with('Z'),
        "{created}"
    );
    let done = server.settled(created["taskId"].as_str().unwrap());
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "3", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
}

#[test]
fn tasks_cancel_stops_the_handler_and_the_task_ends_cancelled() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let created = start_task(&mut server, "late_marker", json!({}));
    let id = created["taskId"].as_str().unwrap().to_string();
    let ack = server.result("tasks/cancel", json!({ "taskId": id }));
    assert_eq!(ack.get("status"), None, "an empty acknowledgement: {ack}");
    let task = server.settled(&id);
    assert_eq!(task["status"], "cancelled", "{task}");
    // A plain call that started after the task and sleeps twice as long as the task's
    // handler would have before writing its marker: once it answers, the marker would be
    // there if the handler still ran.
    let rested = server.call("longer_nap", json!({}));
    assert_eq!(rested["content"][0]["text"], "rested", "{rested}");
    assert!(
        !fx.root().join("marker.txt").exists(),
        "the cancelled task's handler ran on"
    );
    assert_eq!(server.settled(&id)["status"], "cancelled");
}

#[test]
fn a_required_task_tool_refuses_a_client_without_the_extension() {
    let fx = fixture();
    let mut server = Server::start(&fx, false);
    let answer = server.request(
        "tools/call",
        json!({ "name": "late_marker", "arguments": {} }),
    );
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert!(
        answer["error"]["data"]["requiredCapabilities"]["extensions"]
            .get(TASKS)
            .is_some(),
        "{answer}"
    );
    assert!(!fx.root().join("marker.txt").exists());
    // An optional task tool runs as a plain call for this client.
    let plain = server.call("sum", json!({ "a": 2, "b": 2 }));
    assert_eq!(plain["content"][0]["text"], "4", "{plain}");
    assert_eq!(plain.get("taskId"), None, "{plain}");
}

#[test]
fn a_raised_error_is_the_tasks_result_and_a_deadline_fails_it() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let raised = start_task(&mut server, "raises", json!({}));
    let raised = server.settled(raised["taskId"].as_str().unwrap());
    assert_eq!(raised["status"], "completed", "{raised}");
    assert_eq!(raised["result"]["isError"], true, "{raised}");
    let text = raised["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("no luck"), "{raised}");
    let overran = start_task(&mut server, "overruns", json!({}));
    let overran = server.settled(overran["taskId"].as_str().unwrap());
    assert_eq!(overran["status"], "failed", "{overran}");
    assert_eq!(overran["error"]["code"], -32603, "{overran}");
    assert_eq!(
        overran["error"]["data"]["error_type"], "timeout",
        "{overran}"
    );
}

#[test]
fn a_finished_tasks_result_is_read_after_a_restart() {
    let fx = fixture();
    let mut first = Server::start(&fx, true);
    let created = start_task(&mut first, "sum", json!({ "a": 20, "b": 22 }));
    let id = created["taskId"].as_str().unwrap().to_string();
    assert_eq!(first.settled(&id)["status"], "completed");
    first.stop();
    let mut second = Server::start(&fx, true);
    let task = second.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["result"]["content"][0]["text"], "42", "{task}");
}

#[test]
#[cfg(feature = "postgres")]
fn task_records_live_in_postgres_with_the_store_and_another_process_reads_them() {
    let db = common::pg::TestDb::new();
    let fx = fixture();
    fx.write(
        "toolhost.toml",
        "[runtime]\nvms = 2\n[serve]\ntask_ttl_ms = 600000\n[store]\nbackend = \"postgres\"\n",
    );
    let env = [("TOOLHOST_DATABASE_URL", db.url())];
    let mut first = Server::start_with_env(&fx, true, &[], &env);
    let created = start_task(&mut first, "sum", json!({ "a": 20, "b": 22 }));
    let id = created["taskId"].as_str().unwrap().to_string();
    assert_eq!(first.settled(&id)["status"], "completed");
    // Another process on the same database (a second replica) reads the task.
    let mut second = Server::start_with_env(&fx, true, &[], &env);
    let task = second.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["result"]["content"][0]["text"], "42", "{task}");
    first.stop();
    second.stop();
    assert_ne!(
        db.query("SELECT count(*) FROM toolhost.kv WHERE ns = 'host:tasks'"),
        "0",
        "the records are rows of the database"
    );
    assert!(
        !fx.root().join(".toolhost").exists(),
        "no SQLite file was made"
    );
}

#[test]
fn unknown_and_expired_tasks_are_not_found() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", "[serve]\ntask_ttl_ms = 1\n");
    let mut server = Server::start(&fx, true);
    for id in ["0123456789abcdef0123456789abcdef", "../../etc", ""] {
        let answer = server.request("tasks/get", json!({ "taskId": id }));
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let answer = server.request("tasks/cancel", json!({ "taskId": id }));
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    let created = start_task(&mut server, "sum", json!({ "a": 1, "b": 1 }));
    assert_eq!(created["ttlMs"], 1, "{created}");
    let id = created["taskId"].as_str().unwrap();
    let start = Instant::now();
    loop {
        let answer = server.request("tasks/get", json!({ "taskId": id }));
        if answer["error"]["code"] == -32602 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{answer}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_tools_store_never_reaches_task_records() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let created = start_task(&mut server, "sum", json!({ "a": 1, "b": 1 }));
    let id = created["taskId"].as_str().unwrap().to_string();
    server.settled(&id);
    let seen = server.call("peek", json!({ "key": format!("task/{id}") }));
    let seen: Value = serde_json::from_str(seen["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["found"], false, "{seen}");
    assert_eq!(seen["keys"], 0, "{seen}");
}

#[test]
fn a_bad_task_field_is_refused_naming_it() {
    let fx = Fixture::new();
    fx.tool(
        "bad.lua",
        r#"registry.register{ name = "bad", toolset = "t", task = "sometimes",
  schema = { parameters = { type = "object" } }, handler = function() return "" end }"#,
    );
    let error = common::error_of(&fx.host(), "bad.lua");
    assert!(
        error.contains("'task' must be \"optional\" or \"required\""),
        "{error}"
    );
}

#[test]
fn prepare_runs_before_the_task_and_the_handler_gets_what_it_returned() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let created = start_task(&mut server, "doubled", json!({ "a": 21 }));
    let id = created["taskId"].as_str().unwrap().to_string();
    let done = server.settled(&id);
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    let seen: Value = serde_json::from_str(text).unwrap();
    assert_eq!(seen["n"], 42, "{seen}");
    // `prepare` ran before the task existed; the handler runs as the task.
    assert_eq!(seen["prepare_saw"], "none", "{seen}");
    assert_eq!(seen["task_id"], id, "{seen}");
}

#[test]
fn an_error_in_prepare_answers_the_call_and_makes_no_task() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let answer = server.call("doubled", json!({ "a": -1 }));
    assert_eq!(answer.get("taskId"), None, "{answer}");
    assert_eq!(answer["isError"], true, "{answer}");
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("negative: -1"), "{answer}");
}

#[test]
fn invalid_arguments_answer_the_call_and_make_no_task() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let answer = server.call("sum", json!({ "a": "one", "b": 2 }));
    assert_eq!(answer.get("taskId"), None, "{answer}");
    assert_eq!(answer["isError"], true, "{answer}");
}

#[test]
fn prepare_without_task_is_refused_naming_it() {
    let fx = Fixture::new();
    fx.tool(
        "bad.lua",
        r#"registry.register{ name = "bad", toolset = "t",
  schema = { parameters = { type = "object" } },
  prepare = function() return 1 end, handler = function() return "" end }"#,
    );
    let error = common::error_of(&fx.host(), "bad.lua");
    assert!(error.contains("bad.lua:"), "{error}");
    assert!(error.contains("'prepare' is for task tools"), "{error}");
}

#[test]
fn an_update_for_a_task_waiting_on_nothing_is_refused_clearly() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let created = start_task(&mut server, "late_marker", json!({}));
    let id = created["taskId"].as_str().unwrap().to_string();
    let answer = server.request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "k": { "action": "accept" } } }),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("not waiting for input"), "{answer}");
    let unknown = server.request(
        "tasks/update",
        json!({ "taskId": "0123456789abcdef0123456789abcdef", "inputResponses": {} }),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    server.result("tasks/cancel", json!({ "taskId": id }));
}

#[test]
fn a_per_request_declaration_gets_a_task_on_a_session_without_the_extension() {
    let fx = fixture();
    let mut server = Server::start(&fx, false);
    let created = server.result(
        "tools/call",
        json!({ "name": "sum", "arguments": { "a": 5, "b": 5 },
                "_meta": { "io.modelcontextprotocol/clientCapabilities":
                           { "extensions": { TASKS: {} } } } }),
    );
    assert_eq!(created["resultType"], "task", "{created}");
    // Task methods need the declaration on their own request too.
    let id = created["taskId"].as_str().unwrap();
    let refused = server.request("tasks/get", json!({ "taskId": id }));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[test]
fn a_plain_tool_called_with_a_legacy_task_member_answers_plainly() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let answer = server.result(
        "tools/call",
        json!({ "name": "longer_nap", "arguments": {}, "task": { "ttl": 60000 } }),
    );
    assert_eq!(answer.get("taskId"), None, "{answer}");
    assert_eq!(answer["content"][0]["text"], "rested", "{answer}");
}

#[test]
fn a_task_made_over_stdio_is_unknown_to_http_callers_of_the_same_store() {
    let fx = fixture();
    let mut local = Server::start(&fx, true);
    let created = start_task(&mut local, "sum", json!({ "a": 3, "b": 4 }));
    let id = created["taskId"].as_str().unwrap().to_string();
    assert_eq!(local.settled(&id)["status"], "completed");
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (mut http, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let mut client = common::raw_http::RawHttp::connect(&authority);
    let session = client.open_session();
    let declared = json!({ "io.modelcontextprotocol/clientCapabilities":
                           { "extensions": { TASKS: {} } } });
    let ask = |method: &str, params: Value| {
        json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }).to_string()
    };
    let mut answers = Vec::new();
    for method in ["tasks/get", "tasks/cancel"] {
        let message = ask(method, json!({ "taskId": id, "_meta": declared }));
        answers.push(client.mcp(Some(&session), &message).message());
    }
    // The HTTP caller's own task reads back.
    let call = json!({ "name": "sum", "arguments": { "a": 1, "b": 1 }, "_meta": declared });
    let own = client
        .mcp(Some(&session), &ask("tools/call", call))
        .message();
    let own_id = own["result"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let own_get = ask("tasks/get", json!({ "taskId": own_id, "_meta": declared }));
    let own_read = client.mcp(Some(&session), &own_get).message();
    http.kill().unwrap();
    http.wait().unwrap();
    for answer in &answers {
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    assert_eq!(own_read["result"]["taskId"], own_id, "{own_read}");
    // The stdio user still reads the task as it ended (the HTTP cancel changed nothing).
    assert_eq!(local.settled(&id)["status"], "completed");
}

#[test]
fn on_2026_07_28_a_task_is_created_polled_and_cancelled_without_a_session() {
    let fx = fixture();
    let mut server = Server::start_2026(&fx);
    let created = start_task(&mut server, "sum", json!({ "a": 2, "b": 5 }));
    let done = server.settled(created["taskId"].as_str().unwrap());
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "7", "{done}");
    let long = start_task(&mut server, "late_marker", json!({}));
    let id = long["taskId"].as_str().unwrap().to_string();
    let ack = server.result("tasks/cancel", json!({ "taskId": id }));
    assert_eq!(ack, json!({ "resultType": "complete" }));
    assert_eq!(server.settled(&id)["status"], "cancelled");
}

#[test]
fn prepare_runs_after_a_warm_start_too() {
    let fx = fixture();
    // The first start runs the file and caches its registrations; the second registers
    // from the cache and runs the file only when a tool of it is first called.
    Server::start(&fx, true).stop();
    let mut warm = Server::start(&fx, true);
    let created = start_task(&mut warm, "doubled", json!({ "a": 8 }));
    let done = warm.settled(created["taskId"].as_str().unwrap());
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    let seen: Value = serde_json::from_str(text).unwrap();
    assert_eq!(seen["n"], 16, "{done}");
}

#[test]
fn a_working_tasks_progress_is_its_status_message() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let created = start_task(&mut server, "halfway", json!({}));
    let id = created["taskId"].as_str().unwrap().to_string();
    let start = Instant::now();
    let working = loop {
        let task = server.result("tasks/get", json!({ "taskId": id }));
        if task["statusMessage"] == "1/2: halfway" {
            break task;
        }
        assert_eq!(task["status"], "working", "{task}");
        assert!(start.elapsed() < Duration::from_secs(20), "{task}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(working["status"], "working", "{working}");
    assert_eq!(working.get("result"), None, "{working}");
    fx.write("go.txt", "go");
    let done = server.settled(&id);
    assert_eq!(done["result"]["content"][0]["text"], "went", "{done}");
}

#[test]
fn a_task_over_the_memory_limit_fails() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let created = start_task(&mut server, "hog", json!({}));
    let task = server.settled(created["taskId"].as_str().unwrap());
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["data"]["error_type"], "memory", "{task}");
    assert_eq!(task.get("result"), None, "{task}");
}

#[test]
fn a_tools_store_write_cannot_forge_a_task() {
    let fx = fixture();
    let mut server = Server::start(&fx, true);
    let created = start_task(&mut server, "halfway", json!({}));
    let id = created["taskId"].as_str().unwrap().to_string();
    for key in [format!("task/{id}"), format!("host:tasks/task/{id}")] {
        let written = server.call("forger", json!({ "key": key }));
        assert_eq!(written["content"][0]["text"], "written", "{written}");
    }
    let task = server.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(task["status"], "working", "{task}");
    fx.write("go.txt", "go");
    let done = server.settled(&id);
    assert_eq!(done["result"]["content"][0]["text"], "went", "{done}");
}

#[test]
fn outside_mcp_a_task_tool_runs_prepare_then_its_handler_in_one_call() {
    let seen = call_outside_mcp(&fixture(), "doubled", r#"{"a": 4}"#);
    assert_eq!(seen["n"], 8, "{seen}");
    assert_eq!(seen["prepare_saw"], "none", "{seen}");
    assert_eq!(seen.get("task_id"), None, "{seen}");
}

#[test]
fn a_prepare_of_one_parameter_still_hands_the_handler_its_ctx_and_what_it_returned() {
    // The prepare cannot see a `ctx` and gets none built; the handler after it can, and
    // gets both.
    let seen = call_outside_mcp(&fixture(), "halved", r#"{"a": 8}"#);
    assert_eq!(seen, json!({ "n": 4, "caller": "local" }));
}

/// `toolhost call NAME ARGS` in the fixture; the JSON it prints.
fn call_outside_mcp(fx: &Fixture, name: &str, args: &str) -> Value {
    let out = fx
        .toolhost()
        .args(["call", name, args])
        .output()
        .expect("toolhost call runs");
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn the_mcp_schema_marks_task_tools_for_both_revisions() {
    let fx = fixture();
    let out = fx
        .toolhost()
        .args(["schema", "--format", "mcp"])
        .output()
        .expect("toolhost schema runs");
    assert!(out.status.success(), "{out:?}");
    let tools: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tool = |name: &str| {
        tools
            .as_array()
            .and_then(|tools| tools.iter().find(|tool| tool["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {tools}"))
    };
    let required = tool("late_marker");
    assert_eq!(
        required["execution"]["taskSupport"], "required",
        "{required}"
    );
    assert_eq!(
        required["_meta"][TASKS]["taskSupport"], "required",
        "{required}"
    );
    let plain = tool("longer_nap");
    assert_eq!(plain.get("execution"), None, "{plain}");
    assert_eq!(plain.get("_meta"), None, "{plain}");
}

/// Runs tests/mcp/tasks.py's `what` against a server in `fx`.
fn python_client(fx: &Fixture, what: &str) -> Vec<Value> {
    let root = fx.root().to_string_lossy().to_string();
    let binary = assert_cmd::cargo::cargo_bin!("toolhost")
        .to_string_lossy()
        .to_string();
    common::mcp_client::run_script("tasks.py", &[&binary, &root, what])
}

#[test]
fn the_official_python_client_polls_a_task_and_a_new_server_reads_it() {
    let fx = fixture();
    let steps = python_client(&fx, "poll");
    let polled = common::mcp_client::step(&steps, "polled");
    assert_eq!(polled["result"]["content"][0]["text"], "5", "{polled}");
    let seen = polled["seen"].as_array().expect("what the client saw");
    assert_eq!(
        seen.first().map(|s| &s["status"]),
        Some(&json!("working")),
        "{polled}"
    );
    assert_eq!(
        seen.last().map(|s| &s["status"]),
        Some(&json!("completed")),
        "{polled}"
    );
    let restarted = common::mcp_client::step(&steps, "restarted");
    assert_eq!(restarted["task"]["status"], "completed", "{restarted}");
    assert_eq!(
        restarted["task"]["result"]["content"][0]["text"], "5",
        "{restarted}"
    );
}

#[test]
fn the_official_python_client_cancels_a_task_and_its_handler_stops() {
    let fx = fixture();
    let steps = python_client(&fx, "cancel");
    let cancelled = common::mcp_client::step(&steps, "cancelled");
    assert_eq!(cancelled["created"], "working", "{cancelled}");
    assert_eq!(
        cancelled["ack"],
        json!({ "resultType": "complete" }),
        "{cancelled}"
    );
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(
        cancelled["rested"]["content"][0]["text"], "rested",
        "{cancelled}"
    );
    assert_eq!(
        cancelled["marker"], false,
        "the cancelled handler ran on: {cancelled}"
    );
}

#[test]
fn a_required_task_tool_outside_the_selection_is_not_revealed_by_the_refusal() {
    let fx = fixture();
    fx.tool(
        "hidden.lua",
        r#"registry.register{ name = "secret_job", toolset = "hidden", task = "required",
  schema = { description = "Not offered", parameters = { type = "object" } },
  handler = function() return "ran" end }"#,
    );
    let mut server = Server::start_with(&fx, false, &["--toolsets", "t"]);
    let answer = server.request(
        "tools/call",
        json!({ "name": "secret_job", "arguments": {} }),
    );
    assert_ne!(answer["error"]["code"], -32021, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("unavailable"), "{answer}");
}

const ASKING: &str = r#"
registry.register{ name = "confirm", toolset = "t", task = "optional", timeout_ms = 60000,
  schema = { description = "Asks, then answers", parameters = { type = "object",
    properties = { file = { type = "string" } } } },
  handler = function(args, ctx)
    local answer = ctx.ask{ message = "Delete " .. args.file .. "?",
      schema = { type = "object", properties = { confirm = { type = "boolean" } } } }
    if answer.action == "accept" and answer.content.confirm then
      return "deleted " .. args.file
    end
    return answer.action .. " " .. args.file
  end }
registry.register{ name = "greeter", toolset = "t", task = "required",
  schema = { description = "Asks a name before the task, greets it in the task",
    parameters = { type = "object" } },
  prepare = function(_, ctx)
    local answer = ctx.ask{ key = "user_name", message = "Your name?",
      schema = { type = "object", properties = { name = { type = "string" } } } }
    return answer.content and answer.content.name or "nobody"
  end,
  handler = function(_, ctx, name) return "Hello, " .. name .. " (" .. ctx.task_id .. ")" end }
registry.register{ name = "impatient", toolset = "t", task = "optional", timeout_ms = 300,
  schema = { description = "Asks under a short deadline", parameters = { type = "object" } },
  handler = function(_, ctx)
    ctx.ask{ message = "Quick?", schema = { type = "object", properties = {} } }
    return "answered"
  end }
"#;

/// A server for 2026-07-28 requests whose client declares elicitation and the extension,
/// serving the asking tools beside the others.
fn asking_server() -> (Fixture, Server) {
    let fx = fixture();
    fx.tool("asking.lua", ASKING);
    let mut server = Server::start_2026(&fx);
    if let Some(meta) = server.meta.as_mut() {
        meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({});
    }
    (fx, server)
}

impl Server {
    /// Polls `tasks/get` until the task has `status` (within 20 s).
    fn until_status(&mut self, task_id: &str, status: &str) -> Value {
        let start = Instant::now();
        loop {
            let task = self.result("tasks/get", json!({ "taskId": task_id }));
            if task["status"] == status {
                return task;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "not {status}: {task}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts `confirm` as a task and waits until it asks; answers the task's id.
fn waiting_confirm(server: &mut Server) -> String {
    let created = start_task(server, "confirm", json!({ "file": "a.txt" }));
    let id = created["taskId"].as_str().unwrap().to_string();
    let waiting = server.until_status(&id, "input_required");
    let question = &waiting["inputRequests"]["q1"];
    assert_eq!(question["method"], "elicitation/create", "{waiting}");
    assert_eq!(question["params"]["message"], "Delete a.txt?", "{waiting}");
    id
}

fn confirm_update(id: &str, key: &str) -> Value {
    json!({ "taskId": id, "inputResponses": {
        key: { "action": "accept", "content": { "confirm": true } } } })
}

#[test]
fn a_task_that_asks_is_input_required_until_tasks_update_answers_it() {
    let (_fx, mut server) = asking_server();
    let id = waiting_confirm(&mut server);
    let ack = server.result("tasks/update", confirm_update(&id, "q1"));
    assert_eq!(ack, json!({ "resultType": "complete" }));
    let done = server.until_status(&id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted a.txt",
        "{done}"
    );
}

#[test]
fn responses_for_unknown_keys_are_ignored_and_the_task_keeps_waiting() {
    let (_fx, mut server) = asking_server();
    let id = waiting_confirm(&mut server);
    let ack = server.result("tasks/update", confirm_update(&id, "not-asked"));
    assert_eq!(ack, json!({ "resultType": "complete" }));
    let still = server.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(still["status"], "input_required", "{still}");
    assert!(still["inputRequests"].get("q1").is_some(), "{still}");
    server.result("tasks/cancel", json!({ "taskId": id }));
}

#[test]
fn a_second_update_for_an_answered_key_is_refused() {
    let (_fx, mut server) = asking_server();
    let id = waiting_confirm(&mut server);
    server.result("tasks/update", confirm_update(&id, "q1"));
    server.until_status(&id, "completed");
    let again = server.request("tasks/update", confirm_update(&id, "q1"));
    assert_eq!(again["error"]["code"], -32602, "{again}");
    let done = server.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted a.txt",
        "{done}"
    );
}

#[test]
fn an_update_after_the_task_was_cancelled_is_refused() {
    let (_fx, mut server) = asking_server();
    let id = waiting_confirm(&mut server);
    server.result("tasks/cancel", json!({ "taskId": id }));
    let cancelled = server.until_status(&id, "cancelled");
    assert_eq!(cancelled.get("inputRequests"), None, "{cancelled}");
    let late = server.request("tasks/update", confirm_update(&id, "q1"));
    assert_eq!(late["error"]["code"], -32602, "{late}");
    assert_eq!(server.settled(&id)["status"], "cancelled");
}

#[test]
fn prepare_asks_in_input_request_rounds_before_the_task_exists() {
    let (_fx, mut server) = asking_server();
    let first = server.call("greeter", json!({}));
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(first.get("taskId"), None, "no task yet: {first}");
    assert_eq!(
        first["inputRequests"]["user_name"]["method"], "elicitation/create",
        "{first}"
    );
    let state = first["requestState"].as_str().expect("a sealed state");
    let created = server.result(
        "tools/call",
        json!({ "name": "greeter", "arguments": {}, "requestState": state,
                "inputResponses": { "user_name": { "action": "accept",
                                                   "content": { "name": "Ada" } } } }),
    );
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap();
    let done = server.until_status(id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"],
        format!("Hello, Ada ({id})"),
        "{done}"
    );
}

#[test]
fn a_task_on_a_2025_session_asks_through_tasks_update_too() {
    let fx = fixture();
    fx.tool("asking.lua", ASKING);
    let mut server = Server::spawn(&fx, &[]);
    let init = server.request(
        "initialize",
        json!({ "protocolVersion": "2025-11-25",
                "capabilities": { "elicitation": {}, "extensions": { TASKS: {} } },
                "clientInfo": { "name": "raw", "version": "1" } }),
    );
    assert!(init.get("result").is_some(), "{init}");
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let id = waiting_confirm(&mut server);
    server.result("tasks/update", confirm_update(&id, "q1"));
    let done = server.until_status(&id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted a.txt",
        "{done}"
    );
}

#[test]
fn another_principals_update_finds_no_task_and_answers_nothing() {
    let (fx, mut local) = asking_server();
    let id = waiting_confirm(&mut local);
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (mut http, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let mut client = common::raw_http::RawHttp::connect(&authority);
    let session = client.open_session();
    let mut params = confirm_update(&id, "q1");
    params["_meta"] = json!({ "io.modelcontextprotocol/clientCapabilities":
                              { "extensions": { TASKS: {} } } });
    let update = json!({ "jsonrpc": "2.0", "id": 7, "method": "tasks/update", "params": params });
    let answer = client.mcp(Some(&session), &update.to_string()).message();
    http.kill().unwrap();
    http.wait().unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // As unknown as a missing task: its existence does not leak either.
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Task not found"), "{answer}");
    // The owner's task still waits for its own answer.
    let still = local.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(still["status"], "input_required", "{still}");
    assert!(still["inputRequests"].get("q1").is_some(), "{still}");
    local.result("tasks/cancel", json!({ "taskId": id }));
}

#[test]
fn a_task_waiting_for_input_fails_at_its_deadline() {
    let (_fx, mut server) = asking_server();
    let created = start_task(&mut server, "impatient", json!({}));
    let id = created["taskId"].as_str().unwrap().to_string();
    let failed = server.until_status(&id, "failed");
    assert_eq!(failed["error"]["data"]["error_type"], "timeout", "{failed}");
    assert_eq!(failed.get("inputRequests"), None, "{failed}");
}
