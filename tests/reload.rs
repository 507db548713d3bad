//! Hot reload (docs/discovery.md): changes become visible, broken files keep their last good
//! version, in-flight calls finish on the version they started on.

mod common;

use common::{Fixture, call, names, simple_tool};
use serde_json::json;
use std::time::Duration;
use toolhost::{CallContext, FunctionCall, Host, Selection, ToolResult};

fn definitions(host: &Host) -> Vec<String> {
    host.tool_definitions(&Selection::default())
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn adding_changing_and_deleting_files_show_up_after_a_reload() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("alpha", "t", "one"));
    let host = fx.host();
    assert_eq!(definitions(&host), ["alpha"]);
    let generation = host.generation();

    fx.tool("b.lua", &simple_tool("beta", "t", "b"));
    fx.tool("a.lua", &simple_tool("alpha", "t", "two"));
    let event = host.reload();
    assert_eq!(event.added, ["beta"]);
    assert_eq!(event.changed, ["alpha"], "a new source counts as a change");
    assert!(event.removed.is_empty() && event.errors.is_empty());
    assert!(host.generation() > generation);
    assert_eq!(definitions(&host), ["alpha", "beta"]);
    assert_eq!(call(&host, "alpha", json!({})), json!("two"));

    std::fs::remove_file(fx.tools().join("b.lua")).unwrap();
    let event = host.reload();
    assert_eq!(event.removed, ["beta"]);
    assert_eq!(definitions(&host), ["alpha"]);
    assert_eq!(call(&host, "beta", json!({}))["error_type"], "unknown_tool");
    assert!(host.reload().summary().contains("no tool changes"));
}

#[test]
fn a_broken_file_keeps_its_last_good_version_until_fixed() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("alpha", "t", "good"));
    let host = fx.host();

    fx.tool("a.lua", "registry.register{ name = 'alpha', \n");
    let event = host.reload();
    assert!(
        event.added.is_empty() && event.removed.is_empty(),
        "{event:?}"
    );
    assert_eq!(event.errors.len(), 1);
    assert!(
        event.errors[0].file.ends_with("a.lua")
            && event.errors[0].kept_last_good
            && event.errors[0]
                .to_string()
                .ends_with("(still serving the last good version)"),
        "{event:?}"
    );
    assert_eq!(call(&host, "alpha", json!({})), json!("good"));
    let verdicts = host.discovery();
    assert!(verdicts[0].last_good);

    fx.tool(
        "a.lua",
        &(simple_tool("alpha", "t", "still") + "error('boom at load')\n"),
    );
    let event = host.reload();
    assert!(
        event.errors[0].message.contains("boom at load"),
        "{event:?}"
    );
    assert_eq!(call(&host, "alpha", json!({})), json!("good"));

    fx.tool("a.lua", &simple_tool("alpha", "t", "fixed"));
    let event = host.reload();
    assert!(event.errors.is_empty(), "{event:?}");
    assert_eq!(event.changed, ["alpha"]);
    assert_eq!(call(&host, "alpha", json!({})), json!("fixed"));
}

const VERSIONED: &str = r#"registry.register{ name = "version", toolset = "v", parallel_safe = true,
  schema = { parameters = { type = "object" } },
  handler = function() time.sleep(400) return "VERSION" end }"#;

#[test]
fn calls_in_flight_finish_on_the_version_they_started_on() {
    let fx = Fixture::new();
    fx.tool("v.lua", &VERSIONED.replace("VERSION", "v1"));
    let host = fx.builder().vms(2).build().unwrap();
    let runtime = common::two_worker_runtime();
    let in_flight = {
        let host = host.clone();
        runtime.spawn(async move {
            let calls = vec![FunctionCall::new("version", json!({})); 50];
            host.handle_function_calls(calls, &CallContext::default())
                .await
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    fx.tool("v.lua", &VERSIONED.replace("VERSION", "v2"));
    let event = host.reload();
    assert_eq!(event.changed, ["version"]);
    let results = runtime.block_on(in_flight).unwrap();
    assert_eq!(results.len(), 50);
    assert!(
        results.iter().all(|r| *r == ToolResult::Text("v1".into())),
        "{results:?}"
    );
    let after =
        runtime.block_on(host.handle_function_call("version", json!({}), &CallContext::default()));
    assert_eq!(after, ToolResult::Text("v2".into()));
}

#[test]
fn a_config_change_takes_effect_and_a_broken_config_keeps_the_old_one() {
    let fx = Fixture::new();
    fx.tool(
        "a.lua",
        &(simple_tool("alpha", "one", "a") + &simple_tool("beta", "two", "b")),
    );
    let path = fx.write("toolhost.toml", "");
    let host = Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .config_file(&path)
        .build()
        .unwrap();
    assert_eq!(definitions(&host), ["alpha", "beta"]);
    fx.write("toolhost.toml", "disabled_toolsets = [\"two\"]\n");
    let event = host.reload();
    assert!(event.errors.is_empty(), "{event:?}");
    assert_eq!(definitions(&host), ["alpha"]);
    fx.write("toolhost.toml", "disabled_toolsets = [\n");
    let event = host.reload();
    assert!(
        event.errors[0]
            .message
            .contains("keeping the previous configuration"),
        "{event:?}"
    );
    assert_eq!(definitions(&host), ["alpha"]);
}

#[test]
fn changing_a_lib_module_reloads_its_users() {
    let fx = Fixture::new();
    fx.tool("lib/greeting.lua", "return { text = 'hello' }");
    fx.tool(
        "greet.lua",
        &("local g = require('greeting')\n".to_string()
            + &simple_tool("greet", "t", "x").replace("return \"x\"", "return g.text")),
    );
    let host = fx.host();
    assert_eq!(call(&host, "greet", json!({})), json!("hello"));
    fx.tool("lib/greeting.lua", "return { text = 'bonjour' }");
    host.reload();
    assert_eq!(call(&host, "greet", json!({})), json!("bonjour"));
}

#[test]
fn the_watcher_reloads_on_save_including_atomic_renames() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("alpha", "t", "one"));
    let host = fx.host_with("[runtime]\nreload_debounce_ms = 100\n");
    let mut watch = host.watch().unwrap();

    fx.tool("b.lua", &simple_tool("beta", "t", "b"));
    let event = watch
        .next_timeout(Duration::from_secs(10))
        .expect("a reload within 10 s");
    assert!(event.added.contains(&"beta".to_string()), "{event:?}");

    // An editor-style save: write a temp file, rename it over the tool.
    let temp = fx.tools().join(".a.lua.swp");
    std::fs::write(&temp, simple_tool("alpha", "t", "two")).unwrap();
    std::fs::rename(&temp, fx.tools().join("a.lua")).unwrap();
    let mut seen = false;
    for _ in 0..5 {
        match watch.next_timeout(Duration::from_secs(10)) {
            Some(_) if call(&host, "alpha", json!({})) == json!("two") => {
                seen = true;
                break;
            }
            Some(_) => continue,
            None => break,
        }
    }
    assert!(seen, "the renamed file was reloaded");
    assert_eq!(names(&host, None), ["alpha", "beta"]);
}

#[test]
fn breaking_a_cached_file_under_watch_is_not_reported_as_a_vm_disagreement() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("alpha", "t", "one"));
    fx.write(
        "toolhost.toml",
        "[runtime]\nvms = 2\nreload_debounce_ms = 100\n",
    );
    // A first start fills the registration cache: the watcher's start defers the file.
    fx.toolhost().arg("list").assert().success();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .arg("--cache-dir")
        .arg(fx.cache())
        .arg("watch")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let (lines, received) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let readers: Vec<_> = [
        (Box::new(stdout) as Box<dyn std::io::Read + Send>, "out"),
        (Box::new(stderr), "err"),
    ]
    .into_iter()
    .map(|(pipe, tag)| {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = lines.send(format!("{tag}: {line}"));
            }
        })
    })
    .collect();
    let mut seen = Vec::new();
    let wait_for = |needle: &str, seen: &mut Vec<String>| {
        while let Ok(line) = received.recv_timeout(Duration::from_secs(20)) {
            let found = line.contains(needle);
            seen.push(line);
            if found {
                return;
            }
        }
        panic!("no line with {needle:?} within 20 s: {seen:#?}");
    };
    wait_for("watching", &mut seen);
    fx.tool("a.lua", "registry.register{ name = ");
    wait_for("reload:", &mut seen);
    let _ = child.kill();
    let _ = child.wait();
    // Everything it wrote, to the end of both pipes.
    for reader in readers {
        let _ = reader.join();
    }
    seen.extend(received.try_iter());
    assert!(
        !seen.iter().any(|l| l.contains("registered differently")),
        "{seen:#?}"
    );
}
