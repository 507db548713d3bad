//! `x-mcp-header` annotations in a tool's parameter schema (MCP 2026-07-28, custom headers
//! from tool parameters): a property marked `["x-mcp-header"] = "Region"` is mirrored by
//! HTTP clients into an `Mcp-Param-Region` header, which the server checks against the
//! argument. The transport's rules, checked at registration so a tool never lists an
//! annotation a client must refuse (a client drops the whole tool):
//!
//! - the value is a non-empty HTTP field-name token (RFC 9110 `tchar`s only: no spaces,
//!   no `:`, no control characters — nothing that could split or inject a header);
//! - names are unique within the tool, ignoring case (HTTP header names are);
//! - only a property reached from the root through `properties` alone may carry one (not
//!   the root, not under `items`, `anyOf`, `$defs`, …), and it must have `type` `string`,
//!   `integer` or `boolean`.

use super::invalid::Invalid;
use crate::json_type::json_type;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// The annotation's key.
const KEY: &str = "x-mcp-header";

/// Checks the `x-mcp-header` annotations of a tool's `parameters`; the error names the
/// field (`'schema.parameters.properties.region.x-mcp-header' …`).
pub(crate) fn check_header_annotations(parameters: &Map<String, Value>) -> Result<(), Invalid> {
    let root = "schema.parameters";
    if parameters.contains_key(KEY) {
        return Err(Invalid::new(format!(
            "'{root}.{KEY}': an x-mcp-header annotates a property, not the whole parameters object"
        )));
    }
    let mut seen = HashSet::new();
    check_object(parameters, root, true, &mut seen)
}

/// Checks `schema` at `path`; `on_chain`: reached from the root through `properties` only.
fn check_object(
    schema: &Map<String, Value>,
    path: &str,
    on_chain: bool,
    seen: &mut HashSet<String>,
) -> Result<(), Invalid> {
    for (key, value) in schema {
        match key.as_str() {
            KEY if on_chain => check_annotation(schema, value, path, seen)?,
            KEY => {
                return Err(Invalid::new(format!(
                    "'{path}.{KEY}': an x-mcp-header may only sit on a property reached through \
                     'properties' alone (not under items, anyOf, $defs, ...)"
                )));
            }
            "properties" => {
                if let Value::Object(properties) = value {
                    for (name, property) in properties {
                        if let Value::Object(property) = property {
                            let at = format!("{path}.properties.{name}");
                            check_object(property, &at, on_chain, seen)?;
                        }
                    }
                }
            }
            // Instance data and property names, never schemas.
            "default" | "const" | "enum" | "examples" | "required" | "dependentRequired" => {}
            _ => check_nested(value, &format!("{path}.{key}"), seen)?,
        }
    }
    Ok(())
}

/// Checks every schema nested in `value` (off the `properties` chain).
fn check_nested(value: &Value, path: &str, seen: &mut HashSet<String>) -> Result<(), Invalid> {
    match value {
        Value::Object(schema) => check_object(schema, path, false, seen),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_nested(item, &format!("{path}[{}]", i + 1), seen)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Checks the annotation `header` of the property `property` at `path`.
fn check_annotation(
    property: &Map<String, Value>,
    header: &Value,
    path: &str,
    seen: &mut HashSet<String>,
) -> Result<(), Invalid> {
    let field = format!("{path}.{KEY}");
    let Value::String(name) = header else {
        return Err(Invalid::new(format!(
            "'{field}' must be a header name (a string), got {}",
            json_type(header)
        )));
    };
    if name.is_empty() {
        return Err(Invalid::new(format!("'{field}' must not be empty")));
    }
    if let Some(bad) = name.chars().find(|&c| !is_tchar(c)) {
        return Err(Invalid::new(format!(
            "'{field}' {name:?} is not an HTTP header name: {bad:?} is not allowed \
             (letters, digits and !#$%&'*+-.^_`|~ only)"
        )));
    }
    if !seen.insert(name.to_ascii_lowercase()) {
        return Err(Invalid::new(format!(
            "'{field}' {name:?} is used by another parameter of this tool (header names ignore case)"
        )));
    }
    match property.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok(()),
        Some(other) => Err(Invalid::new(format!(
            "'{field}': only a string, integer or boolean parameter can be sent as a header, \
             this one has type {other:?}"
        ))),
        None => Err(Invalid::new(format!(
            "'{field}': a parameter sent as a header needs type \"string\", \"integer\" or \
             \"boolean\""
        ))),
    }
}

/// An RFC 9110 token character.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(parameters: Value) -> Result<(), String> {
        check_header_annotations(parameters.as_object().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_primitive_property_may_carry_a_header() {
        let ok = check(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Count"},
            "deep": {"type": "object", "properties": {
                "flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
        }}));
        assert_eq!(ok, Ok(()));
    }

    #[test]
    fn a_header_name_with_a_newline_is_refused() {
        let err = check(json!({"type": "object", "properties": {
            "r": {"type": "string", "x-mcp-header": "X\r\nInjected: 1"}}}))
        .unwrap_err();
        assert!(
            err.starts_with("'schema.parameters.properties.r.x-mcp-header'"),
            "{err}"
        );
        assert!(err.contains("is not an HTTP header name"), "{err}");
    }

    #[test]
    fn duplicate_header_names_are_refused_ignoring_case() {
        let err = check(json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Tenant"},
            "b": {"type": "string", "x-mcp-header": "TENANT"}}}))
        .unwrap_err();
        assert!(err.contains("used by another parameter"), "{err}");
    }

    #[test]
    fn a_number_or_object_parameter_cannot_be_a_header() {
        let err = check(json!({"type": "object", "properties": {
            "x": {"type": "number", "x-mcp-header": "X"}}}))
        .unwrap_err();
        assert!(err.contains("has type \"number\""), "{err}");
        let err = check(json!({"type": "object", "properties": {
            "x": {"x-mcp-header": "X"}}}))
        .unwrap_err();
        assert!(err.contains("needs type"), "{err}");
    }

    #[test]
    fn an_annotation_off_the_properties_chain_is_refused() {
        let err = check(json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}))
        .unwrap_err();
        assert!(
            err.starts_with("'schema.parameters.properties.list.items.x-mcp-header'"),
            "{err}"
        );
        let err = check(json!({"type": "object", "x-mcp-header": "Root"})).unwrap_err();
        assert!(err.contains("not the whole parameters object"), "{err}");
    }

    #[test]
    fn empty_and_non_string_names_are_refused() {
        let err = check(json!({"type": "object", "properties": {
            "x": {"type": "string", "x-mcp-header": ""}}}))
        .unwrap_err();
        assert!(err.contains("must not be empty"), "{err}");
        let err = check(json!({"type": "object", "properties": {
            "x": {"type": "string", "x-mcp-header": 5}}}))
        .unwrap_err();
        assert!(err.contains("got number"), "{err}");
    }
}
