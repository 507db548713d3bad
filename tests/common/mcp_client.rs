//! The official MCP Python client (`mcp` from PyPI, pinned), installed into
//! `target/mcp-venv` on first use, and a runner for the client scripts in `tests/mcp/`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The pinned client version.
const MCP_PACKAGE: &str = "mcp==2.3.0";

/// The venv's python, creating the venv and installing the client the first time.
pub fn python() -> PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(make_venv).clone()
}

fn make_venv() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = root.join("target/mcp-venv");
    let python = venv.join("bin/python");
    let ready = || {
        Command::new(&python)
            .args([
                "-c",
                "import importlib.metadata as m, mcp.client.stdio, mcp.client.streamable_http; \
                 assert m.version('mcp') == '2.3.0'",
            ])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ready() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 is needed for the MCP client tests");
        assert!(made.success(), "python3 -m venv failed");
        let installed = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", MCP_PACKAGE])
            .status()
            .expect("pip runs");
        assert!(installed.success(), "pip install {MCP_PACKAGE} failed");
    }
    assert!(
        ready(),
        "{MCP_PACKAGE} is not importable from {}",
        venv.display()
    );
    python
}

/// Runs `tests/mcp/SCRIPT` with `args` and returns the JSON objects it printed, one per
/// line; panics with its output when it fails.
pub fn run_script(script: &str, args: &[&str]) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(script);
    let output = Command::new(python())
        .arg(path)
        .args(args)
        .env_remove("TOOLHOST_CONFIG")
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
