//! The dispatch pipeline (docs/calls.md): each stage's behaviour and their order.

mod common;

use common::{Fixture, call, call_in};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost::{
    ApprovalRequest, Approver, BoxFuture, CallContext, Hook, HookCall, Host, HostBuilder,
    Middleware, Next, PostCall, PreDecision, ToolCall, ToolResult,
};

/// `counted` counts handler runs; `count` reads the counter; `echo` returns its args.
const TOOLS: &str = r#"
local runs = 0
registry.register{ name = "counted", toolset = "t",
  schema = { parameters = { type = "object",
    properties = { n = { type = "integer" }, tags = { type = "array", items = { type = "string" } },
                   flag = { type = "boolean" } },
    required = { "n" } } },
  handler = function(args) runs = runs + 1 return json.encode(args) end }
registry.register{ name = "count", toolset = "t", schema = { parameters = { type = "object" } },
  handler = function() return tostring(runs) end }
registry.register{ name = "echo", toolset = "debug", schema = { parameters = { type = "object" } },
  handler = function(args) return args end }
registry.register{ name = "guarded", toolset = "t", requires_approval = true,
  schema = { parameters = { type = "object" } }, handler = function() return "ran" end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx
}

fn builder(fx: &Fixture) -> HostBuilder {
    fx.builder()
}

fn runs(host: &Host) -> Value {
    call(host, "count", json!({}))
}

#[test]
fn coercion_runs_before_validation_and_reaches_the_handler() {
    let fx = fixture();
    let host = fx.host();
    let out = call(
        &host,
        "counted",
        json!({"n": "42", "tags": "solo", "flag": "TRUE", "extra": "7"}),
    );
    assert_eq!(
        out,
        json!(r#"{"extra":"7","flag":true,"n":42,"tags":["solo"]}"#)
    );
}

#[test]
fn invalid_arguments_never_reach_the_handler() {
    let fx = fixture();
    let host = fx.host();
    let out = call(&host, "counted", json!({"n": "3.5"}));
    assert_eq!(out["error_type"], "invalid_arguments");
    assert_eq!(out["path"], "$.n");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid arguments for counted: $.n: "),
        "{out}"
    );
    assert_eq!(out["parameters"]["required"], json!(["n"]));
    let missing = call(&host, "counted", json!({}));
    assert_eq!(missing["path"], "$");
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("\"n\" is a required property"),
        "{missing}"
    );
    let nested = call(&host, "counted", json!({"n": 1, "tags": [1]}));
    assert_eq!(nested["path"], "$.tags[0]");
    assert_eq!(runs(&host), json!("0"));
}

#[test]
fn agent_loop_tools_are_refused_registered_or_not() {
    let fx = fixture();
    let host = fx.host();
    assert_eq!(
        call(&host, "todo", json!({})),
        json!({"error": "todo must be handled by the agent loop", "error_type": "agent_loop"})
    );
    let fx = fixture();
    let host = fx.host_with("agent_loop_tools = [\"echo\"]\n");
    assert_eq!(call(&host, "echo", json!({}))["error_type"], "agent_loop");
    assert_eq!(call(&host, "todo", json!({}))["error_type"], "unknown_tool");
}

#[test]
fn calls_outside_the_callers_selection_are_unavailable() {
    let fx = fixture();
    let host = fx.host();
    let only_debug = CallContext::default().with_toolsets(["debug"]);
    assert_eq!(call_in(&host, "echo", json!({}), &only_debug), json!("{}"));
    let out = call_in(&host, "count", json!({}), &only_debug);
    assert_eq!(out["error_type"], "unavailable");
    let no_debug = CallContext::default().with_disabled_toolsets(["debug"]);
    assert_eq!(
        call_in(&host, "echo", json!({}), &no_debug)["error_type"],
        "unavailable"
    );
    let host = fx.host_with("disabled_toolsets = [\"t\"]\n");
    assert_eq!(call(&host, "count", json!({}))["error_type"], "unavailable");
}

const HOOKS: &str = r#"
registry.hook("pre_tool_call", function(call)
  if call.tool_name == "counted" and call.args.n == nil then
    return { action = "modify", args = { n = 7 } }
  end
  if call.tool_name == "echo" and call.args.mode == "block-then-approve" then
    return { action = "block", message = "blocked by policy" }
  end
  if call.tool_name == "echo" and call.args.mode == "approve" then
    return { action = "approve", message = "hook wants a human" }
  end
  if call.tool_name == "echo" and call.args.mode == "silent-block" then
    return { action = "block" }
  end
  if call.tool_name == "echo" and call.args.mode == "raise" then
    error("hook exploded")
  end
  if call.tool_name == "echo" and call.args.mode == "spin" then
    while true do end
  end
  if call.tool_name == "echo" and call.args.mode == "garbage" then
    return 42
  end
end)
registry.hook("pre_tool_call", function(call)
  if call.tool_name == "echo" and call.args.mode == "block-then-approve" then
    return { action = "approve" }
  end
  if call.tool_name == "echo" and call.args.mode == "modify-twice" then
    return { action = "modify", args = { second = true } }
  end
end)
registry.hook("pre_tool_call", function(call)
  if call.tool_name == "echo" and call.args.mode == "modify-twice" then
    return { action = "modify", args = { third = call.args.second } }
  end
end)
"#;

/// (tool, hook message) per approval request.
type Approvals = Arc<Mutex<Vec<(String, Option<String>)>>>;
/// (tool, status, error_type, duration_ms) per post_tool_call.
type Posts = Arc<Mutex<Vec<(String, String, Option<String>, u64)>>>;

#[derive(Clone, Default)]
struct Recorder {
    approvals: Approvals,
    middleware_calls: Arc<Mutex<Vec<String>>>,
    posts: Posts,
    answer: bool,
}

impl Approver for Recorder {
    fn approve(&self, request: &ApprovalRequest<'_>) -> bool {
        self.approvals.lock().push((
            request.tool_name.to_string(),
            request.reason.map(str::to_string),
        ));
        self.answer
    }
}

impl Middleware for Recorder {
    fn handle<'a>(&'a self, call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            self.middleware_calls.lock().push(call.name.clone());
            next.run(call).await
        })
    }
}

impl Hook for Recorder {
    fn post_tool_call(&self, call: &PostCall<'_>) {
        self.posts.lock().push((
            call.call.tool_name.to_string(),
            call.status.as_str().to_string(),
            call.error_type.map(|kind| kind.as_str().to_string()),
            call.duration_ms,
        ));
    }
}

fn hooked_host(fx: &Fixture, recorder: &Recorder, toml: &str) -> Host {
    fx.tool("hooks.lua", HOOKS);
    let path = fx.write("toolhost.toml", toml);
    builder(fx)
        .config_file(&path)
        .approver(recorder.clone())
        .middleware(recorder.clone())
        .hook(recorder.clone())
        .build()
        .unwrap()
}

#[test]
fn a_modifying_hook_is_seen_by_validation() {
    let fx = fixture();
    let recorder = Recorder::default();
    let host = hooked_host(&fx, &recorder, "[runtime]\nprobe_timeout_ms = 200\n");
    assert_eq!(call(&host, "counted", json!({})), json!(r#"{"n":7}"#));
    assert_eq!(
        call(&host, "echo", json!({"mode": "modify-twice"})),
        json!(r#"{"mode":"modify-twice","second":true,"third":true}"#),
        "modifications accumulate and later hooks see earlier ones"
    );
}

#[test]
fn block_beats_approve_and_a_blocked_call_never_reaches_middleware() {
    let fx = fixture();
    let recorder = Recorder {
        answer: true,
        ..Recorder::default()
    };
    let host = hooked_host(&fx, &recorder, "[runtime]\nprobe_timeout_ms = 200\n");
    let out = call(&host, "echo", json!({"mode": "block-then-approve"}));
    assert_eq!(
        out,
        json!({"error": "blocked by policy", "error_type": "blocked"})
    );
    assert!(recorder.middleware_calls.lock().is_empty());
    assert!(
        recorder.approvals.lock().is_empty(),
        "a blocked call is not sent for approval"
    );
    let posts = recorder.posts.lock().clone();
    assert_eq!(posts.len(), 1);
    assert_eq!(
        (posts[0].1.as_str(), posts[0].2.as_deref()),
        ("blocked", Some("blocked"))
    );
}

#[test]
fn hooks_fail_closed_and_odd_answers_are_ignored() {
    let fx = fixture();
    let recorder = Recorder::default();
    let host = hooked_host(&fx, &recorder, "[runtime]\nprobe_timeout_ms = 200\n");
    let raised = call(&host, "echo", json!({"mode": "raise"}));
    assert_eq!(raised["error_type"], "blocked");
    assert!(
        raised["error"].as_str().unwrap().contains("hook exploded"),
        "{raised}"
    );
    assert!(
        raised["error"].as_str().unwrap().contains("hooks.lua:"),
        "{raised}"
    );
    let spun = call(&host, "echo", json!({"mode": "spin"}));
    assert_eq!(spun["error_type"], "blocked");
    assert!(
        spun["error"]
            .as_str()
            .unwrap()
            .contains("did not finish within 200 ms"),
        "{spun}"
    );
    assert_eq!(
        call(&host, "echo", json!({"mode": "silent-block"})),
        json!(r#"{"mode":"silent-block"}"#)
    );
    assert_eq!(
        call(&host, "echo", json!({"mode": "garbage"})),
        json!(r#"{"mode":"garbage"}"#)
    );
}

#[test]
fn approval_comes_from_the_tool_the_config_or_a_hook() {
    let fx = fixture();
    let recorder = Recorder {
        answer: false,
        ..Recorder::default()
    };
    let host = hooked_host(&fx, &recorder, "[approval]\ntools = [\"count\"]\n");
    assert_eq!(
        call(&host, "guarded", json!({})),
        json!({"error": "Approval denied for guarded", "error_type": "approval_denied"})
    );
    assert_eq!(
        call(&host, "count", json!({}))["error_type"],
        "approval_denied"
    );
    assert_eq!(
        call(&host, "echo", json!({"mode": "approve"}))["error_type"],
        "approval_denied"
    );
    assert_eq!(call(&host, "echo", json!({})), json!("{}"));
    let asked = recorder.approvals.lock().clone();
    assert_eq!(
        asked,
        [
            ("guarded".to_string(), None),
            ("count".to_string(), None),
            ("echo".to_string(), Some("hook wants a human".to_string()))
        ]
    );
    let posts = recorder.posts.lock().clone();
    assert!(
        posts
            .iter()
            .take(3)
            .all(|p| p.1 == "error" && p.2.as_deref() == Some("approval_denied"))
    );
    assert_eq!(posts[3].1, "ok");
    assert!(posts.iter().all(|p| p.3 < 60_000), "{posts:?}");
}

#[test]
fn the_default_approval_policy_is_deny_unless_allowed() {
    let fx = fixture();
    assert_eq!(
        call(&fx.host(), "guarded", json!({}))["error_type"],
        "approval_denied"
    );
    let fx = fixture();
    let host = fx.host_with("[approval]\ndefault = \"allow\"\n");
    assert_eq!(call(&host, "guarded", json!({})), json!("ran"));
}

struct Rewrite;
impl Middleware for Rewrite {
    fn handle<'a>(&'a self, mut call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            call.args["added_by"] = json!("middleware");
            let result = next.run(call).await;
            // Text and structured results alike: wrap what the model would read.
            match result.text().map(|text| format!("wrapped({text})")) {
                Some(wrapped) => ToolResult::Text(wrapped),
                None => result,
            }
        })
    }
}

struct ShortCircuit;
impl Middleware for ShortCircuit {
    fn handle<'a>(&'a self, call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            if call.name == "counted" {
                return ToolResult::Text("answered by middleware".into());
            }
            next.run(call).await
        })
    }
}

#[test]
fn middleware_wraps_execution_in_order_and_may_answer_itself() {
    let fx = fixture();
    let host = builder(&fx)
        .middleware(Rewrite)
        .middleware(ShortCircuit)
        .build()
        .unwrap();
    assert_eq!(
        call(&host, "echo", json!({})),
        json!(r#"wrapped({"added_by":"middleware"})"#)
    );
    assert_eq!(
        call(&host, "counted", json!({"n": 1})),
        json!("wrapped(answered by middleware)")
    );
    assert_eq!(runs(&host), json!("wrapped(0)"));
}

struct Observer(Arc<Mutex<Vec<String>>>);
impl Hook for Observer {
    fn pre_tool_call(&self, call: &HookCall<'_>) -> PreDecision {
        if call.args.get("deny").is_some() {
            return PreDecision::Block("rust hook said no".into());
        }
        PreDecision::Continue
    }
    fn transform_tool_result(&self, call: &HookCall<'_>, result: &str) -> Option<String> {
        self.0.lock().push(format!("{}:{result}", call.tool_name));
        (call.tool_name == "echo").then(|| result.to_uppercase())
    }
}

#[test]
fn rust_hooks_block_and_transform_and_lua_transform_comes_second() {
    let fx = fixture();
    fx.tool(
        "transform.lua",
        r#"registry.hook("transform_tool_result", function(call) return "lua saw " .. call.result end)"#,
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let host = builder(&fx).hook(Observer(seen.clone())).build().unwrap();
    assert_eq!(
        call(&host, "echo", json!({"a": "b"})),
        json!(r#"{"A":"B"}"#)
    );
    assert_eq!(call(&host, "count", json!({})), json!("lua saw 0"));
    assert_eq!(
        call(&host, "echo", json!({"deny": 1})),
        json!({"error": "rust hook said no", "error_type": "blocked"})
    );
    // Errors are never transformed.
    assert_eq!(
        call(&host, "counted", json!({}))["error_type"],
        "invalid_arguments"
    );
    assert_eq!(seen.lock().clone(), [r#"echo:{"a":"b"}"#, "count:0"]);
}

#[test]
fn oversized_results_are_spilled_whole() {
    let fx = Fixture::new();
    fx.tool(
        "big.lua",
        r#"registry.register{ name = "big", toolset = "t", max_result_size_chars = 50,
  schema = { parameters = { type = "object" } },
  handler = function() return string.rep("abcdefghij", 10) .. "END" end }
registry.register{ name = "default_limit", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function() return string.rep("x", 120) end }
registry.register{ name = "unlimited", toolset = "t", max_result_size_chars = math.huge,
  schema = { parameters = { type = "object" } },
  handler = function() return string.rep("y", 5000) end }
registry.register{ name = "image", toolset = "t", max_result_size_chars = 10,
  schema = { parameters = { type = "object" } },
  handler = function() return { _multimodal = true, content = { { type = "text", text = string.rep("z", 100) } } } end }
"#,
    );
    let host = fx.host_with("default_max_result_size_chars = 100\n");
    let out = call(&host, "big", json!({}));
    let text = out.as_str().unwrap();
    assert!(
        text.starts_with("<persisted-output>") && text.ends_with("</persisted-output>"),
        "{text}"
    );
    assert!(text.contains("103 characters"));
    let path = text
        .split_whitespace()
        .find(|w| w.ends_with(".txt"))
        .unwrap();
    assert!(
        path.starts_with(
            fx.cache()
                .canonicalize()
                .unwrap()
                .join("spill")
                .to_str()
                .unwrap()
        ),
        "{path}"
    );
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "abcdefghij".repeat(10) + "END"
    );
    assert!(
        call(&host, "default_limit", json!({}))
            .as_str()
            .unwrap()
            .starts_with("<persisted-output>")
    );
    assert_eq!(
        call(&host, "unlimited", json!({})).as_str().unwrap().len(),
        5000
    );
    assert!(call(&host, "image", json!({})).is_object());
}
