//! `ctx.call(name, args)`: a handler calls another tool through the whole pipeline, with
//! its own caller's scope, selection, ids and cancellation, one level deeper. The chain's
//! time counts against the outermost caller's deadline (the caller's handler awaits it, and
//! its deadline drops it); more than [`MAX_CALL_DEPTH`] levels get an error result.
//! A plugin's tool may call only its own plugin's tools unless the operator granted the
//! plugin the `call` capability: `ctx.call` must not lend a plugin the powers of tools
//! (and capabilities) it was not given.

use super::Host;
use crate::dispatch::{ErrorType, ToolError, ToolResult};
use crate::registry::{CallContext, MAX_CALL_DEPTH, NativeFuture, Source, ToolCaller};
use serde_json::Value;
use std::sync::{Arc, Weak};

/// The host as a [`ToolCaller`]; weak, so a context kept somewhere cannot keep the host
/// alive.
struct HostCaller(Weak<super::HostInner>);

impl ToolCaller for HostCaller {
    fn call(&self, from: &str, name: String, args: Value, ctx: CallContext) -> NativeFuture<Value> {
        let host = self.0.upgrade().map(|inner| Host { inner });
        let refusal = host
            .as_ref()
            .and_then(|host| host.plugin_call_refusal(from, &name, ctx.scope.as_deref()));
        Box::pin(async move {
            if let Some(refusal) = refusal {
                return ToolError::new(ErrorType::Blocked, refusal).to_json();
            }
            if ctx.depth > MAX_CALL_DEPTH {
                return ToolError::new(
                    ErrorType::Blocked,
                    format!(
                        "[TOOL_ERROR] {name} was not called: the ctx.call chain is too deep \
                         (at most {MAX_CALL_DEPTH} nested calls)"
                    ),
                )
                .to_json();
            }
            let Some(host) = host else {
                return ToolError::new(
                    ErrorType::Unavailable,
                    format!("[TOOL_ERROR] {name} was not called: the host is shutting down"),
                )
                .to_json();
            };
            // A table for structured results (the tool's own object, not its JSON text).
            match host.handle_function_call(&name, args, &ctx).await {
                ToolResult::Json(value) | ToolResult::Multimodal(value) => value,
                other => other.into_json(),
            }
        })
    }
}

impl Host {
    /// Why the tool `from` may not `ctx.call` the tool `name`: it belongs to a plugin
    /// without the `call` capability and `name` is not one of that plugin's tools.
    fn plugin_call_refusal(&self, from: &str, name: &str, scope: Option<&str>) -> Option<String> {
        let state = self.inner.registry.snapshot();
        let caller = state.lookup(from, scope)?;
        let Source::Plugin(id) = &caller.source else {
            return None;
        };
        let granted = self
            .config()
            .config
            .plugins
            .get(id)
            .and_then(|plugin| plugin.capabilities.as_ref())
            .is_some_and(|granted| granted.iter().any(|c| c == "call"));
        let own = state
            .lookup(name, scope)
            .is_some_and(|tool| tool.source == caller.source);
        (!granted && !own).then(|| {
            format!(
                "[TOOL_ERROR] {name} was not called: plugin '{id}' may ctx.call only its own \
                 tools; add \"call\" to [plugins.{id}] capabilities"
            )
        })
    }

    /// Makes this host the one that runs its calls' `ctx.call`s (once, when built).
    pub(super) fn set_caller(&self) {
        let _ = self
            .inner
            .caller
            .set(Arc::new(HostCaller(Arc::downgrade(&self.inner))));
    }

    /// `ctx` ready to run on this host: it can make `ctx.call`s.
    pub(super) fn with_caller(&self, ctx: &CallContext) -> CallContext {
        let mut ctx = ctx.clone();
        if ctx.caller.is_none() {
            ctx.caller = self.inner.caller.get().cloned();
        }
        ctx
    }
}
