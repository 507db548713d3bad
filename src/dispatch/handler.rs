//! Stage 7: the execution middleware (`middleware.rs`), outermost first, around the
//! handler (`execute.rs`) under its deadline.

use super::call::Call;
use super::execute;
use super::middleware::{BoxFuture, Middleware, Next, ToolCall};
use super::result::ToolResult;
use crate::config::Config;
use std::sync::Arc;

/// Runs `call` through `middleware` to its handler; `config` is the configuration of the
/// generation the call started on.
pub(super) async fn run(
    middleware: &[Arc<dyn Middleware>],
    config: &Config,
    call: &Call<'_>,
) -> ToolResult {
    let timeout_ms = config
        .runtime
        .timeout_ms
        .unwrap_or(execute::DEFAULT_TIMEOUT_MS);
    let (vm, tool) = (call.vm, call.tool);
    // Whose call this is, fixed now: a reload during the call changes nothing of it.
    let domain = &execute::caller_domain(tool, config);
    if middleware.is_empty() {
        // Nothing to hand an owned call to: no copies of the arguments and context.
        return execute::execute(vm, tool, domain, &call.args, call.ctx, timeout_ms).await;
    }
    let terminal = move |owned: ToolCall| -> BoxFuture<'_, ToolResult> {
        Box::pin(async move {
            execute::execute(vm, tool, domain, &owned.args, &owned.ctx, timeout_ms).await
        })
    };
    let owned = ToolCall {
        name: call.name.to_string(),
        args: call.args.clone(),
        ctx: call.ctx.clone(),
    };
    Next::new(middleware, &terminal).run(owned).await
}
