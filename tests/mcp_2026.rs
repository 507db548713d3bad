//! MCP 2026-07-28 beside 2025-11-25, with the official Python client forcing each revision:
//! `subscriptions/listen` and hot reload, `server/discover`, the per-request log level,
//! caching hints, `Mcp-Method` and custom `x-mcp-header` headers on HTTP, and the
//! registration check of `x-mcp-header` annotations.

mod common;

use common::Fixture;
use common::mcp_client::{run_script, step};
use serde_json::{Value, json};

const TOOLS: &str = r#"
registry.register{ name = "chatty", toolset = "t",
  schema = { description = "Logs", parameters = { type = "object" } },
  handler = function()
    log.debug("a debug line") log.info("an info line") log.warn("a warning")
    return "said"
  end }
registry.register{ name = "route", toolset = "t",
  schema = { description = "Routed by region", parameters = { type = "object",
    properties = { region = { type = "string", ["x-mcp-header"] = "Region" } },
    required = { "region" } } },
  handler = function(args) return "routed to " .. args.region end }
registry.register{ name = "alpha", toolset = "t",
  schema = { description = "First by name", parameters = { type = "object" } },
  handler = function() return "a" end }
"#;

const NEWEST: &str = "2026-07-28";
const LEGACY: &str = "legacy";

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", "[serve]\nlist_ttl_ms = 1234\n");
    fx
}

/// Runs `tests/mcp/modern.py SCENARIO` against a server started in a fresh fixture.
fn run(scenario: &str, transport: &str, mode: &str, extra: &[&str]) -> Vec<Value> {
    let fx = fixture();
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let mut args = vec![
        scenario,
        transport,
        mode,
        binary.to_str().expect("utf-8 path"),
        fx.root().to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    run_script("modern.py", &args)
}

fn assert_list_changed_over_a_subscription(transport: &str) {
    let steps = run("subscribe", transport, NEWEST, &["--watch"]);
    assert_eq!(
        step(&steps, "acknowledged")["honored"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(step(&steps, "event")["kind"], "ToolsListChanged");
    assert!(
        step(&steps, "relist")["names"]
            .as_array()
            .unwrap()
            .contains(&json!("added")),
        "{steps:?}"
    );
}

#[test]
fn a_file_save_reaches_a_subscription_over_stdio() {
    assert_list_changed_over_a_subscription("stdio");
}

#[test]
fn a_file_save_reaches_a_subscription_over_http() {
    assert_list_changed_over_a_subscription("http");
}

/// Runs `modern.py resource_updates` with `note.lua` (a resource) saved once before the
/// server starts; the script saves it again.
fn resource_updates(transport: &str, mode: &str) -> Vec<Value> {
    let fx = fixture();
    fx.tool(
        "note.lua",
        r#"registry.resource{ uri = "note://today", name = "today", read = function() return "first" end }"#,
    );
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let args = [
        "resource_updates",
        transport,
        mode,
        binary.to_str().expect("utf-8 path"),
        fx.root().to_str().expect("utf-8 path"),
        "--watch",
    ];
    run_script("modern.py", &args)
}

fn assert_reread_edited(steps: &[Value]) {
    assert_eq!(
        step(steps, "reread")["result"]["contents"][0]["text"],
        "edited",
        "{steps:?}"
    );
}

#[test]
fn a_saved_resource_file_reaches_a_listen_subscription_over_http() {
    let steps = resource_updates("http", NEWEST);
    // The URI no resource serves is left out of the acknowledged filter.
    assert_eq!(
        step(&steps, "acknowledged")["honored"],
        json!({"resourceSubscriptions": ["note://today"]})
    );
    assert_eq!(step(&steps, "updated")["kind"], "ResourceUpdated");
    assert_eq!(step(&steps, "updated")["uri"], "note://today");
    assert_reread_edited(&steps);
}

#[test]
fn a_saved_resource_file_reaches_a_listen_subscription_over_stdio() {
    let steps = resource_updates("stdio", NEWEST);
    assert_eq!(step(&steps, "updated")["uri"], "note://today");
    assert_reread_edited(&steps);
}

#[test]
fn a_saved_resource_file_reaches_a_legacy_subscriber_over_http() {
    let steps = resource_updates("http", LEGACY);
    assert_eq!(step(&steps, "updated")["uri"], "note://today");
    assert_reread_edited(&steps);
}

#[test]
fn a_saved_resource_file_reaches_a_legacy_subscriber_over_stdio() {
    let steps = resource_updates("stdio", LEGACY);
    assert_eq!(step(&steps, "updated")["uri"], "note://today");
    assert_reread_edited(&steps);
}

#[test]
fn discover_names_both_revisions_and_the_tools_capability() {
    let steps = run("discover", "http", "auto", &[]);
    assert_eq!(step(&steps, "discover")["protocol"], NEWEST);
    let result = &step(&steps, "discover")["result"];
    let versions = result["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!(NEWEST)), "{result}");
    assert!(versions.contains(&json!("2025-11-25")), "{result}");
    assert_eq!(
        result["capabilities"]["tools"]["listChanged"], true,
        "{result}"
    );
    assert_eq!(step(&steps, "discover")["server"], "toolhost");
}

fn levels(lines: &Value) -> Vec<&str> {
    lines
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line["level"].as_str().unwrap())
        .collect()
}

fn assert_log_level_of_each_request(transport: &str) {
    let steps = run("logging", transport, NEWEST, &[]);
    assert_eq!(
        levels(&step(&steps, "no_level")["lines"]),
        Vec::<&str>::new(),
        "a 2026-07-28 request without a log level gets no log lines"
    );
    let info = &step(&steps, "info")["lines"];
    assert_eq!(levels(info), ["info", "warning"], "debug filtered out");
    assert_eq!(info[0]["logger"], "chatty");
    assert_eq!(info[0]["data"]["message"], "an info line");
}

#[test]
fn the_log_level_in_a_requests_meta_is_honoured_over_stdio() {
    assert_log_level_of_each_request("stdio");
}

#[test]
fn the_log_level_in_a_requests_meta_is_honoured_over_http() {
    assert_log_level_of_each_request("http");
}

#[test]
fn a_2026_listing_carries_the_configured_caching_hints_in_name_order() {
    let steps = run("listing", "stdio", NEWEST, &[]);
    let result = &step(&steps, "list")["result"];
    assert_eq!(result["ttlMs"], 1234, "[serve] list_ttl_ms: {result}");
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["resultType"], "complete");
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "chatty", "route"]);
}

#[test]
fn a_2025_session_lists_the_annotated_tool_as_registered() {
    let steps = run("listing", "http", LEGACY, &[]);
    let tools = step(&steps, "list")["result"]["tools"].clone();
    let route = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "route")
        .expect("route is listed");
    assert_eq!(
        route["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
}

/// The JSON-RPC error code of a raw reply's body (JSON, or the last SSE `data:`).
fn error_code(reply: &Value) -> Value {
    let body = reply["body"].as_str().unwrap();
    let message: Value = serde_json::from_str(body).unwrap_or_else(|_| {
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| serde_json::from_str(data.trim()).ok())
            .unwrap_or(Value::Null)
    });
    message["error"]["code"].clone()
}

#[test]
fn custom_headers_are_mirrored_by_the_client_and_checked_by_the_server() {
    let steps = run("headers", "http", NEWEST, &[]);
    let mirrored = &step(&steps, "mirrored")["result"];
    assert_eq!(mirrored["content"][0]["text"], "routed to eu-west");

    let matches = &step(&steps, "param_matches")["reply"];
    assert_eq!(matches["status"], 200, "{matches}");
    assert!(
        matches["body"]
            .as_str()
            .unwrap()
            .contains("routed to eu-west"),
        "{matches}"
    );
    for refused in ["param_mismatch", "param_missing", "method_mismatch"] {
        let reply = &step(&steps, refused)["reply"];
        assert_eq!(reply["status"], 400, "{refused}: {reply}");
        assert_eq!(error_code(reply), -32020, "{refused}: {reply}");
    }
}

#[test]
fn a_bad_header_annotation_is_a_registration_error_naming_file_line_and_field() {
    let fx = Fixture::new();
    fx.tool(
        "bad.lua",
        "-- a header name that would inject a second header\n\
         registry.register{ name = \"inject\", toolset = \"t\",\n\
         \x20 schema = { description = \"x\", parameters = { type = \"object\",\n\
         \x20   properties = { v = { type = \"string\", [\"x-mcp-header\"] = \"A\\r\\nB: 1\" } } } },\n\
         \x20 handler = function() return 1 end }\n",
    );
    fx.tool("good.lua", &common::simple_tool("fine", "t", "ok"));
    let out = fx.toolhost().args(["list"]).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stderr.contains("bad.lua:2"), "{stderr}");
    assert!(
        stderr.contains("'schema.parameters.properties.v.x-mcp-header'"),
        "{stderr}"
    );
    assert!(stderr.contains("is not an HTTP header name"), "{stderr}");
    assert!(
        stdout.contains("fine"),
        "the other tools keep serving: {stdout}"
    );
    assert!(!stdout.contains("inject"), "{stdout}");
}
