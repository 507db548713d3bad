//! The `rig` feature: a host's tools driven through rig's own tool-set API
//! (`rig_agent::tool::ToolSet`), as a rig agent would call them.
#![cfg(feature = "rig")]

mod common;

use common::Fixture;
use rig_agent::tool::{ToolContext, ToolErrorKind, ToolSet};
use serde_json::json;
use toolhost::{Host, Selection};

const GREET: &str = r#"registry.register{ name = "greet", toolset = "demo",
  schema = { description = "Greet someone",
             parameters = { type = "object", properties = { who = { type = "string" },
                                                           times = { type = "integer" } },
                            required = { "who" } } },
  handler = function(args) return string.rep("Hello, " .. args.who .. "! ", args.times or 1) end }
"#;

const STATS: &str = r#"registry.register{ name = "stats", toolset = "demo",
  schema = { description = "Numbers", parameters = { type = "object" } },
  handler = function() return { count = 3 } end }
"#;

fn host(fx: &Fixture) -> Host {
    fx.tool("greet.lua", GREET);
    fx.tool("stats.lua", STATS);
    fx.host()
}

fn run(set: &ToolSet, name: &str, args: serde_json::Value) -> rig_agent::tool::ToolResult {
    let runtime = common::two_worker_runtime();
    let mut context = ToolContext::new();
    runtime.block_on(set.execute(name, args.to_string(), &mut context))
}

#[test]
fn the_toolset_offers_one_rig_tool_per_tool_with_the_hosts_definitions() {
    let fx = Fixture::new();
    let host = host(&fx);
    let set = host.rig_toolset(&Selection::default());
    let names: Vec<&str> = set.names().collect();
    assert_eq!(names, ["greet", "stats"]);
    let definitions = host.tool_definitions(&Selection::default());
    for (rig, ours) in set.tool_definitions().iter().zip(definitions.iter()) {
        assert_eq!(rig.name.to_string(), ours["function"]["name"]);
        assert_eq!(rig.description, ours["function"]["description"]);
        assert_eq!(rig.parameters, ours["function"]["parameters"]);
    }
}

#[test]
fn rig_calls_go_through_the_pipeline() {
    let fx = Fixture::new();
    let host = host(&fx);
    let set = host.rig_toolset(&Selection::default());
    // "2" is coerced to the integer the schema asks for.
    let out = run(&set, "greet", json!({"who": "Ada", "times": "2"}));
    assert!(out.is_success(), "{:?}", out.error().map(|e| e.to_string()));
    assert_eq!(out.output().as_text(), Some("Hello, Ada! Hello, Ada! "));
    let stats = run(&set, "stats", json!({}));
    assert_eq!(stats.output().as_json(), Some(&json!({"count": 3})));
}

#[test]
fn pipeline_errors_are_failed_rig_results_showing_the_error_json() {
    let fx = Fixture::new();
    let host = host(&fx);
    let set = host.rig_toolset(&Selection::default());
    let out = run(&set, "greet", json!({}));
    assert!(out.is_error_kind(ToolErrorKind::InvalidArgs));
    let shown = out.output().render();
    assert!(
        shown.contains("\"error_type\":\"invalid_arguments\""),
        "{shown}"
    );
}

#[test]
fn reloads_are_visible_to_existing_rig_tools() {
    let fx = Fixture::new();
    let host = host(&fx);
    let set = host.rig_toolset(&Selection::default());
    let tools = host.rig_tools(&Selection::default());
    fx.tool("greet.lua", &GREET.replace("Hello, ", "Hi, "));
    host.reload();
    let out = run(&set, "greet", json!({"who": "Ada"}));
    assert_eq!(out.output().as_text(), Some("Hi, Ada! "));
    std::fs::remove_file(fx.tools().join("stats.lua")).expect("remove stats.lua");
    host.reload();
    let stats = tools.iter().find(|t| *t.name() == "stats").unwrap();
    assert!(!stats.is_live(), "a removed tool reports itself gone");
    let gone = run(&set, "stats", json!({}));
    assert!(gone.is_error_kind(ToolErrorKind::NotFound));
}
