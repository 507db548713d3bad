//! Stage 1: argument coercion (docs/calls.md). Models often send `"42"` for an integer or a JSON
//! string for an array; each argument whose property schema is known is repaired toward
//! the schema. Unknown keys are untouched, nothing here fails, and a value is left as it is
//! whenever the repair would be a guess.

use crate::registry::{
    Accepts, ParameterTypes, has_required, items_schema, object_schema, resolve,
};
use serde_json::{Map, Number, Value};

/// Coerces every argument of `args` that `parameters.properties` describes, and drops an
/// explicit null given for an optional property that does not allow null. `types` is
/// `parameters` read once ([`ParameterTypes::of`]): an argument of a property with nothing
/// nested is repaired from it alone, without walking the schema.
pub(crate) fn coerce_args(
    args: &mut Map<String, Value>,
    parameters: &Value,
    types: &ParameterTypes,
) {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return;
    };
    // OpenAI strict mode makes a model send every key: null for "not given".
    args.retain(|key, value| !(value.is_null() && types.get(key).is_some_and(|p| p.drops_null)));
    for (key, value) in args.iter_mut() {
        match (types.get(key), properties.get(key)) {
            (Some(parameter), _) if !parameter.nested => {
                repair(value, &parameter.accepts, || parameter.has_required);
            }
            (Some(_), Some(schema)) => coerce_in_place(value, schema, parameters, 1),
            _ => {}
        }
    }
}

/// Deepest nesting coerced; deeper values are left alone.
const MAX_DEPTH: usize = 64;

/// The members of an object against its (resolved) schema's `properties`.
fn coerce_object(map: &mut Map<String, Value>, schema: &Value, root: &Value, depth: usize) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required = |key: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|name| name == key))
    };
    // OpenAI strict mode makes a model send every key: null for "not given".
    map.retain(|key, value| {
        !(value.is_null()
            && !required(key)
            && properties
                .get(key)
                .is_some_and(|inner| !Accepts::of(inner, root).null))
    });
    for (key, inner) in map.iter_mut() {
        if let Some(inner_schema) = properties.get(key) {
            coerce_in_place(inner, inner_schema, root, depth + 1);
        }
    }
}

/// [`coerce_args`] walking the whole schema for every argument, as it did before
/// [`ParameterTypes`]: what reading the parameters once must agree with.
#[cfg(test)]
pub(super) fn coerce_args_walking(args: &mut Map<String, Value>, parameters: &Value) {
    coerce_object(args, parameters, parameters, 0);
}

fn coerce_in_place(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    let accepts = Accepts::of(schema, root);
    repair(value, &accepts, || has_required(schema, root));
    match value {
        Value::Array(items) => {
            if let Some(item_schema) = items_schema(schema, root) {
                for item in items {
                    coerce_in_place(item, item_schema, root, depth + 1);
                }
            }
        }
        Value::Object(map) => {
            if let Some(object_schema) = object_schema(schema, root) {
                coerce_object(map, object_schema, root, depth);
            }
        }
        _ => {}
    }
}

/// `value` repaired toward what its schema `accepts`, leaving what is inside it alone: a
/// string parsed as the type it stands for (a blank one as `{}` for an object schema
/// without required keys, as `has_required` says), a stray scalar wrapped into the list an
/// array-only schema wants.
fn repair(value: &mut Value, accepts: &Accepts, has_required: impl FnOnce() -> bool) {
    if let Value::String(text) = value
        && !accepts.string
    {
        if accepts.object && text.trim().is_empty() && !has_required() {
            *value = Value::Object(Map::new());
        } else if let Some(repaired) = from_string(text, accepts) {
            *value = repaired;
        }
    }
    if accepts.only_array() && !matches!(value, Value::Array(_) | Value::Null) {
        let item = std::mem::take(value);
        *value = Value::Array(vec![item]);
    }
}

/// The value a string stands for under `accepts`, or `None` to keep the string.
fn from_string(text: &str, accepts: &Accepts) -> Option<Value> {
    let trimmed = text.trim();
    if accepts.null && trimmed == "null" {
        return Some(Value::Null);
    }
    if accepts.integer
        && let Some(number) = parse_finite(trimmed)
        && number.fract() == 0.0
        && number.abs() < 9.007_199_254_740_992e15
    {
        return Some(Value::from(number as i64));
    }
    if accepts.number
        && let Some(number) = parse_finite(trimmed)
    {
        return Some(
            if number.fract() == 0.0 && number.abs() < 9.007_199_254_740_992e15 {
                Value::from(number as i64)
            } else {
                Value::Number(Number::from_f64(number)?)
            },
        );
    }
    if accepts.boolean {
        if trimmed.eq_ignore_ascii_case("true") {
            return Some(Value::Bool(true));
        }
        if trimmed.eq_ignore_ascii_case("false") {
            return Some(Value::Bool(false));
        }
    }
    if (accepts.array || accepts.object) && (trimmed.starts_with('[') || trimmed.starts_with('{')) {
        match serde_json::from_str::<Value>(trimmed) {
            Ok(parsed @ Value::Array(_)) if accepts.array => return Some(parsed),
            Ok(parsed @ Value::Object(_)) if accepts.object => return Some(parsed),
            _ => {}
        }
    }
    None
}

/// A finite number written in JSON/decimal notation (no `inf`, `nan`, hex or blank).
fn parse_finite(text: &str) -> Option<f64> {
    if text.is_empty()
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
    {
        return None;
    }
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn coerce(value: Value, schema: Value) -> Value {
        let mut args = Map::new();
        args.insert("v".into(), value);
        // Required, so that an explicit null stays (and is left to validation).
        let parameters = json!({"type": "object", "required": ["v"], "properties": {"v": schema}});
        coerce_args(&mut args, &parameters, &ParameterTypes::of(&parameters));
        args.remove("v").unwrap()
    }

    #[test]
    fn the_rules_of_the_contract() {
        let int = json!({"type": "integer"});
        let num = json!({"type": "number"});
        let boolean = json!({"type": "boolean"});
        let cases = [
            (json!("42"), int.clone(), json!(42)),
            (json!(" 42 "), int.clone(), json!(42)),
            (json!("1e3"), int.clone(), json!(1000)),
            (json!("3.14"), int.clone(), json!("3.14")),
            (json!("abc"), int.clone(), json!("abc")),
            (json!("inf"), int.clone(), json!("inf")),
            (json!("NaN"), num.clone(), json!("NaN")),
            (json!("3.5"), num.clone(), json!(3.5)),
            (json!("-2"), num.clone(), json!(-2)),
            (json!("true"), boolean.clone(), json!(true)),
            (json!(" FALSE "), boolean.clone(), json!(false)),
            (json!("1"), boolean.clone(), json!("1")),
            (json!("yes"), boolean.clone(), json!("yes")),
            (
                json!("[1, 2]"),
                json!({"type": "array", "items": {"type": "integer"}}),
                json!([1, 2]),
            ),
            (
                json!("[\"3\"]"),
                json!({"type": "array", "items": {"type": "integer"}}),
                json!([3]),
            ),
            (json!("x"), json!({"type": "array"}), json!(["x"])),
            (
                json!(7),
                json!({"type": "array", "items": {"type": "string"}}),
                json!([7]),
            ),
            (
                json!("5"),
                json!({"type": "array", "items": {"type": "integer"}}),
                json!([5]),
            ),
            (json!(null), json!({"type": "array"}), json!(null)),
            (
                json!("{\"a\": \"1\"}"),
                json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
                json!({"a": 1}),
            ),
            (json!("{bad"), json!({"type": "object"}), json!("{bad")),
            (
                json!("null"),
                json!({"type": ["integer", "null"]}),
                json!(null),
            ),
            (
                json!("null"),
                json!({"type": "integer", "nullable": true}),
                json!(null),
            ),
            (
                json!("null"),
                json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
                json!(null),
            ),
            (json!("null"), json!({"type": "integer"}), json!("null")),
            (
                json!("7"),
                json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
                json!(7),
            ),
            (
                json!("42"),
                json!({"type": ["string", "integer"]}),
                json!("42"),
            ),
            (
                json!("42"),
                json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
                json!("42"),
            ),
            (json!("42"), json!({"description": "no type"}), json!("42")),
            (
                json!({"n": "2"}),
                json!({"type": "object", "properties": {"n": {"type": "number"}}}),
                json!({"n": 2}),
            ),
        ];
        for (input, schema, expected) in cases {
            assert_eq!(
                coerce(input.clone(), schema.clone()),
                expected,
                "{input} against {schema}"
            );
        }
    }

    #[test]
    fn unknown_keys_are_untouched() {
        let mut args = json!({"known": "1", "other": "1"})
            .as_object()
            .unwrap()
            .clone();
        let parameters = json!({"properties": {"known": {"type": "integer"}}});
        coerce_args(&mut args, &parameters, &ParameterTypes::of(&parameters));
        assert_eq!(Value::Object(args), json!({"known": 1, "other": "1"}));
    }
}

#[cfg(test)]
mod parity {
    use super::*;
    use serde_json::json;

    fn coerce_with(args: Value, parameters: Value) -> Value {
        let mut args = args.as_object().unwrap().clone();
        coerce_args(&mut args, &parameters, &ParameterTypes::of(&parameters));
        Value::Object(args)
    }

    #[test]
    fn an_explicit_type_wins_over_a_union_beside_it() {
        let parameters = json!({"type": "object", "properties": {
            "n": {"type": "integer", "anyOf": [{"type": "string"}]}}});
        assert_eq!(
            coerce_with(json!({"n": "42"}), parameters),
            json!({"n": 42})
        );
    }

    #[test]
    fn refs_are_followed_and_cycles_end() {
        let parameters = json!({"type": "object",
            "$defs": {
                "Address": {"type": "object", "properties": {"zip": {"type": "integer"}}},
                "Loop": {"$ref": "#/$defs/Loop"}},
            "definitions": {"Count": {"type": "integer"}},
            "properties": {
                "home": {"$ref": "#/$defs/Address"},
                "stops": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
                "n": {"$ref": "#/definitions/Count"},
                "odd": {"$ref": "#/$defs/Loop"}}});
        let out = coerce_with(
            json!({"home": "{\"zip\": \"123\"}", "stops": ["{\"zip\": 1}"], "n": "5", "odd": "x"}),
            parameters,
        );
        assert_eq!(
            out,
            json!({"home": {"zip": 123}, "stops": [{"zip": 1}], "n": 5, "odd": "x"})
        );
    }

    #[test]
    fn native_arrays_under_a_union_follow_the_array_members_items() {
        let parameters = json!({"type": "object", "properties": {"rows": {"anyOf": [
            {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            {"type": "null"}]}}});
        let out = coerce_with(json!({"rows": ["{\"n\": \"2\"}", {"n": "3"}]}), parameters);
        assert_eq!(out, json!({"rows": [{"n": 2}, {"n": 3}]}));
    }

    #[test]
    fn a_blank_string_for_an_object_without_required_keys_is_an_empty_object() {
        let parameters = json!({"type": "object", "properties": {
            "opts": {"type": "object", "properties": {"a": {"type": "string"}}},
            "strict": {"type": "object", "required": ["a"]}}});
        let out = coerce_with(json!({"opts": "  ", "strict": " "}), parameters);
        assert_eq!(out, json!({"opts": {}, "strict": " "}));
    }

    #[test]
    fn an_optional_null_that_the_schema_does_not_allow_is_dropped() {
        let parameters = json!({"type": "object", "required": ["must"], "properties": {
            "opt": {"type": "integer"},
            "maybe": {"type": ["integer", "null"]},
            "must": {"type": "integer"}}});
        let out = coerce_with(
            json!({"opt": null, "maybe": null, "must": null}),
            parameters,
        );
        assert_eq!(out, json!({"maybe": null, "must": null}));
    }
}
