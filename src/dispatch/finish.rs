//! Stage 8 (post_tool_call observers, then transform_tool_result) and stage 9 (the size
//! limit, `spill.rs`) of a call that reached the hooks; and the one post_tool_call of a
//! call the bridge answered itself.

use super::call::{Call, elapsed_ms};
use super::errors::ErrorType;
use super::hooks::{self, CallStatus, Hook, HookCall, PostCall};
use super::result::ToolResult;
use super::{CallEnv, DEFAULT_MAX_RESULT_SIZE_CHARS, spill};
use crate::lua::LuaVm;
use crate::registry::{HookEntry, HookEvent, ResultLimit};
use std::sync::Arc;
use std::time::Instant;

/// Observes, transforms and size-limits the `result` of `call`.
pub(super) fn finish(
    rust_hooks: &[Arc<dyn Hook>],
    env: &CallEnv<'_>,
    call: &Call<'_>,
    result: ToolResult,
) -> ToolResult {
    let hook_call = call.hook_call();
    let error_type = result.error_type();
    let status = match error_type {
        None => CallStatus::Ok,
        Some(ErrorType::Blocked) => CallStatus::Blocked,
        Some(_) => CallStatus::Error,
    };
    let duration_ms = elapsed_ms(call.started);
    let post = PostCall {
        call: hook_call,
        result: &result,
        status,
        error_type,
        duration_ms,
    };
    hooks::run_post(rust_hooks, call.hooks, call.vm, &post);
    let mut result = result;
    // Only a transform hook needs the text (a structured result's JSON text costs a
    // serialisation).
    let transforms = !rust_hooks.is_empty()
        || call
            .hooks
            .iter()
            .any(|hook| hook.event == HookEvent::TransformToolResult);
    if transforms
        && let Some(text) = result.text()
        && let Some(replacement) = hooks::run_transform(
            rust_hooks,
            call.hooks,
            call.vm,
            &hook_call,
            &text,
            duration_ms,
        )
    {
        result = ToolResult::Text(replacement);
    }
    let limit = match call.tool.max_result_size_chars {
        Some(ResultLimit::Unlimited) => None,
        Some(ResultLimit::Chars(n)) => Some(n),
        None => Some(
            env.config
                .default_max_result_size_chars
                .unwrap_or(DEFAULT_MAX_RESULT_SIZE_CHARS),
        ),
    };
    spill::limit_size(result, limit, env.spill_dir, call.name)
}

/// The one `post_tool_call` of a call the bridge answered inline (`tool_search`,
/// `tool_describe`, a refused `tool_call`): Rust hooks and the Lua hooks that see every
/// call (`all_hooks` filtered) observe it.
pub(super) fn observe_inline(
    rust_hooks: &[Arc<dyn Hook>],
    all_hooks: &[Arc<HookEntry>],
    vm: &LuaVm,
    call: HookCall<'_>,
    result: &ToolResult,
    started: Instant,
) {
    let lua_hooks: Vec<Arc<HookEntry>> = all_hooks
        .iter()
        .filter(|hook| hook.sees_every_call)
        .cloned()
        .collect();
    if rust_hooks.is_empty() && lua_hooks.is_empty() {
        return;
    }
    let error_type = result.error_type();
    let post = PostCall {
        call,
        result,
        status: match error_type {
            None => CallStatus::Ok,
            Some(_) => CallStatus::Error,
        },
        error_type,
        duration_ms: elapsed_ms(started),
    };
    hooks::run_post(rust_hooks, &lua_hooks, vm, &post);
}
