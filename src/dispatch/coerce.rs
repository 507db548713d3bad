//! Stage 1: argument coercion (SPEC §6). Models often send `"42"` for an integer or a JSON
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
    fn of(schema: &Value) -> Self {
        let mut accepts = Accepts::default();
        let Some(schema) = schema.as_object() else {
            return accepts;
        };
        match schema.get("type") {
            Some(Value::String(t)) => accepts.add(t),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .for_each(|t| accepts.add(t)),
            _ => {}
        }
        for union in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = schema.get(union) {
                for member in members {
                    let inner = Accepts::of(member);
                    accepts.merge(inner);
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

/// Coerces every argument of `args` that `parameters.properties` describes.
pub(crate) fn coerce_args(args: &mut Map<String, Value>, parameters: &Value) {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in args.iter_mut() {
        if let Some(schema) = properties.get(key) {
            coerce_in_place(value, schema, 0);
        }
    }
}

/// Deepest nesting coerced; deeper values are left alone.
const MAX_DEPTH: usize = 64;

fn coerce_in_place(value: &mut Value, schema: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let accepts = Accepts::of(schema);
    if let Value::String(text) = value
        && !accepts.string
        && let Some(repaired) = from_string(text, &accepts)
    {
        *value = repaired;
    }
    if accepts.only_array() && !matches!(value, Value::Array(_) | Value::Null) {
        let item = std::mem::take(value);
        *value = Value::Array(vec![item]);
    }
    match value {
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    coerce_in_place(item, item_schema, depth + 1);
                }
            }
        }
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, inner) in map.iter_mut() {
                    if let Some(inner_schema) = properties.get(key) {
                        coerce_in_place(inner, inner_schema, depth + 1);
                    }
                }
            }
        }
        _ => {}
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
        coerce_args(
            &mut args,
            &json!({"type": "object", "properties": {"v": schema}}),
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
