//! Screening a `tools/list` answer tool by tool, before rmcp parses it as a whole.
//!
//! rmcp parses a message in one go: one tool it cannot read — a schema nested deeper than
//! serde_json's recursion limit (128), a schema that is not an object — made the whole
//! answer unreadable, rmcp dropped it, and the request waited until the connect timeout:
//! every tool of the server lost, reported as a timeout. Here each tool is read on its own
//! (skipping a value is iterative in serde_json, so no depth breaks the split), and one
//! that cannot be read or is nested too deeply is left out with a reason naming it.

use super::error::Unreadable;
use rmcp::model::Tool;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// Deepest nesting of one tool's JSON (the tool object is level 1). Beyond it the tool is
/// left out: our own MCP clients parse our listing with the same 128-level limit, inside
/// a few levels of envelope, and no honest schema comes near.
pub(super) const MAX_TOOL_DEPTH: usize = 64;

/// Longest tool name quoted in a reason.
const MAX_QUOTED_NAME: usize = 64;

/// `result` of a `tools/list` answer with the tools that cannot be read left out, and a
/// reason for each one left out (`tool 'x' left out: …`).
pub(super) fn listing(result: &str) -> Result<(String, Vec<String>), serde_json::Error> {
    let fields: BTreeMap<String, &RawValue> = serde_json::from_str(result)?;
    let mut left_out = Vec::new();
    let mut out = String::with_capacity(result.len());
    out.push('{');
    for (key, value) in fields {
        let text = match key.as_str() {
            "tools" => {
                let tools: Vec<&RawValue> = serde_json::from_str(value.get())?;
                let kept: Vec<&str> = tools
                    .iter()
                    .map(|tool| tool.get())
                    .filter(|tool| match check_tool(tool) {
                        Ok(()) => true,
                        Err(reason) => {
                            left_out.push(reason.to_string());
                            false
                        }
                    })
                    .collect();
                format!("[{}]", kept.join(","))
            }
            // Never used by us: one that cannot be read is dropped, not the listing.
            "_meta" => match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(
                value.get(),
            ) {
                Ok(_) if depth(value.get()) <= MAX_TOOL_DEPTH => value.get().to_string(),
                _ => {
                    left_out.push("the listing's _meta left out: it cannot be read".to_string());
                    continue;
                }
            },
            _ => value.get().to_string(),
        };
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(&key)?);
        out.push(':');
        out.push_str(&text);
    }
    out.push('}');
    Ok((out, left_out))
}

/// The start of any JSON-RPC message (the rest skipped without building it).
#[derive(Deserialize)]
pub(super) struct Head<'a> {
    #[serde(default)]
    pub id: Option<rmcp::model::RequestId>,
    #[serde(default, borrow)]
    pub method: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
}

impl Head<'_> {
    /// The id of the request this message answers, if it is an answer.
    pub(super) fn answer_to(&self) -> Option<rmcp::model::RequestId> {
        self.id.clone().filter(|_| self.method.is_none())
    }
}

/// The text of a `tools/list` answer to `id` with `result` screened ([`listing`]), and
/// the reasons for the tools left out.
pub(super) fn listing_answer(
    id: &rmcp::model::RequestId,
    result: &str,
) -> Result<(String, Vec<String>), Unreadable> {
    let (result, left_out) = listing(result).map_err(Unreadable::List)?;
    let id = serde_json::to_string(id).map_err(Unreadable::List)?;
    Ok((
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
        left_out,
    ))
}

/// The text of an error answer to `id` saying why its answer cannot be read.
pub(super) fn error_answer(id: &rmcp::model::RequestId, reason: &str) -> String {
    let message = rmcp::model::ServerJsonRpcMessage::error(
        rmcp::model::ErrorData::internal_error(reason.to_string(), None),
        Some(id.clone()),
    );
    serde_json::to_string(&message).unwrap_or_default()
}

/// Whether one tool's JSON can be taken; otherwise the reason naming it.
fn check_tool(raw: &str) -> Result<(), Unreadable> {
    #[derive(Deserialize)]
    struct Named {
        name: String,
    }
    let label = match serde_json::from_str::<Named>(raw) {
        Ok(named) => format!("tool '{}'", quoted(&named.name)),
        Err(_) => "a tool without a readable name".to_string(),
    };
    let depth = depth(raw);
    if depth > MAX_TOOL_DEPTH {
        return Err(Unreadable::TooDeep {
            label,
            depth,
            max: MAX_TOOL_DEPTH,
        });
    }
    serde_json::from_str::<Tool>(raw)
        .map(|_| ())
        .map_err(|source| Unreadable::Tool { label, source })
}

/// Why a parsed `tool` is left out for its depth, if it is.
pub(super) fn too_deep(tool: &Tool) -> Option<String> {
    let depth = depth(&serde_json::to_string(tool).ok()?);
    (depth > MAX_TOOL_DEPTH).then(|| {
        format!(
            "tool '{}' left out: nested {depth} levels deep (at most {MAX_TOOL_DEPTH})",
            quoted(&tool.name)
        )
    })
}

/// `name` cut for a message.
fn quoted(name: &str) -> String {
    let mut cut: String = name.chars().take(MAX_QUOTED_NAME).collect();
    if cut.len() < name.len() {
        cut.push('…');
    }
    cut
}

/// How deeply `json` nests (`{}` and `[]`; 0 for a scalar), counted without recursion.
pub(super) fn depth(json: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in json.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert_eq!(depth("1"), 0);
        assert_eq!(depth(r#"{"a":[1,{"b":"[[[\"{"}]}"#), 3);
        assert_eq!(depth(&nested(500)), 500);
    }

    #[test]
    fn a_tool_too_deep_or_unreadable_is_left_out_and_the_rest_kept() {
        let deep = format!(
            r#"{{"name":"deep","inputSchema":{{"type":"object","x":{}}}}}"#,
            nested(300)
        );
        let result = format!(
            r#"{{"tools":[{{"name":"ok","inputSchema":{{"type":"object"}}}},{deep},{{"name":"list","inputSchema":[1]}}],"nextCursor":"c"}}"#
        );
        let (kept, left_out) = listing(&result).unwrap();
        let kept: serde_json::Value = serde_json::from_str(&kept).unwrap();
        assert_eq!(kept["tools"].as_array().unwrap().len(), 1);
        assert_eq!(kept["tools"][0]["name"], "ok");
        assert_eq!(kept["nextCursor"], "c");
        assert_eq!(left_out.len(), 2, "{left_out:?}");
        assert!(left_out[0].starts_with("tool 'deep' left out: nested 302 levels"));
        assert!(left_out[1].starts_with("tool 'list' left out: it cannot be read"));
    }
}
