//! The dispatch pipeline (SPEC §7). This is the minimal path of the foundation: argument
//! normalisation, lookup in the caller's scope, availability, execution and result
//! normalisation. Coercion, hooks, approval, validation, middleware and size limits are
//! separate stages added by the pipeline work; each gets its own file here.

mod errors;
mod execute;

pub use errors::{ErrorType, MAX_ERROR_CHARS, error_result, is_error, sanitise};

use crate::lua::LuaVm;
use crate::registry::{CallContext, RegistryState, missing_env};
use serde_json::{Map, Value};

/// A call's result: a JSON string for text, an object for errors and multimodal envelopes.
pub type ToolResult = Value;

/// Arguments as the handler sees them: an object; a JSON string of an object is parsed;
/// anything else becomes `{}`.
pub fn normalise_args(args: Value) -> Value {
    match args {
        Value::Object(_) => args,
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// Runs one call through the pipeline against one registry snapshot and VM.
pub async fn dispatch(
    state: &RegistryState,
    vm: &LuaVm,
    name: &str,
    args: Value,
    ctx: &CallContext,
) -> ToolResult {
    let args = normalise_args(args);
    let Some(tool) = state.lookup(name, ctx.scope.as_deref()) else {
        return error_result(ErrorType::UnknownTool, &format!("Unknown tool: {name}"));
    };
    if let Some(reason) = missing_env(tool) {
        return error_result(
            ErrorType::Unavailable,
            &format!("Tool {name} is unavailable: {reason}"),
        );
    }
    execute::execute(vm, tool, &args, ctx).await
}
