//! The plain data of a registration that every tool source shares: what
//! `registry.register{...}` (or a [`NativeTool`](crate::NativeTool), or an external MCP
//! server's tool) says about a tool besides its name, schema and functions. It is written
//! once and moved between the forms a tool takes (the Lua registration being checked, the
//! cached record, the registry entry), never copied field by field.

use super::asker::Capability;
use super::output::Annotations;
use serde::{Deserialize, Serialize};

/// What a tool's registration says besides its name, schema, description and functions.
/// As cached (in a registration record), a field at its default value is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Registration {
    /// Environment variables that must be set and non-empty for the tool to be available;
    /// also the names the tool may read with `env.get`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires_env: Vec<String>,
    /// The handler may await host async APIs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_async: bool,
    /// Display emoji; empty means unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub emoji: String,
    /// Result size limit; `None` uses the configured default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_size_chars: Option<ResultLimit>,
    /// Allowed to shadow a tool from another toolset (`override = true`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub override_existing: bool,
    /// The scope overlay, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Per-call deadline in milliseconds; `None` uses the configured default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// May run concurrently with other calls.
    #[serde(default, skip_serializing_if = "is_false")]
    pub parallel_safe: bool,
    /// Every call asks the approver first.
    #[serde(default, skip_serializing_if = "is_false")]
    pub requires_approval: bool,
    /// MCP annotations (hints for clients).
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    /// Client capabilities the tool's input requests need (`needs = { "elicitation" }`):
    /// an MCP client that did not declare one of them is refused (-32021) before the tool
    /// runs. Sorted, without duplicates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<Capability>,
    /// Whether MCP clients of the Tasks extension get a task for a call (`None`: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSupport>,
}

/// A tool's `task` field (docs/lua-api.md): how its MCP calls use the Tasks extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// A client that declares the Tasks extension gets a task; any other client a plain
    /// call.
    Optional,
    /// Only clients that declare the Tasks extension may call it (others get -32021).
    Required,
}

impl TaskSupport {
    /// The field's value as written (`"optional"`, `"required"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// A tool's result size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ResultLimit {
    /// Text results longer than this many characters are spilled to a file.
    Chars(u64),
    /// Never spilled (`math.huge` in Lua).
    Unlimited,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::{Registration, ResultLimit};

    #[test]
    fn defaults_are_left_out_of_the_cached_text_and_come_back() {
        assert_eq!(
            serde_json::to_string(&Registration::default()).expect("serialises"),
            "{}"
        );
        let given = Registration {
            requires_env: vec!["HOME".into()],
            max_result_size_chars: Some(ResultLimit::Unlimited),
            timeout_ms: Some(5),
            task: Some(super::TaskSupport::Required),
            ..Registration::default()
        };
        let text = serde_json::to_string(&given).expect("serialises");
        let back: Registration = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, given);
    }
}
