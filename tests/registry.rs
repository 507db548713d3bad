//! Registry policy (docs/calls.md): shadowing, override, plugins, scopes, generation,
//! deregistration and native Rust tools.

mod common;

use common::{Fixture, call, call_in, error_of, names, simple_tool};
use serde_json::json;
use toolhost::{CallContext, HandlerError, Host, NativeTool};

fn with_override(name: &str, toolset: &str, result: &str) -> String {
    simple_tool(name, toolset, result)
        .replace("registry.register{", "registry.register{ override = true,")
}

#[test]
fn cross_toolset_collision_is_rejected_with_the_spec_message() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("read_file", "file", "a"));
    fx.tool("b.lua", &simple_tool("read_file", "other", "b"));
    let host = fx.host();
    let error = error_of(&host, "b.lua");
    assert!(
        error.ends_with(
            "b.lua:1: tool 'read_file' (toolset 'other') would shadow existing tool from toolset \
             'file'; pass override = true or remove the existing tool"
        ),
        "{error}"
    );
    assert_eq!(call(&host, "read_file", json!({})), json!("a"));
}

#[test]
fn override_allows_shadowing_and_same_toolset_later_file_wins() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("x", "one", "a"));
    fx.tool("b.lua", &with_override("x", "two", "b"));
    fx.tool("c.lua", &simple_tool("y", "same", "c1"));
    fx.tool("d.lua", &simple_tool("y", "same", "c2"));
    let host = fx.host();
    assert_eq!(call(&host, "x", json!({})), json!("b"));
    assert_eq!(call(&host, "y", json!({})), json!("c2"));
    assert_eq!(host.tools(None)[0].toolset.as_str(), "two");
}

fn plugin_fixture(allow: bool) -> (Fixture, Host) {
    let fx = Fixture::new();
    fx.tool("core.lua", &simple_tool("shared", "core", "builtin"));
    fx.write("plugin/own.lua", simple_tool("plugin_own", "acme", "mine"));
    fx.write(
        "plugin/takeover.lua",
        with_override("shared", "core", "plugin"),
    );
    fx.write(
        "plugin/no_flag.lua",
        simple_tool("shared", "core", "plugin2"),
    );
    let toml = format!("[plugins.acme]\ndir = \"plugin\"\nallow_tool_override = {allow}\n");
    let host = fx.host_with(&toml);
    (fx, host)
}

#[test]
fn plugins_need_override_and_operator_opt_in() {
    let (_fx, host) = plugin_fixture(false);
    let message =
        "plugin 'acme' cannot override tool 'shared' without operator opt-in (allow_tool_override)";
    assert!(
        error_of(&host, "takeover.lua").ends_with(message),
        "{}",
        error_of(&host, "takeover.lua")
    );
    assert!(error_of(&host, "no_flag.lua").ends_with(message));
    assert_eq!(call(&host, "shared", json!({})), json!("builtin"));
    assert_eq!(call(&host, "plugin_own", json!({})), json!("mine"));
    let own = host
        .tools(None)
        .into_iter()
        .find(|t| t.name.as_str() == "plugin_own")
        .unwrap();
    assert_eq!(own.source.to_string(), "plugin:acme");

    let (_fx, host) = plugin_fixture(true);
    // With the opt-in, `override = true` wins; without the flag the plugin is still refused.
    assert_eq!(call(&host, "shared", json!({})), json!("plugin"));
    assert!(error_of(&host, "no_flag.lua").contains("cannot override tool 'shared'"));
}

#[test]
fn scopes_overlay_global_tools_only_for_their_callers() {
    let fx = Fixture::new();
    fx.tool("global.lua", &simple_tool("greet", "t", "global"));
    fx.tool(
        "scoped.lua",
        &simple_tool("greet", "t", "scoped").replace(
            "registry.register{",
            "registry.register{ scope = 'team', override = true,",
        ),
    );
    fx.tool(
        "only_scoped.lua",
        &simple_tool("secret", "t", "s")
            .replace("registry.register{", "registry.register{ scope = 'team',"),
    );
    fx.tool(
        "no_override.lua",
        &simple_tool("greet", "t", "x")
            .replace("registry.register{", "registry.register{ scope = 'other',"),
    );
    let host = fx.host();
    let team = CallContext::default().with_scope("team");
    assert_eq!(call(&host, "greet", json!({})), json!("global"));
    assert_eq!(call_in(&host, "greet", json!({}), &team), json!("scoped"));
    assert_eq!(
        call(&host, "secret", json!({}))["error_type"],
        "unknown_tool"
    );
    assert_eq!(call_in(&host, "secret", json!({}), &team), json!("s"));
    assert_eq!(names(&host, None), ["greet"]);
    assert_eq!(names(&host, Some("team")), ["greet", "secret"]);
    assert!(error_of(&host, "no_override.lua").contains("would shadow existing tool"));
}

#[test]
fn plugins_bound_to_a_scope_register_into_it() {
    let fx = Fixture::new();
    fx.write("plugin/p.lua", simple_tool("ptool", "p", "x"));
    let host = fx.host_with("[plugins.bound]\ndir = \"plugin\"\nscope = \"s1\"\n");
    assert!(names(&host, None).is_empty());
    assert_eq!(names(&host, Some("s1")), ["ptool"]);
}

#[test]
fn generation_moves_when_a_reload_changes_the_tools() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "x"));
    fx.tool("bad.lua", "registry.register{}");
    let host = fx.host();
    let start = host.generation();
    assert!(start >= 1);
    std::fs::remove_file(fx.tools().join("a.lua")).expect("remove a.lua");
    let event = host.reload();
    assert_eq!(event.removed, ["a"]);
    assert!(host.generation() > start);
    assert_eq!(call(&host, "a", json!({}))["error_type"], "unknown_tool");
}

fn echo_native(name: &str, toolset: &str) -> NativeTool {
    NativeTool::new(
        name,
        toolset,
        json!({"description": "native echo", "parameters": {"type": "object"}}),
        |args, ctx| async move {
            Ok(json!(format!(
                "native {} {}",
                args,
                ctx.scope.unwrap_or_default()
            )))
        },
    )
}

#[test]
fn native_tools_are_called_and_collide_like_lua_tools() {
    let fx = Fixture::new();
    fx.tool("clash.lua", &simple_tool("rust_echo", "lua", "x"));
    let host = Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .default_config()
        .native_tool(echo_native("rust_echo", "native"))
        .build()
        .unwrap();
    assert_eq!(
        call(&host, "rust_echo", json!({"a": 1})),
        json!("native {\"a\":1} ")
    );
    assert!(
        error_of(&host, "clash.lua").contains("would shadow existing tool from toolset 'native'")
    );
    assert_eq!(host.tools(None)[0].source.to_string(), "native");

    let bad = Host::builder()
        .default_config()
        .cache_dir(fx.cache())
        .tools_dir(fx.tools())
        .native_tool(NativeTool::new(
            "bad name",
            "t",
            json!({"parameters": {"type": "object"}}),
            |_, _| async { Ok(json!("x")) },
        ))
        .build();
    let error = bad
        .err()
        .expect("invalid native tool is a setup error")
        .to_string();
    assert!(error.contains("'name' must match"), "{error}");
}

#[test]
fn a_native_handler_error_fails_the_call_as_a_lua_raise_does() {
    let fx = Fixture::new();
    let host = Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .default_config()
        .native_tool(NativeTool::new(
            "fails",
            "native",
            json!({"parameters": {"type": "object"}}),
            |_, _| async { Err(HandlerError::from("disk on fire")) },
        ))
        .build()
        .unwrap();
    let result = call(&host, "fails", json!({}));
    assert_eq!(result["error_type"], "handler_error", "{result}");
    assert_eq!(
        result["error"], "[TOOL_ERROR] Tool execution failed: disk on fire",
        "{result}"
    );
}

#[test]
fn a_plugin_overriding_a_builtin_tool_is_audited_in_the_log() {
    let fx = Fixture::new();
    fx.tool("core.lua", &simple_tool("shared", "core", "builtin"));
    fx.write(
        "plugin/takeover.lua",
        with_override("shared", "acme", "plugin"),
    );
    fx.write(
        "toolhost.toml",
        "[plugins.acme]\ndir = \"plugin\"\nallow_tool_override = true\n",
    );
    let out = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args(["--cache-dir", "cache", "list"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("overriding existing tool 'shared' (toolset 'core' from ")
            && stderr.contains("tools-lua/core.lua:1) with toolset 'acme' from ")
            && stderr.contains(") with toolset 'acme' from "),
        "{stderr}"
    );
}
