//! `Host::handle_function_calls`: a batch of calls from one model turn. Consecutive
//! `parallel_safe` calls run concurrently (each on its own task, so on different VMs of the
//! pool and different cores of a multi-thread runtime); any other call runs alone, after
//! the calls before it and before the calls after it. Results come back in request order.

use super::Host;
use crate::dispatch::{ErrorType, ToolError, ToolResult};
use crate::registry::CallContext;
use serde_json::Value;

/// One call of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCall {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: Value,
    /// The model's id for this call (overrides the context's).
    pub tool_call_id: Option<String>,
}

impl FunctionCall {
    /// A call of `name` with `args`.
    pub fn new(name: &str, args: Value) -> Self {
        Self {
            name: name.to_string(),
            args,
            tool_call_id: None,
        }
    }
}

impl Host {
    /// Runs a batch (see the module docs); `ctx` applies to every call.
    pub async fn handle_function_calls(
        &self,
        calls: Vec<FunctionCall>,
        ctx: &CallContext,
    ) -> Vec<ToolResult> {
        let state = self.inner.registry.snapshot();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut group: Vec<(usize, FunctionCall)> = Vec::new();
        for (index, call) in calls.into_iter().enumerate() {
            // Unknown tools fail at once, so they are as safe as parallel calls.
            let parallel = state
                .lookup(&call.name, ctx.scope.as_deref())
                .is_none_or(|tool| tool.parallel_safe);
            if parallel {
                group.push((index, call));
                continue;
            }
            self.run_group(std::mem::take(&mut group), ctx, &mut results)
                .await;
            self.run_group(vec![(index, call)], ctx, &mut results).await;
        }
        self.run_group(group, ctx, &mut results).await;
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    // Every index is filled above; a hole would be a bug, reported as such.
                    ToolError::new(ErrorType::HandlerError, "the call was never run").into()
                })
            })
            .collect()
    }

    async fn run_group(
        &self,
        group: Vec<(usize, FunctionCall)>,
        ctx: &CallContext,
        results: &mut [Option<ToolResult>],
    ) {
        if group.is_empty() {
            return;
        }
        let in_runtime = tokio::runtime::Handle::try_current().is_ok();
        if group.len() == 1 || !in_runtime {
            for (index, call) in group {
                results[index] = Some(self.run_one(call, ctx).await);
            }
            return;
        }
        let tasks: Vec<_> = group
            .into_iter()
            .map(|(index, call)| {
                let host = self.clone();
                let ctx = ctx.clone();
                (
                    index,
                    tokio::spawn(async move { host.run_one(call, &ctx).await }),
                )
            })
            .collect();
        for (index, task) in tasks {
            let result = task.await.unwrap_or_else(|e| {
                ToolError::execution_failed(
                    ErrorType::HandlerError,
                    format_args!("the call's task ended: {e}"),
                )
                .into()
            });
            results[index] = Some(result);
        }
    }

    async fn run_one(&self, call: FunctionCall, ctx: &CallContext) -> ToolResult {
        let mut ctx = ctx.clone();
        if call.tool_call_id.is_some() {
            ctx.tool_call_id = call.tool_call_id;
        }
        self.handle_function_call(&call.name, call.args, &ctx).await
    }
}
