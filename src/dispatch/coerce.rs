//! Stage 1: argument coercion (docs/calls.md). Models often send `"42"` for an integer or a JSON
//! string for an array; each argument whose property schema is known is repaired toward
//! the schema. Unknown keys are untouched, nothing here fails, and a value is left as it is
//! whenever the repair would be a guess.

use serde_json::{Map, Number, Value};

/// The JSON types a schema accepts, read from `type`, or from the members of
/// `anyOf`/`oneOf` (a `[T, null]` union is T that may also be null).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Accepts {
    string: bool,
    integer: bool,
    number: bool,
    boolean: bool,
    array: bool,
    object: bool,
    null: bool,
}

impl Accepts {
    /// What `schema` accepts: its `type` when it has one (a `type` wins over any
    /// `anyOf`/`oneOf` beside it), else the union of its `anyOf`/`oneOf` members (each
    /// followed through `$ref`). `nullable: true` adds null.
    fn of(schema: &Value, root: &Value) -> Self {
        let mut accepts = Accepts::default();
        let Some(schema) = resolve(schema, root).as_object() else {
            return accepts;
        };
        match schema.get("type") {
            Some(Value::String(t)) => accepts.add(t),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .for_each(|t| accepts.add(t)),
            _ => {
                for member in union_members(schema) {
                    let member = resolve(member, root);
                    accepts.merge(Accepts::of(member, root));
                    if member.get("const") == Some(&Value::Null) {
                        accepts.null = true;
                    }
                }
            }
        }
        if schema.get("nullable") == Some(&Value::Bool(true)) {
            accepts.null = true;
        }
        accepts
    }

    fn add(&mut self, name: &str) {
        match name {
            "string" => self.string = true,
            "integer" => self.integer = true,
            "number" => self.number = true,
            "boolean" => self.boolean = true,
            "array" => self.array = true,
            "object" => self.object = true,
            "null" => self.null = true,
            _ => {}
        }
    }

    fn merge(&mut self, other: Accepts) {
        self.string |= other.string;
        self.integer |= other.integer;
        self.number |= other.number;
        self.boolean |= other.boolean;
        self.array |= other.array;
        self.object |= other.object;
        self.null |= other.null;
    }

    /// Only arrays (and perhaps null): a stray scalar is wrapped into a list.
    fn only_array(&self) -> bool {
        self.array && !(self.string || self.integer || self.number || self.boolean || self.object)
    }
}

/// The members of a schema's `anyOf`/`oneOf`.
fn union_members(schema: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|key| schema.get(key).and_then(Value::as_array))
        .flatten()
}

/// Most `$ref` hops followed for one schema (a cycle ends here).
const MAX_REF_HOPS: usize = 16;

/// `schema` with `$ref`s to `#/$defs/…` or `#/definitions/…` of `root` (the parameters
/// schema) followed; a reference that does not resolve, leaves the document or loops is
/// left as it is.
fn resolve<'a>(mut schema: &'a Value, root: &'a Value) -> &'a Value {
    for _ in 0..MAX_REF_HOPS {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            return schema;
        };
        let local = reference.strip_prefix('#').filter(|pointer| {
            pointer.starts_with("/$defs/") || pointer.starts_with("/definitions/")
        });
        match local.and_then(|pointer| root.pointer(pointer)) {
            Some(target) => schema = target,
            None => return schema,
        }
    }
    schema
}

/// Coerces every argument of `args` that `parameters.properties` describes, and drops an
/// explicit null given for an optional property that does not allow null.
pub(crate) fn coerce_args(args: &mut Map<String, Value>, parameters: &Value) {
    coerce_object(args, parameters, parameters, 0);
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

fn coerce_in_place(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    let accepts = Accepts::of(schema, root);
    if let Value::String(text) = value
        && !accepts.string
    {
        if accepts.object && text.trim().is_empty() && !has_required(schema, root) {
            *value = Value::Object(Map::new());
        } else if let Some(repaired) = from_string(text, &accepts) {
            *value = repaired;
        }
    }
    if accepts.only_array() && !matches!(value, Value::Array(_) | Value::Null) {
        let item = std::mem::take(value);
        *value = Value::Array(vec![item]);
    }
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

/// The `items` schema an array value is normalised against: the schema's own, else that of
/// its union's array member.
fn items_schema<'a>(schema: &'a Value, root: &'a Value) -> Option<&'a Value> {
    if let Some(items) = schema.get("items").filter(|s| s.is_object()) {
        return Some(items);
    }
    let map = schema.as_object()?;
    union_members(map)
        .map(|member| resolve(member, root))
        .find_map(|member| member.get("items").filter(|s| s.is_object()))
}

/// The schema whose `properties` an object value is normalised against: the schema itself,
/// else its union's object member.
fn object_schema<'a>(schema: &'a Value, root: &'a Value) -> Option<&'a Value> {
    if schema.get("properties").is_some_and(Value::is_object) {
        return Some(schema);
    }
    let map = schema.as_object()?;
    union_members(map)
        .map(|member| resolve(member, root))
        .find(|member| member.get("properties").is_some_and(Value::is_object))
}

/// Whether an object schema names required keys (a blank string then is not `{}`).
fn has_required(schema: &Value, root: &Value) -> bool {
    let own = |schema: &Value| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| !names.is_empty())
    };
    own(schema)
        || schema
            .as_object()
            .is_some_and(|map| union_members(map).any(|member| own(resolve(member, root))))
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
        coerce_args(
            &mut args,
            // Required, so that an explicit null stays (and is left to validation).
            &json!({"type": "object", "required": ["v"], "properties": {"v": schema}}),
        );
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
        coerce_args(
            &mut args,
            &json!({"properties": {"known": {"type": "integer"}}}),
        );
        assert_eq!(Value::Object(args), json!({"known": 1, "other": "1"}));
    }
}

#[cfg(test)]
mod parity {
    use super::*;
    use serde_json::json;

    fn coerce_with(args: Value, parameters: Value) -> Value {
        let mut args = args.as_object().unwrap().clone();
        coerce_args(&mut args, &parameters);
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
