//! The official MCP Python client (`mcp` from PyPI, pinned), installed into
//! `target/mcp-venv` on first use, and a runner for the client scripts in `tests/mcp/`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::pinned_venv::Pinned;

/// The pinned client.
const MCP: Pinned = Pinned {
    dir: "mcp-venv",
    name: "mcp",
    version: "2.3.0",
    imports: "mcp.client.stdio, mcp.client.streamable_http",
};

/// The venv's python, creating the venv and installing the client the first time.
pub fn python() -> PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(|| MCP.python()).clone()
}

/// Runs `tests/mcp/SCRIPT` with `args` and returns the JSON objects it printed, one per
/// line; panics with its output when it fails.
pub fn run_script(script: &str, args: &[&str]) -> Vec<Value> {
    run_script_with_env(script, args, &[])
}

/// [`run_script`] with variables set for the script (and the servers it starts).
pub fn run_script_with_env(script: &str, args: &[&str], env: &[(&str, String)]) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(script);
    let output = Command::new(python())
        .arg(path)
        .args(args)
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .envs(env.iter().map(|(k, v)| (k, v)))
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

/// The step named `name` of a script's output.
pub fn step<'a>(steps: &'a [Value], name: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {steps:#?}"))
}
