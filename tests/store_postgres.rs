//! The store on PostgreSQL, beyond the behaviour every backend shares (tests/store.rs): the
//! server down and back, secrets kept out of errors and logs, migrations (at first use by
//! replicas starting together, and `toolhost store migrate`), moving data with `store
//! export` / `import`, `/healthz`. Every test makes a database of its own (TestDb); the one
//! that stops the server uses the restart cluster through its lock.
#![cfg(feature = "postgres")]

mod common;

use common::pg::{self, RESTART_PORT, RestartCluster, TestDb};
use common::{Fixture, call};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolhost::Host;

const TOOLS: &str = r#"
registry.register{ name = "put", toolset = "t", parallel_safe = true,
  schema = { description = "d", parameters = { type = "object",
    properties = { key = { type = "string" }, value = {} }, required = { "key" } } },
  handler = function(args) store.set(args.key, args.value) return "ok" end }
registry.register{ name = "get", toolset = "t", parallel_safe = true,
  schema = { description = "d", parameters = { type = "object",
    properties = { key = { type = "string" } }, required = { "key" } } },
  handler = function(args) return json.encode({ value = store.get(args.key) }) end }
registry.register{ name = "echo", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return "echo" end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("store.lua", TOOLS);
    fx
}

fn pg_host(fx: &Fixture, url: &str) -> Host {
    Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .default_config()
        .postgres_store(url)
        .build()
        .expect("host builds")
}

/// The error text of a call's result ("" when it succeeded).
fn error_of(out: &Value) -> String {
    out["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn postgres_down_fails_calls_naming_the_server_and_they_succeed_again_once_it_is_back() {
    let cluster = RestartCluster::exclusive();
    let db = TestDb::on(RESTART_PORT);
    let fx = fixture();
    let host = pg_host(&fx, &db.url());
    assert_eq!(
        call(&host, "put", json!({"key": "k", "value": 1})),
        json!("ok")
    );
    cluster.stop();
    let out = call(&host, "put", json!({"key": "k", "value": 2}));
    let message = error_of(&out);
    assert!(
        message.contains(&format!(
            "PostgreSQL at 127.0.0.1:{RESTART_PORT}/{}",
            db.name
        )),
        "{out}"
    );
    assert!(!message.contains(pg::PASSWORD), "{out}");
    // A tool that does not use the store is unaffected.
    assert_eq!(call(&host, "echo", json!({})), json!("echo"));
    cluster.start();
    // The pool reconnects by itself: the same host succeeds again (a call or two may still
    // meet a connection the restart cut).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = call(&host, "put", json!({"key": "k", "value": 3}));
        if out == json!("ok") {
            break;
        }
        assert!(Instant::now() < deadline, "never recovered: {out}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = call(&host, "get", json!({"key": "k"}));
    assert_eq!(out, json!(r#"{"value":3}"#));
}

/// Runs `toolhost -vvv call put …` with `url` and returns (stdout, stderr).
fn cli_put_with_url(fx: &Fixture, url: &str) -> (String, String) {
    fx.write(
        "toolhost.toml",
        "[store]\nbackend = \"postgres\"\nconnect_timeout_ms = 3000\n",
    );
    let out = fx
        .toolhost()
        .env("TOOLHOST_DATABASE_URL", url)
        .args(["-vvv", "call", "put", r#"{"key": "k", "value": 1}"#])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("toolhost runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_wrong_password_appears_in_no_error_and_no_log_line() {
    let db = TestDb::new();
    let fx = fixture();
    let secret = "wrong-pw-Zq9x7-never-shown";
    let url = format!(
        "postgres://{}:{secret}@127.0.0.1:{}/{}",
        pg::USER,
        pg::MAIN_PORT,
        db.name
    );
    let (stdout, stderr) = cli_put_with_url(&fx, &url);
    assert!(
        stdout.contains("password authentication failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("127.0.0.1:{}/{}", pg::MAIN_PORT, db.name)),
        "{stdout}"
    );
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "{stdout}\n{stderr}"
    );
    assert!(!stdout.contains(&url) && !stderr.contains(&url));
}

#[test]
fn an_unreachable_port_appears_in_the_error_and_the_password_nowhere() {
    let fx = fixture();
    // A port nothing listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let secret = "unreachable-pw-Kk3";
    let url = format!("postgres://someone:{secret}@127.0.0.1:{port}/appdb");
    let (stdout, stderr) = cli_put_with_url(&fx, &url);
    assert!(
        stdout.contains(&format!("PostgreSQL at 127.0.0.1:{port}/appdb")),
        "{stdout}"
    );
    assert!(stdout.contains("cannot connect"), "{stdout}");
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn a_missing_url_variable_is_a_setup_error_naming_it() {
    let fx = fixture();
    fx.write(
        "toolhost.toml",
        "[store]\nbackend = \"postgres\"\nurl_env = \"TOOLHOST_TEST_NO_SUCH_URL\"\n",
    );
    let out = fx
        .toolhost()
        .env_remove("TOOLHOST_TEST_NO_SUCH_URL")
        .args(["call", "echo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TOOLHOST_TEST_NO_SUCH_URL"), "{stderr}");
}

#[test]
fn replicas_starting_together_apply_each_migration_once() {
    let db = TestDb::new();
    let fx = fixture();
    let url = db.url();
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let host = pg_host(&fx, &url);
            std::thread::spawn(move || host.store().set(&format!("r{i}"), &json!(i)))
        })
        .collect();
    for thread in threads {
        thread.join().unwrap().expect("every replica writes");
    }
    assert_eq!(
        db.query("SELECT count(*) FROM toolhost.schema_version"),
        "1"
    );
    assert_eq!(db.query("SELECT count(*) FROM toolhost.kv"), "6");
}

#[test]
fn store_migrate_creates_the_tables_in_the_configured_schema_ahead_of_a_deploy() {
    let db = TestDb::new();
    let fx = fixture();
    fx.write(
        "toolhost.toml",
        "[store]\nbackend = \"postgres\"\npg_schema = \"deploy_2\"\n",
    );
    fx.toolhost()
        .env("TOOLHOST_DATABASE_URL", db.url())
        .args(["store", "migrate"])
        .assert()
        .success();
    assert_eq!(
        db.query(
            "SELECT count(*) FROM information_schema.tables \
             WHERE table_schema = 'deploy_2' AND table_name IN ('kv', 'schema_version')"
        ),
        "2"
    );
    // Running it again is a no-op.
    fx.toolhost()
        .env("TOOLHOST_DATABASE_URL", db.url())
        .args(["store", "migrate"])
        .assert()
        .success();
    assert_eq!(
        db.query("SELECT count(*) FROM deploy_2.schema_version"),
        "1"
    );
}

#[test]
fn a_schema_migrated_by_a_newer_toolhost_is_refused() {
    let db = TestDb::new();
    let fx = fixture();
    let host = pg_host(&fx, &db.url());
    host.store().set("k", &json!(1)).unwrap();
    db.query("INSERT INTO toolhost.schema_version (version) VALUES (99)");
    let newer = pg_host(&fx, &db.url());
    let error = newer.store().get("k").unwrap_err().to_string();
    assert!(error.contains("newer than this toolhost"), "{error}");
}

#[test]
fn export_from_sqlite_then_import_into_postgres_gives_the_same_rows() {
    let db = TestDb::new();
    let fx = fixture();
    // Rows in three namespaces, JSON of every kind, keys that sort by bytes.
    fx.write(
        "plug/tool.lua",
        r#"registry.register{ name = "plug_put", toolset = "p",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() store.set("mine", { deep = { 1, 2.5, "three" } }) return "ok" end }"#,
    );
    let sqlite_toml = "[store]\npath = \"store.sqlite3\"\n\
                       [plugins.plug]\ndir = \"plug\"\ncapabilities = [\"store\"]\n";
    fx.write("toolhost.toml", sqlite_toml);
    for (key, value) in [
        ("a", json!(1)),
        ("B", json!("é ü \u{1F600}")),
        ("a%_", json!({"x": null, "y": [true, false]})),
        ("z", json!(-0.25)),
    ] {
        let args = json!({"key": key, "value": value}).to_string();
        fx.toolhost()
            .args(["call", "put", &args])
            .assert()
            .success();
    }
    fx.toolhost().args(["call", "plug_put"]).assert().success();
    let export = fx.toolhost().args(["store", "export"]).output().unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let exported = String::from_utf8(export.stdout).unwrap();
    assert_eq!(exported.lines().count(), 5, "{exported}");
    fx.write("export.jsonl", &exported);

    fx.write(
        "toolhost.toml",
        "[store]\nbackend = \"postgres\"\n\
         [plugins.plug]\ndir = \"plug\"\ncapabilities = [\"store\"]\n",
    );
    fx.toolhost()
        .env("TOOLHOST_DATABASE_URL", db.url())
        .args(["store", "import", "export.jsonl"])
        .assert()
        .success();
    let again = fx
        .toolhost()
        .env("TOOLHOST_DATABASE_URL", db.url())
        .args(["store", "export", "again.jsonl"])
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let reexported = std::fs::read_to_string(fx.root().join("again.jsonl")).unwrap();
    assert_eq!(reexported, exported, "same rows, same order");
    // And the tools read them.
    let out = fx
        .toolhost()
        .env("TOOLHOST_DATABASE_URL", db.url())
        .args(["call", "get", r#"{"key": "a%_"}"#])
        .output()
        .unwrap();
    let value: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(value["value"]["y"], json!([true, false]), "{value}");
}

#[test]
fn an_import_with_a_bad_line_names_it_and_writes_nothing() {
    let db = TestDb::new();
    let fx = fixture();
    fx.write("toolhost.toml", "[store]\nbackend = \"postgres\"\n");
    fx.write(
        "bad.jsonl",
        "{\"ns\":\"builtin\",\"key\":\"a\",\"value\":1}\n\
         {\"ns\":\"builtin\",\"key\":\"b\",\"value\":2}\n\
         {\"ns\":\"builtin\",\"key\":\"c\"}\n",
    );
    let out = fx
        .toolhost()
        .env("TOOLHOST_DATABASE_URL", db.url())
        .args(["store", "import", "bad.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("value"),
        "{stderr}"
    );
    // Nothing was written (the tables may not even exist yet).
    let rows = pg::psql(db.port, &db.name, "SELECT count(*) FROM toolhost.kv");
    assert!(rows.is_err() || rows.as_deref() == Ok("0"), "{rows:?}");
}

/// A TCP server that accepts connections and never answers (a hung PostgreSQL).
fn silent_server() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// GET /healthz of an embedded server on `host`; (answer, how long it took).
fn healthz(host: Host) -> (Value, Duration) {
    let runtime = common::two_worker_runtime();
    runtime.block_on(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            host.serve_mcp_http(
                toolhost::Selection::default(),
                listener,
                toolhost::HttpOptions::default(),
                async {
                    let _ = stopped.await;
                },
            )
            .await
        });
        let started = Instant::now();
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        tokio::time::timeout(
            Duration::from_secs(30),
            stream.read_to_string(&mut response),
        )
        .await
        .expect("healthz answers")
        .unwrap();
        let took = started.elapsed();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
        let _ = stop.send(());
        let _ = server.await;
        (serde_json::from_str(body).unwrap(), took)
    })
}

#[test]
fn healthz_reports_a_healthy_postgres_store() {
    let db = TestDb::new();
    let fx = fixture();
    let (health, _) = healthz(pg_host(&fx, &db.url()));
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["store"], json!({"backend": "postgres", "ok": true}));
}

#[test]
fn healthz_answers_soon_with_the_store_failing_when_postgres_hangs() {
    let (_silent, port) = silent_server();
    let fx = fixture();
    let secret = "hang-pw-77";
    let host = Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .config_file(fx.write(
            "toolhost.toml",
            "[store]\nbackend = \"postgres\"\nconnect_timeout_ms = 60000\n",
        ))
        .postgres_store(format!("postgres://u:{secret}@127.0.0.1:{port}/hung"))
        .build()
        .expect("the host starts while PostgreSQL does not answer");
    let (health, took) = healthz(host);
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["store"]["backend"], "postgres");
    assert_eq!(health["store"]["ok"], false);
    let message = health["store"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("127.0.0.1:{port}/hung")),
        "{message}"
    );
    assert!(!health.to_string().contains(secret), "{health}");
    // A liveness bound (the check gives up after 2 s; the connect timeout is 60 s).
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn sslmode_require_refuses_an_untrusted_certificate_and_disable_and_prefer_connect() {
    let db = TestDb::new();
    let fx = fixture();
    // The test server's certificate is Debian's self-signed "snakeoil" one (or it has no
    // TLS at all): `require` must refuse it rather than go on unverified or unencrypted.
    let required = pg_host(&fx, &format!("{}?sslmode=require", db.url()));
    let error = required
        .store()
        .set("k", &json!(1))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!(
            "PostgreSQL at 127.0.0.1:{}/{}",
            pg::MAIN_PORT,
            db.name
        )),
        "{error}"
    );
    assert!(
        error.contains("TLS") || error.contains("certificate") || error.contains("tls"),
        "{error}"
    );
    assert!(!error.contains(pg::PASSWORD), "{error}");
    for mode in ["disable", "prefer"] {
        let host = pg_host(&fx, &format!("{}?sslmode={mode}", db.url()));
        host.store()
            .set(mode, &json!(mode))
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
    }
    assert_eq!(
        db.query("SELECT count(*) FROM toolhost.kv"),
        "2",
        "require wrote nothing"
    );
}

#[test]
fn serve_starts_while_postgres_is_unreachable_and_serves_the_tools_that_do_not_use_it() {
    let fx = fixture();
    fx.write("toolhost.toml", "[store]\nbackend = \"postgres\"\n");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env(
            "TOOLHOST_DATABASE_URL",
            format!("postgres://u:serve-pw-31@127.0.0.1:{port}/down"),
        )
        .args(["--cache-dir", "cache", "serve", "--http", "127.0.0.1:0"]);
    let (mut child, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut http = common::raw_http::RawHttp::connect(&authority);
    let health = http.request("GET", "/healthz", &[], b"").message();
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["store"]["ok"], false, "{health}");
    let session = http.open_session();
    let echo = http.mcp(
        Some(&session),
        &common::raw_http::tools_call(1, "echo", "{}"),
    );
    assert_eq!(
        echo.message()["result"]["content"][0]["text"],
        "echo",
        "{}",
        echo.text()
    );
    let put = http.mcp(
        Some(&session),
        &common::raw_http::tools_call(2, "put", r#"{"key":"k","value":1}"#),
    );
    let text = put.message()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        text.contains(&format!("PostgreSQL at 127.0.0.1:{port}/down")),
        "{text}"
    );
    assert!(!text.contains("serve-pw-31"), "{text}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_cancelled_call_ends_its_wait_on_the_server_too() {
    let db = TestDb::new();
    let fx = fixture();
    fx.tool(
        "long.lua",
        r#"registry.register{ name = "long_set", toolset = "t", timeout_ms = 60000,
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() store.set("k", 2) return "written" end }"#,
    );
    let host = pg_host(&fx, &db.url());
    assert_eq!(
        call(&host, "put", json!({"key": "k", "value": 1})),
        json!("ok")
    );
    let _lock = common::stores::RowLock::hold(&db, "k");
    let waiting_on_the_server = || {
        db.query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'toolhost' \
             AND wait_event_type = 'Lock'",
        )
    };
    let runtime = common::two_worker_runtime();
    let ctx = toolhost::CallContext::default();
    let cancel = ctx.cancel.clone();
    let call = {
        let host = host.clone();
        runtime.spawn(async move { host.handle_function_call("long_set", json!({}), &ctx).await })
    };
    assert!(
        common::wait_until(Duration::from_secs(30), || waiting_on_the_server() == "1"),
        "the set never waited for the row"
    );
    cancel.cancel();
    assert!(runtime.block_on(call).unwrap().is_error());
    // Well before its lock_timeout (the 5 s cap), the server stopped waiting: the
    // abandoned connection's query was cancelled.
    assert!(
        common::wait_until(Duration::from_secs(3), || waiting_on_the_server() == "0"),
        "the server kept waiting for the row"
    );
}

#[test]
fn hostile_keys_are_data_and_a_nul_character_is_a_clear_error() {
    let db = TestDb::new();
    let fx = fixture();
    let host = pg_host(&fx, &db.url());
    // SQL in a key or value is stored as it is (every statement takes parameters).
    let sneaky = "k'); DROP TABLE toolhost.kv; --";
    assert_eq!(
        call(&host, "put", json!({"key": sneaky, "value": sneaky})),
        json!("ok")
    );
    let out = call(&host, "get", json!({"key": sneaky}));
    assert_eq!(out, json!(json!({"value": sneaky}).to_string()));
    // PostgreSQL's text cannot hold NUL: an error naming it, nothing else breaks.
    let out = call(&host, "put", json!({"key": "a\u{0}b", "value": 1}));
    assert!(error_of(&out).contains("NUL character"), "{out}");
    assert_eq!(
        call(&host, "put", json!({"key": "after", "value": 1})),
        json!("ok")
    );
    assert_eq!(db.query("SELECT count(*) FROM toolhost.kv"), "2");
}

#[test]
fn an_update_holding_one_key_does_not_hold_up_updates_of_other_keys() {
    let db = TestDb::new();
    let fx = fixture();
    fx.tool(
        "slow.lua",
        r#"
registry.register{ name = "slow_update", toolset = "t", timeout_ms = 60000,
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return store.update("a", function() while true do end end) end }
registry.register{ name = "other_update", toolset = "t", timeout_ms = 2000,
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() store.update("b", function(old) return (old or 0) + 1 end) return "written" end }
"#,
    );
    let host = Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .default_config()
        .postgres_store(db.url())
        .vms(2)
        .build()
        .unwrap();
    assert_eq!(
        call(&host, "put", json!({"key": "a", "value": 0})),
        json!("ok")
    );
    let runtime = common::two_worker_runtime();
    let ctx = toolhost::CallContext::default();
    let cancel = ctx.cancel.clone();
    let slow = {
        let host = host.clone();
        runtime.spawn(async move {
            host.handle_function_call("slow_update", json!({}), &ctx)
                .await
        })
    };
    assert!(
        common::wait_until(Duration::from_secs(30), || {
            pg::psql(
                db.port,
                &db.name,
                "SELECT 1 FROM toolhost.kv WHERE ns = 'builtin' AND key = 'a' FOR UPDATE NOWAIT",
            )
            .is_err()
        }),
        "the slow update never held its row"
    );
    // Row locks, not a lock of this process: another key's update goes ahead.
    assert_eq!(call(&host, "other_update", json!({})), json!("written"));
    cancel.cancel();
    assert!(runtime.block_on(slow).unwrap().is_error());
}
