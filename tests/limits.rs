//! Rate limits (`[limits]`, docs/limits.md) with real parts: the binary over HTTP, two
//! `serve` processes sharing a SQLite file or a PostgreSQL database, the CLI, and a
//! `ctx.call` counting as a call.

mod common;

use common::Fixture;
use common::pg::{RESTART_PORT, RestartCluster, TestDb};
use common::raw_http::{RawHttp, tools_call};
use serde_json::{Value, json};

const ECHO: &str = r#"registry.register{
  name = "echo", toolset = "demo",
  schema = { description = "Echo", parameters = { type = "object", properties = {} } },
  handler = function() return "echo" end,
}
"#;

/// A fixture with `echo` and `toolhost.toml` = `config`.
fn fixture(config: &str) -> Fixture {
    let fx = Fixture::new();
    fx.tool("echo.lua", ECHO);
    fx.write("toolhost.toml", config);
    fx
}

/// A stateless `serve --http` process of `fx` (its config, `env` added): the process and
/// its `HOST:PORT`.
fn serve(fx: &Fixture, env: &[(&str, String)]) -> (std::process::Child, String) {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args([
            "--cache-dir",
            "cache",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--stateless",
        ]);
    let (child, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("an authority")
        .to_string();
    (child, authority)
}

/// Ends a server started here when the test ends (also when it fails).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Calls `echo` 10 times, alternating between two servers of `fx`: the replies.
fn ten_calls_over_two_servers(
    fx: &Fixture,
    env: &[(&str, String)],
) -> Vec<common::raw_http::Reply> {
    let (one, a) = serve(fx, env);
    let (two, b) = serve(fx, env);
    let (_one, _two) = (Killed(one), Killed(two));
    let mut clients = [RawHttp::connect(&a), RawHttp::connect(&b)];
    (0..10)
        .map(|i| clients[i % 2].mcp(None, &tools_call(i as u64 + 1, "echo", "{}")))
        .collect()
}

/// Five of the ten calls passed; the rest are JSON-RPC error -32029 naming the limit, with
/// `data.retryAfterMs` and a `Retry-After` header in whole seconds.
fn assert_shared_burst_of_five(replies: &[common::raw_http::Reply]) {
    let passed = replies
        .iter()
        .filter(|r| r.message()["result"]["content"][0]["text"] == "echo")
        .count();
    assert_eq!(
        passed,
        5,
        "{:?}",
        replies.iter().map(|r| r.text()).collect::<Vec<_>>()
    );
    for reply in replies
        .iter()
        .filter(|r| r.message().get("error").is_some())
    {
        let error = &reply.message()["error"];
        assert_eq!(error["code"], -32029, "{error}");
        assert_eq!(error["data"]["limit"], "limits.tools.echo", "{error}");
        let ms = error["data"]["retryAfterMs"]
            .as_u64()
            .expect("retryAfterMs");
        assert!(ms > 0 && ms <= 3_600_000, "{ms}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Rate limit limits.tools.echo reached")),
            "{error}"
        );
        assert_eq!(
            reply.header("retry-after"),
            Some(ms.div_ceil(1000).to_string().as_str()),
            "{:?}",
            reply.headers
        );
    }
}

#[test]
fn two_serve_processes_sharing_a_sqlite_file_share_one_burst() {
    let fx = fixture(
        "[store]\npath = \"store.sqlite3\"\n\
         [limits.tools.echo]\nrate = \"1/h\"\nburst = 5\n",
    );
    assert_shared_burst_of_five(&ten_calls_over_two_servers(&fx, &[]));
}

#[test]
fn two_serve_processes_sharing_a_postgres_database_share_one_burst() {
    let db = TestDb::new();
    let fx = fixture(
        "[store]\nbackend = \"postgres\"\n\
         [limits.tools.echo]\nrate = \"1/h\"\nburst = 5\n",
    );
    let env = [("TOOLHOST_DATABASE_URL", db.url())];
    assert_shared_burst_of_five(&ten_calls_over_two_servers(&fx, &env));
}

#[test]
fn with_the_memory_store_each_process_has_its_own_limits() {
    let fx = fixture(
        "[store]\nbackend = \"memory\"\n\
         [limits.tools.echo]\nrate = \"1/h\"\nburst = 5\n",
    );
    let replies = ten_calls_over_two_servers(&fx, &[]);
    let passed = replies
        .iter()
        .filter(|r| r.message()["result"]["content"][0]["text"] == "echo")
        .count();
    assert_eq!(passed, 10);
}

#[test]
fn the_cli_answers_a_rate_limited_error_naming_the_limit() {
    let fx = fixture("[limits.tools.echo]\nrate = \"1/h\"\nburst = 1\n");
    // Each `toolhost call` is a process: the default SQLite store carries the count.
    fx.toolhost()
        .args(["call", "echo", "{}"])
        .assert()
        .success();
    let output = fx.toolhost().args(["call", "echo", "{}"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let line = stdout
        .lines()
        .find(|l| l.contains("rate_limited"))
        .unwrap_or_else(|| {
            panic!(
                "no rate_limited error: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let error: Value = serde_json::from_str(line).expect("a JSON error");
    assert_eq!(error["error_type"], "rate_limited");
    assert_eq!(error["limit"], "limits.tools.echo");
    assert!(
        error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0),
        "{error}"
    );
}

#[test]
fn a_ctx_call_counts_against_the_same_limits() {
    let fx =
        fixture("[store]\nbackend = \"memory\"\n[limits.tools.echo]\nrate = \"1/h\"\nburst = 1\n");
    fx.tool(
        "relay.lua",
        r#"registry.register{
  name = "relay", toolset = "demo",
  schema = { description = "Relay", parameters = { type = "object" } },
  handler = function(_, ctx)
    local out = ctx.call("echo", {})
    return { got = type(out) == "table" and out.error_type or out }
  end,
}"#,
    );
    let host = fx.host_with(&std::fs::read_to_string(fx.root().join("toolhost.toml")).unwrap());
    assert_eq!(
        common::call(&host, "relay", json!({})),
        json!("{\"got\":\"echo\"}")
    );
    assert_eq!(
        common::call(&host, "relay", json!({})),
        json!("{\"got\":\"rate_limited\"}")
    );
    // The relay itself is not limited; a direct call of echo is refused the same way.
    let direct = common::call(&host, "echo", json!({}));
    assert_eq!(direct["error_type"], "rate_limited", "{direct}");
}

#[test]
fn a_bad_rate_stops_the_binary_naming_the_key() {
    for (body, expected) in [
        (
            "rate = \"5/x\"",
            "limits.tools.echo.rate: \"5/x\" is not N/s, N/m or N/h",
        ),
        (
            "rate = \"0/s\"",
            "limits.tools.echo.rate: \"0/s\" allows no call",
        ),
        (
            "rate = \"184467440737095516160/s\"",
            "limits.tools.echo.rate: \"184467440737095516160/s\" is not N/s",
        ),
        (
            "rate = \"1/s\"\nburst = 0",
            "limits.tools.echo.burst: must be at least 1",
        ),
        (
            "rate = \"1/s\"\nburst = 99999999999",
            "limits.tools.echo.burst: 99999999999 is over",
        ),
        ("rate = \"1/s\"\nper = 3", "per"),
    ] {
        let fx = fixture(&format!("[limits.tools.echo]\n{body}\n"));
        let output = fx.toolhost().args(["call", "echo", "{}"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert!(!output.status.success(), "{body}");
        assert!(stderr.contains(expected), "{body}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn postgres_down_refuses_limited_calls_naming_the_limit_and_lets_unlimited_ones_run() {
    let cluster = RestartCluster::exclusive();
    let db = TestDb::on(RESTART_PORT);
    let fx = fixture("[limits.tools.echo]\nrate = \"1/s\"\nburst = 100\n");
    fx.tool("free.lua", &common::simple_tool("free", "demo", "free"));
    let host = toolhost::Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .config_file(fx.root().join("toolhost.toml"))
        .postgres_store(db.url())
        .build()
        .expect("host builds");
    assert_eq!(common::call(&host, "echo", json!({})), json!("echo"));
    cluster.stop();
    let refused = common::call(&host, "echo", json!({}));
    assert_eq!(refused["error_type"], "unavailable", "{refused}");
    let message = refused["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("the rate limit limits.tools.echo could not be checked"),
        "{refused}"
    );
    assert!(!message.contains(common::pg::PASSWORD), "{refused}");
    // A tool no limit applies to does not wait for the store.
    assert_eq!(common::call(&host, "free", json!({})), json!("free"));
    cluster.start();
    let back = common::wait_until(std::time::Duration::from_secs(60), || {
        common::call(&host, "echo", json!({})) == json!("echo")
    });
    assert!(back, "limited calls never ran again");
}

#[test]
fn an_mcp_client_over_stdio_gets_a_json_rpc_error_naming_the_limit_and_the_retry() {
    let fx = fixture(
        "[store]\nbackend = \"memory\"\n[limits.callers.local]\nrate = \"1/m\"\nburst = 2\n",
    );
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = common::mcp_client::run_script(
        "limits.py",
        &[binary.to_str().unwrap(), fx.root().to_str().unwrap(), "3"],
    );
    assert_eq!(steps[0]["text"], "echo", "{steps:?}");
    assert_eq!(steps[1]["text"], "echo", "{steps:?}");
    let refused = &steps[2];
    assert_eq!(refused["code"], -32029, "{refused}");
    assert_eq!(
        refused["data"]["limit"], "limits.callers.local",
        "{refused}"
    );
    let ms = refused["data"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert!(ms > 0 && ms <= 60_000, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("limits.callers.local") && m.contains("retry in")),
        "{refused}"
    );
}

/// A 2026-07-28 `tools/call` of `echo` (id `id`) over a new connection to `authority`.
fn modern_echo(authority: &str, id: u64) -> common::raw_http::Reply {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "echo", "arguments": {},
        "_meta": common::fleet::meta(json!({}))}});
    RawHttp::connect(authority).request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", common::fleet::MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ],
        call.to_string().as_bytes(),
    )
}

#[test]
fn an_sse_answer_over_the_limit_carries_retry_after_when_its_headers_are_still_unsent() {
    let fx =
        fixture("[store]\nbackend = \"memory\"\n[limits.tools.echo]\nrate = \"1/m\"\nburst = 1\n");
    // A server with sessions (not `--stateless`) answers a 2026-07-28 call on SSE, once
    // its first message is there.
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (child, url) = common::spawn_http_server(command);
    let _server = Killed(child);
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let first = modern_echo(authority, 1);
    assert_eq!(first.message()["result"]["content"][0]["text"], "echo");
    let refused = modern_echo(authority, 2);
    assert_eq!(
        refused.header("content-type"),
        Some("text/event-stream"),
        "an SSE answer: {:?}",
        refused.headers
    );
    let error = &refused.message()["error"];
    assert_eq!(error["code"], -32029, "{error}");
    let ms = error["data"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert_eq!(
        refused.header("retry-after"),
        Some(ms.div_ceil(1000).to_string().as_str()),
        "{:?}",
        refused.headers
    );
    assert_eq!(first.header("retry-after"), None);
}

#[test]
fn one_named_tokens_limit_does_not_touch_another_tokens_calls() {
    let fx = fixture(
        "[store]\nbackend = \"memory\"\n\
         [[serve.tokens]]\nname = \"ci\"\ntoken_env = \"CI_TOKEN\"\n\
         [[serve.tokens]]\nname = \"nightly\"\ntoken_env = \"NIGHTLY_TOKEN\"\n\
         [limits.callers.ci]\nrate = \"1/m\"\nburst = 1\n\
         [limits.default]\nrate = \"1/m\"\nburst = 3\n",
    );
    let env = [
        ("CI_TOKEN", "ci-secret".to_string()),
        ("NIGHTLY_TOKEN", "nightly-secret".to_string()),
    ];
    let (child, authority) = serve(&fx, &env);
    let _server = Killed(child);
    let mut http = RawHttp::connect(&authority);
    let mut call = |token: &str, id: u64| {
        let authorization = format!("Bearer {token}");
        http.request(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Authorization", &authorization),
            ],
            tools_call(id, "echo", "{}").as_bytes(),
        )
        .message()
    };
    let limit_of = |answer: &Value| answer["error"]["data"]["limit"].clone();
    let ok = |answer: &Value| answer["result"]["content"][0]["text"] == "echo";
    // ci spends its own budget of one...
    assert!(ok(&call("ci-secret", 1)));
    let refused = call("ci-secret", 2);
    assert_eq!(limit_of(&refused), "limits.callers.ci", "{refused}");
    // ...which nightly never shares: its three of `limits.default` are whole.
    for id in 3..=5 {
        let answer = call("nightly-secret", id);
        assert!(ok(&answer), "{answer}");
    }
    let over = call("nightly-secret", 6);
    assert_eq!(limit_of(&over), "limits.default", "{over}");
    // And nightly's calls left ci's refusal as it was.
    assert_eq!(limit_of(&call("ci-secret", 7)), "limits.callers.ci");
}
