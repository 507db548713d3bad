//! Stage 2: the tool-search bridge (docs/tool-search.md). `tool_search` and `tool_describe` are
//! answered here; `tool_call` names the real tool, which the call then reaches with its
//! own name, so every later stage (hooks, approval, validation, limits) sees the real
//! name.

use super::errors::ErrorType;
use super::result::{ToolError, ToolResult};
use crate::registry::ToolEntry;
use crate::search::{DEFAULT_LIMIT, MAX_DESCRIBE, MAX_LIMIT, MAX_QUERIES, SearchPlan};
use serde_json::{Map, Value, json};

/// What the bridge made of a call.
pub(super) enum Routed {
    /// The answer (a structured result or an error).
    Answer(ToolResult),
    /// Call this deferred tool with these arguments.
    Call(String, Value),
}

fn invalid(tool: &str, message: String) -> ToolResult {
    ToolResult::Error(ToolError::new(
        ErrorType::InvalidArguments,
        format!("Invalid arguments for {tool}: {message}"),
    ))
}

/// A list of strings given as a list, one string, or a JSON string of a list.
fn string_list(value: Option<&Value>) -> Option<Vec<String>> {
    match value? {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect(),
            _ => Some(vec![text.clone()]),
        },
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => None,
    }
}

fn required_of(tool: &ToolEntry) -> Value {
    tool.schema
        .get("parameters")
        .and_then(|p| p.get("required"))
        .cloned()
        .unwrap_or_else(|| json!([]))
}

fn description_of(tool: &ToolEntry) -> Value {
    tool.schema
        .get("description")
        .cloned()
        .unwrap_or_else(|| json!(tool.description))
}

/// Answers `tool_search` or `tool_describe` (`name`); `available` filters search results.
pub(super) fn answer(
    plan: &SearchPlan,
    name: &str,
    args: &Value,
    available: impl Fn(&ToolEntry) -> bool,
) -> ToolResult {
    match name {
        "tool_search" => search(plan, args, available),
        _ => describe(plan, args),
    }
}

fn search(plan: &SearchPlan, args: &Value, available: impl Fn(&ToolEntry) -> bool) -> ToolResult {
    let Some(queries) = string_list(args.get("queries")) else {
        return invalid(
            "tool_search",
            "$.queries: give a list of search strings, e.g. {\"queries\": [\"read file\"]}".into(),
        );
    };
    if queries.iter().all(|query| query.trim().is_empty()) {
        return invalid(
            "tool_search",
            "$.queries: give at least one non-blank query, e.g. {\"queries\": [\"read file\"]}"
                .into(),
        );
    }
    if queries.len() > MAX_QUERIES {
        return invalid(
            "tool_search",
            format!(
                "$.queries: too many queries (at most {MAX_QUERIES} per call, got {}); split them over several calls",
                queries.len()
            ),
        );
    }
    let limit = args
        .get("limit")
        .and_then(|l| {
            l.as_f64()
                .or_else(|| l.as_str().and_then(|s| s.trim().parse().ok()))
        })
        .map(|l| (l.max(1.0) as usize).min(MAX_LIMIT))
        .unwrap_or(DEFAULT_LIMIT);
    let mut results = Vec::new();
    let mut tools = Map::new();
    for query in &queries {
        let matches: Vec<String> = plan
            .index
            .search(query, plan.index.len())
            .into_iter()
            .filter(|tool| available(tool))
            .take(limit)
            .map(|tool| {
                tools.entry(tool.name.to_string()).or_insert_with(|| {
                    json!({
                        "description": description_of(&tool),
                        "required": required_of(&tool),
                        "toolset": tool.toolset.as_str(),
                    })
                });
                tool.name.to_string()
            })
            .collect();
        results.push(json!({ "query": query, "matches": matches }));
    }
    ToolResult::Json(json!({ "results": results, "tools": tools }))
}

fn describe(plan: &SearchPlan, args: &Value) -> ToolResult {
    let Some(names) = string_list(args.get("names")) else {
        return invalid(
            "tool_describe",
            "$.names: give a list of tool names, e.g. {\"names\": [\"read_file\"]}".into(),
        );
    };
    if names.len() > MAX_DESCRIBE {
        return invalid(
            "tool_describe",
            format!(
                "$.names: at most {MAX_DESCRIBE} names per call, got {}; split them over several calls",
                names.len()
            ),
        );
    }
    let mut tools = Map::new();
    let mut not_found = Vec::new();
    for name in names {
        match plan.tools.get(&name) {
            Some(tool) => {
                tools.insert(
                    name,
                    json!({
                        "description": description_of(tool),
                        "parameters": tool.schema.get("parameters").cloned().unwrap_or(Value::Null),
                    }),
                );
            }
            None => not_found.push(name),
        }
    }
    let mut answer = json!({ "tools": tools, "not_found": not_found });
    if !not_found.is_empty() {
        answer["hint"] = json!(
            "Names not found: use tool_search to find the exact names; tools listed directly need no describe."
        );
    }
    ToolResult::Json(answer)
}

/// The tool a `tool_call` names and its arguments, or why the call is refused. The one
/// reading of a `tool_call`'s target: `{calls: [{name, arguments}]}` first, else
/// `{name, arguments}`. It runs before the call's VM is chosen, so the VM is chosen for
/// the tool named here.
pub(super) fn route_call(plan: &SearchPlan, args: &Value) -> Routed {
    let entry = match args.get("calls") {
        Some(Value::Array(calls)) if calls.len() == 1 => calls[0].clone(),
        Some(Value::Array(calls)) => {
            return Routed::Answer(invalid(
                "tool_call",
                format!(
                    "$.calls: exactly one call per tool_call, got {}; make one tool_call per tool",
                    calls.len()
                ),
            ));
        }
        Some(_) => {
            return Routed::Answer(invalid(
                "tool_call",
                "$.calls: give a list with one {name, arguments}".into(),
            ));
        }
        None => args.clone(),
    };
    let Some(name) = entry.get("name").and_then(Value::as_str) else {
        return Routed::Answer(invalid(
            "tool_call",
            "$.name: give the tool's name, e.g. {\"name\": \"read_file\", \"arguments\": {...}}"
                .into(),
        ));
    };
    if crate::search::BRIDGE_TOOLS.contains(&name) {
        return Routed::Answer(invalid(
            "tool_call",
            format!("$.name: {name} is a bridge tool; call {name} directly"),
        ));
    }
    if !plan.deferred.contains(name) {
        return Routed::Answer(invalid(
            "tool_call",
            format!(
                "$.name: {name} is not an unlisted tool: call {name} directly (or use tool_search to find unlisted tools)"
            ),
        ));
    }
    let arguments = match entry.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Null) => Value::Object(Map::new()),
            Ok(parsed @ Value::Object(_)) => parsed,
            Ok(other) => {
                return Routed::Answer(invalid(
                    "tool_call",
                    format!(
                        "$.arguments: a string must hold a JSON object, got a JSON {}",
                        crate::registry::json_type(&other)
                    ),
                ));
            }
            Err(error) => {
                return Routed::Answer(invalid(
                    "tool_call",
                    format!(
                        "$.arguments: not valid JSON: {error} (parsing stopped at {:?})",
                        stopped_at(text, error.line(), error.column())
                    ),
                ));
            }
        },
        Some(object @ Value::Object(_)) => object.clone(),
        Some(_) => {
            return Routed::Answer(invalid("tool_call", "$.arguments: give an object".into()));
        }
    };
    Routed::Call(name.to_string(), arguments)
}

/// The text around where a JSON parse stopped (1-based line and column), at most 20
/// characters from there on.
fn stopped_at(text: &str, line: usize, column: usize) -> String {
    let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or_default();
    line_text
        .chars()
        .skip(column.saturating_sub(1))
        .take(20)
        .collect()
}
