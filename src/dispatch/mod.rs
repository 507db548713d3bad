//! The dispatch pipeline (docs/calls.md): every call goes through these stages, in order, and
//! every failure becomes a result object, never a panic or a lost call. One call is one
//! value (`call.rs`): a [`Request`] until its VM is chosen, then a `Call` on the VM.
//!
//! Before the VM is chosen ([`Pipeline::prepare`], `prepare.rs`):
//! 1. coerce (`coerce.rs`) — arguments repaired toward the schema;
//! 2. the tool-search bridge (`bridge.rs`) routes `tool_call` to the real tool, so the VM
//!    is chosen once, for the functions of the tool the call reaches.
//!
//! On the VM ([`Pipeline::run`]):
//! 2. the bridge answers `tool_search`/`tool_describe` (and a refused `tool_call`);
//! 3. agent-loop guard (`guard.rs`), then lookup in the caller's scope (`unknown_tool`),
//!    selection and availability (`unavailable`), rate limits (`rate_limited`, `limit/`)
//!    (`admit.rs`);
//! 4. pre_tool_call hooks (`hooks.rs`);
//! 5. approval (`approval.rs`);
//! 6. validation (`validate.rs`);
//! 7. execution middleware (`middleware.rs`) around the handler (`execute.rs`), wired by
//!    `handler.rs`;
//! 8. post_tool_call observers and transform_tool_result (`hooks.rs`, `finish.rs`);
//! 9. size limit (`spill.rs`).
//!
//! Calls that fail before stage 4 (agent loop, unknown, unavailable) do not reach hooks.

mod admit;
mod approval;
mod bridge;
mod call;
mod coerce;
#[cfg(test)]
mod coerce_props;
mod errors;
mod execute;
mod finish;
mod guard;
mod handler;
mod hooks;
mod limit;
mod middleware;
mod needs;
mod prepare;
mod result;
mod select;
mod spill;
mod validate;

pub(crate) use approval::PolicyApprover;
pub use approval::{ApprovalRequest, Approver};
pub(crate) use call::{CallOutcome, Request};
pub use errors::ErrorType;
#[cfg_attr(not(feature = "mcp-client"), allow(unused_imports))]
pub(crate) use execute::DEFAULT_TIMEOUT_MS;
pub use hooks::{CallStatus, Hook, HookCall, PostCall, PreDecision};
pub(crate) use limit::Limiters;
pub use middleware::{BoxFuture, Middleware, Next, ToolCall};
pub use result::{ToolError, ToolResult};

use crate::config::Config;
use crate::lua::LuaVm;
use crate::registry::{Availability, AvailabilityCache, CallContext, RegistryState, ToolEntry};
use crate::search::SearchPlans;
use admit::Admission;
use call::{Call, Route};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Default `default_max_result_size_chars`.
pub(crate) const DEFAULT_MAX_RESULT_SIZE_CHARS: u64 = 100_000;

/// What one call runs against: a registry snapshot, the availability cache and the
/// configuration.
pub(crate) struct CallEnv<'a> {
    /// The registry snapshot.
    pub state: &'a RegistryState,
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
    /// The rate limiters (`[limits]`).
    pub limits: &'a Limiters,
}

/// The host's Rust extensions of the pipeline.
pub(crate) struct Pipeline {
    hooks: Vec<Arc<dyn Hook>>,
    middleware: Vec<Arc<dyn Middleware>>,
    approver: Arc<dyn Approver>,
    selections: select::SelectionCache,
}

impl Pipeline {
    /// Whether `name` is in the selection of `ctx` (as the `admit` stage decides).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn selects(
        &self,
        state: &crate::registry::RegistryState,
        config: &crate::config::Config,
        ctx: &crate::registry::CallContext,
        name: &str,
    ) -> bool {
        self.selections.contains(state, config, ctx, name)
    }

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

    /// Stage 1 and the bridge's routing (stage 2) of a call of `name`, before its VM is
    /// chosen: the VM must hold [`Request::needs`].
    pub(crate) fn prepare(
        &self,
        env: &CallEnv<'_>,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> Request {
        prepare::prepare(env, name, args, ctx)
    }

    /// Runs the rest of the call's stages on `vm`, a VM holding its functions (the caller
    /// has sent the call to the VM's thread: see `VmPool::run`).
    pub(crate) async fn run(
        &self,
        env: &CallEnv<'_>,
        vm: &LuaVm,
        request: Request,
        ctx: &CallContext,
    ) -> CallOutcome {
        let started = Instant::now();
        let call::Request {
            name,
            args,
            tool,
            hooks,
            route,
        } = request;
        // Structured content is for the tool the client called (`tool_call` declares no
        // output schema).
        let structured = matches!(route, Route::Direct)
            && tool
                .as_ref()
                .is_some_and(|tool| tool.output_schema.is_some());

        // Stage 2: what the bridge answers itself.
        let answer = match route {
            Route::Bridge(plan) => bridge::answer(&plan, &name, &args, |tool| {
                env.available(vm, tool, ctx.scope.as_deref()).available
            }),
            Route::Refused(answer) => *answer,
            Route::Direct | Route::ThroughBridge => {
                // Stage 3: guard, lookup, selection, availability.
                let admission = Admission {
                    name: &name,
                    args,
                    tool: tool.as_deref(),
                    hooks: &hooks,
                    ctx,
                    vm,
                    started,
                };
                let mut call = match admit::admit(env, &self.selections, admission) {
                    Ok(call) => call,
                    Err(refused) => return ToolResult::from(*refused).into(),
                };
                // The client capabilities the tool needs (before anything of it runs).
                if let Some(missing) = needs::check(&call) {
                    return ToolResult::from(missing).into();
                }
                // Stages 4 to 7: hooks, approval, validation, the handler.
                let result = self.through_handler(env, &mut call).await;
                // Stages 8 and 9: post hooks and transforms, the size limit.
                let result = finish::finish(&self.hooks, env, &call, result);
                return CallOutcome { result, structured };
            }
        };
        let call = HookCall {
            tool_name: &name,
            args: &args,
            ctx,
        };
        finish::observe_inline(&self.hooks, env.state.hooks(), vm, call, &answer, started);
        answer.into()
    }

    /// Stages 4 to 7 of an admitted call: its result, or the error that stopped it.
    async fn through_handler(&self, env: &CallEnv<'_>, call: &mut Call<'_>) -> ToolResult {
        // Stage 4: pre_tool_call hooks.
        // A stage's span only where the stage has work: most calls run no hook, need no
        // approval and have no probe, and a span costs an exporter several microseconds.
        let has_hooks = !self.hooks.is_empty() || !call.hooks.is_empty();
        let hooked = stage_span_if(has_hooks, "hooks", call.name).entered();
        let hook_approval = hooks::pre_tool_call(&self.hooks, call);
        drop(hooked);
        let ctx: &CallContext = call.ctx;
        let decisions = ctx.decisions.as_deref();
        let hook_approval = match hook_approval {
            Ok(approval) => {
                if let Some(decisions) = decisions {
                    decisions.set_hooks(match approval {
                        Some(_) => "approval_requested",
                        None => "proceed",
                    });
                }
                approval
            }
            Err(blocked) => {
                if let Some(decisions) = decisions {
                    decisions.set_hooks("blocked");
                }
                return (*blocked).into();
            }
        };
        let approval_required = approval::required(env.config, call, hook_approval.is_some());
        // Stage 5: approval (asking the user over MCP waits at most the call's deadline).
        let budget = std::time::Duration::from_millis(
            call.tool.timeout_ms.unwrap_or(
                env.config
                    .runtime
                    .timeout_ms
                    .unwrap_or(execute::DEFAULT_TIMEOUT_MS),
            ),
        );
        if let Some(refusal) =
            approval::approve(&*self.approver, env.config, call, hook_approval, budget)
                .instrument(stage_span_if(approval_required, "approval", call.name))
                .await
        {
            if let Some(decisions) = decisions {
                decisions.set_approval("denied");
            }
            return refusal.into();
        }
        if let Some(decisions) = decisions.filter(|_| approval_required) {
            decisions.set_approval("approved");
        }
        // Stage 6: validation.
        if let Err(invalid) = validate::validate(call.tool, &call.args) {
            return (*invalid).into();
        }
        // Stage 7: middleware around the handler.
        let span = stage_span("handler", call.name);
        handler::run(&self.middleware, env.config, call)
            .instrument(span)
            .await
    }
}

/// [`stage_span`] when `wanted`, else no span.
fn stage_span_if(wanted: bool, stage: &'static str, tool: &str) -> tracing::Span {
    match wanted {
        true => stage_span(stage, tool),
        false => tracing::Span::none(),
    }
}

/// The span of one stage of a call of `tool` (`toolhost.{stage} {tool}`), a child of the
/// call's; disabled (free) unless traces are exported.
fn stage_span(stage: &'static str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        target: crate::telemetry::SPAN_TARGET,
        "stage",
        otel.name = %format_args!("toolhost.{stage} {tool}"),
        gen_ai.tool.name = tool,
    )
}

impl CallEnv<'_> {
    /// Whether `tool` is available to `scope`, its `check_fn` (if it must run) on `vm`.
    fn available(&self, vm: &LuaVm, tool: &ToolEntry, scope: Option<&str>) -> Availability {
        // Only a `check_fn` takes time here (the rest is a lookup).
        let _probe = stage_span_if(tool.check_fn.is_some(), "availability", &tool.name).entered();
        self.availability
            .availability(tool, scope, self.state.generation(), Instant::now(), vm)
    }
}
