//! Tool definitions, toolsets in config and availability end to end (docs/calls.md).

mod common;

use common::{Fixture, call, simple_tool};
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost::{Format, Selection};

fn names(list: &[Arc<Value>], format: Format) -> Vec<String> {
    list.iter()
        .map(|d| match format {
            Format::OpenAi => d["function"]["name"].as_str().unwrap().to_string(),
            _ => d["name"].as_str().unwrap().to_string(),
        })
        .collect()
}

fn select(format: Format) -> Selection {
    Selection::default().with_format(format)
}

fn tools_fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("b.lua", &simple_tool("zeta", "beta", "z"));
    fx.tool(
        "a.lua",
        r#"registry.register{ name = "alpha", toolset = "alpha_set",
  schema = { name = "not_the_name", title = "Alpha", annotations = { readOnlyHint = true },
             description = "first", parameters = { type = "object", properties = { q = { type = "string" } }, required = { "q" } } },
  handler = function() return "a" end }
registry.register{ name = "mid", toolset = "beta",
  schema = { description = "middle", parameters = { type = "object" } },
  handler = function() return "m" end }"#,
    );
    fx
}

#[test]
fn definitions_are_sorted_and_the_registered_name_wins() {
    let fx = tools_fixture();
    let host = fx.host();
    let list = host.tool_definitions(&select(Format::OpenAi));
    assert_eq!(names(&list, Format::OpenAi), ["alpha", "mid", "zeta"]);
    assert_eq!(
        *list[0],
        json!({"type": "function", "function": {
            "name": "alpha", "title": "Alpha", "annotations": {"readOnlyHint": true},
            "description": "first",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}})
    );
}

#[test]
fn anthropic_and_mcp_formats_have_their_shapes() {
    let fx = tools_fixture();
    let host = fx.host();
    let anthropic = host.tool_definitions(&select(Format::Anthropic));
    assert_eq!(
        *anthropic[0],
        json!({"name": "alpha", "description": "first",
               "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}})
    );
    let mcp = host.tool_definitions(&select(Format::Mcp));
    assert_eq!(
        *mcp[0],
        json!({"name": "alpha", "title": "Alpha", "description": "first",
               "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
               "annotations": {"readOnlyHint": true, "openWorldHint": false}})
    );
    // Filled in from its effects (docs/effects.md): its handler touches nothing.
    assert_eq!(
        *mcp[1],
        json!({"name": "mid", "description": "middle", "inputSchema": {"type": "object"},
               "annotations": {"readOnlyHint": true, "openWorldHint": false}})
    );
}

#[test]
fn selections_follow_toolsets_and_config_composites() {
    let fx = tools_fixture();
    let host = fx.host_with(
        "disabled_toolsets = [\"alpha_set\"]\n[toolsets.everything]\nincludes = [\"all\"]\n[toolsets.pick]\ntools = [\"zeta\"]\nincludes = [\"pick\"]\n",
    );
    let pick = |enabled: Option<&[&str]>, disabled: &[&str]| {
        let mut selection = Selection::default().with_disabled(disabled.iter().copied());
        if let Some(enabled) = enabled {
            selection = selection.with_toolsets(enabled.iter().copied());
        }
        names(&host.tool_definitions(&selection), Format::OpenAi)
    };
    assert_eq!(
        pick(None, &[]),
        ["mid", "zeta"],
        "config disables alpha_set"
    );
    assert_eq!(pick(Some(&["everything"]), &[]), ["mid", "zeta"]);
    assert_eq!(pick(Some(&["pick"]), &[]), ["zeta"]);
    assert_eq!(pick(Some(&["beta", "unknown"]), &["pick"]), ["mid"]);
}

const PROBED: &str = r#"
local checks = 0
local overrides = 0
registry.register{ name = "probed", toolset = "p",
  schema = { description = "static", parameters = { type = "object" } },
  check_fn = function() checks = checks + 1 return os.time() > 0 end,
  dynamic_schema_overrides = function()
    overrides = overrides + 1
    return { description = "dynamic " .. overrides }
  end,
  handler = function() return checks .. "," .. overrides end }
registry.register{ name = "down", toolset = "p",
  schema = { parameters = { type = "object" } },
  check_fn = function() return false end,
  handler = function() return "never" end }
registry.register{ name = "raises", toolset = "p",
  schema = { description = "static only", parameters = { type = "object" } },
  check_fn = function() error("probe exploded") end,
  handler = function() return "never" end }
registry.register{ name = "bad_override", toolset = "p",
  schema = { description = "kept", parameters = { type = "object" } },
  dynamic_schema_overrides = function() error("override exploded") end,
  handler = function() return "ok" end }
"#;

fn description_of(list: &[Arc<Value>], name: &str) -> String {
    list.iter()
        .find(|d| d["function"]["name"] == name)
        .map(|d| {
            d["function"]["description"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| panic!("{name} missing"))
}

#[test]
fn unavailable_tools_are_left_out_and_overrides_merge_on_each_computation() {
    let fx = Fixture::new();
    fx.tool("p.lua", PROBED);
    let host = fx.host();
    let list = host.tool_definitions(&Selection::default());
    assert_eq!(names(&list, Format::OpenAi), ["bad_override", "probed"]);
    assert_eq!(description_of(&list, "probed"), "dynamic 1");
    assert_eq!(description_of(&list, "bad_override"), "kept");
    // A memo hit: the very same list, no recomputation.
    let again = host.tool_definitions(&Selection::default());
    assert!(Arc::ptr_eq(&list, &again));
    // Recomputing merges the overrides again.
    let fresh = host.tool_definitions_uncached(&Selection::default());
    assert_eq!(description_of(&fresh, "probed"), "dynamic 2");

    let down = call(&host, "down", json!({}));
    assert_eq!(down["error_type"], "unavailable");
    assert!(
        down["error"]
            .as_str()
            .unwrap()
            .contains("check_fn returned false"),
        "{down}"
    );
    let raises = call(&host, "raises", json!({}));
    assert!(
        raises["error"].as_str().unwrap().contains("probe exploded"),
        "{raises}"
    );
    let reason = |name: &str| host.unavailable_reason(name, None);
    assert_eq!(reason("probed"), None);
    assert_eq!(reason("down").as_deref(), Some("check_fn returned false"));
    assert!(reason("raises").unwrap().contains("probe exploded"));
}

#[test]
fn check_fn_answers_are_cached_and_invalidation_reprobes() {
    let fx = Fixture::new();
    fx.tool("p.lua", PROBED);
    let host = fx.host();
    let probes = || {
        call(&host, "probed", json!({}))
            .as_str()
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    host.tool_definitions(&Selection::default());
    host.tool_definitions(&Selection::default().with_format(Format::Mcp));
    // One definitions computation per format, one call: the check_fn ran once in all.
    assert_eq!(probes(), "1");
    let before = host.tool_definitions(&Selection::default());
    host.invalidate_availability();
    let after = host.tool_definitions(&Selection::default());
    assert!(
        !Arc::ptr_eq(&before, &after),
        "invalidation must be visible to the memo"
    );
    assert_eq!(probes(), "2");
}

#[test]
fn a_zero_ttl_means_every_computation_probes_again() {
    let fx = Fixture::new();
    fx.tool("p.lua", PROBED);
    let host = fx.host_with("check_ttl_secs = 0\n");
    let first = host.tool_definitions(&Selection::default());
    let second = host.tool_definitions(&Selection::default());
    assert!(
        !Arc::ptr_eq(&first, &second),
        "expired answers must not be served from the memo"
    );
    assert_eq!(description_of(&second, "probed"), "dynamic 2");
}

#[test]
fn the_memo_key_covers_scope_selection_format_and_generation() {
    let fx = tools_fixture();
    let host = fx.host();
    let base = host.tool_definitions(&Selection::default());
    let variants = [
        Selection::default().with_scope("team"),
        Selection::default().with_toolsets(["beta"]),
        Selection::default().with_disabled(["beta"]),
        Selection::default().with_format(Format::Anthropic),
    ];
    for selection in &variants {
        let list = host.tool_definitions(selection);
        assert!(!Arc::ptr_eq(&base, &list), "{selection:?}");
        assert!(
            Arc::ptr_eq(&list, &host.tool_definitions(selection)),
            "{selection:?} memoised"
        );
    }
    // Enabled lists are compared as sets.
    let ab = Selection::default().with_toolsets(["beta", "alpha_set"]);
    let ba = Selection::default().with_toolsets(["alpha_set", "beta", "beta"]);
    assert!(Arc::ptr_eq(
        &host.tool_definitions(&ab),
        &host.tool_definitions(&ba)
    ));
    // A registry change (a reload that removed a tool) moves the generation.
    std::fs::remove_file(fx.tools().join("b.lua")).expect("remove b.lua");
    host.reload();
    let after = host.tool_definitions(&Selection::default());
    assert_eq!(names(&after, Format::OpenAi), ["alpha", "mid"]);
}

#[test]
fn a_runaway_check_fn_is_stopped_and_counts_as_unavailable() {
    let fx = Fixture::new();
    fx.tool(
        "spin.lua",
        "registry.register{ name = 'spin', toolset = 'p', schema = { parameters = { type = 'object' } },\n  check_fn = function() while true do pcall(function() while true do end end) end end,\n  handler = function() return 'never' end }",
    );
    fx.tool("ok.lua", &simple_tool("ok", "p", "fine"));
    let host = fx.host_with("[runtime]\nprobe_timeout_ms = 100\n");
    let list = host.tool_definitions(&Selection::default());
    assert_eq!(names(&list, Format::OpenAi), ["ok"]);
    let out = call(&host, "spin", json!({}));
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("did not finish within 100 ms"),
        "{out}"
    );
    assert_eq!(call(&host, "ok", json!({})), json!("fine"));
}
