//! The `openai` Python SDK (pinned, in `target/openai-venv`), whose own types check the
//! `responses` and `openai` formats (`tests/openai/check_tools.py`).

use super::pinned_venv::Pinned;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const OPENAI: Pinned = Pinned {
    dir: "openai-venv",
    name: "openai",
    version: "3.51.0",
    imports: "openai.lib._pydantic, openai.types.responses, openai.types.chat",
};

/// Checks `definitions` (a JSON array) as `format` (`responses` or `openai`), in strict
/// form when `strict`; one verdict per definition: `{name, ok, problems}`.
pub fn check(definitions: &[u8], format: &str, strict: bool) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openai/check_tools.py");
    let mut child = Command::new(OPENAI.python())
        .arg(script)
        .args([format, if strict { "1" } else { "0" }])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(definitions)
        .expect("definitions written");
    let output = child.wait_with_output().expect("checker ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "checker failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}
