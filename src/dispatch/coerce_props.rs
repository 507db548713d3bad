//! Property tests: coercion and validation never panic on arbitrary arguments against the
//! benchmark workload's schemas (plus hand-written unions and `$ref`s), coercion is
//! idempotent, and reading the parameters once coerces as walking the schema does.

use super::coerce::{coerce_args, coerce_args_walking};
use crate::registry::ParameterTypes;
use crate::registry::compile_parameters;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The benchmark workload generator, shared with the benches (it needs only `serde_json`).
#[path = "../../benches/common/workload.rs"]
#[allow(unreachable_pub)]
mod workload;

fn workload_schemas() -> Vec<Value> {
    let mut schemas = vec![
        json!({"type": "object", "properties": {
            "u": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "s": {"type": ["string", "integer"]},
            "a": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}},
            "o": {"type": "object", "properties": {"deep": {"type": "array", "items": {"type": "boolean"}}}},
            "n": {"type": "integer", "nullable": true},
            "b": {"type": "boolean"}
        }}),
        json!({"type": "object", "required": ["r"],
            "$defs": {"Count": {"type": "integer"}, "Loop": {"$ref": "#/$defs/Loop", "type": "string"},
                      "Obj": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}},
            "properties": {
                "r": {"$ref": "#/$defs/Count"},
                "l": {"$ref": "#/$defs/Loop"},
                "o": {"$ref": "#/$defs/Obj"},
                "c": {"oneOf": [{"type": "number"}, {"const": null}]},
                "e": {"type": "object"},
                "t": {"type": "array"},
                "x": {}
        }}),
    ];
    // The 133-tool benchmark workload, generated here (never read from outside the
    // repository), so the property always covers all of its schemas.
    let manifest = workload::manifest(133, workload::SEED);
    let tools = manifest["tools"]
        .as_array()
        .expect("the workload lists tools");
    assert_eq!(tools.len(), 133, "the generated workload has every tool");
    for tool in tools {
        schemas.push(tool["schema"]["parameters"].clone());
    }
    schemas
}

/// The generated workloads keep the reference's shape: its counts of tools, toolsets,
/// probes and helpers, unique names each listed in its toolset, 4–6 parameters with the
/// first one or two required; and a seed always draws the same workload.
#[test]
fn generated_workload_has_the_reference_shape_and_is_deterministic() {
    for n in [133, 1000] {
        let m = workload::manifest(n, workload::SEED);
        assert_eq!(
            m,
            workload::manifest(n, workload::SEED),
            "same seed, same workload"
        );
        assert_ne!(
            m["tools"],
            workload::manifest(n, workload::SEED + 1)["tools"]
        );
        let tools = m["tools"].as_array().expect("tools");
        assert_eq!(tools.len(), n);
        assert_eq!(tools[0]["name"], "echo");
        let toolsets = m["toolsets"].as_object().expect("toolsets");
        assert_eq!(toolsets.len(), 28);
        let probes = toolsets
            .values()
            .filter(|t| t["check_fn"].is_string())
            .count();
        assert_eq!(probes, 14);
        assert_eq!(m["helpers"].as_array().map(Vec::len), Some(6));
        let mut names = std::collections::HashSet::new();
        for tool in tools {
            let name = tool["name"].as_str().expect("name");
            assert!(names.insert(name), "{name} is unique");
            let set = &toolsets[tool["toolset"].as_str().expect("toolset")];
            assert!(
                set["tools"]
                    .as_array()
                    .expect("list")
                    .contains(&json!(name))
            );
            assert_eq!(tool["check_fn"], set["check_fn"], "{name}");
            let parameters = &tool["schema"]["parameters"];
            let count = parameters["properties"]
                .as_object()
                .expect("properties")
                .len();
            let required = parameters["required"].as_array().expect("required").len();
            assert!(
                (4..=6).contains(&count) || name == "echo",
                "{name}: {count}"
            );
            assert!((1..=2).contains(&required), "{name}: {required}");
        }
        let listed: usize = toolsets
            .values()
            .map(|t| t["tools"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(listed, n, "every tool listed once");
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just("42".to_string()),
            Just("1e3".to_string()),
            Just("3.14".to_string()),
            Just("true".to_string()),
            Just(" FALSE ".to_string()),
            Just("null".to_string()),
            Just("[1, \"2\", null]".to_string()),
            Just("{\"n\": \"5\"}".to_string()),
            Just("[".to_string()),
            "[a-z0-9 .\\-\\[\\]{}\",:]{0,12}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            // Keys of the hand-written schemas' nested properties too, so nested coercion
            // has work to do.
            prop::collection::btree_map(
                prop_oneof![
                    Just("n".to_string()),
                    Just("deep".to_string()),
                    "[a-z_]{1,8}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Arguments that use the schema's own property names, so coercion has work to do.
fn args_for(schema: &Value) -> impl Strategy<Value = Map<String, Value>> + use<> {
    let names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let names = if names.is_empty() {
        vec!["x".to_string()]
    } else {
        names
    };
    prop::collection::vec((prop::sample::select(names), json_value()), 0..8)
        .prop_map(|pairs| pairs.into_iter().collect())
}

/// Cases per property: 512, or `TOOLHOST_FUZZ_CASES` (what `scripts/fuzz.sh` sets).
fn cases() -> u32 {
    std::env::var("TOOLHOST_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn coercion_never_panics_and_is_idempotent(
        (schema, args) in prop::sample::select(workload_schemas())
            .prop_flat_map(|schema| { let args = args_for(&schema); (Just(schema), args) })
    ) {
        let types = ParameterTypes::of(&schema);
        let mut once = args.clone();
        coerce_args(&mut once, &schema, &types);
        let mut twice = once.clone();
        coerce_args(&mut twice, &schema, &types);
        prop_assert_eq!(&once, &twice);
        let validator = compile_parameters(json!({"parameters": schema}).as_object().unwrap())
            .expect("workload schemas compile");
        let _ = validator.iter_errors(&Value::Object(once)).count();
    }

    #[test]
    fn reading_the_parameters_once_coerces_as_walking_the_schema(
        (schema, args) in prop::sample::select(workload_schemas())
            .prop_flat_map(|schema| { let args = args_for(&schema); (Just(schema), args) })
    ) {
        let mut read_once = args.clone();
        coerce_args(&mut read_once, &schema, &ParameterTypes::of(&schema));
        let mut walked = args;
        coerce_args_walking(&mut walked, &schema);
        prop_assert_eq!(read_once, walked);
    }
}
