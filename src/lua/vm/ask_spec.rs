//! What `ctx.ask{...}`, `ctx.roots()` and `ctx.sample{...}` were given, checked into an
//! [`InputKind`] with a message naming the function and the field on bad input (the
//! message is raised at the tool's call site).

use crate::registry::InputKind;
use serde_json::{Map, Value};

/// Longest key an author may give a request.
const MAX_KEY_CHARS: usize = 128;

/// The three input functions of `ctx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputFn {
    /// `ctx.ask`.
    Ask,
    /// `ctx.roots`.
    Roots,
    /// `ctx.sample`.
    Sample,
}

impl InputFn {
    /// The function named `name` (as the bootstrap passes it).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "ask" => Some(Self::Ask),
            "roots" => Some(Self::Roots),
            "sample" => Some(Self::Sample),
            _ => None,
        }
    }

    /// `ctx.NAME`, for messages.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Ask => "ctx.ask",
            Self::Roots => "ctx.roots",
            Self::Sample => "ctx.sample",
        }
    }
}

/// Checks what `function` was given (`spec` as JSON; `Null` for nothing): the author's
/// key, if any, and the request.
pub(crate) fn parse(function: InputFn, spec: Value) -> Result<(Option<String>, InputKind), String> {
    let label = function.label();
    if function == InputFn::Roots {
        return match spec {
            Value::Null => Ok((None, InputKind::Roots)),
            Value::Object(map) if map.is_empty() => Ok((None, InputKind::Roots)),
            Value::Object(mut map) => {
                let key = key_field(label, &mut map)?;
                no_other_fields(label, &map, &["key"])?;
                Ok((key, InputKind::Roots))
            }
            other => Err(format!(
                "{label}: expects no argument or a table, got {}",
                crate::json_type::json_type(&other)
            )),
        };
    }
    let Value::Object(mut map) = spec else {
        return Err(format!(
            "{label}: expects a table, e.g. {label}{{ {} }}",
            match function {
                InputFn::Ask =>
                    "message = \"...\", schema = { type = \"object\", properties = {...} }",
                _ => "messages = { { role = \"user\", content = \"...\" } }, max_tokens = 100",
            }
        ));
    };
    let key = key_field(label, &mut map)?;
    let kind = match function {
        InputFn::Ask => {
            no_other_fields(label, &map, &["message", "schema", "key"])?;
            let message = match map.remove("message") {
                Some(Value::String(m)) if !m.trim().is_empty() => m,
                Some(Value::String(_)) => return Err(format!("{label}: 'message' is empty")),
                None => return Err(format!("{label}: 'message' is required (a string)")),
                Some(other) => return Err(wrong(label, "message", "a string", &other)),
            };
            let schema = match map.remove("schema") {
                Some(Value::Object(schema)) => flat_schema(label, schema)?,
                None => {
                    return Err(format!(
                        "{label}: 'schema' is required (a table: {{ type = \"object\", properties = {{...}} }})"
                    ));
                }
                Some(other) => return Err(wrong(label, "schema", "a table", &other)),
            };
            InputKind::Elicitation { message, schema }
        }
        InputFn::Sample => {
            no_other_fields(label, &map, &["messages", "max_tokens", "system", "key"])?;
            let messages = match map.remove("messages") {
                Some(Value::Array(list)) if !list.is_empty() => list
                    .into_iter()
                    .enumerate()
                    .map(|(i, m)| message(label, i + 1, m))
                    .collect::<Result<Vec<_>, _>>()?,
                Some(Value::Array(_)) | Some(Value::Object(_)) => {
                    return Err(format!("{label}: 'messages' is empty (give at least one)"));
                }
                None => return Err(format!("{label}: 'messages' is required (a list)")),
                Some(other) => return Err(wrong(label, "messages", "a list", &other)),
            };
            let max_tokens = match map.remove("max_tokens") {
                Some(Value::Number(n)) => n
                    .as_u64()
                    .filter(|&n| n > 0)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        format!("{label}: 'max_tokens' must be a positive integer, got {n}")
                    })?,
                None => return Err(format!("{label}: 'max_tokens' is required (an integer)")),
                Some(other) => return Err(wrong(label, "max_tokens", "an integer", &other)),
            };
            let system = match map.remove("system") {
                None => None,
                Some(Value::String(s)) => Some(s),
                Some(other) => return Err(wrong(label, "system", "a string", &other)),
            };
            InputKind::Sampling {
                messages,
                max_tokens,
                system,
            }
        }
        InputFn::Roots => InputKind::Roots,
    };
    Ok((key, kind))
}

/// The author's `key`: 1 to [`MAX_KEY_CHARS`] letters, digits, `_` and `-`. No `.` or `/`:
/// those belong to the keys the host makes (`q1.2.1`, `c1.q1`, `toolhost/approval`), so a
/// tool can never pose as another request, least of all the approval of a tool it calls.
fn key_field(label: &str, map: &mut Map<String, Value>) -> Result<Option<String>, String> {
    match map.remove("key") {
        None => Ok(None),
        Some(Value::String(key))
            if !key.is_empty()
                && key.len() <= MAX_KEY_CHARS
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            Ok(Some(key))
        }
        Some(Value::String(_)) => Err(format!(
            "{label}: 'key' must be 1 to {MAX_KEY_CHARS} letters, digits, '_' or '-'"
        )),
        Some(other) => Err(wrong(label, "key", "a string", &other)),
    }
}

fn no_other_fields(label: &str, map: &Map<String, Value>, known: &[&str]) -> Result<(), String> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!(
            "{label}: unknown field '{unknown}' (known: {})",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

fn wrong(label: &str, field: &str, expected: &str, got: &Value) -> String {
    format!(
        "{label}: '{field}' must be {expected}, got {}",
        crate::json_type::json_type(got)
    )
}

/// An elicitation form: an object schema whose properties are primitives (the MCP
/// elicitation rule: forms are flat).
fn flat_schema(label: &str, mut schema: Map<String, Value>) -> Result<Value, String> {
    match schema.get("type") {
        None => {
            schema.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "{label}: 'schema.type' must be \"object\", got {other}"
            ));
        }
    }
    let properties = match schema.get("properties") {
        None => {
            schema.insert("properties".into(), Value::Object(Map::new()));
            return Ok(Value::Object(schema));
        }
        Some(Value::Object(p)) => p,
        Some(other) => return Err(wrong(label, "schema.properties", "a table", other)),
    };
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str);
        let primitive = matches!(kind, Some("string" | "number" | "integer" | "boolean"));
        // A multi-select: an array of enumerated strings.
        let multi_select = kind == Some("array")
            && property
                .get("items")
                .is_some_and(|items| items.get("enum").is_some() || items.get("anyOf").is_some());
        if !(primitive || multi_select) {
            return Err(format!(
                "{label}: 'schema.properties.{name}' must have type string, number, integer or \
                 boolean, or be an array of enum items (elicitation forms are flat)"
            ));
        }
    }
    if let Some(required) = schema.get("required")
        && !required.as_array().is_some_and(|r| {
            r.iter()
                .all(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
        })
    {
        return Err(format!(
            "{label}: 'schema.required' must list names of schema.properties"
        ));
    }
    let schema = Value::Object(schema);
    if let Err(e) = jsonschema::validator_for(&schema) {
        return Err(format!("{label}: 'schema' is not a valid JSON Schema: {e}"));
    }
    Ok(schema)
}

/// Checks an accepted form's `content` against the form's `schema`: the client's answer is
/// untrusted input, and the handler reads it as the schema promises.
pub(crate) fn check_content(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the form's schema does not compile: {e}"))?;
    let content = Value::Object(content.clone());
    match validator.iter_errors(&content).next() {
        None => Ok(()),
        Some(error) => {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() {
                "content".to_string()
            } else {
                format!("content{}", at.replace('/', "."))
            };
            Err(format!(
                "the client's answer does not match the form: {at}: {error}"
            ))
        }
    }
}

fn message(label: &str, index: usize, value: Value) -> Result<Value, String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "{label}: 'messages[{index}]' must be a table {{ role = \"user\", content = \"...\" }}"
        ));
    };
    match map.get("role").and_then(Value::as_str) {
        Some("user" | "assistant") => {}
        _ => {
            return Err(format!(
                "{label}: 'messages[{index}].role' must be \"user\" or \"assistant\""
            ));
        }
    }
    match map.get("content") {
        Some(Value::String(_)) => {}
        Some(Value::Object(content)) if content.get("type").is_some_and(Value::is_string) => {}
        _ => {
            return Err(format!(
                "{label}: 'messages[{index}].content' must be a string or an MCP content table (with type)"
            ));
        }
    }
    if let Some(unknown) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "role" | "content"))
    {
        return Err(format!(
            "{label}: unknown field 'messages[{index}].{unknown}' (known: role, content)"
        ));
    }
    Ok(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_specs_name_the_field() {
        let cases = [
            (InputFn::Ask, json!({"schema": {}}), "'message' is required"),
            (
                InputFn::Ask,
                json!({"message": "m"}),
                "'schema' is required",
            ),
            (
                InputFn::Ask,
                json!({"message": "m", "schema": {"properties": {"x": {"type": "object"}}}}),
                "schema.properties.x",
            ),
            (
                InputFn::Ask,
                json!({"message": "m", "schema": {}, "kee": 1}),
                "unknown field 'kee'",
            ),
            (InputFn::Ask, json!("text"), "expects a table"),
            (
                InputFn::Sample,
                json!({"messages": [{"role": "x", "content": "c"}], "max_tokens": 3}),
                "messages[1].role",
            ),
            (
                InputFn::Sample,
                json!({"messages": [{"role": "user", "content": "c"}], "max_tokens": -3}),
                "'max_tokens' must be a positive integer",
            ),
            (
                InputFn::Sample,
                json!({"messages": [{"role": "user", "content": "c"}]}),
                "'max_tokens' is required",
            ),
            (InputFn::Roots, json!(3), "expects no argument"),
            (
                InputFn::Roots,
                json!({"key": "c1.toolhost/approval"}),
                "'key' must be 1 to 128 letters",
            ),
            (
                InputFn::Ask,
                json!({"message": "m", "schema": {}, "key": ""}),
                "'key' must be",
            ),
        ];
        for (function, spec, expected) in cases {
            let error = parse(function, spec.clone()).expect_err(&spec.to_string());
            assert!(error.contains(expected), "{spec}: {error}");
            assert!(error.starts_with(function.label()), "{error}");
        }
    }

    #[test]
    fn an_answer_must_match_the_form() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let good = json!({"n": 3});
        assert!(check_content(&schema, good.as_object().unwrap()).is_ok());
        let bad = json!({"n": "three"});
        let error = check_content(&schema, bad.as_object().unwrap()).unwrap_err();
        assert!(error.contains("content.n"), "{error}");
        let missing = json!({});
        assert!(check_content(&schema, missing.as_object().unwrap()).is_err());
    }

    #[test]
    fn good_specs_become_requests() {
        let (key, kind) = parse(
            InputFn::Ask,
            json!({"message": "Name?", "schema": {"properties": {"n": {"type": "string"}}, "required": ["n"]}, "key": "who"}),
        )
        .expect("valid");
        assert_eq!(key.as_deref(), Some("who"));
        assert!(matches!(kind, InputKind::Elicitation { .. }));
        let (_, kind) = parse(
            InputFn::Sample,
            json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "system": "s"}),
        )
        .expect("valid");
        assert!(matches!(kind, InputKind::Sampling { max_tokens: 10, .. }));
    }
}
