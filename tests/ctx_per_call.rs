//! Each handler call's `ctx` and `ctx.caller` are its own: what a call keeps of them, or
//! writes into them with `rawset`, shows another call nothing (the bootstrap shares the
//! hidden half of `ctx.caller` between calls of one caller, never what tool code reaches).

mod common;

use common::{Fixture, call_in};
use serde_json::{Value, json};
use toolhost::{CallContext, Caller};

const TOOLS: &str = r#"
local kept
registry.register{ name = "keep", toolset = "t",
  schema = { description = "Keeps the first ctx it gets", parameters = { type = "object" } },
  handler = function(args, ctx)
    kept = kept or ctx
    return { kept_id = kept.tool_call_id, kept_caller = kept.caller.id,
             kept_kind = kept.caller.kind, id = ctx.tool_call_id, caller = ctx.caller.id,
             same = rawequal(kept, ctx) }
  end }
registry.register{ name = "forge", toolset = "t",
  schema = { description = "Writes into its own ctx", parameters = { type = "object" } },
  handler = function(args, ctx)
    rawset(ctx.caller, "id", "root")
    rawset(ctx.caller, "kind", "oauth")
    rawset(ctx, "tool_name", "forged")
    local scopes = ctx.caller.scopes
    if scopes then scopes[#scopes + 1] = "admin" end
    return { id = ctx.caller.id, tool_name = ctx.tool_name }
  end }
registry.register{ name = "fail", toolset = "t",
  schema = { description = "Raises mid-call", parameters = { type = "object" } },
  handler = function(args, ctx)
    rawset(ctx.caller, "id", "root")
    error("boom")
  end }
registry.register{ name = "spin", toolset = "t", timeout_ms = 50,
  schema = { description = "Runs past its deadline", parameters = { type = "object" } },
  handler = function(args, ctx)
    rawset(ctx.caller, "id", "root")
    while true do end
  end }
registry.register{ name = "variadic", toolset = "t",
  schema = { description = "Finds its ctx among its varargs", parameters = { type = "object" } },
  handler = function(args, ...)
    local ctx = ...
    return { id = ctx.tool_call_id, caller = ctx.caller.id, count = select('#', ...) }
  end }
registry.register{ name = "whoami", toolset = "t",
  schema = { description = "Who is calling", parameters = { type = "object" } },
  handler = function(args, ctx)
    return { id = ctx.caller.id, kind = ctx.caller.kind, client_id = ctx.caller.client_id or "none",
             scopes = table.concat(ctx.caller.scopes or {}, " "), tool_name = ctx.tool_name,
             tool_call_id = ctx.tool_call_id or "none", raw = next(ctx.caller) or "empty",
             has_call = type(ctx.call), has_progress = type(ctx.progress),
             missing = ctx.nothing == nil }
  end }
"#;

/// The host, and the fixture whose directory it reads.
fn host() -> (Fixture, toolhost::Host) {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let host = fx.host();
    (fx, host)
}

/// A call's result as JSON (a table result comes as its JSON text).
fn parsed(result: Value) -> Value {
    match &result {
        Value::String(text) => serde_json::from_str(text).unwrap_or(result),
        _ => result,
    }
}

fn run(host: &toolhost::Host, tool: &str, ctx: &CallContext) -> Value {
    parsed(call_in(host, tool, json!({}), ctx))
}

fn local(id: &str) -> CallContext {
    CallContext::default().with_tool_call_id(id)
}

fn oauth(id: &str, sub: &str) -> CallContext {
    local(id).with_caller(Caller::oauth(
        sub,
        Some("agent".to_string()),
        vec!["read".to_string()],
    ))
}

#[test]
fn a_variadic_handler_gets_its_ctx() {
    // A handler of one parameter gets no `ctx` built (it could not read it); one that takes
    // `...` can, and gets it.
    let (_fx, host) = host();
    let out = run(&host, "variadic", &local("v1"));
    assert_eq!(out, json!({ "id": "v1", "caller": "local", "count": 1 }));
}

#[test]
fn a_handler_rewritten_to_take_its_ctx_gets_it_after_a_reload() {
    // Whether a handler can see its `ctx` is checked per function: the same tool, its
    // handler given a second parameter by a reload, gets its `ctx` from then on.
    let fx = Fixture::new();
    let file = |handler: &str| {
        format!(
            "registry.register{{ name = 'shape', toolset = 't',\n  schema = {{ parameters = {{ type = 'object' }} }},\n  handler = {handler} }}\n"
        )
    };
    fx.tool("shape.lua", &file("function(args) return 'plain' end"));
    let host = fx.host();
    assert_eq!(run(&host, "shape", &local("r1")), json!("plain"));
    fx.tool(
        "shape.lua",
        &file("function(args, ctx) return 'sees ' .. ctx.tool_call_id end"),
    );
    host.reload();
    assert_eq!(run(&host, "shape", &local("r2")), json!("sees r2"));
}

#[test]
fn a_ctx_kept_from_an_earlier_call_still_shows_that_call() {
    let (_fx, host) = host();
    run(&host, "keep", &local("first"));
    let second = run(
        &host,
        "keep",
        &local("second").with_caller(Caller::token("ci")),
    );
    assert_eq!(
        second,
        json!({ "kept_id": "first", "kept_caller": "local", "kept_kind": "local",
                "id": "second", "caller": "ci", "same": false })
    );
}

#[test]
fn a_ctx_kept_by_a_call_of_the_same_caller_keeps_its_own_values() {
    let (_fx, host) = host();
    run(&host, "keep", &local("first"));
    let second = run(&host, "keep", &local("second"));
    assert_eq!(second["kept_id"], "first", "{second}");
    assert_eq!(second["id"], "second", "{second}");
    assert_eq!(second["same"], false, "{second}");
}

#[test]
fn what_a_call_rawsets_into_its_ctx_stays_in_that_call() {
    let (_fx, host) = host();
    assert_eq!(
        run(&host, "forge", &local("1")),
        json!({ "id": "root", "tool_name": "forged" })
    );
    assert_eq!(
        run(&host, "whoami", &local("2")),
        json!({ "id": "local", "kind": "local", "client_id": "none", "scopes": "",
                "tool_name": "whoami", "tool_call_id": "2", "raw": "empty",
                "has_call": "function", "has_progress": "function", "missing": true })
    );
}

#[test]
fn a_changed_scopes_list_stays_in_that_call() {
    let (_fx, host) = host();
    run(&host, "forge", &oauth("1", "alice"));
    let next = run(&host, "whoami", &oauth("2", "alice"));
    assert_eq!(next["scopes"], "read", "{next}");
    assert_eq!(next["id"], "alice", "{next}");
}

#[test]
fn each_call_sees_its_own_caller() {
    let (_fx, host) = host();
    for (ctx, id, kind, client) in [
        (local("1"), "local", "local", "none"),
        (
            local("2").with_caller(Caller::token("ci")),
            "ci",
            "token",
            "none",
        ),
        (
            local("3").with_caller(Caller::token("ci")),
            "ci",
            "token",
            "none",
        ),
        (oauth("4", "alice"), "alice", "oauth", "agent"),
        (local("5"), "local", "local", "none"),
    ] {
        let seen = run(&host, "whoami", &ctx);
        assert_eq!(seen["id"], id, "{seen}");
        assert_eq!(seen["kind"], kind, "{seen}");
        assert_eq!(seen["client_id"], client, "{seen}");
        assert_eq!(seen["tool_call_id"], ctx.tool_call_id.unwrap(), "{seen}");
    }
}

#[test]
fn a_handler_raising_mid_call_leaves_the_next_call_clean() {
    let (_fx, host) = host();
    let failed = call_in(&host, "fail", json!({}), &local("1"));
    assert!(failed.to_string().contains("boom"), "{failed}");
    let next = run(&host, "whoami", &local("2"));
    assert_eq!(next["id"], "local", "{next}");
    assert_eq!(next["raw"], "empty", "{next}");
    assert_eq!(next["tool_call_id"], "2", "{next}");
}

#[test]
fn a_handler_stopped_at_its_deadline_leaves_the_next_call_clean() {
    let (_fx, host) = host();
    let stopped = call_in(&host, "spin", json!({}), &local("1"));
    assert_eq!(stopped["error_type"], "timeout", "{stopped}");
    let next = run(&host, "whoami", &local("2"));
    assert_eq!(next["id"], "local", "{next}");
    assert_eq!(next["raw"], "empty", "{next}");
}

/// More callers than a VM keeps: each call still sees its own, the first again after the
/// others pushed it out.
#[test]
fn callers_past_those_a_vm_keeps_each_see_their_own() {
    let (_fx, host) = host();
    let names: Vec<String> = (0..12)
        .map(|i| format!("token-{i}"))
        .chain(["token-0".to_string()])
        .collect();
    for (at, name) in names.iter().enumerate() {
        let ctx = local(&at.to_string()).with_caller(Caller::token(name.as_str()));
        let seen = run(&host, "whoami", &ctx);
        assert_eq!(seen["id"], name.as_str(), "{seen}");
        assert_eq!(seen["kind"], "token", "{seen}");
    }
}
