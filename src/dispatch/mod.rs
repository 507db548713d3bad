//! The dispatch pipeline (SPEC §7). This is the minimal path of the foundation: argument
//! normalisation, lookup in the caller's scope, availability (environment and `check_fn`),
//! execution and result
//! normalisation. Coercion, hooks, approval, validation, middleware and size limits are
//! separate stages added by the pipeline work; each gets its own file here.

mod errors;
mod execute;

pub use errors::{ErrorType, MAX_ERROR_CHARS, error_result, is_error, sanitise};

use crate::definitions::ProbeRunner;
use crate::lua::LuaVm;
use crate::registry::{Availability, AvailabilityCache, CallContext, RegistryState, ToolEntry};
use serde_json::{Map, Value};
use std::time::Instant;

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

/// Availability of `tool` for `scope`, probing its `check_fn` on `vm` when needed.
pub fn availability_of(
    cache: &AvailabilityCache,
    vm: &LuaVm,
    state: &RegistryState,
    tool: &ToolEntry,
    scope: Option<&str>,
) -> Availability {
    cache.check(
        tool,
        scope,
        state.generation(),
        Instant::now(),
        || match &tool.check_fn {
            Some(probe) => vm.check(probe),
            None => Ok(true),
        },
    )
}

/// Runs one call through the pipeline against one registry snapshot and VM.
pub async fn dispatch(
    state: &RegistryState,
    vm: &LuaVm,
    availability: &AvailabilityCache,
    name: &str,
    args: Value,
    ctx: &CallContext,
) -> ToolResult {
    let args = normalise_args(args);
    let Some(tool) = state.lookup(name, ctx.scope.as_deref()) else {
        return error_result(ErrorType::UnknownTool, &format!("Unknown tool: {name}"));
    };
    let answer = availability_of(availability, vm, state, tool, ctx.scope.as_deref());
    if !answer.available {
        let reason = answer.reason.unwrap_or_default();
        return error_result(
            ErrorType::Unavailable,
            &format!("Tool {name} is unavailable: {reason}"),
        );
    }
    execute::execute(vm, tool, &args, ctx).await
}
