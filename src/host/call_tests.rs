//! One call, one object: what the host decides before a call reaches its VM (the tool a
//! `tool_call` names, the functions the VM must hold) and what the call's outcome says.

use super::Host;
use crate::dispatch::{CallOutcome, ToolResult};
use crate::registry::{CallContext, Handler, LuaFnId};
use serde_json::{Value, json};
use std::path::Path;

const TOOLS_A: &str = r#"
registry.register{ name = "shape", toolset = "t",
  schema = { description = "Structured", parameters = { type = "object" } },
  output_schema = { type = "object", properties = { sides = { type = "integer" } } },
  handler = function() return { sides = 4 } end }
registry.register{ name = "plain", toolset = "t",
  schema = { description = "A table, no output schema", parameters = { type = "object" } },
  handler = function() return { sides = 3 } end }
"#;

const TOOLS_B: &str = r#"
registry.register{ name = "other", toolset = "u",
  schema = { description = "Another file's tool", parameters = { type = "object" } },
  handler = function() return "other" end }
"#;

/// A host over the two files above; `tool_search` is on, so every tool is deferred behind
/// the bridge (and still callable directly).
fn host(root: &Path) -> Host {
    let tools = root.join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    std::fs::write(tools.join("a.lua"), TOOLS_A).expect("a.lua");
    std::fs::write(tools.join("b.lua"), TOOLS_B).expect("b.lua");
    let config = root.join("toolhost.toml");
    std::fs::write(&config, "[tool_search]\nenabled = \"on\"\n").expect("config");
    Host::builder()
        .tools_dir(tools)
        .cache_dir(root.join("cache"))
        .store_file(root.join("store.sqlite3"))
        .config_file(config)
        .build()
        .expect("host builds")
}

fn outcome(host: &Host, name: &str, args: Value) -> CallOutcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(host.handle_call(name, args, &CallContext::default()))
}

fn handler_of(host: &Host, name: &str) -> LuaFnId {
    match &host
        .inner
        .registry
        .snapshot()
        .lookup(name, None)
        .expect(name)
        .handler
    {
        Handler::Lua(id) => *id,
        Handler::Native(_) => panic!("{name} has a Lua handler"),
    }
}

#[test]
fn the_outcome_says_structured_only_for_the_tool_called_with_an_output_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(dir.path());
    let direct = outcome(&host, "shape", json!({}));
    assert_eq!(direct.result, ToolResult::Json(json!({"sides": 4})));
    assert!(direct.structured, "shape declares an output_schema");
    let plain = outcome(&host, "plain", json!({}));
    assert!(matches!(plain.result, ToolResult::Json(_)), "{plain:?}");
    assert!(!plain.structured, "plain declares none");
    // Through the bridge the result is `tool_call`'s, which declares no output schema.
    let bridged = outcome(&host, "tool_call", json!({"name": "shape"}));
    assert_eq!(bridged.result, direct.result);
    assert!(!bridged.structured);
    let unknown = outcome(&host, "nope", json!({}));
    assert!(unknown.result.is_error() && !unknown.structured);
}

#[test]
fn a_tool_call_is_routed_before_the_vm_is_chosen_by_the_bridges_one_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(dir.path());
    let (world, state) = host.current();
    let ctx = CallContext::default();
    // `calls` wins over a top-level `name`, as the bridge reads it: the VM must hold the
    // functions of the tool the call will really run.
    let args = json!({"name": "other", "calls": [{"name": "shape", "arguments": {}}]});
    let request = host
        .inner
        .pipeline
        .prepare(&host.env(&world, &state), "tool_call", args, &ctx);
    let needs = request.needs();
    assert!(needs.contains(&handler_of(&host, "shape")), "{needs:?}");
    assert!(!needs.contains(&handler_of(&host, "other")), "{needs:?}");
    // The call itself reaches that tool.
    let reached = outcome(
        &host,
        "tool_call",
        json!({"name": "other", "calls": [{"name": "shape", "arguments": {}}]}),
    );
    assert_eq!(reached.result, ToolResult::Json(json!({"sides": 4})));
}
