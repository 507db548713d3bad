//! Parity with the reference registry's own tests (issue: coercion, contracts, fail-closed
//! Rust extensions): each behaviour through the real pipeline, one test each.

mod common;

use common::{Fixture, call};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolhost::{
    ApprovalRequest, Approver, BoxFuture, Hook, HookCall, Middleware, Next, PreDecision, ToolCall,
    ToolResult,
};

/// A host with one tool `echo` whose parameters are `parameters`; it returns its arguments.
fn echo_host(parameters: Value) -> (Fixture, toolhost::Host) {
    let fx = Fixture::new();
    let schema = serde_json::to_string(&parameters).unwrap();
    fx.tool(
        "echo.lua",
        &format!(
            r#"registry.register{{ name = "echo", toolset = "t",
  schema = {{ description = "echo", parameters = json.decode([==[{schema}]==]) }},
  handler = function(args) return args end }}"#
        ),
    );
    let host = fx.host();
    (fx, host)
}

fn echoed(parameters: Value, args: Value) -> Value {
    let (_fx, host) = echo_host(parameters);
    let out = call(&host, "echo", args);
    match out {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        other => other,
    }
}

/// Records the arguments as coercion left them (a pre_tool_call hook runs right after).
struct Capture(Arc<parking_lot::Mutex<Option<Value>>>);

impl Hook for Capture {
    fn pre_tool_call(&self, call: &HookCall<'_>) -> PreDecision {
        *self.0.lock() = Some(call.args.clone());
        PreDecision::Continue
    }
}

#[test]
fn an_explicit_type_wins_over_any_of() {
    // The schema is unsatisfiable as JSON Schema (validation then reports it); what matters
    // is what coercion hands on.
    let fx = Fixture::new();
    fx.tool(
        "echo.lua",
        r#"registry.register{ name = "echo", toolset = "t",
  schema = { description = "echo", parameters = { type = "object", properties = {
    n = { type = "integer", anyOf = { { type = "string" } } } } } },
  handler = function(args) return args end }"#,
    );
    let seen = Arc::new(parking_lot::Mutex::new(None));
    let host = fx
        .builder()
        .hook(Capture(seen.clone()))
        .build()
        .expect("host");
    let _ = call(&host, "echo", json!({"n": "42"}));
    assert_eq!(seen.lock().take(), Some(json!({"n": 42})));
}

#[test]
fn refs_to_defs_and_definitions_are_followed_for_coercion() {
    let out = echoed(
        json!({"type": "object",
            "$defs": {"Address": {"type": "object", "properties": {"zip": {"type": "integer"}}}},
            "definitions": {"Stop": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "properties": {
                "home": {"$ref": "#/$defs/Address"},
                "stops": {"type": "array", "items": {"$ref": "#/definitions/Stop"}}}}),
        json!({"home": "{\"zip\": \"12345\"}", "stops": "[\"{\\\"n\\\": 1}\"]"}),
    );
    assert_eq!(out, json!({"home": {"zip": 12345}, "stops": [{"n": 1}]}));
}

#[test]
fn native_arrays_under_a_union_are_normalised_against_its_items() {
    let out = echoed(
        json!({"type": "object", "properties": {"rows": {"anyOf": [
            {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            {"type": "null"}]}}}),
        json!({"rows": ["{\"n\": \"7\"}"]}),
    );
    assert_eq!(out, json!({"rows": [{"n": 7}]}));
}

#[test]
fn a_blank_string_for_an_object_without_required_keys_becomes_empty() {
    let out = echoed(
        json!({"type": "object", "properties": {
            "options": {"type": "object", "properties": {"fast": {"type": "boolean"}}}}}),
        json!({"options": "   "}),
    );
    assert_eq!(out, json!({"options": {}}));
}

#[test]
fn an_optional_null_is_dropped_so_strict_mode_models_can_omit_it() {
    let out = echoed(
        json!({"type": "object", "required": ["q"], "properties": {
            "q": {"type": "string"}, "limit": {"type": "integer"}}}),
        json!({"q": "x", "limit": null}),
    );
    assert_eq!(out, json!({"q": "x"}));
}

#[test]
fn a_required_null_is_left_for_validation_to_report() {
    let (_fx, host) = echo_host(json!({"type": "object", "required": ["q"],
        "properties": {"q": {"type": "string"}}}));
    let out = call(&host, "echo", json!({"q": null}));
    assert_eq!(out["error_type"], "invalid_arguments", "{out}");
    assert_eq!(out["path"], "$.q");
}

#[test]
fn nullable_true_lets_validation_accept_null() {
    let out = echoed(
        json!({"type": "object", "required": ["when"], "properties": {
            "when": {"type": "string", "nullable": true}}}),
        json!({"when": null}),
    );
    assert_eq!(out, json!({"when": null}));
}

#[test]
fn duration_ms_is_the_same_integer_in_post_and_transform_hooks() {
    let fx = Fixture::new();
    fx.tool(
        "t.lua",
        r#"registry.register{ name = "slow", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() time.sleep(30) return "done" end }
local seen = {}
registry.hook("post_tool_call", function(p) seen.post = p.duration_ms end)
registry.hook("transform_tool_result", function(p)
  return json.encode({ post = seen.post, transform = p.duration_ms,
    integer = math.type(p.duration_ms) })
end)"#,
    );
    let host = fx.host();
    let out = call(&host, "slow", json!({}));
    let seen: Value = serde_json::from_str(out.as_str().unwrap()).unwrap();
    assert_eq!(seen["post"], seen["transform"], "{seen}");
    assert_eq!(seen["integer"], "integer");
    assert!(seen["post"].as_u64().unwrap() >= 30, "{seen}");
}

struct PanickingApprover;

impl Approver for PanickingApprover {
    fn approve(&self, _request: &ApprovalRequest<'_>) -> bool {
        panic!("the approver broke")
    }
}

fn gated_host(
    builder: impl FnOnce(toolhost::HostBuilder) -> toolhost::HostBuilder,
) -> (Fixture, toolhost::Host, Arc<AtomicUsize>) {
    let fx = Fixture::new();
    fx.tool(
        "count.lua",
        r#"registry.register{ name = "count", toolset = "t", requires_approval = true,
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() store.set("runs", (store.get("runs") or 0) + 1) return "ran " .. store.get("runs") end }"#,
    );
    let host = builder(fx.builder()).build().expect("host");
    (fx, host, Arc::new(AtomicUsize::new(0)))
}

#[test]
fn an_approver_that_panics_fails_closed() {
    let (_fx, host, _) = gated_host(|b| b.approver(PanickingApprover));
    let out = call(&host, "count", json!({}));
    assert_eq!(out["error_type"], "blocked", "{out}");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("approval gate failed for count"),
        "{out}"
    );
}

struct Allow;

impl Approver for Allow {
    fn approve(&self, _request: &ApprovalRequest<'_>) -> bool {
        true
    }
}

/// Panics before calling `next`.
struct PanicsBefore(Arc<AtomicUsize>);

impl Middleware for PanicsBefore {
    fn handle<'a>(&'a self, _call: ToolCall, _next: Next<'a>) -> BoxFuture<'a, ToolResult> {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("before next")
    }
}

/// Panics after `next` returned.
struct PanicsAfter;

impl Middleware for PanicsAfter {
    fn handle<'a>(&'a self, call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let _result = next.run(call).await;
            panic!("after next")
        })
    }
}

/// Tags the result, to show the rest of the chain ran.
struct Tag;

impl Middleware for Tag {
    fn handle<'a>(&'a self, call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match next.run(call).await {
                ToolResult::Text(text) => ToolResult::Text(format!("{text} (tagged)")),
                other => other,
            }
        })
    }
}

#[test]
fn a_middleware_that_panics_before_next_is_skipped_and_the_chain_runs() {
    let entered = Arc::new(AtomicUsize::new(0));
    let (_fx, host, _) = gated_host(|b| {
        b.approver(Allow)
            .middleware(PanicsBefore(entered.clone()))
            .middleware(Tag)
    });
    let out = call(&host, "count", json!({}));
    assert_eq!(out, json!("ran 1 (tagged)"));
    assert_eq!(entered.load(Ordering::SeqCst), 1);
}

#[test]
fn a_middleware_that_panics_after_next_keeps_the_result_and_runs_the_tool_once() {
    let (_fx, host, _) = gated_host(|b| b.approver(Allow).middleware(PanicsAfter));
    assert_eq!(call(&host, "count", json!({})), json!("ran 1"));
    assert_eq!(
        call(&host, "count", json!({})),
        json!("ran 2"),
        "never run twice"
    );
}

#[test]
fn a_slow_check_fn_does_not_hold_up_other_tasks_of_the_callers_runtime() {
    let fx = Fixture::new();
    fx.tool(
        "slow.lua",
        r#"registry.register{ name = "slow", toolset = "t",
  check_fn = function() local t = os.clock() while os.clock() - t < 1.0 do end return true end,
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return "x" end }"#,
    );
    let host = fx.host();
    // One worker: without moving the probe off it, nothing else could run meanwhile.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let other_ran_first = runtime.block_on(async move {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let other_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = other_done.clone();
        tokio::spawn(async move {
            rx.await.unwrap();
            flag.store(true, Ordering::SeqCst);
        });
        tokio::spawn(async move {
            // A plain thread wakes the other task while the probe runs.
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                let _ = tx.send(());
            });
            let list = host.tool_definitions(&toolhost::Selection::default());
            assert_eq!(list.len(), 1);
            // Read the moment the probe is over: did the other task get to run meanwhile?
            other_done.load(Ordering::SeqCst)
        })
        .await
        .unwrap()
    });
    assert!(other_ran_first, "the other task waited for the probe");
}
