//! Running a handler (Lua on the VM, or native Rust) and mapping its failures to the error
//! results of SPEC §7.1.

use super::errors::{ErrorType, error_result};
use crate::lua::{HandlerFailure, LuaVm};
use crate::registry::{CallContext, Handler, ToolEntry};
use serde_json::Value;
use std::time::Duration;

/// Default per-call deadline (`[runtime] timeout_ms`).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Calls the tool's handler under its deadline (`timeout_ms`, else `default_timeout_ms`) and
/// returns its normalised result or an error object.
pub async fn execute(
    vm: &LuaVm,
    tool: &ToolEntry,
    args: &Value,
    ctx: &CallContext,
    default_timeout_ms: u64,
) -> Value {
    let budget_ms = tool.timeout_ms.unwrap_or(default_timeout_ms);
    let budget = Duration::from_millis(budget_ms);
    let outcome = match &tool.handler {
        Handler::Lua(id) => {
            vm.call_handler(*id, tool.name.as_str(), args, ctx, budget)
                .await
        }
        Handler::Native(handler) => {
            let deadline = std::time::Instant::now() + budget;
            match crate::lua::timer::until(deadline, handler(args.clone(), ctx.clone())).await {
                None => Err(HandlerFailure::Timeout),
                Some(Ok(value)) => normalise_native(value),
                Some(Err(message)) => Err(HandlerFailure::Raised(message)),
            }
        }
    };
    match outcome {
        Ok(value) => value,
        Err(HandlerFailure::Raised(message)) => error_result(
            ErrorType::HandlerError,
            &format!("[TOOL_ERROR] Tool execution failed: {message}"),
        ),
        Err(HandlerFailure::Memory) => error_result(
            ErrorType::Memory,
            &format!(
                "[TOOL_ERROR] Tool execution failed: {} exceeded the memory limit",
                tool.name
            ),
        ),
        Err(HandlerFailure::Timeout) => error_result(
            ErrorType::Timeout,
            &format!(
                "[TOOL_ERROR] Tool execution failed: {} timed out after {budget_ms} ms",
                tool.name
            ),
        ),
        Err(HandlerFailure::Contract(kind)) => error_result(
            ErrorType::ToolResultContract,
            &format!("Tool handler returned unsupported result type: {kind}"),
        ),
    }
}

/// The same return rules for Rust handlers: text stays text, a multimodal envelope stays an
/// object, other objects and arrays become JSON text, scalars break the contract.
fn normalise_native(value: Value) -> Result<Value, HandlerFailure> {
    match value {
        Value::String(_) => Ok(value),
        Value::Object(ref map) if map.get("_multimodal") == Some(&Value::Bool(true)) => Ok(value),
        Value::Object(_) | Value::Array(_) => Ok(Value::String(value.to_string())),
        Value::Null => Err(HandlerFailure::Contract("null".into())),
        Value::Bool(_) => Err(HandlerFailure::Contract("boolean".into())),
        Value::Number(_) => Err(HandlerFailure::Contract("number".into())),
    }
}
