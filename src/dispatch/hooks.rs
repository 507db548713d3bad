//! Stage 4 and stage 8 hooks (docs/calls.md): Rust hooks given to the builder and Lua hooks from
//! `registry.hook(event, fn)`.
//!
//! `pre_tool_call` hooks may modify arguments (shallow-merged, accumulated: each hook sees
//! the arguments as modified so far), block, or ask for approval. Block beats approve beats
//! nothing, whatever the order. A hook that raises (a Lua error, a Rust panic) or runs past
//! its deadline blocks the call: hooks fail closed. `post_tool_call` hooks observe the
//! outcome; `transform_tool_result` hooks may replace a successful text result (the first
//! replacement wins). Rust hooks run before Lua hooks; Lua hooks in load order.

use super::call::Call;
use super::errors::ErrorType;
use super::result::{ToolError, ToolResult};
use crate::lua::LuaVm;
use crate::registry::{CallContext, HookEntry, HookEvent};
use serde_json::{Map, Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// The call a hook sees.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct HookCall<'a> {
    /// The tool being called (the real tool, also when called through the search bridge).
    pub tool_name: &'a str,
    /// Its arguments (as modified by earlier hooks).
    pub args: &'a Value,
    /// The call context.
    pub ctx: &'a CallContext,
}

/// How a call ended, for `post_tool_call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallStatus {
    /// The handler returned a result.
    Ok,
    /// An error result (invalid arguments, approval denied, handler error, …).
    Error,
    /// A pre_tool_call hook blocked it.
    Blocked,
}

impl CallStatus {
    /// `"ok"`, `"error"` or `"blocked"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Error => "error",
            CallStatus::Blocked => "blocked",
        }
    }
}

/// What a `post_tool_call` hook sees.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PostCall<'a> {
    /// The call.
    pub call: HookCall<'a>,
    /// The result.
    pub result: &'a ToolResult,
    /// How it ended.
    pub status: CallStatus,
    /// The kind of an error result.
    pub error_type: Option<ErrorType>,
    /// Whole milliseconds from the start of the call (the same value Lua hooks see).
    pub duration_ms: u64,
}

/// A `pre_tool_call` decision.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PreDecision {
    /// Nothing to say.
    Continue,
    /// Shallow-merge these fields into the arguments.
    Modify(Map<String, Value>),
    /// Refuse the call with this message.
    Block(String),
    /// Ask the approver first (optional message for the approver).
    Approve(Option<String>),
}

/// A Rust hook; implement the events you need.
pub trait Hook: Send + Sync {
    /// Before the call (stage 4).
    fn pre_tool_call(&self, _call: &HookCall<'_>) -> PreDecision {
        PreDecision::Continue
    }
    /// After the call (stage 8).
    fn post_tool_call(&self, _call: &PostCall<'_>) {}
    /// After the call: `Some(text)` replaces a successful text result.
    fn transform_tool_result(&self, _call: &HookCall<'_>, _result: &str) -> Option<String> {
        None
    }
}

/// The combined outcome of every pre_tool_call hook.
#[derive(Debug, Clone, PartialEq)]
enum PreOutcome {
    /// Go on with these arguments; `approval` is set when a hook asked for approval.
    Proceed {
        /// The (possibly modified) arguments.
        args: Value,
        /// A hook asked for approval (with its message, if any).
        approval: Option<Option<String>>,
    },
    /// A hook blocked the call: the message, and the arguments as modified so far.
    Blocked(String, Value),
}

fn payload(call: &HookCall<'_>) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("tool_name".into(), json!(call.tool_name));
    map.insert("args".into(), call.args.clone());
    map.insert("tool_call_id".into(), json!(call.ctx.tool_call_id));
    map.insert("session_id".into(), json!(call.ctx.session_id));
    map.insert("task_id".into(), json!(call.ctx.task_id));
    map.insert("scope".into(), json!(call.ctx.scope));
    map.insert("caller".into(), caller_json(&call.ctx.caller));
    map
}

/// The caller as Lua hooks see it: the shape of the handler's `ctx.caller`.
fn caller_json(caller: &crate::registry::Caller) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), json!(caller.id()));
    map.insert("kind".into(), json!(caller.kind().as_str()));
    if let Some(client) = caller.client_id() {
        map.insert("client_id".into(), json!(client));
    }
    if let Some(scopes) = caller.scopes() {
        map.insert("scopes".into(), json!(scopes));
    }
    Value::Object(map)
}

fn where_(hook: &HookEntry) -> String {
    format!("{}:{}", hook.file.display(), hook.line)
}

/// Reads a Lua hook's return value as a decision; anything unrecognised is `Continue`.
fn decision_of(value: &Value) -> PreDecision {
    let Some(map) = value.as_object() else {
        return PreDecision::Continue;
    };
    match map.get("action").and_then(Value::as_str) {
        Some("modify") => match map.get("args") {
            Some(Value::Object(args)) => PreDecision::Modify(args.clone()),
            _ => PreDecision::Continue,
        },
        Some("block") => match map.get("message").and_then(Value::as_str) {
            Some(message) if !message.is_empty() => PreDecision::Block(message.to_string()),
            _ => PreDecision::Continue,
        },
        Some("approve") => PreDecision::Approve(
            map.get("message")
                .and_then(Value::as_str)
                .map(str::to_string),
        ),
        _ => PreDecision::Continue,
    }
}

/// Runs every pre_tool_call hook and combines their decisions.
fn run_pre(
    rust_hooks: &[Arc<dyn Hook>],
    lua_hooks: &[Arc<HookEntry>],
    vm: &LuaVm,
    tool_name: &str,
    args: Value,
    ctx: &CallContext,
) -> PreOutcome {
    let mut args = args;
    let mut approval: Option<Option<String>> = None;
    let mut apply = |decision: PreDecision, args: &mut Value| -> Option<String> {
        match decision {
            PreDecision::Continue => None,
            PreDecision::Modify(fields) => {
                if let Value::Object(current) = args {
                    current.extend(fields);
                }
                None
            }
            PreDecision::Block(message) if message.is_empty() => None,
            PreDecision::Block(message) => Some(message),
            PreDecision::Approve(message) => {
                approval.get_or_insert(message);
                None
            }
        }
    };
    for hook in rust_hooks {
        let call = HookCall {
            tool_name,
            args: &args,
            ctx,
        };
        let decision = catch_unwind(AssertUnwindSafe(|| hook.pre_tool_call(&call)))
            .unwrap_or_else(|_| PreDecision::Block("pre_tool_call hook panicked".to_string()));
        if let Some(message) = apply(decision, &mut args) {
            return PreOutcome::Blocked(message, args);
        }
    }
    for hook in lua_hooks
        .iter()
        .filter(|h| h.event == HookEvent::PreToolCall)
    {
        let call = HookCall {
            tool_name,
            args: &args,
            ctx,
        };
        let decision = match vm.call_hook(hook.function, &Value::Object(payload(&call))) {
            Ok(value) => decision_of(&value),
            Err(error) => PreDecision::Block(format!(
                "pre_tool_call hook at {} failed: {error}",
                where_(hook)
            )),
        };
        if let Some(message) = apply(decision, &mut args) {
            return PreOutcome::Blocked(message, args);
        }
    }
    PreOutcome::Proceed { args, approval }
}

/// Stage 4 for `call`: runs every pre_tool_call hook and leaves `call.args` as they left
/// them. `Ok` holds whether a hook asked for approval (with its message, if any); `Err` is
/// the `blocked` error of a hook that blocked the call.
pub(super) fn pre_tool_call(
    rust_hooks: &[Arc<dyn Hook>],
    call: &mut Call<'_>,
) -> Result<Option<Option<String>>, Box<ToolError>> {
    // Taken and put back: `Value::Null` in between costs no allocation.
    let args = std::mem::take(&mut call.args);
    match run_pre(rust_hooks, call.hooks, call.vm, call.name, args, call.ctx) {
        PreOutcome::Proceed { args, approval } => {
            call.args = args;
            Ok(approval)
        }
        PreOutcome::Blocked(message, args) => {
            call.args = args;
            Err(Box::new(ToolError::new(ErrorType::Blocked, message)))
        }
    }
}

/// Runs every post_tool_call observer; failures are logged, never change the result.
pub(super) fn run_post(
    rust_hooks: &[Arc<dyn Hook>],
    lua_hooks: &[Arc<HookEntry>],
    vm: &LuaVm,
    post: &PostCall<'_>,
) {
    for hook in rust_hooks {
        if catch_unwind(AssertUnwindSafe(|| hook.post_tool_call(post))).is_err() {
            tracing::warn!("post_tool_call hook panicked");
        }
    }
    let mut lua_payload = None;
    for hook in lua_hooks
        .iter()
        .filter(|h| h.event == HookEvent::PostToolCall)
    {
        let data = lua_payload.get_or_insert_with(|| {
            let mut map = payload(&post.call);
            map.insert("result".into(), post.result.to_json());
            map.insert("status".into(), json!(post.status.as_str()));
            map.insert(
                "error_type".into(),
                json!(post.error_type.map(ErrorType::as_str)),
            );
            map.insert("duration_ms".into(), json!(post.duration_ms));
            Value::Object(map)
        });
        if let Err(error) = vm.call_hook(hook.function, data) {
            tracing::warn!("post_tool_call hook at {} failed: {error}", where_(hook));
        }
    }
}

/// Runs transform_tool_result hooks on a successful text result; the first replacement
/// string wins.
pub(super) fn run_transform(
    rust_hooks: &[Arc<dyn Hook>],
    lua_hooks: &[Arc<HookEntry>],
    vm: &LuaVm,
    call: &HookCall<'_>,
    result: &str,
    duration_ms: u64,
) -> Option<String> {
    for hook in rust_hooks {
        match catch_unwind(AssertUnwindSafe(|| {
            hook.transform_tool_result(call, result)
        })) {
            Ok(Some(replacement)) => return Some(replacement),
            Ok(None) => {}
            Err(_) => tracing::warn!("transform_tool_result hook panicked"),
        }
    }
    let mut lua_payload = None;
    for hook in lua_hooks
        .iter()
        .filter(|h| h.event == HookEvent::TransformToolResult)
    {
        let data = lua_payload.get_or_insert_with(|| {
            let mut map = payload(call);
            map.insert("result".into(), json!(result));
            // The same value post_tool_call saw.
            map.insert("duration_ms".into(), json!(duration_ms));
            Value::Object(map)
        });
        match vm.call_hook(hook.function, data) {
            Ok(Value::String(replacement)) => return Some(replacement),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(
                    "transform_tool_result hook at {} failed: {error}",
                    where_(hook)
                )
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_decisions_are_read_strictly() {
        assert_eq!(decision_of(&json!(null)), PreDecision::Continue);
        assert_eq!(decision_of(&json!("block")), PreDecision::Continue);
        assert_eq!(
            decision_of(&json!({"action": "block"})),
            PreDecision::Continue
        );
        assert_eq!(
            decision_of(&json!({"action": "explode"})),
            PreDecision::Continue
        );
        assert_eq!(
            decision_of(&json!({"action": "modify", "args": 5})),
            PreDecision::Continue
        );
        assert_eq!(
            decision_of(&json!({"action": "block", "message": "no"})),
            PreDecision::Block("no".into())
        );
        assert_eq!(
            decision_of(&json!({"action": "approve"})),
            PreDecision::Approve(None)
        );
        assert_eq!(
            decision_of(&json!({"action": "modify", "args": {"a": 1}})),
            PreDecision::Modify(json!({"a": 1}).as_object().unwrap().clone())
        );
    }
}
