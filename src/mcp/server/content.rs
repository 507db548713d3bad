//! Pipeline results as MCP tool results: text as a text block, a structured result (a
//! tool with an `output_schema`) as `structuredContent` plus its JSON text, an error as
//! `isError: true` with the error JSON (docs/calls.md) as text, and a multimodal envelope as
//! content blocks, one per part, in order.

use crate::ToolResult;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};

/// Maps a pipeline result to an MCP tool result; `structured` says whether the tool
/// declared an output schema (its JSON results then go out as `structuredContent`).
pub(crate) fn to_call_result(result: ToolResult, structured: bool) -> CallToolResult {
    match result {
        ToolResult::Multimodal(Value::Object(envelope)) => {
            CallToolResult::success(multimodal_blocks(&envelope))
        }
        ToolResult::Error(error) => {
            CallToolResult::error(vec![ContentBlock::text(error.to_json().to_string())])
        }
        ToolResult::Json(value) if structured => CallToolResult::structured(value),
        other => {
            let text = match other.into_json() {
                Value::String(text) => text,
                value => value.to_string(),
            };
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
    }
}

/// The blocks of a multimodal envelope's `content` parts:
/// - `{type = "text", text}`;
/// - `{type = "image" | "audio", data (base64), mime_type}`;
/// - `{type = "resource", uri, mime_type?, text | blob (base64)}` (an embedded resource);
///
/// `mimeType` is accepted for `mime_type`. A part of another shape is sent as its JSON
/// text. An envelope without parts falls back to its `text_summary`.
fn multimodal_blocks(envelope: &Map<String, Value>) -> Vec<ContentBlock> {
    let parts = envelope
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut blocks: Vec<ContentBlock> = parts.iter().map(block).collect();
    if blocks.is_empty() {
        let summary = envelope
            .get("text_summary")
            .and_then(Value::as_str)
            .unwrap_or_default();
        blocks.push(ContentBlock::text(summary));
    }
    blocks
}

fn block(part: &Value) -> ContentBlock {
    let field = |name: &str| part.get(name).and_then(Value::as_str);
    let mime_type = field("mime_type").or_else(|| field("mimeType"));
    let binary = mime_type.unwrap_or("application/octet-stream");
    match (field("type"), field("data")) {
        (Some("text"), _) => ContentBlock::text(field("text").unwrap_or_default()),
        (Some("image"), Some(data)) => ContentBlock::image(data, binary),
        (Some("audio"), Some(data)) => ContentBlock::audio(data, binary),
        (Some("resource"), _) => match resource(part, mime_type) {
            Some(contents) => ContentBlock::resource(contents),
            None => ContentBlock::text(part.to_string()),
        },
        _ => ContentBlock::text(part.to_string()),
    }
}

fn resource(part: &Value, mime_type: Option<&str>) -> Option<ResourceContents> {
    let field = |name: &str| part.get(name).and_then(Value::as_str);
    let uri = field("uri")?.to_string();
    let mime_type = mime_type.map(str::to_string);
    if let Some(text) = field("text") {
        return Some(ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text: text.to_string(),
            meta: None,
        });
    }
    Some(ResourceContents::BlobResourceContents {
        uri,
        mime_type,
        blob: field("blob")?.to_string(),
        meta: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{ErrorType, ToolError};
    use serde_json::json;

    fn wire(result: CallToolResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    #[test]
    fn errors_are_flagged_and_keep_their_type() {
        let error = wire(to_call_result(
            ToolError::new(ErrorType::Cancelled, "x").into(),
            false,
        ));
        assert_eq!(error["isError"], true);
        let inner: Value =
            serde_json::from_str(error["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(inner["error_type"], "cancelled");
    }

    #[test]
    fn structured_results_carry_structured_content_and_text() {
        let out = wire(to_call_result(ToolResult::Json(json!({"n": 1})), true));
        assert_eq!(out["structuredContent"], json!({"n": 1}));
        assert_eq!(out["content"][0]["text"], r#"{"n":1}"#);
        let plain = wire(to_call_result(ToolResult::Json(json!({"n": 1})), false));
        assert!(plain.get("structuredContent").is_none());
    }

    #[test]
    fn every_part_type_maps_to_its_block_in_order() {
        let out = wire(to_call_result(
            ToolResult::Multimodal(json!({"_multimodal": true, "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "AAAA", "mime_type": "image/png"},
                {"type": "audio", "data": "UklG", "mime_type": "audio/wav"},
                {"type": "resource", "uri": "file:///x.txt", "mime_type": "text/plain", "text": "hi"},
                {"type": "resource", "uri": "file:///x.bin", "blob": "AAEC"},
            ]})),
            false,
        ));
        let types: Vec<&str> = out["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["text", "image", "audio", "resource", "resource"]);
        assert_eq!(out["content"][1]["mimeType"], "image/png");
        assert_eq!(out["content"][2]["mimeType"], "audio/wav");
        assert_eq!(out["content"][3]["resource"]["text"], "hi");
        assert_eq!(out["content"][4]["resource"]["blob"], "AAEC");
    }
}
