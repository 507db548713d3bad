//! Loading tool files (docs/lua-api.md): both registration forms, validation messages with
//! file:line and field, atomic per-file loading, hooks.

mod common;

use common::{Fixture, call, error_of, names, simple_tool};
use serde_json::json;

#[test]
fn table_and_positional_forms_register_every_field() {
    let fx = Fixture::new();
    fx.tool(
        "full.lua",
        r#"
registry.register{
  name = "full", toolset = "file",
  schema = { description = "schema text", parameters = { type = "object",
             properties = { path = { type = "string" } }, required = { "path" } } },
  handler = function(args) return "ok" end,
  check_fn = function() return true end,
  requires_env = { "HOME" },
  is_async = true,
  description = "registry text",
  emoji = "📄",
  max_result_size_chars = math.huge,
  dynamic_schema_overrides = function() return {} end,
  override = false,
  timeout_ms = 1500,
  parallel_safe = true,
  requires_approval = true,
}
registry.register("positional", "misc",
  { description = "p", parameters = { type = "object", properties = {} } },
  function() return "pos" end,
  { emoji = "🧭", max_result_size_chars = 10 })
"#,
    );
    let host = fx.host();
    assert_eq!(names(&host, None), ["full", "positional"]);
    let tools = host.tools(None);
    let full = &tools[0];
    assert_eq!(full.toolset.as_str(), "file");
    assert_eq!(full.description, "registry text");
    assert_eq!(full.emoji, "📄");
    assert_eq!(full.requires_env, ["HOME"]);
    assert!(full.parallel_safe && full.requires_approval);
    assert!(full.has_check_fn && full.has_dynamic_schema);
    assert_eq!(full.timeout_ms, Some(1500));
    assert_eq!(
        full.max_result_size_chars,
        Some(toolhost::ResultLimit::Unlimited)
    );
    assert_eq!(full.line, Some(2));
    assert_eq!(full.schema["parameters"]["required"], json!(["path"]));
    let positional = &tools[1];
    assert_eq!(
        positional.description, "p",
        "description defaults to schema.description"
    );
    assert_eq!(
        positional.max_result_size_chars,
        Some(toolhost::ResultLimit::Chars(10))
    );
    assert_eq!(call(&host, "positional", json!({})), json!("pos"));
}

#[test]
fn empty_lua_tables_become_the_json_the_author_meant() {
    let fx = Fixture::new();
    fx.tool(
        "e.lua",
        r#"registry.register{ name = "e", toolset = "t",
  schema = { parameters = { type = "object", properties = {}, required = {},
             anyOf = { { required = {} } } } },
  handler = function() return "x" end }"#,
    );
    let host = fx.host();
    let tool = &host.tools(None)[0];
    assert_eq!(
        tool.schema["parameters"],
        json!({"type":"object","properties":{},"required":[],"anyOf":[{"required":[]}]})
    );
}

#[test]
fn a_file_registers_from_a_loop() {
    let fx = Fixture::new();
    fx.tool(
        "many.lua",
        r#"for _, name in ipairs({ "one", "two", "three" }) do
  registry.register{ name = name, toolset = "loop",
    schema = { parameters = { type = "object" } },
    handler = function() return name end }
end"#,
    );
    let host = fx.host();
    assert_eq!(names(&host, None), ["one", "three", "two"]);
    assert_eq!(call(&host, "two", json!({})), json!("two"));
}

/// Each case: a file body and the exact error it must produce.
#[test]
fn every_validation_error_names_file_line_and_field() {
    let schema = r#"schema = { parameters = { type = "object" } }"#;
    let cases: Vec<(String, String)> = vec![
        (
            "registry.register{ name = 'x', toolset = 't',\n  schema = { parameters = 'oops' }, handler = function() end }".into(),
            "x.lua:1: register: 'schema.parameters' must be a JSON-Schema object, got string".into(),
        ),
        (
            format!("\n\nregistry.register{{ name = 'bad name', toolset = 't', {schema}, handler = print }}"),
            "x.lua:3: register: 'name' must match ^[A-Za-z0-9_-]{1,64}$, got \"bad name\" (bad character ' ')".into(),
        ),
        (
            format!("registry.register{{ toolset = 't', {schema}, handler = print }}"),
            "x.lua:1: register: 'name' is required (a string)".into(),
        ),
        (
            format!("registry.register{{ name = 'x', {schema}, handler = print }}"),
            "x.lua:1: register: 'toolset' is required (a string)".into(),
        ),
        (
            format!("registry.register{{ name = 'x', toolset = 't', {schema} }}"),
            "x.lua:1: register: 'handler' is required (a function)".into(),
        ),
        (
            format!("registry.register{{ name = 'x', toolset = 't', {schema}, handler = 'nope' }}"),
            "x.lua:1: register: 'handler' must be a function, got string".into(),
        ),
        (
            "registry.register{ name = 'x', toolset = 't', handler = print }".into(),
            "x.lua:1: register: 'schema' is required (a table)".into(),
        ),
        (
            "registry.register{ name = 'x', toolset = 't', schema = {}, handler = print }".into(),
            "x.lua:1: register: 'schema.parameters' is required (a JSON-Schema object)".into(),
        ),
        (
            "registry.register{ name = 'x', toolset = 't', schema = { parameters = { type = 'array' } }, handler = print }".into(),
            "x.lua:1: register: 'schema.parameters' must be a JSON-Schema object (type = \"object\"), got type = \"array\"".into(),
        ),
        (
            "registry.register{ name = 'x', toolset = 't', schema = { parameters = { type = 'object', properties = { f = { default = print } } } }, handler = print }".into(),
            "x.lua:1: register: 'schema.parameters.properties.f.default' a function is not JSON".into(),
        ),
        (
            format!("registry.register{{ name = 'x', toolset = 't', {schema}, handler = print, emoj = '!' }}"),
            "x.lua:1: register: unknown field 'emoj' — did you mean 'emoji'?".into(),
        ),
        (
            format!("registry.register{{ name = 'x', toolset = 't', {schema}, handler = print, timeout_ms = -5 }}"),
            "x.lua:1: register: 'timeout_ms' must be a positive integer, got -5".into(),
        ),
        (
            format!("registry.register{{ name = 'x', toolset = 't', {schema}, handler = print, requires_env = {{ 1 }} }}"),
            "x.lua:1: register: 'requires_env[1]' must be a non-empty string, got number".into(),
        ),
        (
            format!("registry.register{{ name = 'x', toolset = 't', {schema}, handler = print, override = 'yes' }}"),
            "x.lua:1: register: 'override' must be a boolean, got string".into(),
        ),
        (
            "registry.hook('before_call', print)".into(),
            "x.lua:1: hook: 'event' must be one of pre_tool_call, post_tool_call, transform_tool_result, got \"before_call\"".into(),
        ),
    ];
    for (body, expected) in cases {
        let fx = Fixture::new();
        fx.tool("x.lua", &body);
        let host = fx.host();
        let error = error_of(&host, "x.lua");
        let shown = fx.tools().join("x.lua").display().to_string();
        let expected = expected.replacen("x.lua", &shown, 1);
        assert!(
            error.starts_with(&expected),
            "body:\n{body}\nexpected: {expected}\n     got: {error}"
        );
        assert!(names(&host, None).is_empty());
    }
}

#[test]
fn invalid_json_schema_is_rejected_at_registration() {
    let fx = Fixture::new();
    fx.tool(
        "x.lua",
        "registry.register{ name = 'x', toolset = 't', handler = print,\n schema = { parameters = { type = 'object', properties = { n = { type = 'integr' } } } } }",
    );
    let host = fx.host();
    let error = error_of(&host, "x.lua");
    // The line of the offending field, its path, and plain words instead of "not valid
    // under any of the schemas listed in the 'anyOf' keyword".
    assert!(
        error.ends_with(
            "x.lua:2: register: schema.parameters.properties.n.type: \"integr\" is not a \
             JSON-Schema type (string, number, integer, boolean, array, object, null)"
        ),
        "{error}"
    );
}

#[test]
fn loading_is_atomic_per_file() {
    let fx = Fixture::new();
    fx.tool(
        "raises.lua",
        &(simple_tool("before_raise", "t", "x") + "error('halfway')\n"),
    );
    fx.tool(
        "one_invalid.lua",
        &(simple_tool("valid_one", "t", "x")
            + "registry.register{ name = 'invalid', toolset = 't', schema = {}, handler = print }\n"),
    );
    fx.tool(
        "caught.lua",
        &(simple_tool("caught_ok", "t", "x")
            + "pcall(registry.register, { name = 'bad!', toolset = 't' })\n"),
    );
    fx.tool("good.lua", &simple_tool("good", "t", "fine"));
    let host = fx.host();
    assert_eq!(names(&host, None), ["good"]);
    assert!(
        error_of(&host, "raises.lua").ends_with("raises.lua:6: halfway"),
        "{}",
        error_of(&host, "raises.lua")
    );
    assert!(
        error_of(&host, "one_invalid.lua")
            .contains("one_invalid.lua:6: register: 'schema.parameters' is required")
    );
    // Even a registration error the file swallowed with pcall fails the whole file.
    assert!(error_of(&host, "caught.lua").contains("register: 'name'"));
    assert_eq!(call(&host, "good", json!({})), json!("fine"));
}

#[test]
fn hooks_are_registered_and_run_in_order() {
    let fx = Fixture::new();
    fx.tool(
        "hooks.lua",
        r#"local seen = {}
registry.hook('pre_tool_call', function(call) seen[#seen + 1] = 'pre:' .. call.tool_name end)
registry.hook('post_tool_call', function(call) seen[#seen + 1] = 'post:' .. call.tool_name end)
registry.register{ name = "seen", toolset = "t", schema = { parameters = { type = "object" } },
  handler = function() return table.concat(seen, ",") end }"#,
    );
    // One VM: the hooks' `seen` list lives in it.
    let host = fx.builder().vms(1).build().expect("host builds");
    assert_eq!(call(&host, "seen", json!({})), json!("pre:seen"));
    assert_eq!(
        call(&host, "seen", json!({})),
        json!("pre:seen,post:seen,pre:seen")
    );
}

#[test]
fn registering_outside_loading_is_an_error() {
    let fx = Fixture::new();
    fx.tool(
        "late.lua",
        r#"registry.register{ name = "late", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function() registry.register{ name = "sneaky" } return "x" end }"#,
    );
    let host = fx.host();
    let out = call(&host, "late", json!({}));
    assert_eq!(out["error_type"], "handler_error");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("registry.register is only available while"),
        "{out}"
    );
    assert_eq!(names(&host, None), ["late"]);
}

#[test]
fn runaway_top_level_code_is_stopped_and_other_files_load() {
    let fx = Fixture::new();
    fx.tool(
        "a_spin.lua",
        &(simple_tool("spin", "t", "x") + "while true do end\n"),
    );
    fx.tool(
        "b_pcall_spin.lua",
        &(simple_tool("pcall_spin", "t", "x")
            + "while true do pcall(function() while true do end end) end\n"),
    );
    fx.tool(
        "c_coroutine_spin.lua",
        &(simple_tool("co_spin", "t", "x")
            + "coroutine.wrap(function() while true do pcall(string.rep, 'x', 10) end end)()\n"),
    );
    fx.tool("d_good.lua", &simple_tool("good", "t", "fine"));
    let started = std::time::Instant::now();
    let host = fx.host_with("[runtime]\nprobe_timeout_ms = 200\n");
    // Liveness bound only: three runaway files, each stopped at its 200 ms deadline.
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(names(&host, None), ["good"]);
    for file in ["a_spin.lua", "b_pcall_spin.lua", "c_coroutine_spin.lua"] {
        let error = error_of(&host, file);
        assert!(
            error.contains("did not finish within 200 ms"),
            "{file}: {error}"
        );
    }
    assert_eq!(call(&host, "good", json!({})), json!("fine"));
}

#[test]
fn a_registration_error_is_typed_with_file_line_and_field() {
    let fx = Fixture::new();
    fx.tool(
        "typed.lua",
        "local x = 1\nregistry.register{ name = 'typed', toolset = 't',\n  schema = { parameters = { type = 'object' } },\n  handler = function() return 'x' end, timeout_ms = -5 }\n",
    );
    let host = fx.host();
    let verdicts = host.discovery();
    let error = common::verdict(&verdicts, "typed.lua")
        .error
        .clone()
        .expect("typed.lua fails to load");
    assert!(error.file.ends_with("typed.lua"), "{error:?}");
    // The line of the field at fault, not of the `registry.register{` it belongs to.
    assert_eq!(error.line, Some(4));
    assert_eq!(error.field.as_deref(), Some("timeout_ms"));
    assert!(
        error
            .message
            .starts_with("register: 'timeout_ms' must be a positive integer"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("{}:4: {}", error.file, error.message)
    );
}
