//! Stage 1 (arguments repaired toward the schema) and stage 2's routing (which tool a
//! bridge call reaches), before the call's VM is chosen: neither runs Lua, and knowing the
//! tool the call reaches lets the host pick, once, a VM that holds its functions.

use super::bridge::{self, Routed};
use super::call::{Request, Route, hooks_for};
use super::{CallEnv, coerce};
use crate::registry::CallContext;
use crate::search::BRIDGE_TOOLS;
use serde_json::{Map, Value};

/// Arguments as the handler sees them: an object; a JSON string of an object is parsed;
/// anything else becomes `{}`.
fn normalise_args(args: Value) -> Value {
    match args {
        Value::Object(_) => args,
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// The call of `name` with `args`, repaired and routed.
pub(super) fn prepare(env: &CallEnv<'_>, name: &str, args: Value, ctx: &CallContext) -> Request {
    let scope = ctx.scope.as_deref();
    let tool = env.state.lookup(name, scope).cloned();

    // Stage 1: coerce against the tool's schema (unknown tools keep their arguments).
    let mut args = normalise_args(args);
    if let (Some(tool), Value::Object(map)) = (&tool, &mut args)
        && let Some(parameters) = tool.schema.get("parameters")
    {
        coerce::coerce_args(map, parameters, tool.schema.parameter_types());
    }

    // Stage 2: the tool-search bridge, when it is active for the caller's selection.
    let mut route = Route::Direct;
    if BRIDGE_TOOLS.contains(&name) {
        let plan = env.search.plan(
            env.state,
            env.config,
            env.config_fingerprint,
            scope,
            &ctx.toolsets,
        );
        if plan.active {
            route = match name {
                "tool_call" => match bridge::route_call(&plan, &args) {
                    Routed::Answer(answer) => Route::Refused(Box::new(answer)),
                    Routed::Call(real, arguments) => {
                        // The named tool is never a bridge tool (the bridge refuses those):
                        // this goes one level deep.
                        let mut request = prepare(env, &real, arguments, ctx);
                        request.route = Route::ThroughBridge;
                        return request;
                    }
                },
                _ => Route::Bridge(plan),
            };
        }
    }
    let hooks = match (&route, &tool) {
        (Route::Direct, Some(tool)) => hooks_for(env.state.hooks(), tool),
        _ => Vec::new(),
    };
    Request {
        name: name.to_string(),
        args,
        tool,
        hooks,
        route,
    }
}
