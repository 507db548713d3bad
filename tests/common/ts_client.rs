//! The official TypeScript MCP client (`@modelcontextprotocol/client`, pinned with its
//! lock file in `tests/mcp/ts-client/`) and Node 22 (the npm registry's `node` package: the
//! machine's own node may be older), installed into `target/ts-client` with `npm ci` on
//! first use, and a runner for the client scripts in `tests/mcp/*.mjs`.
//!
//! `@modelcontextprotocol/sdk` (1.x, the older single package) does not speak 2026-07-28;
//! the split 2.x packages do, so the tests use `@modelcontextprotocol/client`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The pinned client version (also in tests/mcp/ts-client/package.json and its lock file).
const CLIENT_VERSION: &str = "2.4.0";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Node 22 from `target/ts-client`, installing it and the client the first time.
pub fn node() -> PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(install).clone()
}

fn install() -> PathBuf {
    let dir = repo().join("target/ts-client");
    let node = dir.join("node_modules/.bin/node");
    let manifest = dir.join("node_modules/@modelcontextprotocol/client/package.json");
    let ready = || {
        node.exists()
            && std::fs::read_to_string(&manifest)
                .is_ok_and(|m| m.contains(&format!("\"version\": \"{CLIENT_VERSION}\"")))
    };
    if !ready() {
        std::fs::create_dir_all(&dir).expect("target/ts-client");
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(
                repo().join("tests/mcp/ts-client").join(file),
                dir.join(file),
            )
            .expect("copy the pinned package files");
        }
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status()
            .expect("npm is needed for the TypeScript client tests");
        assert!(status.success(), "npm ci in {} failed", dir.display());
    }
    assert!(
        ready(),
        "@modelcontextprotocol/client {CLIENT_VERSION} is not installed in {}",
        dir.display()
    );
    node
}

/// Runs `tests/mcp/SCRIPT` (an ES module) with Node 22 and `args`, and returns the JSON
/// objects it printed, one per line; panics with its output when it fails.
///
/// The script runs from a copy inside `target/ts-client/scripts`, so that its imports
/// resolve against the installed `node_modules`.
pub fn run_script(script: &str, args: &[&str]) -> Vec<Value> {
    let node = node();
    let scripts = repo().join("target/ts-client/scripts");
    std::fs::create_dir_all(&scripts).expect("scripts dir");
    let source = std::fs::read(repo().join("tests/mcp").join(script)).expect("client script");
    // Tests run in parallel: each writes its own copy and renames it into place, so no
    // test ever runs a half-written file.
    let staged = tempfile::NamedTempFile::new_in(&scripts).expect("temp script");
    std::fs::write(staged.path(), source).expect("write script");
    let path = scripts.join(script);
    staged.persist(&path).expect("script in place");
    let output = Command::new(node)
        .arg(&path)
        .args(args)
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .output()
        .expect("client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}
