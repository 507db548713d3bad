//! Running a handler (Lua on the VM, or native Rust) and mapping its failures to the error
//! results of docs/calls.md.

use super::errors::ErrorType;
use super::result::{ToolError, ToolResult};
use crate::config::Config;
use crate::lua::{HandlerFailure, LuaVm, Returned};
use crate::registry::{CallContext, CallerDomain, Handler, OutputSchema, Source, ToolEntry};
use serde_json::Value;
use std::time::Duration;

/// Default per-call deadline (`[runtime] timeout_ms`).
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The trust domain `tool`'s call runs in, by its source and `config` (the configuration of
/// the generation the call started on).
pub(super) fn caller_domain(tool: &ToolEntry, config: &Config) -> CallerDomain {
    match &tool.source {
        Source::Builtin | Source::Library | Source::Native => CallerDomain::Builtin,
        Source::Plugin(id) => CallerDomain::Plugin {
            id: id.clone(),
            may_call_any: config.plugin_granted(id, "call"),
        },
        Source::Mcp(_) => CallerDomain::Unknown,
    }
}

/// Calls the tool's handler under its deadline (`timeout_ms`, else `default_timeout_ms`) and
/// returns its normalised result or an error object.
pub(super) async fn execute(
    vm: &LuaVm,
    tool: &ToolEntry,
    domain: &CallerDomain,
    args: &Value,
    ctx: &CallContext,
    default_timeout_ms: u64,
) -> ToolResult {
    let budget_ms = tool.timeout_ms.unwrap_or(default_timeout_ms);
    let budget = Duration::from_millis(budget_ms);
    let served_read_only = tool.annotations.read_only == Some(true);
    let outcome = match &tool.handler {
        Handler::Lua(id) => {
            let read_only = served_read_only || ctx.read_only;
            vm.call_handler(
                *id,
                tool.name.as_str(),
                domain,
                args,
                ctx,
                budget,
                read_only,
            )
            .await
        }
        // A read-only tool's `ctx.call` reaches only read-only tools: the sandbox cannot
        // hold a Rust handler or another server's tool to the promise.
        Handler::Native(_) if ctx.read_only && !served_read_only => {
            Err(HandlerFailure::Raised(format!(
                "{} was not run: it was called by a read-only tool, and it is not read-only \
                 itself (see docs/effects.md)",
                tool.name
            )))
        }
        Handler::Native(handler) => {
            let deadline = std::time::Instant::now() + budget;
            // A native task tool has no `prepare`: its task starts with the handler.
            let run = async {
                let mut ctx = ctx.clone();
                if let Some(task_id) = ctx.hand_over().await {
                    ctx.task_id = Some(task_id);
                }
                ctx.handover = None;
                handler(args.clone(), ctx).await
            };
            match crate::lua::timer::until(deadline, run).await {
                None => Err(HandlerFailure::Timeout),
                Some(Ok(value)) => normalise_native(value),
                Some(Err(error)) => Err(HandlerFailure::Raised(error.into_message())),
            }
        }
    };
    if let Some(output_schema) = &tool.output_schema {
        return match outcome {
            Ok(returned) => structured(tool, output_schema, returned),
            Err(failure) => ToolResult::Error(failure_error(vm, tool, budget_ms, failure)),
        };
    }
    match outcome {
        Ok(Returned::Text(text)) => ToolResult::Text(text),
        Ok(Returned::Json(value)) => ToolResult::Json(value),
        Ok(Returned::Multimodal(envelope)) => ToolResult::Multimodal(envelope),
        Err(failure) => ToolResult::Error(failure_error(vm, tool, budget_ms, failure)),
    }
}

/// The result of a tool with an `output_schema`: a table (or the JSON text of one) that
/// matches it; anything else breaks the contract, naming the path of the first mismatch.
fn structured(tool: &ToolEntry, output_schema: &OutputSchema, returned: Returned) -> ToolResult {
    let value = match returned {
        Returned::Json(value) => value,
        Returned::Text(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => value,
            _ => {
                return contract(
                    tool,
                    "string",
                    format!(
                        "Tool {} returned text, but its output_schema asks for a table",
                        tool.name
                    ),
                );
            }
        },
        Returned::Multimodal(_) => {
            return contract(
                tool,
                "table",
                format!(
                    "Tool {} returned a multimodal envelope, but its output_schema asks for a table",
                    tool.name
                ),
            );
        }
    };
    match output_schema.check(&value) {
        Ok(()) => ToolResult::Json(value),
        Err((path, reason)) => {
            let message = format!(
                "Tool {} returned a result that does not match its output_schema at {path}: {reason}",
                tool.name
            );
            let mut error = contract_error(tool, "table", message);
            error.path = Some(path);
            ToolResult::Error(error)
        }
    }
}

fn contract(tool: &ToolEntry, result_type: &str, message: String) -> ToolResult {
    ToolResult::Error(contract_error(tool, result_type, message))
}

fn contract_error(tool: &ToolEntry, result_type: &str, message: String) -> ToolError {
    ToolError::new(ErrorType::ToolResultContract, message)
        .with_tool(tool.name.as_str())
        .with_result_type(result_type)
}

/// The error result of a handler that failed.
fn failure_error(
    vm: &LuaVm,
    tool: &ToolEntry,
    budget_ms: u64,
    failure: HandlerFailure,
) -> ToolError {
    // The host's kills, counted where they are told apart.
    match failure {
        HandlerFailure::Memory => crate::telemetry::metric::vm_kill("memory"),
        HandlerFailure::Timeout => crate::telemetry::metric::vm_kill("deadline"),
        _ => {}
    }
    match failure {
        HandlerFailure::Raised(message) => {
            ToolError::execution_failed(ErrorType::HandlerError, message)
        }
        HandlerFailure::Memory => ToolError::execution_failed(
            ErrorType::Memory,
            format_args!("{} exceeded the memory limit", tool.name),
        ),
        HandlerFailure::Timeout => ToolError::execution_failed(
            ErrorType::Timeout,
            format_args!("{} timed out after {budget_ms} ms", tool.name),
        ),
        HandlerFailure::Contract(kind) => {
            // `kind` is the type, possibly followed by where in a table the bad value sits.
            let result_type = kind.split_whitespace().next().unwrap_or("nil").to_string();
            // The handler's own definition, so the author finds the `return` to fix.
            let at = match &tool.handler {
                Handler::Lua(id) => vm.position(*id),
                Handler::Native(_) => None,
            }
            .unwrap_or_else(|| tool.origin());
            ToolError::new(
                ErrorType::ToolResultContract,
                format!(
                    "Tool handler of {} ({at}) returned unsupported result type: {kind}",
                    tool.name
                ),
            )
            .with_tool(tool.name.as_str())
            .with_result_type(result_type)
        }
    }
}

/// The same return rules for Rust handlers: text stays text, a multimodal envelope stays an
/// object, other objects and arrays become JSON text, scalars break the contract.
fn normalise_native(value: Value) -> Result<Returned, HandlerFailure> {
    match value {
        Value::String(text) => Ok(Returned::Text(text)),
        Value::Object(ref map) if map.get("_multimodal") == Some(&Value::Bool(true)) => {
            Ok(Returned::Multimodal(value))
        }
        Value::Object(_) | Value::Array(_) => Ok(Returned::Json(value)),
        Value::Null => Err(HandlerFailure::Contract("null".into())),
        Value::Bool(_) => Err(HandlerFailure::Contract("boolean".into())),
        Value::Number(_) => Err(HandlerFailure::Contract("number".into())),
    }
}
