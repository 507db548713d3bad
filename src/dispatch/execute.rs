//! Running a handler (Lua on the VM, or native Rust) and mapping its failures to the error
//! results of SPEC §7.1.

use super::errors::{ErrorType, error_result};
use crate::lua::{HandlerFailure, LuaVm};
use crate::registry::{CallContext, Handler, ToolEntry};
use serde_json::Value;

/// Calls the tool's handler and returns its normalised result or an error object.
pub async fn execute(vm: &LuaVm, tool: &ToolEntry, args: &Value, ctx: &CallContext) -> Value {
    let outcome = match &tool.handler {
        Handler::Lua(id) => vm.call_handler(*id, tool.name.as_str(), args, ctx).await,
        Handler::Native(handler) => match handler(args.clone(), ctx.clone()).await {
            Ok(value) => normalise_native(value),
            Err(message) => Err(HandlerFailure::Raised(message)),
        },
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
