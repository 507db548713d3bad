//! The environment half of availability (SPEC §3): every `requires_env` variable must be
//! set and non-empty.

use super::entry::ToolEntry;

/// Why the tool's environment is not satisfied, or `None` when it is.
pub fn missing_env(tool: &ToolEntry) -> Option<String> {
    let missing: Vec<&str> = tool
        .requires_env
        .iter()
        .filter(|name| std::env::var_os(name).is_none_or(|v| v.is_empty()))
        .map(String::as_str)
        .collect();
    match missing.as_slice() {
        [] => None,
        [one] => Some(format!("environment variable {one} is not set")),
        many => Some(format!(
            "environment variables {} are not set",
            many.join(", ")
        )),
    }
}
