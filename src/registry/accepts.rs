//! What a JSON Schema accepts, as argument coercion (docs/calls.md stage 1) reads it: the
//! JSON types of a schema, followed through `$ref` and `anyOf`/`oneOf`; and a tool's
//! top-level parameters read that way once ([`ParameterTypes`], kept with its
//! [`FunctionSchema`](super::FunctionSchema)), so that a call does not walk the schema
//! again for every argument (callgrind: five hashed look-ups per argument, ≈4k
//! instructions of a three-argument call; ≈4.9k with the checks around them).

use serde_json::{Map, Value};

/// The JSON types a schema accepts, read from `type`, or from the members of
/// `anyOf`/`oneOf` (a `[T, null]` union is T that may also be null).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    pub(crate) string: bool,
    pub(crate) integer: bool,
    pub(crate) number: bool,
    pub(crate) boolean: bool,
    pub(crate) array: bool,
    pub(crate) object: bool,
    pub(crate) null: bool,
}

impl Accepts {
    /// What `schema` accepts: its `type` when it has one (a `type` wins over any
    /// `anyOf`/`oneOf` beside it), else the union of its `anyOf`/`oneOf` members (each
    /// followed through `$ref`). `nullable: true` adds null.
    ///
    /// A union member that leads back to a schema being read (`A = {"anyOf": [{"$ref":
    /// "#/$defs/A"}, …]}`) adds nothing; unions of unions are read for at most
    /// [`MAX_UNION_VISITS`] schemas, and what lies beyond adds nothing.
    pub(crate) fn of(schema: &Value, root: &Value) -> Self {
        let mut budget = MAX_UNION_VISITS;
        Self::within(schema, root, &mut budget, &mut Vec::new())
    }

    /// [`of`](Self::of), visiting at most `budget` more schemas; `reading` holds the
    /// schemas being read, outermost first.
    fn within<'a>(
        schema: &'a Value,
        root: &'a Value,
        budget: &mut usize,
        reading: &mut Vec<&'a Value>,
    ) -> Self {
        let mut accepts = Accepts::default();
        let schema = resolve(schema, root);
        if *budget == 0 || reading.iter().any(|open| std::ptr::eq(*open, schema)) {
            return accepts;
        }
        *budget -= 1;
        let Some(object) = schema.as_object() else {
            return accepts;
        };
        match object.get("type") {
            Some(Value::String(t)) => accepts.add(t),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .for_each(|t| accepts.add(t)),
            _ => {
                reading.push(schema);
                for member in union_members(object) {
                    let member = resolve(member, root);
                    accepts.merge(Accepts::within(member, root, budget, reading));
                    if member.get("const") == Some(&Value::Null) {
                        accepts.null = true;
                    }
                }
                reading.pop();
            }
        }
        if object.get("nullable") == Some(&Value::Bool(true)) {
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
    pub(crate) fn only_array(&self) -> bool {
        self.array && !(self.string || self.integer || self.number || self.boolean || self.object)
    }
}

/// The members of a schema's `anyOf`/`oneOf`.
pub(crate) fn union_members(schema: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|key| schema.get(key).and_then(Value::as_array))
        .flatten()
}

/// Most schemas one reading of what a schema accepts visits (itself and its unions'
/// members, at any depth): a union that refers to itself recursed without end (a stack
/// overflow, which aborts the process) and unions of unions grow exponentially. Real
/// schemas stay far below it.
const MAX_UNION_VISITS: usize = 256;

/// Most `$ref` hops followed for one schema (a cycle ends here).
const MAX_REF_HOPS: usize = 16;

/// `schema` with `$ref`s to `#/$defs/…` or `#/definitions/…` of `root` (the parameters
/// schema) followed; a reference that does not resolve, leaves the document or loops is
/// left as it is.
pub(crate) fn resolve<'a>(mut schema: &'a Value, root: &'a Value) -> &'a Value {
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

/// The `items` schema an array value is normalised against: the schema's own, else that of
/// its union's array member.
pub(crate) fn items_schema<'a>(schema: &'a Value, root: &'a Value) -> Option<&'a Value> {
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
pub(crate) fn object_schema<'a>(schema: &'a Value, root: &'a Value) -> Option<&'a Value> {
    if schema.get("properties").is_some_and(Value::is_object) {
        return Some(schema);
    }
    let map = schema.as_object()?;
    union_members(map)
        .map(|member| resolve(member, root))
        .find(|member| member.get("properties").is_some_and(Value::is_object))
}

/// Whether an object schema names required keys (a blank string then is not `{}`).
pub(crate) fn has_required(schema: &Value, root: &Value) -> bool {
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

/// One top-level property of a tool's parameters, as coercion reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parameter {
    /// What its (resolved) schema accepts.
    pub(crate) accepts: Accepts,
    /// Whether an explicit null given for it is dropped: it is optional (the parameters'
    /// `required` does not name it) and its schema does not allow null.
    pub(crate) drops_null: bool,
    /// Whether its schema names required keys (see [`has_required`]).
    pub(crate) has_required: bool,
    /// Whether its schema describes what is inside an array or an object (`items`,
    /// `properties`, directly or in a union member): a value of it is coerced against the
    /// schema itself.
    pub(crate) nested: bool,
}

/// Each top-level property of a tool's `parameters`, read once.
#[derive(Debug, Default)]
pub(crate) struct ParameterTypes {
    /// By name, sorted by name.
    by_name: Vec<(Box<str>, Parameter)>,
}

impl ParameterTypes {
    /// The properties of `parameters` (a tool's parameters schema, the root its `$ref`s
    /// point into).
    pub(crate) fn of(parameters: &Value) -> Self {
        let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
            return Self::default();
        };
        let required = |key: &str| {
            parameters
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|names| names.iter().any(|name| name == key))
        };
        let mut by_name: Vec<(Box<str>, Parameter)> = properties
            .iter()
            .map(|(name, schema)| {
                let drops_null = !required(name) && !Accepts::of(schema, parameters).null;
                let schema = resolve(schema, parameters);
                let parameter = Parameter {
                    accepts: Accepts::of(schema, parameters),
                    drops_null,
                    has_required: has_required(schema, parameters),
                    nested: items_schema(schema, parameters).is_some()
                        || object_schema(schema, parameters).is_some(),
                };
                (Box::from(name.as_str()), parameter)
            })
            .collect();
        by_name.sort_by(|(a, _), (b, _)| a.cmp(b));
        Self { by_name }
    }

    /// The property `name`, if the parameters describe it.
    pub(crate) fn get(&self, name: &str) -> Option<&Parameter> {
        self.by_name
            .binary_search_by(|(own, _)| (**own).cmp(name))
            .ok()
            .map(|at| &self.by_name[at].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_property_is_read_through_refs_and_unions() {
        let parameters = json!({"type": "object", "required": ["n"],
            "$defs": {"Count": {"type": "integer"}},
            "properties": {
                "n": {"$ref": "#/$defs/Count"},
                "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
                "opts": {"type": "object", "required": ["a"], "properties": {"a": {}}},
                "free": {}}});
        let types = ParameterTypes::of(&parameters);
        let n = types.get("n").expect("n");
        assert!(!n.drops_null && n.accepts.integer && !n.accepts.string && !n.nested);
        let tags = types.get("tags").expect("tags");
        assert!(!tags.drops_null && tags.accepts.array && tags.accepts.null && tags.nested);
        let opts = types.get("opts").expect("opts");
        assert!(opts.drops_null && opts.accepts.object && opts.has_required && opts.nested);
        assert_eq!(types.get("free").expect("free").accepts, Accepts::default());
        assert!(types.get("missing").is_none());
    }

    #[test]
    fn a_union_that_refers_to_itself_ends() {
        let parameters = json!({"type": "object",
            "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "integer"}]}},
            "properties": {"n": {"$ref": "#/$defs/A"}}});
        let n = *ParameterTypes::of(&parameters).get("n").expect("n");
        assert!(n.accepts.integer);
    }

    #[test]
    fn unions_of_unions_are_read_within_the_budget() {
        // Each level doubles the members: 2^40 schemas without a bound.
        let mut defs = serde_json::Map::new();
        for level in 0..40 {
            let next = json!({"$ref": format!("#/$defs/L{}", level + 1)});
            defs.insert(format!("L{level}"), json!({"anyOf": [next.clone(), next]}));
        }
        defs.insert("L40".into(), json!({"type": "string"}));
        let parameters = json!({"$defs": defs, "properties": {"s": {"$ref": "#/$defs/L0"}}});
        let types = ParameterTypes::of(&parameters);
        assert!(types.get("s").is_some());
    }

    #[test]
    fn parameters_without_properties_describe_nothing() {
        assert!(
            ParameterTypes::of(&json!({"type": "object"}))
                .get("a")
                .is_none()
        );
        assert!(ParameterTypes::of(&json!(5)).get("a").is_none());
    }
}
