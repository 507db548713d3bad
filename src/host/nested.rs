//! `ctx.call(name, args)`: a handler calls another tool through the whole pipeline, with
//! its own caller's scope, selection, ids and cancellation, one level deeper. The chain's
//! time counts against the outermost caller's deadline (the caller's handler awaits it, and
//! its deadline drops it); more than [`MAX_CALL_DEPTH`] levels get an error result.
//! A plugin's tool may call only its own plugin's tools unless the operator granted the
//! plugin the `call` capability: `ctx.call` must not lend a plugin the powers of tools
//! (and capabilities) it was not given. The caller's trust domain is the one captured when
//! its call started ([`CallerDomain`]), not looked up by its name: a reload may rename the
//! tool or remove its plugin while the call runs, and the check must not then fail open.

use super::Host;
use crate::dispatch::{ErrorType, ToolError, ToolResult};
use crate::registry::{
    CallContext, CallerDomain, MAX_CALL_DEPTH, NativeFuture, NestedCall, Source, ToolCaller,
};
use serde_json::Value;
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The host as a [`ToolCaller`]; weak, so a context kept somewhere cannot keep the host
/// alive.
struct HostCaller(Weak<super::HostInner>);

impl ToolCaller for HostCaller {
    fn call(
        &self,
        from: &CallerDomain,
        name: String,
        args: Value,
        ctx: CallContext,
    ) -> NativeFuture<Value> {
        let host = self.0.upgrade().map(|inner| Host { inner });
        let refusal = match &host {
            Some(host) => host.plugin_call_refusal(from, &name, ctx.scope.as_deref()),
            // Nobody left to ask: only a caller that may call anything gets the
            // "shutting down" answer below.
            None => refusal_without_host(from, &name),
        };
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
            // The caller's scopes bind the tools its call calls too: a tool it may call
            // must not lend it one it may not.
            if let Some(scope) = host.missing_scope(&name, &ctx) {
                return ToolError::new(
                    ErrorType::Blocked,
                    format!(
                        "[TOOL_ERROR] {name} was not called: it needs the OAuth scope \
                         \"{scope}\", which the caller's token lacks"
                    ),
                )
                .to_json();
            }
            let result = match ctx.nested_audit.clone() {
                None => host.handle_function_call(&name, args, &ctx).await,
                Some(audit) => audited(&host, &name, args, &ctx, &*audit).await,
            };
            // A table for structured results (the tool's own object, not its JSON text).
            match result {
                ToolResult::Json(value) | ToolResult::Multimodal(value) => value,
                other => other.into_json(),
            }
        })
    }
}

/// Runs the `ctx.call` of `name` (context `ctx`) and reports it to `audit` when it ends.
async fn audited(
    host: &Host,
    name: &str,
    args: Value,
    ctx: &CallContext,
    audit: &(dyn Fn(&NestedCall<'_>) + Send + Sync),
) -> ToolResult {
    let started = Instant::now();
    // Kept only for the audit line (its digest, or the raw arguments when asked).
    let audited_args = args.clone();
    let result = host.handle_function_call(name, args, ctx).await;
    audit(&NestedCall {
        request_id: ctx.tool_call_id.as_deref().unwrap_or_default(),
        parent: ctx.parent_call_id.as_deref().unwrap_or_default(),
        task_id: ctx.task_id.as_deref(),
        tool: name,
        args: &audited_args,
        decisions: ctx.decisions().unwrap_or_default(),
        error_type: result.error_type().map(ErrorType::as_str),
        duration: started.elapsed(),
    });
    result
}

/// Why a call of the trust domain `from` may not `ctx.call` `name` when there is no host to
/// look anything up in.
fn refusal_without_host(from: &CallerDomain, name: &str) -> Option<String> {
    match from {
        CallerDomain::Builtin => None,
        CallerDomain::Plugin { id, .. } => Some(plugin_refusal(name, id)),
        CallerDomain::Unknown => Some(unknown_refusal(name)),
    }
}

fn plugin_refusal(name: &str, id: &str) -> String {
    format!(
        "[TOOL_ERROR] {name} was not called: plugin '{id}' may ctx.call only its own tools; \
         add \"call\" to [plugins.{id}] capabilities"
    )
}

fn unknown_refusal(name: &str) -> String {
    format!(
        "[TOOL_ERROR] {name} was not called: the calling tool's trust domain is unknown, so \
         ctx.call is refused"
    )
}

impl Host {
    /// Why a tool of the trust domain `from` (captured when its call started) may not
    /// `ctx.call` the tool `name`. A plugin without the `call` capability — granted both
    /// when its call started and still now — may call only its own plugin's tools; an
    /// unknown domain may call nothing (fail closed).
    fn plugin_call_refusal(
        &self,
        from: &CallerDomain,
        name: &str,
        scope: Option<&str>,
    ) -> Option<String> {
        let (id, may_call_any) = match from {
            CallerDomain::Builtin => return None,
            CallerDomain::Unknown => return Some(unknown_refusal(name)),
            CallerDomain::Plugin { id, may_call_any } => (id, *may_call_any),
        };
        if may_call_any && self.config().config.plugin_granted(id, "call") {
            return None;
        }
        let state = self.inner.registry.snapshot();
        let own = state
            .lookup(name, scope)
            .is_some_and(|tool| matches!(&tool.source, Source::Plugin(owner) if owner == id));
        (!own).then(|| plugin_refusal(name, id))
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
        if ctx.tool_caller.is_none() {
            ctx.tool_caller = self.inner.caller.get().cloned();
        }
        ctx
    }
}
