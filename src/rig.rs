//! The `rig` feature: a [`Host`]'s tools as tools of [rig](https://docs.rs/rig-core) agents.
//!
//! [`Host::rig_tools`] gives one [`DynamicTool`] per selected, available tool, its definition
//! taken from the host's memoised definitions; [`Host::rig_toolset`] puts them in a rig
//! [`ToolSet`] (what a rig agent is built with). Every call goes through the whole toolhost
//! pipeline (coercion, hooks, approval, validation, middleware, deadline, spill), so rig
//! agents get the same safety as every other client.
//!
//! Reloads are visible: a call always runs the tool's current version, and a tool a
//! reload removed reports itself not live (rig's liveness probe), its calls answering
//! `unknown_tool`. Tools a reload added need a fresh `rig_tools` / `rig_toolset`.
//!
//! Results map to rig's: text → text output, structured data → JSON output, a multimodal
//! envelope → its JSON text, an error → a failed result of the matching kind whose
//! model-visible output is the docs/calls.md error JSON (what every other client's model reads).

use crate::{CallContext, ErrorType, Format, Host, Selection, ToolResult};
use rig_agent::tool::ToolSet;
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::Value;

impl Host {
    /// One rig tool per tool in `selection` (its format is ignored: rig takes the
    /// name, description and parameters schema).
    pub fn rig_tools(&self, selection: &Selection) -> Vec<DynamicTool> {
        let selection = selection.clone().with_format(Format::OpenAi);
        let ctx = context_of(&selection);
        self.tool_definitions(&selection)
            .iter()
            .filter_map(|definition| {
                let function = definition.get("function")?;
                let name = function.get("name")?.as_str()?.to_string();
                let description = function
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let parameters = function.get("parameters").cloned().unwrap_or_default();
                let rig_name = ToolName::new(name.clone()).ok()?;
                let (host, ctx) = (self.clone(), ctx.clone());
                let call_name = name.clone();
                let tool = DynamicTool::new(rig_name, description, parameters, move |args| {
                    let (host, ctx, name) = (host.clone(), ctx.clone(), call_name.clone());
                    Box::pin(
                        async move { to_rig(host.handle_function_call(&name, args, &ctx).await) },
                    )
                });
                let (host, scope) = (self.clone(), selection.scope.clone());
                Some(tool.with_liveness(move || host.is_registered(&name, scope.as_deref())))
            })
            .collect()
    }

    /// [`rig_tools`](Self::rig_tools) as a rig [`ToolSet`].
    pub fn rig_toolset(&self, selection: &Selection) -> ToolSet {
        ToolSet::from_dynamic_tools(self.rig_tools(selection))
    }
}

/// The context of calls made for `selection`'s caller.
fn context_of(selection: &Selection) -> CallContext {
    let mut ctx = CallContext {
        toolsets: selection.toolsets.clone(),
        ..CallContext::default()
    };
    if let Some(scope) = &selection.scope {
        ctx = ctx.with_scope(scope.clone());
    }
    ctx
}

/// A toolhost result as rig's.
fn to_rig(result: ToolResult) -> Result<ToolOutput, ToolExecutionError> {
    match result {
        ToolResult::Text(text) => Ok(ToolOutput::text(text)),
        ToolResult::Json(value) => Ok(ToolOutput::json(value)),
        ToolResult::Error(error) => {
            let kind = match error.kind {
                ErrorType::InvalidArguments => ToolErrorKind::InvalidArgs,
                ErrorType::Timeout => ToolErrorKind::Timeout,
                ErrorType::Cancelled => ToolErrorKind::Cancelled,
                ErrorType::UnknownTool | ErrorType::Unavailable => ToolErrorKind::NotFound,
                ErrorType::Blocked | ErrorType::ApprovalDenied | ErrorType::AgentLoop => {
                    ToolErrorKind::PermissionDenied
                }
                _ => ToolErrorKind::Other,
            };
            let shown = ToolOutput::text(error.to_json().to_string());
            Err(ToolExecutionError::new(kind, error.message).with_model_output(shown))
        }
        other => Ok(ToolOutput::text(other.to_json().to_string())),
    }
}
