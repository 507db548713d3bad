//! MCP protocol completeness over both transports, with the official Python client:
//! structured output, annotations, every content type, progress, logging, call ids, client
//! roots and list_changed.

mod common;

use common::Fixture;
use common::mcp_client::{run_script, step};
use serde_json::{Value, json};

const TOOLS: &str = r#"
registry.register{ name = "shape", toolset = "t",
  annotations = { title = "A shape", read_only = true, open_world = false },
  schema = { description = "Structured", parameters = { type = "object",
    properties = { n = { type = "integer" } } } },
  output_schema = { type = "object", properties = { sides = { type = "integer" } },
    required = { "sides" } },
  handler = function(args) return { sides = args.n } end }
registry.register{ name = "bad_shape", toolset = "t",
  schema = { description = "Breaks its output schema", parameters = { type = "object" } },
  output_schema = { type = "object", properties = { sides = { type = "integer" } } },
  handler = function() return { sides = "many" } end }
registry.register{ name = "media", toolset = "t",
  schema = { description = "Every content type", parameters = { type = "object" } },
  handler = function()
    return { _multimodal = true, text_summary = "all", content = {
      { type = "text", text = "a" },
      { type = "image", data = "iVBORw0KGgo=", mime_type = "image/png" },
      { type = "audio", data = "UklGRg==", mime_type = "audio/wav" },
      { type = "resource", uri = "file:///notes.txt", mime_type = "text/plain", text = "notes" },
    } }
  end }
registry.register{ name = "steps", toolset = "t",
  schema = { description = "Reports progress", parameters = { type = "object",
    properties = { n = { type = "integer" } } } },
  handler = function(args, ctx)
    for i = 1, args.n do time.sleep(60) ctx.progress(i, args.n, "step " .. i) end
    return "done"
  end }
registry.register{ name = "chatty", toolset = "t",
  schema = { description = "Logs", parameters = { type = "object" } },
  handler = function()
    log.debug("a debug line") log.info("an info line") log.warn("a warning")
    return "said"
  end }
registry.register{ name = "whoami", toolset = "t",
  schema = { description = "The call id", parameters = { type = "object" } },
  handler = function(_, ctx) return ctx.tool_call_id end }
registry.register{ name = "peek", toolset = "t",
  schema = { description = "Reads a file", parameters = { type = "object",
    properties = { path = { type = "string" } }, required = { "path" } } },
  handler = function(args) return fs.read(args.path) end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("inside/hello.txt", "from the client's root");
    fx.write("outside.txt", "not for tools");
    fx
}

fn run(transport: &str, extra: &[&str]) -> Vec<Value> {
    let fx = fixture();
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let mut args = vec![
        transport,
        binary.to_str().expect("utf-8 path"),
        fx.root().to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    run_script("protocol.py", &args)
}

fn tool<'a>(steps: &'a [Value], name: &str) -> &'a Value {
    step(steps, "list")["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Every protocol feature, asserted for one transport.
fn check_protocol(steps: &[Value]) {
    let capabilities = &step(steps, "initialize")["capabilities"];
    assert!(capabilities.get("logging").is_some(), "{capabilities}");
    assert_eq!(capabilities["tools"]["listChanged"], true);

    let shape = tool(steps, "shape");
    assert_eq!(shape["title"], "A shape");
    assert_eq!(
        shape["annotations"],
        json!({"title": "A shape", "readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(shape["outputSchema"]["required"], json!(["sides"]));

    let structured = &step(steps, "structured")["result"];
    assert_eq!(structured["structuredContent"], json!({"sides": 3}));
    assert_eq!(text(structured), r#"{"sides":3}"#);

    let contract = &step(steps, "contract")["result"];
    assert_eq!(contract["isError"], true);
    let error: Value = serde_json::from_str(text(contract)).unwrap();
    assert_eq!(error["error_type"], "tool_result_contract");
    assert_eq!(error["path"], "$.sides");
    assert_eq!(error["tool"], "bad_shape");

    let media = &step(steps, "media")["result"]["content"];
    let types: Vec<&str> = media
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["text", "image", "audio", "resource"]);
    assert_eq!(media[2]["mimeType"], "audio/wav");
    assert_eq!(media[3]["resource"]["text"], "notes");

    let progress = step(steps, "progress");
    let reports = progress["reports"].as_array().unwrap();
    assert!(!reports.is_empty(), "{progress}");
    let last = reports.last().unwrap();
    assert_eq!(last["progress"], 5.0, "the last report always arrives");
    assert_eq!(last["total"], 5.0);
    assert_eq!(last["message"], "step 5");

    let default = step(steps, "logging_default")["logs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(default.len(), 1, "warnings only by default: {default:?}");
    assert_eq!(default[0]["level"], "warning");
    let info = step(steps, "logging_info")["logs"]
        .as_array()
        .unwrap()
        .clone();
    let levels: Vec<&str> = info.iter().map(|l| l["level"].as_str().unwrap()).collect();
    assert_eq!(levels, ["info", "warning"], "debug filtered out");
    assert_eq!(info[0]["logger"], "chatty");
    assert_eq!(info[0]["data"]["message"], "an info line");

    let id = text(&step(steps, "call_id")["result"]).to_string();
    assert!(
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()),
        "the JSON-RPC id as JSON text, got {id:?}"
    );

    let roots = step(steps, "roots");
    assert_eq!(text(&roots["inside"]), "from the client's root");
    assert_eq!(roots["outside"]["isError"], true, "{roots}");
}

#[test]
fn protocol_features_over_stdio() {
    check_protocol(&run("stdio", &[]));
}

#[test]
fn protocol_features_over_http() {
    check_protocol(&run("http", &[]));
}

#[test]
fn list_changed_reaches_http_sessions() {
    let steps = run("http", &["--watch"]);
    assert_eq!(step(&steps, "list_changed")["received"], true);
    assert!(
        step(&steps, "relist")["names"]
            .as_array()
            .unwrap()
            .contains(&json!("added"))
    );
}
