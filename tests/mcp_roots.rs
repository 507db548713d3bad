//! An MCP client's roots only narrow what the server allows (the configured `fs_roots`, or
//! the implicit working-directory root), never widen it — over stdio and streamable HTTP,
//! with the official Python client declaring hostile roots: `file:///`, `/etc`, a sibling
//! of the project, a symlink pointing out, `..` and percent-encoded tricks, non-file URIs.

mod common;

use common::mcp_client::{run_script, step};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const TOOLS: &str = r#"
registry.register{ name = "peek", toolset = "t",
  schema = { description = "Reads a file", parameters = { type = "object",
    properties = { path = { type = "string" } }, required = { "path" } } },
  handler = function(args) return fs.read(args.path) end }
registry.register{ name = "put", toolset = "t",
  schema = { description = "Writes a file", parameters = { type = "object",
    properties = { path = { type = "string" } }, required = { "path" } } },
  handler = function(args) fs.write(args.path, "written") return "ok" end }
"#;

/// `base/project` (the server's working directory, with `sub/` and a symlink `out` to the
/// sibling) and `base/sibling`.
struct Layout {
    _dir: tempfile::TempDir,
    base: PathBuf,
    project: PathBuf,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = dir.path().canonicalize().expect("canonical temp dir");
    let project = base.join("project");
    let write = |rel: &str, text: &str| {
        let path = base.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("project/tools-lua/tools.lua", TOOLS);
    write("project/hello.txt", "project file");
    write("project/sub/inner.txt", "sub file");
    write("sibling/secret.txt", "sibling secret");
    std::os::unix::fs::symlink(base.join("sibling"), project.join("out")).unwrap();
    Layout {
        _dir: dir,
        base,
        project,
    }
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// What every scenario calls, in this order.
fn calls(layout: &Layout) -> Value {
    let p = |rel: &str| layout.project.join(rel).display().to_string();
    let sibling = layout.base.join("sibling");
    json!([
        ["peek", {"path": p("hello.txt")}],
        ["peek", {"path": p("sub/inner.txt")}],
        ["peek", {"path": "inner.txt"}],
        ["peek", {"path": sibling.join("secret.txt").display().to_string()}],
        ["peek", {"path": p("out/secret.txt")}],
        ["peek", {"path": "/etc/passwd"}],
        ["put", {"path": sibling.join("written.txt").display().to_string()}],
        ["put", {"path": p("sub/written.txt")}],
    ])
}

/// Runs `scenarios` (name → roots) over `transport`; returns name → one verdict per call:
/// the text read, `refused` when the call failed saying the path is not allowed, `missing`
/// when it does not exist.
fn run(
    transport: &str,
    layout: &Layout,
    scenarios: &[(&str, Vec<String>)],
) -> Vec<(String, Vec<String>)> {
    let calls = calls(layout);
    let specs: Vec<Value> = scenarios
        .iter()
        .map(|(name, roots)| json!({"name": name, "roots": roots, "calls": calls}))
        .collect();
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "roots.py",
        &[
            transport,
            binary.to_str().unwrap(),
            layout.project.to_str().unwrap(),
            &serde_json::to_string(&specs).unwrap(),
        ],
    );
    scenarios
        .iter()
        .map(|(name, _)| {
            let results = step(&steps, name)["results"].as_array().unwrap().clone();
            let verdicts = results
                .iter()
                .map(|r| {
                    let text = r["text"].as_str().unwrap_or_default();
                    if r["ok"] == true {
                        text.to_string()
                    } else if text.contains("outside the allowed roots")
                        || text.contains("fs access is not granted")
                    {
                        "refused".to_string()
                    } else if text.contains("no such file") {
                        "missing".to_string()
                    } else {
                        format!("error: {text}")
                    }
                })
                .collect();
            (name.to_string(), verdicts)
        })
        .collect()
}

const R: &str = "refused";

fn check_implicit_root(transport: &str) {
    let layout = layout();
    let project = &layout.project;
    let sibling = layout.base.join("sibling");
    let scenarios = vec![
        ("everything", vec!["file:///".to_string()]),
        ("etc", vec!["file:///etc".to_string()]),
        ("sibling", vec![uri(&sibling)]),
        ("subdir", vec![uri(&project.join("sub"))]),
        ("symlink_out", vec![uri(&project.join("out"))]),
        (
            "dotdot_to_sibling",
            vec![format!("{}/sub/../../sibling", uri(project))],
        ),
        ("dotdot_above", vec![format!("{}/..", uri(project))]),
        ("percent_root", vec!["file:///%2e%2e/".to_string()]),
        (
            "percent_sibling",
            vec![format!("{}/%2e%2e/sibling", uri(project))],
        ),
        ("not_file", vec!["https://example.com/".to_string()]),
        (
            "mixed",
            vec!["file:///etc".to_string(), uri(&project.join("sub"))],
        ),
    ];
    let got = run(transport, &layout, &scenarios);
    let whole = |relative: &'static str| {
        // Relative paths resolve against the first root: the project itself here.
        vec!["project file", "sub file", relative, R, R, R, R, "ok"]
    };
    let nothing = vec![R; 8];
    let sub_only = vec![R, "sub file", "sub file", R, R, R, R, "ok"];
    let expected: Vec<(&str, Vec<&str>)> = vec![
        ("everything", whole("missing")),
        ("etc", nothing.clone()),
        ("sibling", nothing.clone()),
        ("subdir", sub_only.clone()),
        ("symlink_out", nothing.clone()),
        ("dotdot_to_sibling", nothing.clone()),
        ("dotdot_above", whole("missing")),
        ("percent_root", whole("missing")),
        ("percent_sibling", nothing.clone()),
        ("not_file", nothing.clone()),
        ("mixed", sub_only),
    ];
    for ((name, verdicts), (want_name, want)) in got.iter().zip(&expected) {
        assert_eq!(name, want_name);
        assert_eq!(verdicts, want, "{transport} scenario {name}");
    }
    assert!(
        !sibling.join("written.txt").exists(),
        "a write left the project"
    );
}

#[test]
fn client_roots_never_widen_the_working_directory_root_over_stdio() {
    check_implicit_root("stdio");
}

#[test]
fn client_roots_never_widen_the_working_directory_root_over_http() {
    check_implicit_root("http");
}

/// With `[sandbox] fs_roots` configured, client roots narrow those (before, they were
/// ignored: a client could not narrow at all).
#[test]
fn client_roots_narrow_configured_roots() {
    let layout = layout();
    let project = &layout.project;
    std::fs::write(
        project.join("toolhost.toml"),
        format!("[sandbox]\nfs_roots = [{:?}]\n", project.join("sub")),
    )
    .unwrap();
    let scenarios = vec![
        ("everything", vec!["file:///".to_string()]),
        ("project", vec![uri(project)]),
        ("sibling", vec![uri(&layout.base.join("sibling"))]),
    ];
    let sub_only = vec![R, "sub file", "sub file", R, R, R, R, "ok"];
    for transport in ["stdio", "http"] {
        let got = run(transport, &layout, &scenarios);
        assert_eq!(
            got[0].1, sub_only,
            "{transport}: file:/// gives fs_roots only"
        );
        assert_eq!(
            got[1].1, sub_only,
            "{transport}: the project contains fs_roots"
        );
        assert_eq!(
            got[2].1,
            vec![R; 8],
            "{transport}: an unrelated root gives nothing"
        );
    }
}
