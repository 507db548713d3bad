//! A server's `tools/call` result as a native handler's answer: `isError` → the server's
//! text as the error message; text blocks only → one string; any image, audio or resource
//! → the multimodal envelope (docs/lua-api.md) with the parts in order; `structuredContent` → the
//! object itself when the tool declares an output schema (the pipeline checks it, and our
//! own MCP clients get it as `structuredContent` again); a plain value FastMCP wrapped as
//! `{"result": …}` (its output schema says `x-fastmcp-wrap-result`) → the plain value, as
//! FastMCP's own clients read it (a string or object itself, anything else its JSON text);
//! a marked object with keys besides `result` is kept whole, and a marked
//! `structuredContent` that is no object is an error (neither drops data silently).

use super::error::Unreachable;
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Value, json};

/// The output-schema flag with which FastMCP marks a plain return value it wrapped as
/// `{"result": value}` to give it an object schema.
const FASTMCP_WRAP: &str = "x-fastmcp-wrap-result";

/// How a tool's successful results are read, from its output schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResultShape {
    /// No output schema: the content blocks.
    Content,
    /// An output schema: `structuredContent` is the result.
    Structured,
    /// FastMCP's wrapped plain value: `structuredContent.result` is the result.
    Wrapped,
}

impl ResultShape {
    /// The shape of `tool`'s results.
    pub(crate) fn of(tool: &Tool) -> Self {
        match &tool.output_schema {
            None => Self::Content,
            Some(schema) if schema.get(FASTMCP_WRAP) == Some(&Value::Bool(true)) => Self::Wrapped,
            Some(_) => Self::Structured,
        }
    }
}

/// Maps one result of a tool whose results have `shape`.
pub(super) fn from_call_result(
    result: CallToolResult,
    shape: ResultShape,
) -> Result<Value, Unreachable> {
    let parts: Vec<Value> = result
        .content
        .iter()
        .filter_map(|block| serde_json::to_value(block).ok())
        .map(part)
        .collect();
    let text = texts(&parts);
    if result.is_error == Some(true) {
        return Err(Unreachable::ToolFailed(match text.is_empty() {
            true => "the MCP server reported an error without a message".to_string(),
            false => text,
        }));
    }
    match (shape, result.structured_content) {
        (ResultShape::Structured, Some(Value::Object(object))) => return Ok(Value::Object(object)),
        (ResultShape::Wrapped, Some(Value::Object(mut object))) => {
            // Only `{"result": v}` is a wrapped plain value. An object with other keys
            // is passed on whole: unwrapping it (as FastMCP's client does) would drop
            // them without a word.
            let plain = match (object.len(), object.remove("result")) {
                (1, Some(plain)) => plain,
                (_, Some(plain)) => {
                    object.insert("result".to_string(), plain);
                    return Ok(Value::Object(object));
                }
                (_, None) => return Ok(Value::Object(object)),
            };
            // A tool result is a string or an object: any other plain value is its JSON
            // text, which is also what FastMCP puts in the text block (`42`, `true`).
            return Ok(match plain {
                plain @ (Value::String(_) | Value::Object(_)) => plain,
                other => Value::String(other.to_string()),
            });
        }
        // Reading the text blocks instead would silently drop a structured value that may
        // say something else: the broken promise is the answer.
        (ResultShape::Wrapped, Some(other)) => {
            return Err(Unreachable::NotWrapped(crate::json_type::json_type(&other)));
        }
        // A wrapped value whose wrapping is missing is read from its content, as below.
        _ => {}
    }
    let only_text = parts
        .iter()
        .all(|p| p.get("type").and_then(Value::as_str) == Some("text"));
    if only_text {
        return Ok(Value::String(text));
    }
    Ok(json!({
        "_multimodal": true,
        "content": parts,
        "text_summary": summary(&parts),
    }))
}

/// A content block (MCP JSON) as a multimodal part: MCP's embedded `resource` object is
/// flattened into the part (`uri`, `mime_type`, `text` | `blob`), `mimeType` becomes
/// `mime_type`.
fn part(block: Value) -> Value {
    let Value::Object(mut block) = block else {
        return block;
    };
    if let Some(Value::Object(resource)) = block.remove("resource") {
        for (key, value) in resource {
            block.insert(key, value);
        }
    }
    if let Some(mime) = block.remove("mimeType") {
        block.insert("mime_type".to_string(), mime);
    }
    block.remove("annotations");
    Value::Object(block)
}

/// The text blocks, joined by newlines.
fn texts(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a text-only reader learns: the text, and one line per non-text part.
fn summary(parts: &[Value]) -> String {
    let mut lines = Vec::new();
    for p in parts {
        let field = |name: &str| p.get(name).and_then(Value::as_str).unwrap_or_default();
        match field("type") {
            "text" => lines.push(field("text").to_string()),
            kind => {
                let mut line = format!("[{kind}");
                for detail in [field("mime_type"), field("uri")] {
                    if !detail.is_empty() {
                        line.push(' ');
                        line.push_str(detail);
                    }
                }
                line.push(']');
                lines.push(line);
            }
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    #[test]
    fn text_blocks_become_one_string() {
        let result =
            CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(
            from_call_result(result, ResultShape::Content).map_err(|e| e.to_string()),
            Ok(json!("a\nb"))
        );
    }

    #[test]
    fn an_image_makes_a_multimodal_envelope_in_order() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("look"),
            ContentBlock::image("aGk=", "image/png"),
        ]);
        let value = from_call_result(result, ResultShape::Content).expect("success");
        assert_eq!(value["_multimodal"], json!(true));
        assert_eq!(value["content"][1]["type"], json!("image"));
        assert_eq!(value["content"][1]["data"], json!("aGk="));
        assert_eq!(value["content"][1]["mime_type"], json!("image/png"));
        assert_eq!(value["text_summary"], json!("look\n[image image/png]"));
    }

    #[test]
    fn is_error_carries_the_servers_text() {
        let result = CallToolResult::error(vec![ContentBlock::text("disk full")]);
        assert_eq!(
            from_call_result(result, ResultShape::Content).map_err(|e| e.to_string()),
            Err("disk full".to_string())
        );
    }

    #[test]
    fn structured_content_is_kept_for_tools_with_an_output_schema() {
        let result = CallToolResult::structured(json!({"n": 1}));
        assert_eq!(
            from_call_result(result.clone(), ResultShape::Structured).map_err(|e| e.to_string()),
            Ok(json!({"n": 1}))
        );
        // Without an output schema the text form (the JSON text) is what the model gets.
        assert_eq!(
            from_call_result(result, ResultShape::Content).map_err(|e| e.to_string()),
            Ok(json!("{\"n\":1}"))
        );
    }

    #[test]
    fn a_fastmcp_wrapped_value_is_unwrapped() {
        for (wrapped, plain) in [
            (json!(5), json!("5")),
            (json!("hi"), json!("hi")),
            (json!([1, true]), json!("[1,true]")),
            (json!(null), json!("null")),
            (json!({"k": 1}), json!({"k": 1})),
        ] {
            let result = CallToolResult::structured(json!({ "result": wrapped }));
            assert_eq!(
                from_call_result(result, ResultShape::Wrapped).map_err(|e| e.to_string()),
                Ok(plain)
            );
        }
    }

    #[test]
    fn a_marked_object_that_is_not_just_result_is_kept_whole() {
        for object in [json!({"other": 5}), json!({"result": 5, "other": 6})] {
            let result = CallToolResult::structured(object.clone());
            assert_eq!(
                from_call_result(result, ResultShape::Wrapped).map_err(|e| e.to_string()),
                Ok(object)
            );
        }
    }

    #[test]
    fn a_marked_result_that_is_no_object_is_an_error_naming_its_type() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("5")]);
        result.structured_content = Some(json!([5]));
        let error = from_call_result(result, ResultShape::Wrapped)
            .expect_err("a broken wrap is refused")
            .to_string();
        assert!(error.contains("structuredContent is array"), "{error}");
        assert!(error.contains("x-fastmcp-wrap-result"), "{error}");
    }
}
