//! `ctx.call(name, args)`: a handler calls another tool through the whole pipeline, with
//! its own caller's scope, selection, ids and cancellation, one level deeper. The chain's
//! time counts against the outermost caller's deadline (the caller's handler awaits it, and
//! its deadline drops it); more than [`MAX_CALL_DEPTH`] levels get an error result.

use super::Host;
use crate::dispatch::{ErrorType, ToolError, ToolResult};
use crate::registry::{CallContext, MAX_CALL_DEPTH, NativeFuture, ToolCaller};
use serde_json::Value;
use std::sync::{Arc, Weak};

/// The host as a [`ToolCaller`]; weak, so a context kept somewhere cannot keep the host
/// alive.
struct HostCaller(Weak<super::HostInner>);

impl ToolCaller for HostCaller {
    fn call(&self, name: String, args: Value, ctx: CallContext) -> NativeFuture<Value> {
        let host = self.0.upgrade().map(|inner| Host { inner });
        Box::pin(async move {
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
