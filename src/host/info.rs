//! [`ToolInfo`]: what an embedder (and `toolhost list`) may know about a registered tool,
//! without the registry's internals (handlers, compiled validators, Lua function ids).

use crate::registry::{ResultLimit, ToolEntry};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// A registered tool, as [`Host::tools`](crate::Host::tools) reports it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// Its toolset.
    pub toolset: String,
    /// Registry description (defaults to `schema.description`).
    pub description: String,
    /// Display emoji; empty means unset.
    pub emoji: String,
    /// `builtin`, `plugin:ID` or `native`.
    pub source: String,
    /// The file that registered it (absolute), for Lua tools.
    pub file: Option<PathBuf>,
    /// The line of the registration in that file.
    pub line: Option<u32>,
    /// The model-facing function schema (`description`, `parameters`), before
    /// `dynamic_schema_overrides`.
    pub schema: Map<String, Value>,
    /// Environment variables that must be set for the tool to be available.
    pub requires_env: Vec<String>,
    /// The tool has a `check_fn` availability probe.
    pub has_check_fn: bool,
    /// The tool has `dynamic_schema_overrides`.
    pub has_dynamic_schema: bool,
    /// The registration declares that the handler awaits host APIs (`is_async`).
    pub is_async: bool,
    /// May run beside other calls of a batch.
    pub parallel_safe: bool,
    /// Every call asks the approver first.
    pub requires_approval: bool,
    /// Per-call deadline in milliseconds; `None` uses `[runtime] timeout_ms`.
    pub timeout_ms: Option<u64>,
    /// Result size limit; `None` uses `default_max_result_size_chars`.
    pub max_result_size_chars: Option<ResultLimit>,
    /// The scope overlay it belongs to, if any.
    pub scope: Option<String>,
}

impl From<&ToolEntry> for ToolInfo {
    fn from(tool: &ToolEntry) -> Self {
        Self {
            name: tool.name.to_string(),
            toolset: tool.toolset.to_string(),
            description: tool.description.clone(),
            emoji: tool.emoji.clone(),
            source: tool.source.to_string(),
            file: tool.file.clone(),
            line: tool.line,
            schema: (*tool.schema).clone(),
            requires_env: tool.requires_env.clone(),
            has_check_fn: tool.check_fn.is_some(),
            has_dynamic_schema: tool.dynamic_schema_overrides.is_some(),
            is_async: tool.is_async,
            parallel_safe: tool.parallel_safe,
            requires_approval: tool.requires_approval,
            timeout_ms: tool.timeout_ms,
            max_result_size_chars: tool.max_result_size_chars,
            scope: tool.scope.clone(),
        }
    }
}
