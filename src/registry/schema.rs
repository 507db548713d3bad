//! Checks on a tool's function schema shared by Lua and native registrations (SPEC §1):
//! a JSON object whose `parameters` is an object schema that compiles as JSON Schema.

use serde_json::{Map, Value};
use std::sync::Arc;

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

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
pub(crate) fn check_function_schema(schema: &Map<String, Value>) -> Result<(), String> {
    if let Some(description) = schema.get("description")
        && !description.is_string()
    {
        return Err(format!(
            "'schema.description' must be a string, got {}",
            json_type(description)
        ));
    }
    let parameters = match schema.get("parameters") {
        None => return Err("'schema.parameters' is required (a JSON-Schema object)".to_string()),
        Some(Value::Object(parameters)) => parameters,
        Some(other) => {
            return Err(format!(
                "'schema.parameters' must be a JSON-Schema object, got {}",
                json_type(other)
            ));
        }
    };
    match parameters.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "'schema.parameters' must be a JSON-Schema object (type = \"object\"), got type = {other}"
            ));
        }
        None => {
            return Err(
                "'schema.parameters' must be a JSON-Schema object (type = \"object\"), got no type"
                    .to_string(),
            );
        }
    }
    Ok(())
}

/// Compiles a function schema's `parameters` (checked against the meta-schema first); the
/// validator is kept with the tool so that arguments are validated without recompiling.
pub(crate) fn compile_parameters(
    schema: &Map<String, Value>,
) -> Result<Arc<jsonschema::Validator>, String> {
    compile_parameters_at(schema).map_err(|(field, message)| format!("'{field}' {message}"))
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

    fn check(v: Value) -> Result<(), String> {
        let schema = v.as_object().unwrap();
        check_function_schema(schema)?;
        compile_parameters(schema).map(|_| ())
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
