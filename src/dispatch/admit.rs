//! Stage 3: the agent-loop guard (`guard.rs`), then lookup in the caller's scope
//! (`unknown_tool`), selection and availability (`unavailable`), then the rate limits
//! (`rate_limited`, `limit/`): only a call that would run counts against them. A call that passes becomes
//! the [`Call`] the later stages read; one that does not never reaches the hooks.

use super::call::Call;
use super::errors::ErrorType;
use super::result::ToolError;
use super::{CallEnv, execute, guard, limit, select};
use crate::lua::LuaVm;
use crate::registry::{CallContext, HookEntry, ToolEntry};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// What stage 3 needs of a call.
pub(super) struct Admission<'a> {
    /// The tool's name.
    pub(super) name: &'a str,
    /// The (coerced) arguments.
    pub(super) args: Value,
    /// The tool of that name in the caller's scope, if any.
    pub(super) tool: Option<&'a ToolEntry>,
    /// The Lua hooks that see a call of it.
    pub(super) hooks: &'a [Arc<HookEntry>],
    /// The caller's context.
    pub(super) ctx: &'a CallContext,
    /// The call's VM.
    pub(super) vm: &'a LuaVm,
    /// When the call started.
    pub(super) started: Instant,
}

/// The call, or the error that ends it (boxed: it is much larger than the call).
pub(super) fn admit<'a>(
    env: &CallEnv<'_>,
    selections: &select::SelectionCache,
    call: Admission<'a>,
) -> Result<Call<'a>, Box<ToolError>> {
    let Admission {
        name,
        args,
        tool,
        hooks,
        ctx,
        vm,
        started,
    } = call;
    if let Some(refused) = guard::guard(env.config, name) {
        return Err(Box::new(refused));
    }
    let Some(tool) = tool else {
        return Err(Box::new(ToolError::new(
            ErrorType::UnknownTool,
            format!("Unknown tool: {name}"),
        )));
    };
    if !selections.contains(env.state, env.config, ctx, name) {
        return Err(Box::new(ToolError::new(
            ErrorType::Unavailable,
            format!("Tool {name} is unavailable: it is not in the selected toolsets"),
        )));
    }
    let answer = env.available(vm, tool, ctx.scope.as_deref());
    if !answer.available {
        let reason = answer.reason.unwrap_or_default();
        return Err(Box::new(ToolError::new(
            ErrorType::Unavailable,
            format!("Tool {name} is unavailable: {reason}"),
        )));
    }
    // The rate limits, bounded by the call's deadline like any store call. Without any
    // `[limits]` there is nothing to count, nor a caller key to make (a string per call).
    if !env.config.limits.is_unlimited() {
        let budget = std::time::Duration::from_millis(
            tool.timeout_ms.unwrap_or(
                env.config
                    .runtime
                    .timeout_ms
                    .unwrap_or(execute::DEFAULT_TIMEOUT_MS),
            ),
        );
        let wait = crate::store::Wait::new(started.checked_add(budget), Some(ctx.cancel.clone()));
        env.limits
            .check(&env.config.limits, name, &limit::caller_key(ctx), &wait)?;
    }
    Ok(Call {
        name,
        args,
        ctx,
        tool,
        hooks,
        vm,
        started,
    })
}
