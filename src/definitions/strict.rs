//! OpenAI strict mode for a tool's parameters (`Selection::with_strict`, `schema --strict`):
//! every object lists all its properties in `required` and has `additionalProperties:
//! false`; a property that was optional is made nullable instead (a strict model sends
//! `null` for "not given", which argument coercion drops again before validation); keywords
//! strict mode does not accept are left out of the model-facing schema and reported (the
//! host still validates arguments against the whole registered schema).

use serde_json::{Map, Value, json};

/// Keywords strict mode accepts (OpenAI's supported subset of JSON Schema).
const SUPPORTED: &[&str] = &[
    "type",
    "description",
    "title",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// A strict schema and what had to be changed to make it one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Strict {
    /// The parameters schema in strict form.
    pub schema: Value,
    /// One line per keyword left out or replaced, naming where (`properties.path.minLength`).
    pub reports: Vec<String>,
}

/// The strict form of a tool's `parameters` schema.
pub(crate) fn strict_parameters(parameters: &Value) -> Strict {
    let mut reports = Vec::new();
    let mut schema = match parameters {
        Value::Object(map) => Value::Object(map.clone()),
        _ => json!({"type": "object"}),
    };
    // The root must be an object with properties, even for a tool without parameters.
    if let Value::Object(map) = &mut schema {
        map.entry("type").or_insert_with(|| json!("object"));
        map.entry("properties").or_insert_with(|| json!({}));
    }
    visit(&mut schema, "parameters", &mut reports);
    Strict { schema, reports }
}

/// Makes `schema` (at `path`) and everything under it strict.
fn visit(schema: &mut Value, path: &str, reports: &mut Vec<String>) {
    let Value::Object(map) = schema else {
        return;
    };
    let unsupported: Vec<String> = map
        .keys()
        .filter(|key| !SUPPORTED.contains(&key.as_str()))
        .cloned()
        .collect();
    for key in unsupported {
        map.remove(&key);
        // `x-` keys are the host's own annotations (e.g. `x-mcp-header`): not the model's.
        if !key.starts_with("x-") {
            reports.push(format!(
                "{path}.{key}: not supported in strict mode, left out"
            ));
        }
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            visit(property, &format!("{path}.properties.{name}"), reports);
        }
    }
    if is_object(map) {
        make_object_strict(map, path, reports);
    }
    if let Some(items) = map.get_mut("items") {
        match items {
            Value::Object(_) => visit(items, &format!("{path}.items"), reports),
            _ => {
                reports.push(format!(
                    "{path}.items: only a single schema is supported in strict mode, left out"
                ));
                map.remove("items");
            }
        }
    }
    if let Some(Value::Array(members)) = map.get_mut("anyOf") {
        for (index, member) in members.iter_mut().enumerate() {
            visit(member, &format!("{path}.anyOf[{index}]"), reports);
        }
    }
    for defs in ["$defs", "definitions"] {
        if let Some(Value::Object(defined)) = map.get_mut(defs) {
            for (name, schema) in defined.iter_mut() {
                visit(schema, &format!("{path}.{defs}.{name}"), reports);
            }
        }
    }
}

/// Whether a schema describes an object (its `type` says so, or it has `properties`).
fn is_object(map: &Map<String, Value>) -> bool {
    let typed = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => false,
    };
    typed || map.contains_key("properties")
}

/// Every property required (the optional ones nullable), no other keys allowed.
fn make_object_strict(map: &mut Map<String, Value>, path: &str, reports: &mut Vec<String>) {
    if let Some(extra) = map.get("additionalProperties")
        && extra != &Value::Bool(false)
    {
        reports.push(format!(
            "{path}.additionalProperties: strict mode allows no other keys, set to false"
        ));
    }
    map.insert("additionalProperties".into(), Value::Bool(false));
    let required: Vec<String> = match map.get("required") {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let properties = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(properties) = properties else {
        return;
    };
    let mut all = Vec::with_capacity(properties.len());
    for (name, property) in properties.iter_mut() {
        if !required.contains(name) {
            make_nullable(property);
        }
        all.push(Value::String(name.clone()));
    }
    map.insert("required".into(), Value::Array(all));
}

/// Lets `schema` also accept `null`: `null` joins its `type` (and its `enum`), or the
/// schema becomes `anyOf: [schema, {type: null}]` when it has no `type` to extend.
fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    let null = Value::String("null".into());
    let extended = match map.get_mut("type") {
        Some(Value::String(single)) => {
            if single != "null" {
                let single = std::mem::take(single);
                map.insert(
                    "type".into(),
                    Value::Array(vec![Value::String(single), null]),
                );
            }
            true
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null);
            }
            true
        }
        _ => false,
    };
    if extended {
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        return;
    }
    let inner = std::mem::take(map);
    map.insert(
        "anyOf".into(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let strict = strict_parameters(&json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer"},
                "mode": {"enum": ["a", "b"], "type": "string"},
                "any": {"$ref": "#/$defs/x"}
            },
            "required": ["path"],
            "$defs": {"x": {"type": "object", "properties": {"k": {"type": "string"}}}}
        }));
        assert_eq!(
            strict.schema,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": ["integer", "null"]},
                    "mode": {"enum": ["a", "b", null], "type": ["string", "null"]},
                    "any": {"anyOf": [{"$ref": "#/$defs/x"}, {"type": "null"}]}
                },
                "required": strict.schema["required"].clone(),
                "additionalProperties": false,
                "$defs": {"x": {
                    "type": "object",
                    "properties": {"k": {"type": ["string", "null"]}},
                    "required": ["k"],
                    "additionalProperties": false
                }}
            })
        );
        let mut required: Vec<&str> = strict.schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        required.sort();
        assert_eq!(required, ["any", "limit", "mode", "path"]);
        assert!(strict.reports.is_empty(), "{:?}", strict.reports);
    }

    #[test]
    fn unsupported_keywords_are_left_out_and_reported_by_path() {
        let strict = strict_parameters(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "x-mcp-header": "Name"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "extra": {"type": "object", "additionalProperties": {"type": "string"}}
            },
            "required": ["name", "tags", "extra"],
            "allOf": [{"required": ["name"]}]
        }));
        let mut reports = strict.reports.clone();
        reports.sort();
        assert_eq!(
            reports,
            [
                "parameters.allOf: not supported in strict mode, left out",
                "parameters.properties.extra.additionalProperties: strict mode allows no other keys, set to false",
                "parameters.properties.name.minLength: not supported in strict mode, left out",
                "parameters.properties.tags.uniqueItems: not supported in strict mode, left out",
            ]
        );
        assert_eq!(
            strict.schema["properties"]["name"],
            json!({"type": "string"})
        );
        assert_eq!(
            strict.schema["properties"]["extra"]["additionalProperties"],
            json!(false)
        );
    }

    #[test]
    fn a_tool_without_parameters_gets_an_empty_strict_object() {
        let strict = strict_parameters(&json!({"type": "object"}));
        assert_eq!(
            strict.schema,
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }
}
