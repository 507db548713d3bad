//! Checks on a tool's function schema shared by Lua and native registrations (docs/lua-api.md):
//! a JSON object whose `parameters` is an object schema that compiles as JSON Schema.

use super::invalid::Invalid;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The JSON type name of a value, for messages (it lives in the base layer: the MCP guard
/// uses it too).
pub(crate) use crate::json_type::json_type;

/// The registry description a tool gets when it sets none: `schema.description`.
pub(crate) fn default_description(schema: &Map<String, Value>) -> String {
    schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Checks a function schema's shape (a `description` string, an object-typed `parameters`);
/// the error names the field (`'schema.parameters' ...`). Compiling the parameters is
/// [`compile_parameters`].
pub(crate) fn check_function_schema(schema: &Map<String, Value>) -> Result<(), Invalid> {
    if let Some(description) = schema.get("description")
        && !description.is_string()
    {
        return Err(Invalid::new(format!(
            "'schema.description' must be a string, got {}",
            json_type(description)
        )));
    }
    let parameters = match schema.get("parameters") {
        None => {
            return Err(Invalid::new(
                "'schema.parameters' is required (a JSON-Schema object)",
            ));
        }
        Some(Value::Object(parameters)) => parameters,
        Some(other) => {
            return Err(Invalid::new(format!(
                "'schema.parameters' must be a JSON-Schema object, got {}",
                json_type(other)
            )));
        }
    };
    match parameters.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(Invalid::new(format!(
                "'schema.parameters' must be a JSON-Schema object (type = \"object\"), got type = {other}"
            )));
        }
        None => {
            return Err(Invalid::new(
                "'schema.parameters' must be a JSON-Schema object (type = \"object\"), got no type",
            ));
        }
    }
    super::mcp_header::check_header_annotations(parameters)
}

/// Compiles a function schema's `parameters` (checked against the meta-schema first); the
/// validator is kept with the tool so that arguments are validated without recompiling.
pub(crate) fn compile_parameters(
    schema: &Map<String, Value>,
) -> Result<Arc<jsonschema::Validator>, Invalid> {
    compile_parameters_at(schema)
        .map_err(|(field, message)| Invalid::new(format!("'{field}' {message}")))
}

/// Like [`compile_parameters`], the error as the field at fault
/// (`schema.parameters.properties.who.type`) and what is wrong there, in plain words for
/// the common cases.
pub(crate) fn compile_parameters_at(
    schema: &Map<String, Value>,
) -> Result<Arc<jsonschema::Validator>, (String, String)> {
    let Some(parameters) = schema.get("parameters") else {
        return Err((
            "schema.parameters".into(),
            "is required (a JSON-Schema object)".into(),
        ));
    };
    let mut parameters = parameters.clone();
    allow_nullable(&mut parameters, 0);
    jsonschema::validator_for(&parameters)
        .map(Arc::new)
        .map_err(|error| {
            let pointer = error.instance_path().to_string();
            let field = format!(
                "schema.parameters{}",
                json_path(&pointer).trim_start_matches('$')
            );
            let value = error.instance().clone().into_owned();
            (field, explain(&pointer, &value, &error.to_string()))
        })
}

/// A digest of a function schema's `parameters` (`None` when there are none), stable across
/// runs and independent of object key order (Lua's table order is randomised per VM): a
/// schema whose digest is known to have compiled need not be compiled at start-up.
pub(crate) fn parameters_hash(schema: &Map<String, Value>) -> Option<u64> {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    hash_json(schema.get("parameters")?, &mut hasher, 0).then(|| hasher.finish())
}

/// Deepest schema nesting [`parameters_hash`] digests (Lua-built JSON stops at 128).
const MAX_HASH_DEPTH: usize = 256;

/// Feeds `value` to `hasher`; `false` when it is nested too deeply to hash (such a schema
/// is simply never taken as known).
fn hash_json(value: &Value, hasher: &mut impl std::hash::Hasher, depth: usize) -> bool {
    use std::hash::{Hash, Hasher};
    if depth > MAX_HASH_DEPTH {
        return false;
    }
    match value {
        Value::Null => hasher.write_u8(0),
        Value::Bool(b) => {
            hasher.write_u8(1);
            b.hash(hasher);
        }
        Value::Number(n) => {
            hasher.write_u8(2);
            n.to_string().hash(hasher);
        }
        Value::String(s) => {
            hasher.write_u8(3);
            s.hash(hasher);
        }
        Value::Array(items) => {
            hasher.write_u8(4);
            hasher.write_usize(items.len());
            for item in items {
                if !hash_json(item, hasher, depth + 1) {
                    return false;
                }
            }
        }
        Value::Object(map) => {
            hasher.write_u8(5);
            hasher.write_usize(map.len());
            // Each entry hashed on its own and the results summed: the same for any order.
            let mut sum = 0u64;
            for (key, inner) in map {
                let mut entry = std::hash::DefaultHasher::new();
                key.hash(&mut entry);
                if !hash_json(inner, &mut entry, depth + 1) {
                    return false;
                }
                sum = sum.wrapping_add(entry.finish());
            }
            hasher.write_u64(sum);
        }
    }
    true
}

/// JSON-Schema's own words translated where they are jargon.
fn explain(pointer: &str, value: &Value, raw: &str) -> String {
    const TYPES: &str = "string, number, integer, boolean, array, object, null";
    if pointer.ends_with("/type") {
        return match value {
            Value::String(_) => format!("{value} is not a JSON-Schema type ({TYPES})"),
            Value::Array(_) => format!("must list JSON-Schema types ({TYPES}), got {value}"),
            _ => format!("must be a JSON-Schema type name ({TYPES}), got {value}"),
        };
    }
    if pointer.ends_with("/required") {
        return format!("must be a list of property names, got {value}");
    }
    if raw.contains("is not valid under any of the schemas listed in the 'anyOf' keyword") {
        return format!("is not a valid JSON Schema here: {value}");
    }
    format!("is not a valid JSON Schema: {raw}")
}

/// Rewrites OpenAPI's `nullable: true` (which JSON Schema does not know) as an added
/// `"null"` type, everywhere in the schema, so validation accepts the null that coercion
/// and the model both consider valid.
fn allow_nullable(schema: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    match schema {
        Value::Object(map) => {
            if map.get("nullable") == Some(&Value::Bool(true)) {
                match map.get_mut("type") {
                    Some(Value::String(t)) if t != "null" => {
                        let single = Value::String(std::mem::take(t));
                        map.insert("type".into(), Value::Array(vec![single, "null".into()]));
                    }
                    Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
                        types.push("null".into());
                    }
                    _ => {}
                }
                // An enum must admit null too, or the added type is useless.
                if let Some(Value::Array(options)) = map.get_mut("enum")
                    && !options.contains(&Value::Null)
                {
                    options.push(Value::Null);
                }
            }
            // Keywords holding data, not schemas, are left as they are.
            for (key, inner) in map.iter_mut() {
                if !matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    allow_nullable(inner, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                allow_nullable(item, depth + 1);
            }
        }
        _ => {}
    }
}

/// A JSON Pointer (`/tags/0`) as a JSON path (`$.tags[0]`).
pub(crate) fn json_path(pointer: &str) -> String {
    let mut path = String::from("$");
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            path.push_str(&format!("[{segment}]"));
        } else {
            path.push('.');
            path.push_str(&segment);
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_description_that_is_not_text_defaults_to_empty() {
        let schema = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(default_description(&schema(json!({"description": 3}))), "");
        assert_eq!(
            default_description(&schema(json!({"description": "Adds."}))),
            "Adds."
        );
    }

    fn check(v: Value) -> Result<(), String> {
        let schema = v.as_object().unwrap();
        check_function_schema(schema).map_err(|e| e.to_string())?;
        compile_parameters(schema)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn parameters_hash_ignores_key_order_but_not_content() {
        let a = json!({"parameters": {"type": "object", "properties": {"x": {"type": "string"}}}});
        let b = json!({"parameters": {"properties": {"x": {"type": "string"}}, "type": "object"}});
        let c = json!({"parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}});
        let hash = |v: &Value| parameters_hash(v.as_object().unwrap());
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(hash(&a), hash(&c));
        assert_eq!(hash(&json!({"description": "no parameters"})), None);
    }

    #[test]
    fn pointers_become_paths() {
        assert_eq!(json_path(""), "$");
        assert_eq!(json_path("/count"), "$.count");
        assert_eq!(json_path("/tags/0"), "$.tags[0]");
        assert_eq!(json_path("/a~1b/c"), "$.a/b.c");
    }

    #[test]
    fn messages_name_the_field() {
        assert!(check(json!({"parameters":{"type":"object"}})).is_ok());
        let e = check(json!({"parameters":"x"})).unwrap_err();
        assert_eq!(
            e,
            "'schema.parameters' must be a JSON-Schema object, got string"
        );
        let e = check(json!({"parameters":{"type":"string"}})).unwrap_err();
        assert!(e.contains("type = \"string\""), "{e}");
        let e = check(json!({"parameters":{"type":"object","properties":{"x":{"type":"strnig"}}}}))
            .unwrap_err();
        assert_eq!(
            e,
            "'schema.parameters.properties.x.type' \"strnig\" is not a JSON-Schema type \
             (string, number, integer, boolean, array, object, null)"
        );
        let e = check(json!({"description": 5, "parameters":{"type":"object"}})).unwrap_err();
        assert!(e.contains("'schema.description'"), "{e}");
    }
}
