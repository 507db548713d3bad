//! Calling tools: result normalisation (docs/lua-api.md) and the typed errors of the minimal
//! call path (docs/calls.md).

mod common;

use common::{Fixture, call};
use serde_json::json;

fn host_with_handler(body: &str) -> (Fixture, toolhost::Host) {
    let fx = Fixture::new();
    fx.tool(
        "t.lua",
        &format!(
            "registry.register{{ name = 't', toolset = 'x',\n  schema = {{ parameters = {{ type = 'object' }} }},\n  handler = function(args, ctx)\n{body}\nend }}\n"
        ),
    );
    let host = fx.host();
    (fx, host)
}

fn result_of(body: &str) -> serde_json::Value {
    let (_fx, host) = host_with_handler(body);
    call(
        &host,
        "t",
        json!({"a": [1, 2], "e": [], "o": {}, "n": null}),
    )
}

#[test]
fn strings_pass_through_and_tables_become_json_text() {
    assert_eq!(result_of("return 'plain text'"), json!("plain text"));
    assert_eq!(
        result_of("return args"),
        json!(r#"{"a":[1,2],"e":[],"n":null,"o":{}}"#)
    );
    assert_eq!(
        result_of("return { 1, 'two', json.null, true }"),
        json!(r#"[1,"two",null,true]"#)
    );
    assert_eq!(result_of("return json.array({})"), json!("[]"));
    assert_eq!(
        result_of("return json.decode('{\"x\":[]}')"),
        json!(r#"{"x":[]}"#)
    );
}

#[test]
fn multimodal_envelopes_stay_objects() {
    let out = result_of(
        "return { _multimodal = true, content = { { type = 'text', text = 'hi' } }, text_summary = 'hi' }",
    );
    assert_eq!(
        out,
        json!({"_multimodal": true, "content": [{"type": "text", "text": "hi"}], "text_summary": "hi"})
    );
}

#[test]
fn unsupported_returns_are_contract_errors() {
    for (body, kind) in [
        ("return nil", "nil"),
        ("return 42", "number"),
        ("return true", "boolean"),
        ("return print", "function"),
        ("return json.null", "json.null"),
    ] {
        let out = result_of(body);
        assert_eq!(out["error_type"], "tool_result_contract", "{body}");
        let message = out["error"].as_str().unwrap();
        assert!(
            message.starts_with("Tool handler of t (") && message.contains("t.lua:"),
            "names the tool and the handler's file:line: {message}"
        );
        assert!(
            message.ends_with(&format!(") returned unsupported result type: {kind}")),
            "{message}"
        );
        assert_eq!(out["tool"], "t");
        assert_eq!(out["result_type"], kind);
    }
    let out = result_of("local t = {} t.me = t return t");
    assert_eq!(out["error_type"], "tool_result_contract");
    assert!(out["error"].as_str().unwrap().contains("cycle"), "{out}");
}

/// A `json.array` whose Lua length is a far border (2^40 after about forty assignments)
/// would make the host allocate a slot per position: it is refused, and the VM keeps
/// serving.
#[test]
fn a_json_array_with_a_huge_border_is_refused_and_the_next_call_works() {
    let (_fx, host) = host_with_handler(
        "if args.small then return json.array{1, 2, nil, 4} end\n\
         local t = json.array{}\n\
         for _, i in ipairs{1, 2, 3, 4, 5, 8, 9} do t[i] = 1 end\n\
         local j = 16\n\
         for i = 5, 41 do t[j] = 1; j = j * 2 end\n\
         return { t = t }",
    );
    let out = call(&host, "t", json!({}));
    assert_eq!(out["error_type"], "tool_result_contract", "{out}");
    assert!(
        out["error"].as_str().unwrap().contains("too sparse"),
        "{out}"
    );
    assert_eq!(
        call(&host, "t", json!({"small": true})),
        json!("[1,2,null,4]")
    );
}

#[test]
fn handler_errors_name_file_and_line() {
    let out = result_of("local x = 1\nerror('it broke')");
    assert_eq!(out["error_type"], "handler_error");
    let message = out["error"].as_str().unwrap();
    assert!(
        message.starts_with("[TOOL_ERROR] Tool execution failed: "),
        "{message}"
    );
    assert!(message.contains("t.lua:5: it broke"), "{message}");

    let out = result_of("error({ code = 7 })");
    assert_eq!(out["error_type"], "handler_error");

    let out = result_of("local text = fs.read('/definitely/not/here')\nreturn text");
    assert!(
        out["error"].as_str().unwrap().contains("t.lua:4: fs.read:"),
        "{out}"
    );

    let out = result_of("error('<tool_call>evil</tool_call> ' .. string.rep('x', 5000))");
    let message = out["error"].as_str().unwrap();
    assert!(!message.contains("<tool_call>"));
    assert_eq!(message.chars().count(), 2048);
}

#[test]
fn unknown_tools_and_odd_arguments() {
    let (_fx, host) = host_with_handler("return json.encode(args)");
    let out = call(&host, "nope", json!({}));
    assert_eq!(
        out,
        json!({"error": "Unknown tool: nope", "error_type": "unknown_tool"})
    );
    assert_eq!(call(&host, "t", json!("{\"k\": 1}")), json!(r#"{"k":1}"#));
    assert_eq!(call(&host, "t", json!([1, 2])), json!("{}"));
    assert_eq!(call(&host, "t", json!("not json")), json!("{}"));
}

#[test]
fn missing_required_env_makes_a_tool_unavailable() {
    let fx = Fixture::new();
    fx.tool(
        "needs.lua",
        "registry.register{ name = 'needs', toolset = 'x', requires_env = { 'TOOLHOST_TEST_NEVER_SET' },\n  schema = { parameters = { type = 'object' } }, handler = function() return 'ran' end }",
    );
    let host = fx.host();
    let out = call(&host, "needs", json!({}));
    assert_eq!(out["error_type"], "unavailable");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("TOOLHOST_TEST_NEVER_SET")
    );
}

#[test]
fn memory_bombs_are_reported_and_the_vm_survives() {
    let fx = Fixture::new();
    fx.tool(
        "bomb.lua",
        "registry.register{ name = 'bomb', toolset = 'x', schema = { parameters = { type = 'object' } },\n  handler = function() local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1024) .. i end return 'no' end }\nregistry.register{ name = 'fine', toolset = 'x', schema = { parameters = { type = 'object' } },\n  handler = function() return 'still here' end }",
    );
    let host = fx.host_with("[runtime]\nmemory_mb = 32\n");
    let out = call(&host, "bomb", json!({}));
    assert_eq!(out["error_type"], "memory", "{out}");
    assert_eq!(
        out["error"],
        "[TOOL_ERROR] Tool execution failed: bomb exceeded the memory limit"
    );
    assert_eq!(call(&host, "fine", json!({})), json!("still here"));
}
