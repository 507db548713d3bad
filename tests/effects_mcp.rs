//! Effects of tools that call another MCP server's tools (docs/effects.md): `mcp`.

mod common;

use common::fixture_server::py_server;
use common::{Fixture, call, error_of};
use serde_json::json;

#[test]
fn open_world_false_with_an_external_mcp_call_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "relay.lua",
        "registry.register{ name = 'relay', toolset = 't', annotations = { open_world = false },\n  schema = { parameters = { type = 'object' } },\n  handler = function(args, ctx)\n    return ctx.call('mcp__py__echo', { text = 'hi' })\n  end }\n",
    );
    let host = fx.host_with(&py_server(&fx, ""));
    let error = error_of(&host, "relay.lua");
    assert!(error.contains("open_world = false"), "{error}");
    assert!(error.contains("tools-lua/relay.lua:4 (mcp)"), "{error}");
}

#[test]
fn a_read_only_tool_cannot_call_an_external_tool_that_is_not_read_only() {
    let fx = Fixture::new();
    fx.tool(
        "relay.lua",
        "registry.register{ name = 'relay', toolset = 't', annotations = { read_only = true },\n  schema = { parameters = { type = 'object' } },\n  handler = function(args, ctx)\n    return json.encode(ctx.call('mcp__py__' .. 'echo', { text = 'hi' }))\n  end }\n",
    );
    let host = fx.host_with(&py_server(&fx, ""));
    let out = call(&host, "relay", json!({})).to_string();
    assert!(out.contains("mcp__py__echo was not run"), "{out}");
    assert!(out.contains("called by a read-only tool"), "{out}");
}
