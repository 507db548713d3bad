//! Constructs that used to escape the deadline hook (docs/runtime.md interruptibility): a looping
//! `xpcall` message handler, a catastrophic Lua pattern, a looping finalizer — in a handler,
//! at a file's top level, in a `check_fn` and in a hook. Each is stopped (or refused) and the
//! host keeps answering.

mod common;

use common::{Fixture, call, error_of, names};
use serde_json::json;
use std::time::{Duration, Instant};

/// The constructs, as Lua statements that would run forever (or for hours).
const CONSTRUCTS: &[(&str, &str)] = &[
    (
        "xpcall_handler",
        "xpcall(error, function() while true do end end)",
    ),
    (
        "catastrophic_pattern",
        r#"("a"):rep(300):find(("a*"):rep(6) .. "b")"#,
    ),
    (
        "catastrophic_match",
        r#"string.match(("a"):rep(300), ("a-"):rep(6) .. "b")"#,
    ),
    (
        "catastrophic_gsub",
        r#"string.gsub(("a"):rep(300), ("a*"):rep(6) .. "b", "x")"#,
    ),
    (
        "catastrophic_gmatch",
        r#"for _ in string.gmatch(("a"):rep(300), ("a*"):rep(6) .. "b") do end"#,
    ),
    (
        "pcall_pattern_loop",
        r#"while true do pcall(string.find, ("a"):rep(300), ("a*"):rep(6) .. "b") end"#,
    ),
    (
        "finalizer",
        "setmetatable({}, { __gc = function() while true do end end }) collectgarbage()",
    ),
];

fn handler_tool(name: &str, body: &str) -> String {
    format!(
        "registry.register{{ name = '{name}', toolset = 'r', timeout_ms = 200,\n  schema = {{ parameters = {{ type = 'object' }} }},\n  handler = function(args)\n{body}\nreturn 'finished'\nend }}\n"
    )
}

const FINE: &str = "registry.register{ name = 'fine', toolset = 'r', schema = { parameters = { type = 'object' } },\n  handler = function() return 'still answering' end }\n";

#[test]
fn in_a_handler_each_construct_ends_within_its_deadline() {
    let fx = Fixture::new();
    let mut file = String::new();
    for (name, body) in CONSTRUCTS {
        file.push_str(&handler_tool(name, body));
    }
    file.push_str(FINE);
    fx.tool("constructs.lua", &file);
    let host = fx.host();
    for (name, _) in CONSTRUCTS {
        let started = Instant::now();
        let out = call(&host, name, json!({}));
        let took = started.elapsed();
        let error_type = out["error_type"].as_str().unwrap_or("");
        // The finalizer is refused outright (handler_error); the others time out.
        if *name == "finalizer" {
            assert_eq!(error_type, "handler_error", "{name}: {out}");
            assert!(
                out["error"].as_str().unwrap_or("").contains("__gc"),
                "{out}"
            );
        } else {
            assert_eq!(error_type, "timeout", "{name}: {out}");
        }
        // Liveness bound only: stopped within 5 s of a 200 ms deadline.
        assert!(took < Duration::from_secs(5), "{name} took {took:?}");
        assert_eq!(
            call(&host, "fine", json!({})),
            json!("still answering"),
            "after {name}"
        );
    }
}

#[test]
fn at_a_files_top_level_each_construct_fails_that_file_only() {
    let fx = Fixture::new();
    for (name, body) in CONSTRUCTS {
        fx.tool(
            &format!("{name}.lua"),
            // `;` keeps a body starting with `(` from reading as a call of register's result.
            &(handler_tool(name, "") + ";" + body + "\n"),
        );
    }
    fx.tool("fine.lua", FINE);
    let started = Instant::now();
    let host = fx
        .builder()
        .config_file(probe_config(&fx, 300))
        .build()
        .expect("host builds");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(names(&host, None), ["fine"]);
    for (name, _) in CONSTRUCTS {
        let error = error_of(&host, &format!("{name}.lua"));
        assert!(error.contains(&format!("{name}.lua")), "{error}");
    }
}

/// Writes a `toolhost.toml` with this probe deadline and returns its path.
fn probe_config(fx: &Fixture, probe_ms: u64) -> std::path::PathBuf {
    fx.write(
        "toolhost.toml",
        format!("[runtime]\nprobe_timeout_ms = {probe_ms}\n"),
    )
}

#[test]
fn in_a_check_fn_each_construct_makes_the_tool_unavailable() {
    let fx = Fixture::new();
    let mut file = String::new();
    for (name, body) in CONSTRUCTS {
        file.push_str(&format!(
            "registry.register{{ name = '{name}', toolset = 'r',\n  schema = {{ parameters = {{ type = 'object' }} }},\n  check_fn = function()\n{body}\nreturn true end,\n  handler = function() return 'x' end }}\n"
        ));
    }
    file.push_str(FINE);
    fx.tool("checks.lua", &file);
    let host = fx
        .builder()
        .config_file(probe_config(&fx, 300))
        .build()
        .expect("host builds");
    for (name, _) in CONSTRUCTS {
        let started = Instant::now();
        let out = call(&host, name, json!({}));
        assert_eq!(out["error_type"], "unavailable", "{name}: {out}");
        assert!(started.elapsed() < Duration::from_secs(5), "{name}");
        assert_eq!(call(&host, "fine", json!({})), json!("still answering"));
    }
}

#[test]
fn in_a_pre_tool_call_hook_each_construct_blocks_the_call() {
    for (name, body) in CONSTRUCTS {
        let fx = Fixture::new();
        fx.tool(
            "hook.lua",
            &format!("registry.hook('pre_tool_call', function(call)\n{body}\nend)\n{FINE}"),
        );
        let host = fx
            .builder()
            .config_file(probe_config(&fx, 300))
            .build()
            .expect("host builds");
        let started = Instant::now();
        let out = call(&host, "fine", json!({}));
        assert_eq!(out["error_type"], "blocked", "{name}: {out}");
        assert!(started.elapsed() < Duration::from_secs(5), "{name}");
    }
}
