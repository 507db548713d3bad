//! A prompt message's content block, checked and put in MCP's shape. Lua writes blocks the
//! way tools write multimodal parts (docs/lua-api.md): `{type = "text", text}`,
//! `{type = "image" | "audio", data = <base64>, mime_type}`, `{type = "resource", uri,
//! mime_type?, text | blob}` (an embedded resource) and `{type = "resource_link", uri,
//! name, mime_type?, description?}`; MCP's own spelling (`mimeType`, a nested `resource`)
//! is accepted too. Anything else is refused naming the field, so a client never receives
//! a block it cannot read.

use serde_json::{Map, Value, json};

/// The block `block` as MCP sends it, or what is wrong with it (naming the field).
pub(super) fn content_block(mut block: Map<String, Value>) -> Result<Value, String> {
    let kind = match block.remove("type") {
        Some(Value::String(kind)) => kind,
        _ => return Err("'content.type' must be a string".to_string()),
    };
    let mime_type = mime_type(&mut block)?;
    let out = match kind.as_str() {
        "text" => json!({ "type": "text", "text": text(&mut block, "text")? }),
        "image" | "audio" => {
            let data = text(&mut block, "data")?;
            check_base64(&data, "data")?;
            let mime_type =
                mime_type.ok_or_else(|| format!("an {kind} block needs 'content.mime_type'"))?;
            json!({ "type": kind, "data": data, "mimeType": mime_type })
        }
        "resource" => {
            // MCP nests the contents; tools write them flat.
            let mut inner = match block.remove("resource") {
                Some(Value::Object(inner)) => inner,
                Some(_) => return Err("'content.resource' must be a table".to_string()),
                None => std::mem::take(&mut block),
            };
            let mime_type = mime_type.or(self::mime_type(&mut inner)?);
            let mut resource = Map::new();
            resource.insert("uri".to_string(), json!(text(&mut inner, "uri")?));
            if let Some(mime_type) = mime_type {
                resource.insert("mimeType".to_string(), json!(mime_type));
            }
            match (inner.remove("text"), inner.remove("blob")) {
                (Some(Value::String(text)), None) => {
                    resource.insert("text".to_string(), json!(text));
                }
                (None, Some(Value::String(blob))) => {
                    check_base64(&blob, "blob")?;
                    resource.insert("blob".to_string(), json!(blob));
                }
                _ => {
                    return Err(
                        "an embedded resource needs 'content.text' or 'content.blob' (a string), \
                         not both"
                            .to_string(),
                    );
                }
            }
            json!({ "type": "resource", "resource": resource })
        }
        "resource_link" => {
            let mut link = json!({
                "type": "resource_link",
                "uri": text(&mut block, "uri")?,
                "name": text(&mut block, "name")?,
            });
            if let Some(mime_type) = mime_type {
                link["mimeType"] = json!(mime_type);
            }
            if let Some(description) = block.remove("description") {
                let Value::String(description) = description else {
                    return Err("'content.description' must be a string".to_string());
                };
                link["description"] = json!(description);
            }
            link
        }
        other => {
            return Err(format!(
                "'content.type' {other:?} is not one of text, image, audio, resource, \
                 resource_link"
            ));
        }
    };
    Ok(out)
}

fn mime_type(block: &mut Map<String, Value>) -> Result<Option<String>, String> {
    match block
        .remove("mime_type")
        .or_else(|| block.remove("mimeType"))
    {
        None => Ok(None),
        Some(Value::String(m)) if !m.is_empty() => Ok(Some(m)),
        Some(_) => Err("'content.mime_type' must be a non-empty string".to_string()),
    }
}

fn text(block: &mut Map<String, Value>, field: &str) -> Result<String, String> {
    match block.remove(field) {
        Some(Value::String(text)) => Ok(text),
        _ => Err(format!("'content.{field}' is required (a string)")),
    }
}

fn check_base64(text: &str, field: &str) -> Result<(), String> {
    match is_base64(text) {
        true => Ok(()),
        false => Err(format!(
            "'content.{field}' must be base64 text (A-Z a-z 0-9 + / =)"
        )),
    }
}

/// Standard base64: the alphabet, padding only at the end, a length that is a multiple
/// of four (a client would fail to decode anything else).
pub(super) fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    text.len().is_multiple_of(4)
        && text.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

#[cfg(test)]
mod tests {
    use super::content_block;
    use serde_json::{Value, json};

    fn block(value: Value) -> Result<Value, String> {
        match value {
            Value::Object(map) => content_block(map),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn a_flat_embedded_resource_is_nested_as_mcp_sends_it() {
        let out = block(json!({
            "type": "resource", "uri": "file:///a.rs", "mime_type": "text/x-rust", "text": "fn a() {}"
        }));
        assert_eq!(
            out,
            Ok(json!({ "type": "resource", "resource": {
                "uri": "file:///a.rs", "mimeType": "text/x-rust", "text": "fn a() {}"
            }}))
        );
    }

    #[test]
    fn mcp_spelled_blocks_pass_unchanged() {
        let image = json!({ "type": "image", "data": "iVBORw==", "mimeType": "image/png" });
        assert_eq!(block(image.clone()), Ok(image));
        let nested = json!({ "type": "resource", "resource": { "uri": "x://b", "blob": "AAEC" } });
        assert_eq!(block(nested.clone()), Ok(nested));
    }

    #[test]
    fn an_image_needs_base64_data_and_a_mime_type() {
        let no_mime = block(json!({ "type": "image", "data": "AAAA" }));
        assert_eq!(
            no_mime,
            Err("an image block needs 'content.mime_type'".to_string())
        );
        let not_base64 =
            block(json!({ "type": "image", "data": "<svg>", "mime_type": "image/svg" }));
        assert!(not_base64.is_err_and(|e| e.contains("'content.data' must be base64")));
    }

    #[test]
    fn an_embedded_resource_needs_text_or_blob_and_a_uri() {
        let neither = block(json!({ "type": "resource", "uri": "x://a" }));
        assert!(neither.is_err_and(|e| e.contains("'content.text' or 'content.blob'")));
        let no_uri = block(json!({ "type": "resource", "text": "t" }));
        assert_eq!(
            no_uri,
            Err("'content.uri' is required (a string)".to_string())
        );
    }

    #[test]
    fn an_unknown_block_type_is_refused_naming_the_known_ones() {
        let out = block(json!({ "type": "video", "data": "AAAA" }));
        assert!(out.is_err_and(|e| e.contains("\"video\" is not one of text, image")));
    }
}
