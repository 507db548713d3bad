//! The standalone FastMCP 4 (`fastmcp` from PyPI, pinned), installed into
//! `target/fastmcp4-venv` on first use, and its server script `tests/mcp/fastmcp4_server.py`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::pinned_venv::Pinned;

/// The pinned FastMCP; docs/mcp-servers.md names the same version.
const FASTMCP: Pinned = Pinned {
    dir: "fastmcp4-venv",
    name: "fastmcp",
    version: "4.2.3",
    imports: "fastmcp",
};

/// The venv's python, creating the venv and installing FastMCP the first time.
pub fn python() -> PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(|| FASTMCP.python()).clone()
}

/// The FastMCP 4 server script.
pub fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fastmcp4_server.py")
}

/// What FastMCP's own client (`fastmcp.Client`) reads from a call of the server's `tool`:
/// `{"data": <its .data>, "error": <the error text or null>}`.
pub fn fastmcp_client_reads(tool: &str) -> Value {
    let output = Command::new(python())
        .arg(server_script())
        .args(["expect", tool])
        .output()
        .expect("the FastMCP client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the FastMCP client failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}
