//! Discovery (docs/discovery.md): candidates, prefilter, the top-level rule, verdict reasons and the
//! verdict cache, on real files.

mod common;

use common::{Fixture, simple_tool, verdict};
use std::collections::BTreeMap;
use toolhost::Reason;

#[test]
fn candidates_are_top_level_files_and_package_tools_only() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "a"));
    fx.tool("_private.lua", &simple_tool("private", "t", "x"));
    fx.tool("lib/helper.lua", &simple_tool("from_lib", "t", "x"));
    fx.tool(
        "pkg/tool.lua",
        &("local h = require('helper_mod')\n".to_string() + &simple_tool("pkg_tool", "t", "x")),
    );
    fx.tool("pkg/helper_mod.lua", "return {}");
    fx.tool("_pkg/tool.lua", &simple_tool("hidden_pkg", "t", "x"));
    fx.tool("notes.txt", &simple_tool("txt", "t", "x"));
    let host = fx.host();
    let paths: Vec<String> = host
        .discovery()
        .iter()
        .map(|v| {
            v.path
                .strip_prefix(fx.tools().canonicalize().unwrap())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(paths, ["a.lua", "pkg/tool.lua"]);
    assert_eq!(common::names(&host, None), ["a", "pkg_tool"]);
}

#[test]
fn reasons_cover_every_rule() {
    let fx = Fixture::new();
    fx.tool("registers.lua", &simple_tool("r", "t", "x"));
    fx.tool("plain.lua", "local M = {} return M");
    fx.tool("empty.lua", "");
    // Mentions registry.register only where it does not count, and would fail if run.
    fx.tool(
        "helper.lua",
        "error('helper must never be executed')\n\
         local function later() registry.register{} end\n\
         if false then registry.register{} end\n\
         for i = 1, 2 do local x = registry.register end\n",
    );
    fx.tool("broken.lua", "registry.register{\nname = \n");
    fx.write(
        "tools-lua/bytes.lua",
        b"registry.register{ name = '\xff\xfe' }".as_slice(),
    );
    std::fs::create_dir_all(fx.tools().join("dir.lua")).unwrap();
    let fifo = fx.tools().join("fifo.lua");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let host = fx.host();
    let verdicts = host.discovery();
    let reason = |name: &str| verdict(&verdicts, name).reason;
    assert_eq!(reason("registers.lua"), Reason::Registers);
    assert_eq!(reason("plain.lua"), Reason::Prefilter);
    assert_eq!(reason("empty.lua"), Reason::Prefilter);
    assert_eq!(reason("helper.lua"), Reason::NoTopLevelRegister);
    assert_eq!(
        verdict(&verdicts, "helper.lua").error,
        None,
        "helper was executed"
    );
    assert_eq!(reason("broken.lua"), Reason::ParseError);
    assert!(
        verdict(&verdicts, "broken.lua")
            .error
            .as_ref()
            .unwrap()
            .to_string()
            .contains("broken.lua:"),
        "{:?}",
        verdict(&verdicts, "broken.lua").error
    );
    assert_eq!(reason("bytes.lua"), Reason::ParseError);
    assert!(
        verdict(&verdicts, "bytes.lua")
            .error
            .as_ref()
            .unwrap()
            .to_string()
            .contains("UTF-8")
    );
    assert_eq!(reason("dir.lua"), Reason::Skipped);
    assert!(!verdict(&verdicts, "dir.lua").registers);
    if made.is_ok_and(|s| s.success()) {
        // Reading a FIFO would block forever: it must be skipped without being opened.
        assert_eq!(reason("fifo.lua"), Reason::Skipped);
    }
}

#[test]
fn deep_nesting_is_a_verdict_not_a_crash() {
    let fx = Fixture::new();
    let deep_blocks = format!(
        "registry.register{{}}\n{}{}",
        "do ".repeat(10_000),
        "end ".repeat(10_000)
    );
    fx.tool("deep_blocks.lua", &deep_blocks);
    let deep_parens = format!(
        "registry.register{{}}\nlocal x = {}1{}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    fx.tool("deep_parens.lua", &deep_parens);
    let deep_tables = format!(
        "registry.register{}{}",
        "{".repeat(10_000),
        "}".repeat(10_000)
    );
    fx.tool("deep_tables.lua", &deep_tables);
    fx.tool("fine.lua", &simple_tool("fine", "t", "x"));
    let host = fx.host();
    let verdicts = host.discovery();
    for name in ["deep_blocks.lua", "deep_parens.lua", "deep_tables.lua"] {
        let v = verdict(&verdicts, name);
        assert_eq!(v.reason, Reason::ParseError, "{name}");
        assert!(
            v.error
                .as_ref()
                .unwrap()
                .to_string()
                .contains("nesting too deep (limit 200)"),
            "{:?}",
            v.error
        );
    }
    assert_eq!(common::names(&host, None), ["fine"]);
}

#[test]
fn large_files_are_skipped() {
    let fx = Fixture::new();
    // A 50 MB file: never read, only its size is looked at.
    let mut big = simple_tool("big", "t", "x");
    big.push_str(&"-- padding\n".repeat(50 * 1024 * 1024 / 11 + 10));
    fx.tool("big.lua", &big);
    let host = fx.host();
    let verdicts = host.discovery();
    let v = verdict(&verdicts, "big.lua");
    assert_eq!(v.reason, Reason::Skipped);
    assert!(v.error.as_ref().unwrap().message.contains("16 MiB"));
    assert!(common::names(&host, None).is_empty());
}

fn read_cache(fx: &Fixture) -> BTreeMap<String, serde_json::Value> {
    let text = std::fs::read_to_string(fx.cache().join("discovery.json")).expect("cache file");
    serde_json::from_str(&text).expect("cache is JSON")
}

#[test]
fn verdict_cache_hits_misses_and_invalidates() {
    let fx = Fixture::new();
    let a = fx.tool("a.lua", &simple_tool("a", "t", "x"));
    fx.tool("helper.lua", "local function f() registry.register{} end");
    fx.tool("plain.lua", "return 1");

    let first = fx.host().discovery();
    assert!(first.iter().all(|v| !v.cached));
    let cache = read_cache(&fx);
    let key = a.canonicalize().unwrap().display().to_string();
    let entry = cache[&key].as_array().unwrap();
    assert_eq!(entry.len(), 3);
    assert_eq!(entry[1], std::fs::metadata(&a).unwrap().len());
    assert_eq!(entry[2], true);

    let cache_file = fx.cache().join("discovery.json");
    let written = std::fs::metadata(&cache_file).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = fx.host().discovery();
    assert!(second.iter().all(|v| v.cached), "{second:#?}");
    assert_eq!(
        verdict(&second, "helper.lua").reason,
        Reason::NoTopLevelRegister
    );
    assert_eq!(verdict(&second, "plain.lua").reason, Reason::Prefilter);
    assert_eq!(verdict(&second, "a.lua").tools, ["a"]);
    assert_eq!(
        std::fs::metadata(&cache_file).unwrap().modified().unwrap(),
        written,
        "an unchanged cache must not be rewritten"
    );

    // Change one file: only it is re-judged; delete another: its key leaves the cache.
    fx.tool(
        "a.lua",
        &format!("-- edited\n{}", simple_tool("a2", "t", "x")),
    );
    std::fs::remove_file(fx.tools().join("plain.lua")).unwrap();
    let third = fx.host().discovery();
    assert!(!verdict(&third, "a.lua").cached);
    assert_eq!(verdict(&third, "a.lua").tools, ["a2"]);
    assert!(verdict(&third, "helper.lua").cached);
    let cache = read_cache(&fx);
    assert_eq!(cache.len(), 2);
    assert!(cache.keys().all(|k| !k.ends_with("plain.lua")));
}

#[test]
fn corrupt_or_wrong_shaped_cache_is_ignored_and_rebuilt() {
    for garbage in [
        &b"{not json"[..],
        b"[1,2,3]",
        b"{\"x\": 5}",
        b"\x00\xff\x00binary",
        b"",
    ] {
        let fx = Fixture::new();
        fx.tool("a.lua", &simple_tool("a", "t", "x"));
        fx.write("cache/discovery.json", garbage);
        let host = fx.host();
        let verdicts = host.discovery();
        assert_eq!(verdict(&verdicts, "a.lua").reason, Reason::Registers);
        assert!(!verdict(&verdicts, "a.lua").cached);
        assert_eq!(common::names(&host, None), ["a"]);
        assert_eq!(read_cache(&fx).len(), 1);
    }
}

#[test]
fn a_stale_cached_verdict_is_not_trusted() {
    let fx = Fixture::new();
    let path = fx.tool("a.lua", &simple_tool("a", "t", "x"));
    let key = path.canonicalize().unwrap().display().to_string();
    // Claim (with the wrong stamp) that the file does not register.
    fx.write(
        "cache/discovery.json",
        serde_json::json!({ key: [1, 2, false] }).to_string(),
    );
    let host = fx.host();
    assert_eq!(common::names(&host, None), ["a"]);
}

#[test]
fn an_unwritable_cache_dir_never_fails_discovery() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "x"));
    // The cache "directory" is a regular file: nothing can be written below it.
    fx.write("cache", "not a directory");
    let host = fx.host();
    assert_eq!(common::names(&host, None), ["a"]);
}

#[test]
fn a_stray_backtick_is_a_parse_error_not_a_parser_panic() {
    // full_moon's lexer panics on a bare backtick; the pre-scan refuses it first.
    let fx = Fixture::new();
    fx.tool("tick.lua", "registry.register{ name = `x` }\n");
    fx.tool(
        "quoted.lua",
        &simple_tool("quoted", "t", "use `path`").replace("\"d\"", "\"a `code` word\""),
    );
    let host = fx.host();
    let verdicts = host.discovery();
    let tick = verdict(&verdicts, "tick.lua");
    assert_eq!(tick.reason, Reason::ParseError);
    assert!(
        tick.error
            .as_ref()
            .unwrap()
            .to_string()
            .contains("tick.lua:1: unexpected '`'"),
        "{tick:?}"
    );
    assert_eq!(
        common::names(&host, None),
        ["quoted"],
        "backticks inside strings are fine"
    );
}

#[test]
fn a_byte_order_mark_at_the_start_of_a_tool_file_is_skipped() {
    let fx = Fixture::new();
    let text = format!("\u{FEFF}{}", simple_tool("marked", "t", "ok"));
    fx.tool("marked.lua", &text);
    fx.tool("lib/marked_mod.lua", "\u{FEFF}return { x = 1 }\n");
    fx.tool(
        "uses.lua",
        &format!(
            "local m = require('marked_mod')\n{}",
            simple_tool("uses", "t", "ok")
        ),
    );
    let host = fx.host();
    let verdicts = host.discovery();
    let marked = verdict(&verdicts, "marked.lua");
    assert_eq!(
        (marked.reason, marked.error.as_ref().map(|e| e.to_string())),
        (Reason::Registers, None)
    );
    assert_eq!(common::call(&host, "marked", serde_json::json!({})), "ok");
    assert_eq!(common::call(&host, "uses", serde_json::json!({})), "ok");
}

#[test]
fn a_self_referencing_symlink_gets_a_verdict() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "a"));
    std::os::unix::fs::symlink(fx.tools().join("loop.lua"), fx.tools().join("loop.lua"))
        .expect("symlink");
    let out = fx
        .toolhost()
        .args(["discover", "--json"])
        .output()
        .expect("runs");
    let verdicts: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let looped = verdicts
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|v| v["path"].as_str().is_some_and(|p| p.ends_with("loop.lua")))
        })
        .unwrap_or_else(|| panic!("no verdict for loop.lua: {verdicts}"));
    assert_eq!(looped["reason"], "skipped", "{looped}");
    assert!(
        looped["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot follow this link")),
        "{looped}"
    );
}
