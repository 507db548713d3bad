//! The MCP server, driven by the official MCP Python client (`mcp` from PyPI, installed
//! into `target/mcp-venv` on first use) against the real `toolhost serve`.

mod common;

use common::Fixture;
use common::mcp_client::{self, step};
use serde_json::Value;

fn run_client(fx: &Fixture, scenario: &str, extra: &[&str]) -> Vec<Value> {
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let mut args = vec![
        binary.to_str().expect("utf-8 path"),
        fx.root().to_str().expect("utf-8 path"),
        scenario,
    ];
    args.extend_from_slice(extra);
    mcp_client::run_script("client.py", &args)
}

fn text(step: &Value) -> String {
    step["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

const TOOLS: &str = r#"
registry.register{ name = "echo", toolset = "debug", parallel_safe = true,
  schema = { description = "Echo the arguments", parameters = { type = "object",
    properties = { text = { type = "string" }, count = { type = "integer" } } } },
  handler = function(args) return args end }
registry.register{ name = "needs_n", toolset = "debug",
  schema = { description = "Needs an integer", parameters = { type = "object",
    properties = { n = { type = "integer" } }, required = { "n" } } },
  handler = function(args) return "n=" .. args.n end }
registry.register{ name = "spin", toolset = "debug", timeout_ms = 300,
  schema = { description = "Never finishes", parameters = { type = "object" } },
  handler = function() while true do pcall(function() while true do end end) end end }
registry.register{ name = "picture", toolset = "media",
  schema = { description = "An image", parameters = { type = "object" } },
  handler = function()
    return { _multimodal = true, text_summary = "a dot",
      content = { { type = "text", text = "a dot" },
                  { type = "image", data = "iVBORw0KGgo=", mime_type = "image/png" } } }
  end }
registry.register{ name = "nap", toolset = "debug", parallel_safe = true,
  schema = { description = "Sleeps half a second", parameters = { type = "object" } },
  handler = function() time.sleep(500) return "rested" end }
registry.register{ name = "ticker", toolset = "debug", timeout_ms = 60000,
  schema = { description = "Counts until stopped", parameters = { type = "object" } },
  handler = function()
    while true do store.set("ticks", (store.get("ticks") or 0) + 1) time.sleep(20) end
  end }
registry.register{ name = "ticks", toolset = "debug",
  schema = { description = "The ticker's count", parameters = { type = "object" } },
  handler = function() return tostring(store.get("ticks") or 0) end }
registry.register{ name = "hidden", toolset = "secret",
  schema = { description = "Not offered", parameters = { type = "object" } },
  handler = function() return "x" end }
"#;

#[test]
fn a_full_mcp_session_with_the_official_client() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    // The ticker keeps its count in the store: in the fixture, never the user's data dir.
    fx.write("toolhost.toml", "[store]\npath = \"store.sqlite3\"\n");
    let steps = run_client(&fx, "session", &["--disable", "secret", "--watch"]);

    let init = step(&steps, "initialize");
    assert_eq!(init["name"], "toolhost");
    assert_eq!(init["tools_capability"]["listChanged"], true);

    let listed = step(&steps, "list")["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "echo", "nap", "needs_n", "picture", "spin", "ticker", "ticks"
        ],
        "sorted, selection applied"
    );
    assert_eq!(
        listed[2]["inputSchema"]["required"],
        serde_json::json!(["n"])
    );
    assert_eq!(listed[0]["description"], "Echo the arguments");

    let call = step(&steps, "call");
    assert_eq!(call["is_error"], false);
    assert_eq!(
        text(call),
        r#"{"count":3,"text":"hi"}"#,
        "coerced through the pipeline"
    );

    let invalid = step(&steps, "invalid");
    assert_eq!(invalid["is_error"], true);
    let error: Value = serde_json::from_str(&text(invalid)).unwrap();
    assert_eq!(error["error_type"], "invalid_arguments");
    assert_eq!(error["path"], "$.n");

    let unknown = step(&steps, "unknown");
    assert_eq!(unknown["is_error"], true);
    assert!(text(unknown).contains("unknown_tool"));

    let timeout = step(&steps, "timeout");
    assert_eq!(timeout["is_error"], true);
    assert!(
        text(timeout).contains("spin timed out after 300 ms"),
        "{timeout}"
    );
    assert!(timeout["seconds"].as_f64().unwrap() < 5.0, "liveness bound");
    assert_eq!(
        step(&steps, "after_timeout")["is_error"],
        false,
        "the server still answers"
    );

    let picture = step(&steps, "multimodal");
    assert_eq!(picture["content"][0]["type"], "text");
    assert_eq!(picture["content"][1]["type"], "image");
    assert_eq!(picture["content"][1]["mimeType"], "image/png");

    let concurrent = step(&steps, "concurrent");
    assert_eq!(concurrent["errors"], serde_json::json!([false, false]));
    // Two 500 ms naps overlapped (sequential would take 1 s); generous bound either way.
    assert!(
        concurrent["seconds"].as_f64().unwrap() < 0.95,
        "{concurrent}"
    );
}
