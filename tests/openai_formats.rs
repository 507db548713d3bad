//! The OpenAI formats (docs/calls.md#definition-formats): `schema --format responses` and
//! `--strict`, and the same through the Rust API (`Format::OpenAiResponses`,
//! `Selection::with_strict`), checked against the pinned `openai` Python SDK's own types.

mod common;

use common::{Fixture, openai_sdk};
use serde_json::{Value, json};
use toolhost::{Format, Selection};

/// Tools whose schemas exercise strict mode: optional parameters (a scalar, an enum, a
/// nested object, a `$ref`), an array of objects, and keywords strict mode lacks.
const TOOLS: &str = r##"
registry.register{ name = "find", toolset = "t",
  schema = { description = "Find things", parameters = { type = "object",
    properties = {
      query = { type = "string", description = "What to find" },
      limit = { type = "integer", minimum = 1 },
      order = { type = "string", enum = { "asc", "desc" } },
      filter = { type = "object", properties = { tag = { type = "string" } } },
      near = { ["$ref"] = "#/$defs/point" },
      points = { type = "array", items = { ["$ref"] = "#/$defs/point" } },
    },
    required = { "query" },
    ["$defs"] = { point = { type = "object",
      properties = { x = { type = "number" }, y = { type = "number" } },
      required = { "x", "y" } } } } },
  handler = function(args) return args end }
registry.register{ name = "bare", toolset = "t",
  schema = { description = "No parameters", parameters = { type = "object" } },
  handler = function() return "ok" end }
registry.register{ name = "loose", toolset = "t",
  schema = { description = "Keywords strict mode lacks", parameters = { type = "object",
    properties = { name = { type = "string", minLength = 2 } },
    required = { "name" } } },
  handler = function(args) return args.name end }
"##;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx
}

fn schema(fx: &Fixture, args: &[&str]) -> std::process::Output {
    let out = fx
        .toolhost()
        .arg("schema")
        .args(args)
        .output()
        .expect("schema runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn assert_all_ok(verdicts: &[Value], expected: usize) {
    assert_eq!(verdicts.len(), expected, "{verdicts:#?}");
    for verdict in verdicts {
        assert_eq!(verdict["ok"], json!(true), "{verdict:#}");
    }
}

#[test]
fn responses_format_is_what_the_openai_sdk_takes_as_function_tools() {
    let fx = fixture();
    let out = schema(&fx, &["--format", "responses"]);
    assert_all_ok(&openai_sdk::check(&out.stdout, "responses", false), 3);
    let defs: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(defs[0]["name"], "bare");
    assert_eq!(defs[0]["strict"], json!(false));
}

#[test]
fn strict_responses_are_already_strict_by_the_sdks_own_conversion() {
    let fx = fixture();
    let out = schema(&fx, &["--format", "responses", "--strict"]);
    assert_all_ok(&openai_sdk::check(&out.stdout, "responses", true), 3);
}

#[test]
fn strict_chat_completions_tools_are_already_strict_by_the_sdks_own_conversion() {
    let fx = fixture();
    let out = schema(&fx, &["--format", "openai", "--strict"]);
    assert_all_ok(&openai_sdk::check(&out.stdout, "openai", true), 3);
}

#[test]
fn strict_mode_makes_optional_properties_required_and_nullable() {
    let fx = fixture();
    let out = schema(&fx, &["--format", "responses", "--strict"]);
    let defs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = &defs[1];
    assert_eq!(find["name"], "find");
    let parameters = &find["parameters"];
    let mut required: Vec<&str> = parameters["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort();
    assert_eq!(
        required,
        ["filter", "limit", "near", "order", "points", "query"]
    );
    assert_eq!(parameters["additionalProperties"], json!(false));
    let properties = &parameters["properties"];
    assert_eq!(properties["query"]["type"], json!("string"));
    assert_eq!(properties["limit"]["type"], json!(["integer", "null"]));
    assert_eq!(properties["order"]["enum"], json!(["asc", "desc", null]));
    assert_eq!(properties["filter"]["additionalProperties"], json!(false));
    assert_eq!(
        properties["near"]["anyOf"],
        json!([{"$ref": "#/$defs/point"}, {"type": "null"}])
    );
}

#[test]
fn strict_mode_reports_each_unsupported_keyword_on_stderr_and_leaves_it_out() {
    let fx = fixture();
    let out = schema(&fx, &["--format", "responses", "--strict"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "tool 'loose': parameters.properties.name.minLength: not supported in strict mode"
        ),
        "{stderr}"
    );
    let defs: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        defs[2]["parameters"]["properties"]["name"],
        json!({"type": "string"})
    );
}

#[test]
fn a_strict_models_nulls_for_optional_arguments_are_taken_as_not_given() {
    let fx = fixture();
    let args = json!({"query": "q", "limit": null, "order": null, "filter": null,
                      "near": null, "points": null});
    let out = fx
        .toolhost()
        .args(["call", "find", &args.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result, json!({"query": "q"}));
}

#[test]
fn the_rust_api_renders_strict_responses_definitions() {
    let fx = fixture();
    let host = fx.host();
    let selection = Selection::default()
        .with_format(Format::OpenAiResponses)
        .with_strict(true);
    let defs = host.tool_definitions(&selection);
    assert_eq!(
        *defs[0],
        json!({"type": "function", "name": "bare", "description": "No parameters",
               "parameters": {"type": "object", "properties": {}, "required": [],
                              "additionalProperties": false},
               "strict": true})
    );
    // Not strict: the registered schema as it is.
    let plain = host.tool_definitions(&Selection::default().with_format(Format::OpenAiResponses));
    assert_eq!(plain[0]["parameters"], json!({"type": "object"}));
    assert_eq!(plain[0]["strict"], json!(false));
}

#[test]
fn schema_help_lists_every_format_and_an_unknown_one_is_refused() {
    let fx = fixture();
    let help = fx.toolhost().args(["schema", "--help"]).output().unwrap();
    // Wrapped to the terminal's width: compare with the whitespace collapsed.
    let text = String::from_utf8_lossy(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("[possible values: openai, responses, anthropic, mcp]"),
        "{text}"
    );
    let out = fx
        .toolhost()
        .args(["schema", "--format", "gemini"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gemini"));
}
