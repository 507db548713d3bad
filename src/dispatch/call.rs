//! One call as it travels the pipeline (in the spirit of codex-rs's `ToolInvocation`): a
//! [`Request`] until its VM is chosen, then a [`Call`] that every stage from 3 on reads,
//! and finally a [`CallOutcome`].
//!
//! The request is built before the VM is picked (stage 1 and the bridge's routing need no
//! Lua), so the VM is chosen once, for the functions of the tool the call really reaches.

use super::result::ToolResult;
use crate::lua::LuaVm;
use crate::registry::{CallContext, Handler, HookEntry, LuaFnId, Probe, ToolEntry};
use crate::search::SearchPlan;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// A call before its VM is chosen: its arguments repaired (stage 1) and routed by the
/// bridge (stage 2).
pub(crate) struct Request {
    /// The tool's name (the real tool's when `tool_call` named it).
    pub(super) name: String,
    /// The arguments: an object, coerced toward the tool's schema.
    pub(super) args: Value,
    /// The tool of that name in the caller's scope, if there is one.
    pub(super) tool: Option<Arc<ToolEntry>>,
    /// The Lua hooks that see a call of `tool`.
    pub(super) hooks: Vec<Arc<HookEntry>>,
    /// What the bridge made of the call.
    pub(super) route: Route,
}

/// What stage 2 (the tool-search bridge) made of a call.
pub(super) enum Route {
    /// A call of the named tool.
    Direct,
    /// `tool_search` or `tool_describe`: answered on the VM (its answer probes
    /// availability) from this plan.
    Bridge(Arc<SearchPlan>),
    /// A `tool_call` the bridge refused, with its answer (boxed: much larger than the
    /// other routes).
    Refused(Box<ToolResult>),
    /// The tool a `tool_call` named. Its result is `tool_call`'s, which declares no output
    /// schema: never structured.
    ThroughBridge,
}

impl Request {
    /// The Lua functions the call may run (its handler, `check_fn` and hooks): the VM
    /// chosen for it must hold them all.
    pub(crate) fn needs(&self) -> Vec<LuaFnId> {
        let Some(tool) = &self.tool else {
            return Vec::new();
        };
        let mut needs: Vec<LuaFnId> = self.hooks.iter().map(|hook| hook.function).collect();
        if let Handler::Lua(id) = tool.handler {
            needs.push(id);
        }
        if let Some(Probe::Lua(id)) = tool.check_fn {
            needs.push(id);
        }
        needs
    }
}

/// The Lua hooks that see a call of `tool`: a plugin's hooks see only its own tools'
/// calls unless the plugin holds the `hooks` capability.
pub(super) fn hooks_for(all: &[Arc<HookEntry>], tool: &ToolEntry) -> Vec<Arc<HookEntry>> {
    all.iter()
        .filter(|hook| hook.applies_to(&tool.source))
        .cloned()
        .collect()
}

/// A call of a registered tool on its VM, from stage 3 on.
pub(super) struct Call<'a> {
    /// The tool's name.
    pub(super) name: &'a str,
    /// The arguments (as pre_tool_call hooks left them, from stage 4 on).
    pub(super) args: Value,
    /// The caller's context.
    pub(super) ctx: &'a CallContext,
    /// The tool.
    pub(super) tool: &'a ToolEntry,
    /// The Lua hooks that see this call.
    pub(super) hooks: &'a [Arc<HookEntry>],
    /// The VM the call runs on (chosen once, for `tool`'s functions).
    pub(super) vm: &'a LuaVm,
    /// When the call started (hooks see its duration).
    pub(super) started: Instant,
}

impl Call<'_> {
    /// The call as a hook sees it.
    pub(super) fn hook_call(&self) -> super::HookCall<'_> {
        super::HookCall {
            tool_name: self.name,
            args: &self.args,
            ctx: self.ctx,
        }
    }
}

/// Whole milliseconds since `started` (what hooks see as `duration_ms`).
pub(super) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// What a call produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallOutcome {
    /// The result.
    pub(crate) result: ToolResult,
    /// The tool called declares an `output_schema`: an MCP client gets a structured
    /// result as `structuredContent`.
    pub(crate) structured: bool,
}

impl From<ToolResult> for CallOutcome {
    /// A result with no structured content (errors, bridge answers, cancellations).
    fn from(result: ToolResult) -> Self {
        Self {
            result,
            structured: false,
        }
    }
}
