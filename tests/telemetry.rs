//! Traces and metrics (docs/telemetry.md), with real parts: the real binary exporting over
//! OTLP/HTTP to a real receiver in the test (`common::otlp`, decoding the protobuf), and
//! `/metrics` read by a Prometheus text parser.

mod common;

use common::Fixture;
use common::otlp::{Receiver, Span};
use common::raw_http::{RawHttp, tools_call};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

const TOOLS: &str = r#"
registry.register{ name = "echo", toolset = "t",
  schema = { description = "Echo", parameters = { type = "object" } },
  handler = function(args) return args end }
registry.register{ name = "outer", toolset = "t", requires_approval = true,
  check_fn = function() return true end,
  schema = { description = "Calls echo", parameters = { type = "object" } },
  handler = function(args, ctx)
    store.set("seen", true)
    return ctx.call("echo", { via = "outer" })
  end }
registry.register{ name = "summed", toolset = "t", task = "optional",
  schema = { description = "A task that calls echo", parameters = { type = "object" } },
  handler = function(_, ctx) return ctx.call("echo", { n = 1 }) end }
registry.register{ name = "slow", toolset = "t", timeout_ms = 100,
  schema = { description = "Overruns its deadline", parameters = { type = "object" } },
  handler = function() time.sleep(60000) return "never" end }
registry.register{ name = "hog", toolset = "t",
  schema = { description = "Allocates without end", parameters = { type = "object" } },
  handler = function()
    local t = {}
    for i = 1, 1e9 do t[i] = string.rep("x", 1024) .. i end
    return "never"
  end }
registry.hook("pre_tool_call", function(call) end)
"#;

/// The W3C trace context the client sends.
const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// `serve --http` on a free port in `dir` (its `toolhost.toml` is read), exporting with a
/// short batch delay (the child's own environment).
fn http_server(dir: &std::path::Path) -> (Child, String) {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(dir)
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .args(["--tools-dir", "tools", "--cache-dir", "cache"])
        .args(["serve", "--http", "127.0.0.1:0"]);
    common::spawn_http_server(command)
}

fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string()
}

/// A `tools/call` on a new session of `url`, with a `traceparent` header.
fn traced_call(url: &str, id: u64, name: &str, args: &str) -> (String, serde_json::Value) {
    let mut http = RawHttp::connect(&authority(url));
    let session = http.open_session();
    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let reply = http.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", &session),
            ("traceparent", &traceparent),
        ],
        tools_call(id, name, args).as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    (session, reply.message())
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {spans:#?}"))
}

fn stop(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn write_tools(fx: &Fixture, telemetry: &str) {
    std::fs::create_dir_all(fx.root().join("tools")).unwrap();
    fx.write("tools/t.lua", TOOLS);
    fx.write("toolhost.toml", telemetry);
}

#[test]
fn a_request_span_is_the_calls_own_and_parents_its_stages_a_ctx_call_and_the_store() {
    let receiver = Receiver::start();
    let fx = Fixture::new();
    write_tools(
        &fx,
        &format!(
            "[telemetry]\notlp_endpoint = {:?}\nservice_name = \"edge\"\n\
             [approval]\nmcp = \"allow\"\n",
            receiver.endpoint()
        ),
    );
    let (server, url) = http_server(fx.root());
    let (session, answer) = traced_call(&url, 7, "outer", r#"{"secret":"s3"}"#);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // The request's span ends last (spans are exported in the order they end).
    let spans = receiver.wait_for(|spans| spans.iter().any(|s| s.name == "tools/call outer"));
    stop(server);

    let request = named(&spans, "tools/call outer");
    assert_eq!(request.kind, 2, "a server span");
    assert_eq!(request.service, "edge");
    assert_eq!(request.trace_id, TRACE_ID, "the client's trace");
    assert_eq!(
        request.parent_span_id, PARENT_ID,
        "the client's span is the parent"
    );
    assert_eq!(request.attr("mcp.method.name"), Some("tools/call"));
    assert_eq!(request.attr("gen_ai.tool.name"), Some("outer"));
    assert_eq!(request.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(request.attr("jsonrpc.request.id"), Some("7"));
    assert_eq!(request.attr("network.transport"), Some("tcp"));
    assert_eq!(request.attr("mcp.protocol.version"), Some("2025-06-18"));
    assert_eq!(request.attr("mcp.session.id"), Some(session.as_str()));
    assert_eq!(request.attr("error.type"), None);
    // Arguments and results only with `record_arguments = true`.
    assert!(
        spans.iter().all(|s| !s
            .attributes
            .keys()
            .any(|k| k.starts_with("gen_ai.tool.call."))),
        "{spans:#?}"
    );
    assert!(
        spans
            .iter()
            .all(|s| s.attributes.values().all(|v| !v.contains("s3")))
    );

    // The request span is the call's execution span: no second span for it.
    assert!(!spans.iter().any(|s| s.name == "execute_tool outer"));
    for stage in ["availability", "hooks", "approval", "handler"] {
        let span = named(&spans, &format!("toolhost.{stage} outer"));
        assert_eq!(span.parent_span_id, request.span_id, "{stage}");
    }
    let handler = named(&spans, "toolhost.handler outer");
    let child = named(&spans, "execute_tool echo");
    assert_eq!(
        child.parent_span_id, handler.span_id,
        "the ctx.call under its caller's handler"
    );
    // Stages with no work have no span: echo has no probe and needs no approval.
    assert!(!spans.iter().any(|s| s.name == "toolhost.availability echo"));
    assert!(!spans.iter().any(|s| s.name == "toolhost.approval echo"));
    assert!(
        spans.iter().any(|s| s.name == "toolhost.hooks echo"),
        "the hook sees it"
    );
    let store = named(&spans, "store.set");
    assert_eq!(store.parent_span_id, handler.span_id);
    assert_eq!(store.attr("db.system.name"), Some("sqlite"));
    assert!(spans.iter().all(|s| s.trace_id == TRACE_ID), "one trace");
}

#[test]
fn a_task_calls_request_span_lasts_until_the_task_ends_and_names_the_task() {
    let receiver = Receiver::start();
    let fx = Fixture::new();
    write_tools(
        &fx,
        &format!("[telemetry]\notlp_endpoint = {:?}\n", receiver.endpoint()),
    );
    let (server, url) = http_server(fx.root());
    let mut http = RawHttp::connect(&authority(&url));
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "clientInfo": {"name": "raw", "version": "1"}}});
    let reply = http.mcp(None, &initialize.to_string());
    let session = reply
        .header("mcp-session-id")
        .expect("a session")
        .to_string();
    http.mcp(Some(&session), common::raw_http::INITIALIZED);
    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let created = http
        .request(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", &session),
                ("traceparent", &traceparent),
            ],
            tools_call(8, "summed", "{}").as_bytes(),
        )
        .message();
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();
    let spans = receiver.wait_for(|spans| spans.iter().any(|s| s.name == "tools/call summed"));
    stop(server);
    let request = named(&spans, "tools/call summed");
    assert_eq!(request.kind, 2, "a server span");
    assert_eq!(request.trace_id, TRACE_ID);
    assert_eq!(request.parent_span_id, PARENT_ID);
    assert_eq!(request.attr("jsonrpc.request.id"), Some("8"));
    assert_eq!(request.attr("toolhost.task.id"), Some(task_id.as_str()));
    assert_eq!(request.attr("error.type"), None);
    assert!(!spans.iter().any(|s| s.name == "execute_tool summed"));
    let handler = named(&spans, "toolhost.handler summed");
    assert_eq!(
        handler.parent_span_id, request.span_id,
        "the task runs in it"
    );
    let child = named(&spans, "execute_tool echo");
    assert_eq!(child.parent_span_id, handler.span_id, "the task's ctx.call");
}

#[test]
fn arguments_and_results_are_recorded_only_when_asked() {
    let receiver = Receiver::start();
    let fx = Fixture::new();
    write_tools(
        &fx,
        &format!(
            "[telemetry]\notlp_endpoint = {:?}\nrecord_arguments = true\n",
            receiver.endpoint()
        ),
    );
    let (server, url) = http_server(fx.root());
    traced_call(&url, 3, "echo", r#"{"word":"hello"}"#);
    let spans = receiver.wait_for(|spans| spans.iter().any(|s| s.name == "tools/call echo"));
    stop(server);
    let request = named(&spans, "tools/call echo");
    assert_eq!(request.service, "toolhost", "the default service.name");
    assert_eq!(
        request.attr("gen_ai.tool.call.arguments"),
        Some(r#"{"word":"hello"}"#)
    );
    let result = request.attr("gen_ai.tool.call.result").expect("the result");
    assert!(result.contains("hello"), "{result}");
}

#[test]
fn a_failed_call_marks_its_spans_with_the_error_type() {
    let receiver = Receiver::start();
    let fx = Fixture::new();
    write_tools(
        &fx,
        &format!("[telemetry]\notlp_endpoint = {:?}\n", receiver.endpoint()),
    );
    let (server, url) = http_server(fx.root());
    traced_call(&url, 4, "no_such_tool", "{}");
    let spans =
        receiver.wait_for(|spans| spans.iter().any(|s| s.name == "tools/call no_such_tool"));
    stop(server);
    let request = named(&spans, "tools/call no_such_tool");
    assert_eq!(request.attr("error.type"), Some("unknown_tool"));
    assert!(!spans.iter().any(|s| s.name == "execute_tool no_such_tool"));
    let recorded = request.attribute_keys.iter().filter(|k| *k == "error.type");
    assert_eq!(
        recorded.count(),
        1,
        "error.type once: {:?}",
        request.attribute_keys
    );
}

#[test]
fn a_trace_crosses_from_one_toolhost_to_another() {
    let receiver = Receiver::start();
    let fx = Fixture::new();
    let inner_dir = fx.root().join("inner");
    std::fs::create_dir_all(inner_dir.join("tools")).unwrap();
    std::fs::write(
        inner_dir.join("tools/greet.lua"),
        common::simple_tool("greet", "inner", "hello from inner"),
    )
    .unwrap();
    std::fs::write(
        inner_dir.join("toolhost.toml"),
        format!(
            "[telemetry]\notlp_endpoint = {:?}\nservice_name = \"inner\"\n",
            receiver.endpoint()
        ),
    )
    .unwrap();
    let (inner, inner_url) = http_server(&inner_dir);
    write_tools(
        &fx,
        &format!(
            "[telemetry]\notlp_endpoint = {:?}\nservice_name = \"outer\"\n\
             [mcp_servers.inner]\nurl = {inner_url:?}\n",
            receiver.endpoint()
        ),
    );
    let (outer, outer_url) = http_server(fx.root());
    let (_, answer) = traced_call(&outer_url, 9, "mcp__inner__greet", "{}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let spans = receiver.wait_for(|spans| {
        spans
            .iter()
            .any(|s| s.service == "inner" && s.name == "tools/call greet")
            && spans
                .iter()
                .any(|s| s.service == "outer" && s.name == "tools/call mcp__inner__greet")
    });
    stop(outer);
    stop(inner);
    let client = spans
        .iter()
        .find(|s| s.service == "outer" && s.name == "tools/call greet" && s.kind == 3)
        .unwrap_or_else(|| panic!("no client span: {spans:#?}"));
    assert_eq!(client.attr("toolhost.mcp_server"), Some("inner"));
    let served = spans
        .iter()
        .find(|s| s.service == "inner" && s.name == "tools/call greet" && s.kind == 2)
        .unwrap();
    assert_eq!(
        served.trace_id, TRACE_ID,
        "the inner server joined the client's trace"
    );
    assert_eq!(
        served.parent_span_id, client.span_id,
        "under the outer's client span"
    );
    let outer_request = spans
        .iter()
        .find(|s| s.service == "outer" && s.name == "tools/call mcp__inner__greet")
        .unwrap();
    assert_eq!(outer_request.parent_span_id, PARENT_ID);
}

/// `serve --metrics 127.0.0.1:0` on stdio; returns the child, its stdin, its stdout lines
/// and the metrics URL.
struct StdioServer {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl StdioServer {
    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The answer with id `id` (notifications before it are skipped).
    fn answer(&mut self, id: u64) -> serde_json::Value {
        loop {
            let line = self.stdout.next().expect("an answer").unwrap();
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

fn get(authority: &str, path: &str, headers: &[(&str, &str)]) -> common::raw_http::Reply {
    RawHttp::connect(authority).request("GET", path, headers, b"")
}

fn scrape(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

/// The value of the sample `metric` whose labels include `labels`.
fn sample(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found = scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .unwrap_or_else(|| panic!("no {metric} {labels:?} in {:#?}", scrape.samples));
    match &found.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => *v,
        other => panic!("{metric}: {other:?}"),
    }
}

#[test]
fn metrics_count_the_calls_made() {
    let fx = Fixture::new();
    write_tools(&fx, "");
    let (server, url) = http_server(fx.root());
    let host = authority(&url);
    let mut http = RawHttp::connect(&host);
    let session = http.open_session();
    for (id, name) in [(1, "echo"), (2, "echo"), (3, "made_up_1"), (4, "made_up_2")] {
        let reply = http.mcp(Some(&session), &tools_call(id, name, "{}"));
        assert_eq!(reply.status, 200);
    }
    let reply = get(&host, "/metrics", &[]);
    stop(server);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(
        reply
            .header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    let metrics = scrape(&reply.text());
    let ok = [("tool", "echo"), ("outcome", "ok")];
    assert_eq!(sample(&metrics, "toolhost_tool_calls_total", &ok), 2.0);
    // Made-up names share one label value: a client cannot grow the metrics.
    let unknown = [("tool", "_unknown"), ("error_type", "unknown_tool")];
    assert_eq!(sample(&metrics, "toolhost_tool_calls_total", &unknown), 2.0);
    let histogram = [
        ("method", "tools/call"),
        ("tool", "echo"),
        ("outcome", "ok"),
    ];
    assert_eq!(
        sample(
            &metrics,
            "mcp_server_operation_duration_seconds_count",
            &histogram
        ),
        2.0
    );
    assert!(!reply.text().contains("made_up"));
    assert_eq!(
        sample(&metrics, "mcp_server_sessions", &[("transport", "http")]),
        1.0
    );
    assert_eq!(sample(&metrics, "toolhost_calls_running", &[]), 0.0);
}

#[test]
fn metrics_need_the_token_like_mcp_unless_public() {
    let fx = Fixture::new();
    write_tools(&fx, "");
    let serve = |public: bool| {
        fx.write(
            "toolhost.toml",
            format!("[telemetry]\nmetrics_public = {public}\n"),
        );
        let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
        command
            .current_dir(fx.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .env("METRICS_TEST_TOKEN", "tok")
            .args(["--tools-dir", "tools", "--cache-dir", "cache"])
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--auth-token-env",
                "METRICS_TEST_TOKEN",
            ]);
        common::spawn_http_server(command)
    };
    let (guarded, url) = serve(false);
    let host = authority(&url);
    let refused = get(&host, "/metrics", &[]);
    let wrong = get(&host, "/metrics", &[("Authorization", "Bearer nope")]);
    let allowed = get(&host, "/metrics", &[("Authorization", "Bearer tok")]);
    stop(guarded);
    assert_eq!(refused.status, 401);
    assert_eq!(wrong.status, 401);
    assert_eq!(allowed.status, 200);

    let (public, url) = serve(true);
    let open = get(&authority(&url), "/metrics", &[]);
    let mcp = get(&authority(&url), "/mcp", &[]);
    stop(public);
    assert_eq!(open.status, 200);
    assert_eq!(mcp.status, 401, "only /metrics is public");
}

#[test]
fn serve_metrics_serves_the_metrics_of_a_stdio_server() {
    let fx = Fixture::new();
    write_tools(&fx, "");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--tools-dir", "tools", "--cache-dir", "cache"])
        .args(["serve", "--metrics", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
    let metrics_url = loop {
        let line = errors.next().expect("the metrics address").unwrap();
        if let Some(url) = line.split("serving metrics at ").nth(1) {
            break url.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in errors {});
    let mut server = StdioServer {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()).lines(),
        child,
    };
    server.send(common::raw_http::INITIALIZE);
    server.answer(0);
    server.send(common::raw_http::INITIALIZED);
    server.send(&tools_call(1, "echo", r#"{"a":1}"#));
    assert_eq!(server.answer(1)["result"]["isError"], false);
    let host = metrics_url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_string();
    let reply = get(&host, "/metrics", &[]);
    stop(server.child);
    assert_eq!(reply.status, 200);
    let metrics = scrape(&reply.text());
    let ok = [("tool", "echo"), ("outcome", "ok")];
    assert_eq!(sample(&metrics, "toolhost_tool_calls_total", &ok), 1.0);
    assert_eq!(
        sample(&metrics, "mcp_server_sessions", &[("transport", "stdio")]),
        1.0
    );
}

#[test]
fn an_otlp_endpoint_that_is_not_a_url_stops_the_start() {
    let fx = Fixture::new();
    write_tools(&fx, "[telemetry]\notlp_endpoint = \"not a url\"\n");
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
    assert!(stderr.contains("[telemetry] otlp_endpoint"), "{stderr}");
}

#[test]
fn an_unknown_telemetry_key_names_the_key() {
    let fx = Fixture::new();
    write_tools(&fx, "[telemetry]\notlp_endpiont = \"http://x\"\n");
    let out = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--tools-dir", "tools", "list"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("otlp_endpiont"), "{stderr}");
}

#[test]
fn a_malformed_traceparent_starts_a_trace_of_its_own() {
    let receiver = Receiver::start();
    let fx = Fixture::new();
    write_tools(
        &fx,
        &format!("[telemetry]\notlp_endpoint = {:?}\n", receiver.endpoint()),
    );
    let (server, url) = http_server(fx.root());
    let mut http = RawHttp::connect(&authority(&url));
    let session = http.open_session();
    let long_name = "x".repeat(5000);
    for (id, name, traceparent) in [
        (1, "echo", "00-not-hex-at-all-01".to_string()),
        (2, "echo", format!("00-{}-{PARENT_ID}-01", "f".repeat(4000))),
        (
            3,
            long_name.as_str(),
            format!("00-{TRACE_ID}-{PARENT_ID}-01"),
        ),
    ] {
        let reply = http.request(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", &session),
                ("traceparent", &traceparent),
            ],
            tools_call(id, name, "{}").as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let spans = receiver.wait_for(|spans| {
        spans.iter().filter(|s| s.name == "tools/call echo").count() == 2
            && spans.iter().any(|s| s.name.starts_with("tools/call xxx"))
    });
    stop(server);
    for span in spans.iter().filter(|s| s.name == "tools/call echo") {
        assert_eq!(span.parent_span_id, "", "a root span: {span:?}");
        assert_ne!(span.trace_id, TRACE_ID);
    }
    // A made-up name of 5,000 bytes is cut on the span.
    let long = spans
        .iter()
        .find(|s| s.name.starts_with("tools/call xxx"))
        .unwrap();
    assert!(
        long.name.len() <= "tools/call ".len() + 128,
        "{}",
        long.name.len()
    );
}

#[test]
fn a_listing_has_a_server_span_under_the_clients_trace() {
    let receiver = Receiver::start();
    let fx = Fixture::new();
    write_tools(
        &fx,
        &format!("[telemetry]\notlp_endpoint = {:?}\n", receiver.endpoint()),
    );
    let (server, url) = http_server(fx.root());
    let mut http = RawHttp::connect(&authority(&url));
    let session = http.open_session();
    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let reply = http.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", &session),
            ("traceparent", &traceparent),
        ],
        br#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let spans = receiver.wait_for(|spans| spans.iter().any(|s| s.name == "tools/list"));
    stop(server);
    let listing = named(&spans, "tools/list");
    assert_eq!(listing.kind, 2);
    assert_eq!(listing.trace_id, TRACE_ID);
    assert_eq!(listing.parent_span_id, PARENT_ID);
    assert_eq!(listing.attr("mcp.method.name"), Some("tools/list"));
    assert_eq!(listing.attr("jsonrpc.request.id"), Some("5"));
}

/// The `/metrics` of a `serve --http` of the tools with `config`, after `calls` (name,
/// arguments) on one session.
fn metrics_after(config: &str, calls: &[(&str, &str)]) -> prometheus_parse::Scrape {
    let fx = Fixture::new();
    write_tools(&fx, config);
    let (server, url) = http_server(fx.root());
    let host = authority(&url);
    let mut http = RawHttp::connect(&host);
    let session = http.open_session();
    for (id, (name, args)) in calls.iter().enumerate() {
        let reply = http.mcp(Some(&session), &tools_call(id as u64 + 1, name, args));
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let reply = get(&host, "/metrics", &[]);
    stop(server);
    assert_eq!(reply.status, 200, "{}", reply.text());
    scrape(&reply.text())
}

#[test]
fn metrics_count_rate_limit_rejections_by_limit_kind() {
    let metrics = metrics_after(
        "[store]\nbackend = \"memory\"\n[approval]\nmcp = \"allow\"\n\
         [limits.tools.echo]\nrate = \"1/m\"\nburst = 1\n\
         [limits.default]\nrate = \"1/m\"\nburst = 1\n",
        &[
            ("echo", "{}"),
            ("echo", "{}"),
            ("echo", "{}"),
            ("outer", "{}"),
            ("outer", "{}"),
        ],
    );
    // echo: one passes, two are over `limits.tools.echo` (checked before the default);
    // outer: the first spends the caller's budget for it and its `ctx.call` of echo is
    // over echo's limit too; the second is over `limits.default`.
    let rejected = |kind| {
        sample(
            &metrics,
            "toolhost_rate_limit_rejections_total",
            &[("kind", kind)],
        )
    };
    assert_eq!(rejected("tool"), 3.0);
    assert_eq!(rejected("default"), 1.0);
    let limited = [("tool", "echo"), ("error_type", "rate_limited")];
    assert_eq!(sample(&metrics, "toolhost_tool_calls_total", &limited), 3.0);
}

#[test]
fn metrics_count_the_calls_the_host_stopped_by_reason() {
    let metrics = metrics_after(
        "[runtime]\nmemory_mb = 16\n",
        &[("slow", "{}"), ("hog", "{}"), ("echo", "{}")],
    );
    let kills = |reason| sample(&metrics, "toolhost_vm_kills_total", &[("reason", reason)]);
    assert_eq!(kills("deadline"), 1.0);
    assert_eq!(kills("memory"), 1.0);
    assert_eq!(sample(&metrics, "toolhost_calls_running", &[]), 0.0);
    assert_eq!(sample(&metrics, "toolhost_calls_queued", &[]), 0.0);
}

#[test]
fn metrics_time_store_operations_by_backend_and_operation() {
    let metrics = metrics_after(
        "[approval]\nmcp = \"allow\"\n",
        &[("outer", "{}"), ("outer", "{}")],
    );
    let set = [("backend", "sqlite"), ("operation", "set")];
    assert_eq!(
        sample(
            &metrics,
            "toolhost_store_operation_duration_seconds_count",
            &set
        ),
        2.0
    );
}

/// Scrapes `host`'s `/metrics` until `done` holds of it (within 20 s).
fn scrape_until(
    host: &str,
    mut done: impl FnMut(&prometheus_parse::Scrape) -> bool,
) -> prometheus_parse::Scrape {
    let start = std::time::Instant::now();
    loop {
        let metrics = scrape(&get(host, "/metrics", &[]).text());
        if done(&metrics) {
            return metrics;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "never: {:#?}",
            metrics.samples
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn has(metrics: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> bool {
    metrics
        .samples
        .iter()
        .any(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
}

#[test]
fn metrics_count_reloads_and_the_files_that_failed_to_load() {
    let fx = Fixture::new();
    write_tools(&fx, "");
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        .args(["--tools-dir", "tools", "--cache-dir", "cache"])
        .args(["serve", "--http", "127.0.0.1:0", "--watch"]);
    let (server, url) = common::spawn_http_server(command);
    let host = authority(&url);
    fx.write("tools/broken.lua", "registry.register{ name = ");
    let metrics = scrape_until(&host, |m| has(m, "toolhost_reloads_total", &[]));
    stop(server);
    assert!(sample(&metrics, "toolhost_reloads_total", &[("outcome", "ok")]) >= 1.0);
    assert!(sample(&metrics, "toolhost_load_errors_total", &[]) >= 1.0);
}

#[test]
fn metrics_say_which_external_mcp_servers_are_up() {
    let fx = Fixture::new();
    let inner_dir = fx.root().join("inner");
    std::fs::create_dir_all(inner_dir.join("tools")).unwrap();
    std::fs::write(
        inner_dir.join("tools/greet.lua"),
        common::simple_tool("greet", "inner", "hello"),
    )
    .unwrap();
    let (inner, inner_url) = http_server(&inner_dir);
    // A port nothing listens on: bound, then let go.
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone_url = format!("http://{}/mcp", gone.local_addr().unwrap());
    drop(gone);
    write_tools(
        &fx,
        &format!(
            "[mcp_servers.inner]\nurl = {inner_url:?}\n[mcp_servers.gone]\nurl = {gone_url:?}\n"
        ),
    );
    let (outer, outer_url) = http_server(fx.root());
    let host = authority(&outer_url);
    let metrics = scrape_until(&host, |m| {
        has(m, "toolhost_mcp_server_up", &[("server", "inner")])
            && sample(m, "toolhost_mcp_server_up", &[("server", "inner")]) == 1.0
            && has(m, "toolhost_mcp_server_up", &[("server", "gone")])
    });
    stop(outer);
    stop(inner);
    assert_eq!(
        sample(&metrics, "toolhost_mcp_server_up", &[("server", "gone")]),
        0.0
    );
}
