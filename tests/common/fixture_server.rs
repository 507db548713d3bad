//! `[mcp_servers.NAME]` sections running `tests/mcp/fixture_server.py` (the official SDK's
//! MCPServer, in the test venv) for a fixture.

use super::Fixture;
use super::mcp_client::python;
use std::path::{Path, PathBuf};

/// The fixture server's script.
pub fn fixture_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fixture_server.py")
}

/// `[mcp_servers.py]` running the fixture server, with `extra` lines in its section.
pub fn py_server(fx: &Fixture, extra: &str) -> String {
    format!(
        "[mcp_servers.py]\ncommand = [{:?}, {:?}]\nenv = {{ FIXTURE_DIR = {:?} }}\n{extra}\n",
        python().display().to_string(),
        fixture_server().display().to_string(),
        fx.root().display().to_string(),
    )
}
