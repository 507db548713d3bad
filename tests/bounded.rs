//! Bounded resources (docs/runtime.md, docs/reliability.md): host functions stop at the call's
//! deadline or their caps, bad limits are config errors, and the CLI survives a closed pipe.

mod common;

use assert_cmd::Command;
use common::{Fixture, call, simple_tool};
use serde_json::json;
use std::time::{Duration, Instant};

#[cfg(unix)]
#[test]
fn proc_run_keeps_at_most_the_cap_of_an_endless_output_and_kills_the_child() {
    let fx = Fixture::new();
    fx.tool(
        "yes.lua",
        r#"registry.register{ name = "yes", toolset = "t", timeout_ms = 20000,
  schema = { parameters = { type = "object" } },
  handler = function()
    local r = proc.run{ argv = { "yes" } }
    return #r.stdout .. "|" .. tostring(r.truncated) .. "|" .. tostring(r.timed_out)
  end }"#,
    );
    let host = fx.host_with("[sandbox]\ncommands = [\"yes\"]\n[runtime]\nmemory_mb = 64\n");
    let started = Instant::now();
    let out = call(&host, "yes", json!({}));
    assert_eq!(out, json!(format!("{}|true|false", 8 * 1024 * 1024)));
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn fs_grep_with_a_costly_regex_over_a_huge_line_stops_at_the_deadline() {
    let fx = Fixture::new();
    fx.write("data/one_line.txt", "ab".repeat(2_000_000));
    fx.tool(
        "g.lua",
        r#"registry.register{ name = "g", toolset = "t", timeout_ms = 1000,
  schema = { parameters = { type = "object" } },
  handler = function()
    local found = 0
    for _ = 1, 1000 do found = found + #fs.grep("(a|b|ab|ba)*x", "data") end
    return tostring(found)
  end }"#,
    );
    let host = fx.host_with(&format!(
        "[sandbox]\nfs_roots = [{:?}]\n",
        fx.root().display().to_string()
    ));
    let started = Instant::now();
    let out = call(&host, "g", json!({}));
    assert_eq!(out["error_type"], "timeout", "{out}");
    // Liveness bound only: stopped within 5 s of a 1 s deadline.
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn memory_mb_zero_is_a_config_error_naming_the_key() {
    let fx = Fixture::new();
    let path = fx.write("toolhost.toml", "[runtime]\nmemory_mb = 0\n");
    let error = fx
        .builder()
        .config_file(path)
        .build()
        .err()
        .expect("memory_mb = 0 is refused")
        .to_string();
    assert!(error.contains("runtime.memory_mb"), "{error}");
}

#[cfg(unix)]
#[test]
fn list_into_a_closed_pipe_exits_quietly() {
    let fx = Fixture::new();
    for i in 0..200 {
        fx.tool(
            &format!("t{i:03}.lua"),
            &simple_tool(&format!("t{i:03}"), "t", "x"),
        );
    }
    // `toolhost list | head -1`: head exits after one line and closes the pipe.
    let script = format!(
        "{} --cache-dir cache list | head -1; exit ${{PIPESTATUS[0]}}",
        assert_cmd::cargo::cargo_bin!("toolhost").display()
    );
    let output = Command::new("bash")
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["-c", &script])
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

/// Builds a host on another thread; fails (instead of hanging the suite) if it blocks.
#[cfg(unix)]
fn builds_without_blocking(fx: &Fixture) -> Vec<String> {
    let (tools, cache) = (fx.tools(), fx.cache());
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let host = toolhost::Host::builder()
            .tools_dir(tools)
            .cache_dir(cache)
            .default_config()
            .build()
            .expect("host builds");
        let _ = done.send(common::names(&host, None));
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("start-up finished instead of blocking")
}

#[cfg(unix)]
#[test]
fn a_fifo_as_the_verdict_cache_does_not_block_start_up() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "x"));
    std::fs::create_dir_all(fx.cache()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(fx.cache().join("discovery.json"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    assert_eq!(builds_without_blocking(&fx), ["a"]);
}

#[cfg(unix)]
#[test]
fn dev_zero_as_the_verdict_cache_is_ignored() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "x"));
    std::fs::create_dir_all(fx.cache()).unwrap();
    std::os::unix::fs::symlink("/dev/zero", fx.cache().join("discovery.json")).unwrap();
    assert_eq!(builds_without_blocking(&fx), ["a"]);
}

#[cfg(unix)]
#[test]
fn a_fifo_as_the_config_file_is_a_clear_error() {
    let fx = Fixture::new();
    let path = fx.root().join("toolhost.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let error = fx
        .builder()
        .config_file(path)
        .build()
        .err()
        .expect("a FIFO is refused")
        .to_string();
    assert!(error.contains("not a regular file"), "{error}");
}

#[test]
fn load_refuses_text_no_parser_should_see() {
    let fx = Fixture::new();
    fx.tool(
        "l.lua",
        r#"registry.register{ name = "l", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function()
    local f1, e1 = load(("not "):rep(100000) .. "x", "=deep")
    local f2, e2 = load("return a" .. (" and a"):rep(1000000))
    local parts = { "return ", ("- "):rep(1000), "1" }
    local i = 0
    local f3, e3 = load(function() i = i + 1 return parts[i] end, "=reader")
    return table.concat({ tostring(f1), e1, tostring(f2), e2, tostring(f3), e3 }, "|")
  end }"#,
    );
    let out = call(&fx.host(), "l", json!({}));
    assert_eq!(
        out,
        json!(
            "nil|deep:1: nesting too deep (limit 200)|nil|load:1: too many chained and/or operators in one expression (limit 5000)|nil|reader:1: nesting too deep (limit 200)"
        )
    );
}

#[test]
fn a_module_no_parser_should_see_fails_the_requiring_file_naming_the_module() {
    let fx = Fixture::new();
    fx.tool(
        "lib/chain.lua",
        &format!("return a{}", " and a".repeat(100_000)),
    );
    fx.tool(
        "user.lua",
        &("require('chain')\n".to_string() + &simple_tool("user", "t", "x")),
    );
    fx.tool("fine.lua", &simple_tool("fine", "t", "x"));
    let started = Instant::now();
    let host = fx.host();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(common::names(&host, None), ["fine"]);
    let error = common::error_of(&host, "user.lua");
    assert!(
        error.contains("lib/chain.lua:1: too many chained and/or operators"),
        "{error}"
    );
}
