//! The dispatch pipeline (SPEC §7): every call goes through these stages, in order, and
//! every failure becomes a result object, never a panic or a lost call.
//!
//! 1. coerce (`coerce.rs`) — arguments repaired toward the schema;
//! 2. the tool-search bridge (`bridge.rs`): `tool_search`/`tool_describe` answered,
//!    `tool_call` re-enters the pipeline under the real name;
//! 3. agent-loop guard (`guard.rs`), then lookup in the caller's scope (`unknown_tool`),
//!    selection and availability (`unavailable`);
//! 4. pre_tool_call hooks (`hooks.rs`);
//! 5. approval (`approval.rs`);
//! 6. validation (`validate.rs`);
//! 7. execution middleware (`middleware.rs`) around the handler (`execute.rs`);
//! 8. post_tool_call observers and transform_tool_result (`hooks.rs`);
//! 9. size limit (`spill.rs`).
//!
//! Calls that fail before stage 4 (agent loop, unknown, unavailable) do not reach hooks.

mod approval;
mod bridge;
mod coerce;
#[cfg(test)]
mod coerce_props;
mod errors;
mod execute;
mod guard;
mod hooks;
mod middleware;
mod result;
mod select;
mod spill;
mod validate;

pub(crate) use approval::PolicyApprover;
pub use approval::{ApprovalRequest, Approver};
pub use errors::ErrorType;
#[cfg_attr(not(feature = "mcp-client"), allow(unused_imports))]
pub(crate) use execute::DEFAULT_TIMEOUT_MS;
pub use hooks::{CallStatus, Hook, HookCall, PostCall, PreDecision};
pub use middleware::{BoxFuture, Middleware, Next, ToolCall};
pub use result::{ToolError, ToolResult};

use crate::config::Config;
use crate::definitions::ProbeRunner;
use crate::lua::{LuaVm, VmPool};
use crate::registry::{
    Availability, AvailabilityCache, CallContext, Handler, HookEntry, LuaFnId, Probe,
    RegistryState, ResultLimit, ToolEntry,
};
use crate::search::{BRIDGE_TOOLS, SearchPlans};
use hooks::PreOutcome;
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Default `default_max_result_size_chars`.
pub(crate) const DEFAULT_MAX_RESULT_SIZE_CHARS: u64 = 100_000;

/// Arguments as the handler sees them: an object; a JSON string of an object is parsed;
/// anything else becomes `{}`.
pub(crate) fn normalise_args(args: Value) -> Value {
    match args {
        Value::Object(_) => args,
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// Availability of `tool` for `scope`, probing its `check_fn` on `vm` when needed.
pub(crate) fn availability_of(
    cache: &AvailabilityCache,
    vm: &LuaVm,
    state: &RegistryState,
    tool: &ToolEntry,
    scope: Option<&str>,
) -> Availability {
    cache.check(
        tool,
        scope,
        state.generation(),
        Instant::now(),
        || match &tool.check_fn {
            Some(probe) => vm.check(probe),
            None => Ok(crate::registry::Probed::Yes),
        },
    )
}

/// The Lua hooks that see a call of `tool`: a plugin's hooks see only its own tools'
/// calls unless the plugin holds the `hooks` capability.
fn hooks_for(all: &[Arc<HookEntry>], tool: &ToolEntry) -> Vec<Arc<HookEntry>> {
    all.iter()
        .filter(|hook| hook.applies_to(&tool.source))
        .cloned()
        .collect()
}

/// The Lua functions a call of `name` (with `args`) needs on its VM: those of the tool it
/// reaches — through `tool_call` too — and the hooks that see it.
pub(crate) fn functions_needed(
    state: &RegistryState,
    name: &str,
    args: &Value,
    scope: Option<&str>,
) -> Vec<LuaFnId> {
    let target = match name {
        "tool_call" => args
            .get("name")
            .or_else(|| args.pointer("/calls/0/name"))
            .and_then(Value::as_str)
            .unwrap_or(name),
        _ => name,
    };
    match state.lookup(target, scope) {
        Some(tool) => functions_of(tool, &hooks_for(state.hooks(), tool)),
        None => Vec::new(),
    }
}

/// The Lua functions a call of `tool` may run: handler, `check_fn` and the Lua hooks.
fn functions_of(tool: &ToolEntry, hooks: &[Arc<HookEntry>]) -> Vec<LuaFnId> {
    let mut needs: Vec<LuaFnId> = hooks.iter().map(|hook| hook.function).collect();
    if let Handler::Lua(id) = tool.handler {
        needs.push(id);
    }
    if let Some(Probe::Lua(id)) = tool.check_fn {
        needs.push(id);
    }
    needs
}

/// What one call runs against: a registry snapshot, the VM holding its functions, the
/// availability cache and the configuration.
pub(crate) struct CallEnv<'a> {
    /// The registry snapshot.
    pub state: &'a RegistryState,
    /// The VMs; each call leases the least busy one holding its functions.
    pub pool: &'a VmPool,
    /// The availability cache.
    pub availability: &'a AvailabilityCache,
    /// The configuration.
    pub config: &'a Config,
    /// Where oversized results are written.
    pub spill_dir: &'a Path,
    /// The configuration file's fingerprint (part of the tool-search plan key).
    pub config_fingerprint: Option<(u128, u64)>,
    /// Tool-search plans.
    pub search: &'a SearchPlans,
}

/// The host's Rust extensions of the pipeline.
pub(crate) struct Pipeline {
    hooks: Vec<Arc<dyn Hook>>,
    middleware: Vec<Arc<dyn Middleware>>,
    approver: Arc<dyn Approver>,
    selections: select::SelectionCache,
}

impl Pipeline {
    /// A pipeline with these Rust hooks, middleware (outermost first) and approver.
    pub(crate) fn new(
        hooks: Vec<Arc<dyn Hook>>,
        middleware: Vec<Arc<dyn Middleware>>,
        approver: Arc<dyn Approver>,
    ) -> Self {
        Self {
            hooks,
            middleware,
            approver,
            selections: select::SelectionCache::default(),
        }
    }

    /// Runs one call through every stage on `vm` (the caller has sent the call to the VM's
    /// thread: see [`functions_needed`] and `VmPool::run`).
    pub(crate) async fn run(
        &self,
        env: &CallEnv<'_>,
        vm: &LuaVm,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> ToolResult {
        let started = Instant::now();
        let scope = ctx.scope.as_deref();
        let found = env.state.lookup(name, scope);

        // Stage 1: coerce against the tool's schema (unknown tools keep their arguments).
        let mut args = normalise_args(args);
        if let (Some(tool), Value::Object(map)) = (found, &mut args)
            && let Some(parameters) = tool.schema.get("parameters")
        {
            coerce::coerce_args(map, parameters);
        }

        // Stage 2: the tool-search bridge.
        if BRIDGE_TOOLS.contains(&name) {
            let plan = env.search.plan(
                env.state,
                env.config,
                env.config_fingerprint,
                scope,
                &ctx.toolsets,
            );
            if plan.active {
                let available = |tool: &ToolEntry| {
                    availability_of(env.availability, vm, env.state, tool, scope).available
                };
                match bridge::route(&plan, name, &args, available) {
                    bridge::Routed::Answer(answer) => {
                        self.observe_inline(env, vm, name, &args, ctx, &answer, started);
                        return answer;
                    }
                    bridge::Routed::Call(real, arguments) => {
                        return Box::pin(self.run(env, vm, &real, arguments, ctx)).await;
                    }
                }
            }
        }

        // Stage 3: agent-loop guard, then lookup, selection and availability.
        if let Some(refused) = guard::guard(env.config, name) {
            return refused.into();
        }
        let Some(tool) = found else {
            return ToolError::new(ErrorType::UnknownTool, format!("Unknown tool: {name}")).into();
        };
        if !self.selections.contains(env.state, env.config, ctx, name) {
            return ToolError::new(
                ErrorType::Unavailable,
                format!("Tool {name} is unavailable: it is not in the selected toolsets"),
            )
            .into();
        }
        let hooks = &hooks_for(env.state.hooks(), tool);
        // The VM was chosen for these functions; only a replica that registered a file
        // differently can lack them (a call routed through `tool_call` to another tool):
        // then the first VM, which holds everything, serves it from this thread.
        let vm = match functions_of(tool, hooks).iter().all(|id| vm.has(*id)) {
            true => vm,
            false => env.pool.primary(),
        };
        let answer = availability_of(env.availability, vm, env.state, tool, scope);
        if !answer.available {
            let reason = answer.reason.unwrap_or_default();
            return ToolError::new(
                ErrorType::Unavailable,
                format!("Tool {name} is unavailable: {reason}"),
            )
            .into();
        }

        // Stage 4: pre_tool_call hooks.
        let (args, hook_approval) = match hooks::run_pre(&self.hooks, hooks, vm, name, args, ctx) {
            PreOutcome::Proceed { args, approval } => (args, approval),
            PreOutcome::Blocked(message, args) => {
                let result = ToolError::new(ErrorType::Blocked, message).into();
                return self.finish(env, vm, hooks, tool, name, &args, ctx, result, started);
            }
        };

        // Stage 5: approval.
        let listed = env.config.approval.tools.iter().any(|t| t == name);
        if tool.requires_approval || listed || hook_approval.is_some() {
            let request = ApprovalRequest {
                tool_name: name,
                args: &args,
                ctx,
                reason: hook_approval.as_ref().and_then(|m| m.as_deref()),
            };
            let approved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.approver.approve(&request)
            }));
            let refusal = match approved {
                Ok(true) => None,
                Ok(false) => Some(ToolError::new(
                    ErrorType::ApprovalDenied,
                    format!("Approval denied for {name}"),
                )),
                // Fail closed: a broken gate never lets a call through.
                Err(_) => {
                    tracing::error!("the approver panicked deciding on {name}; blocking the call");
                    Some(ToolError::new(
                        ErrorType::Blocked,
                        format!("The approval gate failed for {name}; the call was blocked"),
                    ))
                }
            };
            if let Some(refusal) = refusal {
                let result = refusal.into();
                return self.finish(env, vm, hooks, tool, name, &args, ctx, result, started);
            }
        }

        // Stage 6: validation.
        if let Err(invalid) = validate::validate(tool, &args) {
            let result = (*invalid).into();
            return self.finish(env, vm, hooks, tool, name, &args, ctx, result, started);
        }

        // Stage 7: middleware around the handler.
        let timeout_ms = env
            .config
            .runtime
            .timeout_ms
            .unwrap_or(execute::DEFAULT_TIMEOUT_MS);
        // Whose call this is, fixed now: a reload during the call changes nothing of it.
        let domain = &execute::caller_domain(tool, env.config);
        let result = if self.middleware.is_empty() {
            // Nothing to hand an owned call to: no copies of the arguments and context.
            execute::execute(vm, tool, domain, &args, ctx, timeout_ms).await
        } else {
            let terminal = move |call: ToolCall| -> BoxFuture<'_, ToolResult> {
                Box::pin(async move {
                    execute::execute(vm, tool, domain, &call.args, &call.ctx, timeout_ms).await
                })
            };
            let call = ToolCall {
                name: name.to_string(),
                args: args.clone(),
                ctx: ctx.clone(),
            };
            Next::new(&self.middleware, &terminal).run(call).await
        };

        // Stages 8 and 9.
        self.finish(env, vm, hooks, tool, name, &args, ctx, result, started)
    }

    /// The one `post_tool_call` of a call the bridge answered inline (`tool_search`,
    /// `tool_describe`): Rust hooks and the Lua hooks that see every call observe it.
    #[allow(clippy::too_many_arguments)]
    fn observe_inline(
        &self,
        env: &CallEnv<'_>,
        vm: &LuaVm,
        name: &str,
        args: &Value,
        ctx: &CallContext,
        result: &ToolResult,
        started: Instant,
    ) {
        let lua_hooks: Vec<Arc<HookEntry>> = env
            .state
            .hooks()
            .iter()
            .filter(|hook| hook.sees_every_call)
            .cloned()
            .collect();
        if self.hooks.is_empty() && lua_hooks.is_empty() {
            return;
        }
        let error_type = result.error_type();
        let post = PostCall {
            call: HookCall {
                tool_name: name,
                args,
                ctx,
            },
            result,
            status: match error_type {
                None => CallStatus::Ok,
                Some(_) => CallStatus::Error,
            },
            error_type,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        hooks::run_post(&self.hooks, &lua_hooks, vm, &post);
    }

    /// Stage 8 (post hooks, transform) and stage 9 (size limit) for a call that reached
    /// the hooks.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        env: &CallEnv<'_>,
        vm: &LuaVm,
        hooks: &[Arc<HookEntry>],
        tool: &ToolEntry,
        name: &str,
        args: &Value,
        ctx: &CallContext,
        result: ToolResult,
        started: Instant,
    ) -> ToolResult {
        let call = HookCall {
            tool_name: name,
            args,
            ctx,
        };
        let error_type = result.error_type();
        let status = match error_type {
            None => CallStatus::Ok,
            Some(ErrorType::Blocked) => CallStatus::Blocked,
            Some(_) => CallStatus::Error,
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let post = PostCall {
            call,
            result: &result,
            status,
            error_type,
            duration_ms,
        };
        hooks::run_post(&self.hooks, hooks, vm, &post);
        let mut result = result;
        // Only a transform hook needs the text (a structured result's JSON text costs a
        // serialisation).
        let transforms = !self.hooks.is_empty()
            || hooks
                .iter()
                .any(|hook| hook.event == crate::registry::HookEvent::TransformToolResult);
        if transforms
            && let Some(text) = result.text()
            && let Some(replacement) =
                hooks::run_transform(&self.hooks, hooks, vm, &call, &text, duration_ms)
        {
            result = ToolResult::Text(replacement);
        }
        let limit = match tool.max_result_size_chars {
            Some(ResultLimit::Unlimited) => None,
            Some(ResultLimit::Chars(n)) => Some(n),
            None => Some(
                env.config
                    .default_max_result_size_chars
                    .unwrap_or(DEFAULT_MAX_RESULT_SIZE_CHARS),
            ),
        };
        spill::limit_size(result, limit, env.spill_dir, name)
    }
}
