//! The shipped tool library (`tools-lua/`), `toolhost new` and `toolhost stubs`.

mod common;

use common::{Fixture, call};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolhost::Host;

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools-lua")
}

/// The shipped tools, with the sandbox rooted in the fixture and `echo` allowed.
fn library(fx: &Fixture) -> Host {
    let toml = format!(
        "[sandbox]\nfs_roots = [{:?}]\ncommands = [\"echo\"]\n",
        fx.root().display().to_string()
    );
    let path = fx.write("toolhost.toml", toml);
    Host::builder()
        .tools_dir(shipped())
        .cache_dir(fx.cache())
        .store_file(fx.store_file())
        .config_file(&path)
        .build()
        .unwrap()
}

fn text(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("text expected: {value}"))
}

#[test]
fn every_shipped_file_loads_cleanly() {
    let fx = Fixture::new();
    let host = library(&fx);
    for verdict in host.discovery() {
        assert_eq!(verdict.error, None, "{}", verdict.shown);
    }
    let names: Vec<String> = host
        .tools(None)
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "calc",
            "datetime",
            "echo",
            "json_query",
            "list_dir",
            "memory",
            "patch",
            "read_file",
            "run_command",
            "search_files",
            "sleep",
            "todo",
            "write_file"
        ]
    );
}

#[test]
fn file_tools_read_write_patch_list_and_search() {
    let fx = Fixture::new();
    let host = library(&fx);
    fx.write("notes/a.txt", "one\ntwo\nthree\nfour\n");
    assert_eq!(
        call(&host, "read_file", json!({"path": "notes/a.txt"})),
        json!("1|one\n2|two\n3|three\n4|four")
    );
    assert_eq!(
        call(
            &host,
            "read_file",
            json!({"path": "notes/a.txt", "offset": 2, "limit": 2})
        ),
        json!("2|two\n3|three")
    );
    assert!(
        text(&call(
            &host,
            "read_file",
            json!({"path": "notes/a.txt", "offset": 9})
        ))
        .contains("past the end")
    );
    assert_eq!(
        call(
            &host,
            "write_file",
            json!({"path": "notes/b.txt", "content": "alpha beta\nbeta\n"})
        ),
        json!("wrote 16 bytes to notes/b.txt")
    );
    let ambiguous = call(
        &host,
        "patch",
        json!({"path": "notes/b.txt", "old_text": "beta", "new_text": "gamma"}),
    );
    assert_eq!(ambiguous["error_type"], "handler_error");
    assert!(
        ambiguous["error"]
            .as_str()
            .unwrap()
            .contains("occurs 2 times"),
        "{ambiguous}"
    );
    let missing = call(
        &host,
        "patch",
        json!({"path": "notes/b.txt", "old_text": "delta", "new_text": "x"}),
    );
    assert!(missing["error"].as_str().unwrap().contains("was not found"));
    assert_eq!(
        call(
            &host,
            "patch",
            json!({"path": "notes/b.txt", "old_text": "alpha beta", "new_text": "gamma"})
        ),
        json!("patched notes/b.txt")
    );
    assert_eq!(
        std::fs::read_to_string(fx.root().join("notes/b.txt")).unwrap(),
        "gamma\nbeta\n"
    );
    assert_eq!(
        call(&host, "list_dir", json!({"path": "notes"})),
        json!("a.txt  (19 bytes)\nb.txt  (11 bytes)")
    );
    assert_eq!(
        call(
            &host,
            "search_files",
            json!({"pattern": "^t", "path": "notes"})
        ),
        json!("a.txt:2:two\na.txt:3:three")
    );
    assert_eq!(
        call(
            &host,
            "search_files",
            json!({"glob": "**/*.txt", "path": "notes"})
        ),
        json!("a.txt\nb.txt")
    );
    assert!(
        call(&host, "read_file", json!({"path": "/etc/passwd"}))["error"]
            .as_str()
            .unwrap()
            .contains("outside the allowed roots")
    );
}

#[test]
fn data_tools_compute() {
    let fx = Fixture::new();
    let host = library(&fx);
    assert_eq!(
        call(
            &host,
            "calc",
            json!({"expression": "(2 + 3) * 4 ^ 2 / sqrt(16)"})
        ),
        json!("20")
    );
    assert_eq!(
        call(
            &host,
            "calc",
            json!({"expression": "max(1, 7, 3) % 4 + -2"})
        ),
        json!("1")
    );
    assert!(
        call(&host, "calc", json!({"expression": "exit(1)"}))["error"]
            .as_str()
            .unwrap()
            .contains("unknown name 'exit'")
    );
    assert_eq!(
        call(&host, "calc", json!({"expression": "os.exit()"}))["error_type"],
        "handler_error"
    );
    assert!(
        call(&host, "calc", json!({"expression": "1 / 0"}))["error"]
            .as_str()
            .unwrap()
            .contains("division by zero")
    );
    let doc = r#"{"users": [{"name": "ada", "age": 36}, {"name": "bob", "age": 41}]}"#;
    assert_eq!(
        call(
            &host,
            "json_query",
            json!({"document": doc, "path": "users[*].name"})
        ),
        json!(r#"["ada","bob"]"#)
    );
    assert_eq!(
        call(
            &host,
            "json_query",
            json!({"document": doc, "path": "users[-1].age"})
        ),
        json!("41")
    );
    assert_eq!(
        call(
            &host,
            "json_query",
            json!({"document": doc, "path": "users[0]"})
        ),
        json!(r#"{"age":36,"name":"ada"}"#)
    );
    assert!(
        text(&call(
            &host,
            "json_query",
            json!({"document": doc, "path": "nope"})
        ))
        .starts_with("no match")
    );
    let parsed = call(
        &host,
        "datetime",
        json!({"op": "parse", "value": "2024-02-29T12:30:00+02:00"}),
    );
    assert_eq!(
        parsed,
        json!(r#"{"epoch":1709202600,"iso":"2024-02-29T10:30:00Z","weekday":"Thursday"}"#)
    );
    let added = call(
        &host,
        "datetime",
        json!({"op": "add", "value": "2024-12-31T23:00:00Z", "amount": 2, "unit": "hours"}),
    );
    assert_eq!(
        added,
        json!(r#"{"epoch":1735693200,"iso":"2025-01-01T01:00:00Z"}"#)
    );
    let diff = call(
        &host,
        "datetime",
        json!({"op": "diff", "value": "2024-01-01", "other": "2024-01-02T12:00:00Z"}),
    );
    assert_eq!(
        serde_json::from_str::<Value>(text(&diff)).unwrap()["hours"],
        json!(36.0)
    );
    let formatted = call(
        &host,
        "datetime",
        json!({"op": "format", "value": 0, "format": "%Y %B %d"}),
    );
    assert_eq!(formatted, json!("1970 January 01"));
}

#[test]
fn shell_agent_and_debug_tools() {
    let fx = Fixture::new();
    let host = library(&fx);
    assert_eq!(
        call(&host, "run_command", json!({"argv": ["echo", "hi there"]})),
        json!("exit code: 0\nstdout:\nhi there\n")
    );
    assert!(
        call(&host, "run_command", json!({"argv": ["ls"]}))["error"]
            .as_str()
            .unwrap()
            .contains("not allowed")
    );
    assert_eq!(
        call(&host, "todo", json!({"action": "list"}))["error_type"],
        "agent_loop"
    );
    assert_eq!(
        call(&host, "memory", json!({"action": "recall"}))["error_type"],
        "agent_loop"
    );
    assert_eq!(
        call(&host, "sleep", json!({"ms": "5"})),
        json!("slept 5 ms")
    );
    // With no programs allowed, run_command is unavailable.
    let bare = Host::builder()
        .tools_dir(shipped())
        .cache_dir(fx.cache())
        .default_config()
        .build()
        .unwrap();
    assert_eq!(
        call(&bare, "run_command", json!({"argv": ["echo"]}))["error_type"],
        "unavailable"
    );
}

#[test]
fn new_writes_a_tool_that_checks_and_runs() {
    let fx = Fixture::new();
    fx.toolhost()
        .args(["new", "shout", "--toolset", "demo"])
        .assert()
        .success();
    assert!(fx.tools().join("shout.lua").is_file());
    assert!(fx.tools().join("shout_test.lua").is_file());
    fx.toolhost().arg("check").assert().success();
    let tested = fx
        .toolhost()
        .arg("test")
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(
        String::from_utf8_lossy(&tested.stdout).contains("2 passed, 0 failed"),
        "the scaffolded test passes"
    );
    fx.toolhost()
        .args(["call", "shout", r#"{"text": "hey", "times": "2"}"#])
        .assert()
        .success()
        .stdout("hey hey\n");
    fx.toolhost().args(["new", "shout"]).assert().code(2);
    fx.toolhost().args(["new", "bad name"]).assert().code(2);
}

#[test]
fn the_committed_stubs_are_up_to_date() {
    let committed = std::fs::read_to_string(shipped().join("types/toolhost.lua"))
        .expect("tools-lua/types/toolhost.lua is committed (run `toolhost stubs`)");
    let fx = Fixture::new();
    fx.toolhost().arg("stubs").assert().success();
    let written = std::fs::read_to_string(fx.tools().join("types/toolhost.lua")).unwrap();
    assert_eq!(
        committed, written,
        "tools-lua/types/toolhost.lua is stale: run `cargo run -- stubs`"
    );
    for needle in [
        "function fs.read(path) end",
        "function proc.run(spec) end",
        "---@class toolhost.Ctx",
        "json.null = nil",
    ] {
        assert!(written.contains(needle), "{needle}");
    }
}

#[test]
fn write_file_creates_missing_folders_inside_the_roots() {
    let fx = Fixture::new();
    let host = library(&fx);
    let path = fx.root().join("new/deep/note.txt");
    let out = call(&host, "write_file", json!({"path": path, "content": "hi"}));
    assert!(text(&out).starts_with("wrote 2 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(path).unwrap(), "hi");
    let outside = call(
        &host,
        "write_file",
        json!({"path": "/tmp/../etc/x/y.txt", "content": "no"}),
    );
    assert_eq!(outside["error_type"], "handler_error", "{outside}");
}

#[test]
fn read_file_says_a_binary_file_is_binary() {
    let fx = Fixture::new();
    let host = library(&fx);
    let path = fx.write("blob.bin", b"PK\x03\x04\0\0binary");
    let out = call(&host, "read_file", json!({"path": path}));
    assert!(text(&out).contains("is a binary file of 12 bytes"), "{out}");
}

#[test]
fn calc_accepts_double_star_as_power() {
    let fx = Fixture::new();
    let host = library(&fx);
    assert_eq!(
        call(&host, "calc", json!({"expression": "2 ** 10"})),
        json!("1024")
    );
}

#[test]
fn an_embedder_gets_the_embedded_library_only_when_it_asks() {
    let fx = Fixture::new();
    fx.tool("mine.lua", &common::simple_tool("mine", "t", "x"));
    let without = fx.host();
    let names = |host: &Host| -> Vec<(String, String)> {
        host.tools(None)
            .iter()
            .map(|t| (t.name.to_string(), t.source.clone()))
            .collect()
    };
    assert_eq!(
        names(&without),
        [("mine".to_string(), "builtin".to_string())]
    );
    let with = fx.builder().library(true).build().unwrap();
    let listed = names(&with);
    assert!(listed.contains(&("mine".to_string(), "builtin".to_string())));
    assert!(
        listed.contains(&("read_file".to_string(), "library".to_string())),
        "{listed:?}"
    );
    // The embedded files are the ones `init --with-library` copies out.
    assert!(
        toolhost::library_files()
            .iter()
            .any(|f| f.path == "read_file.lua" && !f.contents.is_empty())
    );
}
