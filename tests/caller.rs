//! `CallContext::caller` / `ctx.caller` through the library: the embedder's caller reaches
//! the handler, Lua and Rust hooks and the approver, and the tools a handler calls with
//! `ctx.call`; a call without one is the local caller.

mod common;

use common::{Fixture, call, call_in};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost::{
    ApprovalRequest, Approver, CallContext, Caller, CallerKind, Hook, HookCall, PreDecision,
};

const TOOLS: &str = r#"
registry.register{ name = "whoami", toolset = "t",
  schema = { description = "Who is calling", parameters = { type = "object" } },
  handler = function(args, ctx)
    return { id = ctx.caller.id, kind = ctx.caller.kind,
             client_id = ctx.caller.client_id or "none",
             scopes = table.concat(ctx.caller.scopes or {}, " ") }
  end }
registry.register{ name = "relay", toolset = "t",
  schema = { description = "Calls whoami", parameters = { type = "object" } },
  handler = function(args, ctx) return ctx.call("whoami", {}) end }
registry.register{ name = "impostor", toolset = "t",
  schema = { description = "Tries to change who it is", parameters = { type = "object" } },
  handler = function(args, ctx)
    local ok, err = pcall(function() ctx.caller.id = "root" end)
    return { changed = ok, id = ctx.caller.id }
  end }
registry.register{ name = "guarded", toolset = "t", requires_approval = true,
  schema = { description = "Needs approval", parameters = { type = "object" } },
  handler = function() return "ran" end }
registry.hook("pre_tool_call", function(call)
  if call.tool_name == "whoami" and call.caller.id == "mallory" then
    return { action = "block", message = "no calls for " .. call.caller.kind .. ":" .. call.caller.id }
  end
end)
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx
}

/// A call's result as JSON (a table result comes as its JSON text).
fn parsed(result: Value) -> Value {
    match &result {
        Value::String(text) => serde_json::from_str(text).unwrap_or(result),
        _ => result,
    }
}

fn oauth_ctx(sub: &str) -> CallContext {
    CallContext::default().with_caller(Caller::oauth(
        sub,
        Some("agent".to_string()),
        vec!["read".to_string(), "write".to_string()],
    ))
}

#[test]
fn a_call_without_a_caller_is_local() {
    let host = fixture().host();
    assert_eq!(
        parsed(call(&host, "whoami", json!({}))),
        json!({ "id": "local", "kind": "local", "client_id": "none", "scopes": "" })
    );
}

#[test]
fn the_handler_sees_the_embedders_caller() {
    let host = fixture().host();
    assert_eq!(
        parsed(call_in(&host, "whoami", json!({}), &oauth_ctx("alice"))),
        json!({ "id": "alice", "kind": "oauth", "client_id": "agent", "scopes": "read write" })
    );
}

#[test]
fn a_nested_call_inherits_the_caller() {
    let host = fixture().host();
    let ctx = CallContext::default().with_caller(Caller::token("ci"));
    let out = parsed(call_in(&host, "relay", json!({}), &ctx));
    assert_eq!(out["id"], "ci", "{out}");
    assert_eq!(out["kind"], "token", "{out}");
}

#[test]
fn a_handler_cannot_change_its_caller() {
    let host = fixture().host();
    let ctx = CallContext::default().with_caller(Caller::token("ci"));
    assert_eq!(
        parsed(call_in(&host, "impostor", json!({}), &ctx)),
        json!({ "changed": false, "id": "ci" })
    );
}

#[test]
fn a_lua_hook_sees_the_caller() {
    let host = fixture().host();
    let out = call_in(&host, "whoami", json!({}), &oauth_ctx("mallory"));
    assert_eq!(out["error_type"], "blocked", "{out}");
    let message = out["error"].as_str().unwrap_or_default();
    assert!(message.contains("no calls for oauth:mallory"), "{out}");
}

/// Records the callers a Rust hook and the approver saw.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String, CallerKind)>>>);

impl Hook for Seen {
    fn pre_tool_call(&self, call: &HookCall<'_>) -> PreDecision {
        let caller = &call.ctx.caller;
        self.0
            .lock()
            .push(("hook".into(), caller.id().to_string(), caller.kind()));
        PreDecision::Continue
    }
}

impl Approver for Seen {
    fn approve(&self, request: &ApprovalRequest<'_>) -> bool {
        let caller = &request.ctx.caller;
        self.0
            .lock()
            .push(("approver".into(), caller.id().to_string(), caller.kind()));
        caller.kind() == CallerKind::Token
    }
}

#[test]
fn rust_hooks_and_the_approver_see_the_caller() {
    let fx = fixture();
    let seen = Seen::default();
    let host = fx
        .builder()
        .hook(seen.clone())
        .approver(seen.clone())
        .build()
        .expect("host builds");
    let ci = CallContext::default().with_caller(Caller::token("ci"));
    assert_eq!(call_in(&host, "guarded", json!({}), &ci), json!("ran"));
    let refused: Value = call(&host, "guarded", json!({}));
    assert_eq!(refused["error_type"], "approval_denied", "{refused}");
    let seen = seen.0.lock().clone();
    assert_eq!(
        seen,
        [
            ("hook".to_string(), "ci".to_string(), CallerKind::Token),
            ("approver".to_string(), "ci".to_string(), CallerKind::Token),
            ("hook".to_string(), "local".to_string(), CallerKind::Local),
            (
                "approver".to_string(),
                "local".to_string(),
                CallerKind::Local
            ),
        ]
    );
}
