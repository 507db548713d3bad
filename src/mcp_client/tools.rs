//! A server's tool list as registry entries: `mcp__<server>__<tool>` (sanitised to
//! `[A-Za-z0-9_-]`, at most 64 characters), toolset `mcp-<server>`, source `mcp:<server>`,
//! with the server's description, input and output schemas and annotations, filtered by
//! `tools.include` / `tools.exclude`. While the server is down its tools stay registered,
//! unavailable with the reason.

use super::link::Link;
use super::relay::Caller;
use super::result::ResultShape;
use crate::config::ToolFilterConfig;
use crate::native::{InvalidNativeTool, NativeTool};
use crate::registry::{Annotations, HandlerError, Source, ToolEntry};
use globset::{Glob, GlobSet, GlobSetBuilder};
use rmcp::model::Tool;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The registry entries for `link`'s tools, and the problems met (collisions, schemas
/// that do not compile), each naming the server and the tool.
pub(super) fn entries(link: &Arc<Link>, default_timeout_ms: u64) -> (Vec<ToolEntry>, Vec<String>) {
    let Some(tools) = link.tools() else {
        return (Vec::new(), Vec::new());
    };
    let offline = link.status().reason(&link.name);
    let filter = Filter::new(&link.config.tools);
    let mut problems: Vec<String> = link
        .left_out()
        .into_iter()
        .map(|reason| format!("MCP server '{}': {reason}", link.name))
        .collect();
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    let mut entries = Vec::new();
    for tool in tools.iter().filter(|tool| filter.admits(&tool.name)) {
        let name = registered_name(&link.name, &tool.name);
        if let Some(first) = taken.get(&name) {
            problems.push(format!(
                "MCP server '{}': tools '{first}' and '{}' both become '{name}'; keeping '{first}'",
                link.name, tool.name
            ));
            continue;
        }
        match entry(link, tool, &name, default_timeout_ms) {
            Ok(mut entry) => {
                entry.source = Source::Mcp(link.name.clone());
                entry.offline = offline.clone();
                taken.insert(name, tool.name.to_string());
                entries.push(entry);
            }
            Err(problem) => problems.push(format!(
                "MCP server '{}': tool '{}' left out: {problem}",
                link.name, tool.name
            )),
        }
    }
    (entries, problems)
}

/// `mcp__<server>__<tool>` with every character outside `[A-Za-z0-9_-]` replaced by `_`,
/// cut to 64 characters.
pub(super) fn registered_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    let mut name = format!("mcp__{server}__{clean}");
    name.truncate(64);
    name
}

fn entry(
    link: &Arc<Link>,
    tool: &Tool,
    name: &str,
    default_timeout_ms: u64,
) -> Result<ToolEntry, InvalidNativeTool> {
    let description = tool.description.as_deref().unwrap_or_default();
    let schema = json!({
        "description": description,
        "parameters": Value::Object((*tool.input_schema).clone()),
    });
    let shape = ResultShape::of(tool);
    let remote = tool.name.to_string();
    let registered = name.to_string();
    let handler_link = link.clone();
    let mut native = NativeTool::new(
        name,
        &format!("mcp-{}", link.name),
        schema,
        move |args, ctx| {
            let link = handler_link.clone();
            let remote = remote.clone();
            let registered = registered.clone();
            async move {
                let caller = Caller {
                    observer: ctx.observer.clone(),
                    asker: ctx.asker.clone(),
                    ask_prefix: ctx.ask_prefix.clone(),
                    cancel: ctx.cancel.clone(),
                };
                link.call(&remote, args, shape, caller, &registered)
                    .await
                    .map_err(|unreachable| HandlerError::from(unreachable.to_string()))
            }
        },
    )
    .timeout_ms(link.config.timeout_ms.unwrap_or(default_timeout_ms))
    .annotations(annotations(tool));
    if let Some(hints) = &tool.annotations
        && hints.read_only_hint == Some(true)
    {
        native = native.parallel_safe(true);
    }
    // A wrapped plain value has no object schema once unwrapped: none is declared.
    if let Some(output) = &tool.output_schema
        && shape == ResultShape::Structured
    {
        native = native.output_schema(Value::Object((**output).clone()));
    }
    native.into_entry()
}

fn annotations(tool: &Tool) -> Annotations {
    let hints = tool.annotations.as_ref();
    Annotations {
        title: tool
            .title
            .clone()
            .or_else(|| hints.and_then(|a| a.title.clone())),
        read_only: hints.and_then(|a| a.read_only_hint),
        destructive: hints.and_then(|a| a.destructive_hint),
        idempotent: hints.and_then(|a| a.idempotent_hint),
        open_world: hints.and_then(|a| a.open_world_hint),
    }
}

/// `tools.include` / `tools.exclude` (checked when the config loaded).
struct Filter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl Filter {
    fn new(config: &ToolFilterConfig) -> Self {
        Self {
            include: set(&config.include),
            exclude: set(&config.exclude),
        }
    }

    fn admits(&self, tool: &str) -> bool {
        self.include.as_ref().is_none_or(|set| set.is_match(tool))
            && self.exclude.as_ref().is_none_or(|set| !set.is_match(tool))
    }
}

fn set(globs: &[String]) -> Option<GlobSet> {
    if globs.is_empty() {
        return None;
    }
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        if let Ok(glob) = Glob::new(glob) {
            builder.add(glob);
        }
    }
    builder.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_cut_to_64() {
        assert_eq!(registered_name("git", "git.log"), "mcp__git__git_log");
        assert_eq!(registered_name("git", "a b/c"), "mcp__git__a_b_c");
        assert_eq!(registered_name("s", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn include_and_exclude_globs_filter_tools() {
        let filter = Filter::new(&ToolFilterConfig {
            include: vec!["git_*".into()],
            exclude: vec!["git_reset".into()],
        });
        assert!(filter.admits("git_log"));
        assert!(!filter.admits("git_reset"));
        assert!(!filter.admits("status"));
    }
}
