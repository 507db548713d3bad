//! Rust tools, resources and prompts registered by the embedding program
//! (`HostBuilder::native_tool`, `native_resource`, `native_prompt`).

mod completers;
mod prompt;
mod resource;

pub use prompt::NativePrompt;
pub use resource::NativeResource;

use crate::error::Error;
use crate::registry::{
    Annotations, CallContext, Handler, HandlerError, NativeHandler, OutputSchema, Registration,
    ResultLimit, Source, ToolEntry, ToolName, check_function_schema, compile_parameters,
    default_description, json_type,
};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A Rust async tool: the same fields as a Lua registration, with a Rust handler.
#[derive(Clone)]
pub struct NativeTool {
    name: String,
    toolset: String,
    schema: Value,
    handler: NativeHandler,
    description: Option<String>,
    output_schema: Option<Value>,
    /// The options every registration has (a native handler always may await).
    registration: Registration,
}

/// Why a [`NativeTool`], [`NativeResource`] or [`NativePrompt`] cannot be registered: the
/// message names the tool, resource or prompt and the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidNativeTool(pub(crate) String);

impl std::fmt::Display for InvalidNativeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidNativeTool {}

impl From<InvalidNativeTool> for Error {
    fn from(invalid: InvalidNativeTool) -> Self {
        Error::NativeTool(invalid.0)
    }
}

impl NativeTool {
    /// A tool named `name` in `toolset` with the function `schema` (`{description,
    /// parameters}`) and an async handler returning text (a JSON string), an object, or a
    /// [`HandlerError`] (the call then fails with its message, as a Lua `error(...)` does).
    pub fn new<F, Fut>(name: &str, toolset: &str, schema: Value, handler: F) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        Self {
            name: name.to_string(),
            toolset: toolset.to_string(),
            schema,
            handler: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
            description: None,
            output_schema: None,
            registration: Registration {
                is_async: true,
                ..Registration::default()
            },
        }
    }

    /// A JSON Schema (`type: "object"`) the handler's object results must match; MCP
    /// clients receive such results as `structuredContent`.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// MCP annotations (hints for clients).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.registration.annotations = annotations;
        self
    }

    /// Registry description (defaults to `schema.description`).
    pub fn description(mut self, description: &str) -> Self {
        self.description = Some(description.to_string());
        self
    }

    /// Display emoji.
    pub fn emoji(mut self, emoji: &str) -> Self {
        self.registration.emoji = emoji.to_string();
        self
    }

    /// Environment variables that must be set for the tool to be available.
    pub fn requires_env(mut self, names: &[&str]) -> Self {
        self.registration.requires_env = names.iter().map(|n| n.to_string()).collect();
        self
    }

    /// Allow shadowing a tool of another toolset.
    pub fn override_existing(mut self, allow: bool) -> Self {
        self.registration.override_existing = allow;
        self
    }

    /// Put the tool in a scope overlay.
    pub fn scope(mut self, scope: &str) -> Self {
        self.registration.scope = Some(scope.to_string());
        self
    }

    /// Per-call deadline.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.registration.timeout_ms = Some(ms);
        self
    }

    /// May run beside other calls.
    pub fn parallel_safe(mut self, safe: bool) -> Self {
        self.registration.parallel_safe = safe;
        self
    }

    /// Ask the approver before every call.
    pub fn requires_approval(mut self, required: bool) -> Self {
        self.registration.requires_approval = required;
        self
    }

    /// Result size limit.
    pub fn max_result_size_chars(mut self, limit: ResultLimit) -> Self {
        self.registration.max_result_size_chars = Some(limit);
        self
    }

    /// Validates the fields and builds the registry entry.
    pub(crate) fn into_entry(self) -> Result<ToolEntry, InvalidNativeTool> {
        let invalid = |message: String| InvalidNativeTool(message);
        let name = ToolName::new(&self.name).map_err(|e| invalid(format!("'name' {e}")))?;
        let toolset = ToolName::new(&self.toolset)
            .map_err(|e| invalid(format!("tool '{name}': 'toolset' {e}")))?;
        let Value::Object(schema) = self.schema else {
            return Err(invalid(format!(
                "tool '{name}': 'schema' must be an object, got {}",
                json_type(&self.schema)
            )));
        };
        check_function_schema(&schema).map_err(|e| invalid(format!("tool '{name}': {e}")))?;
        let validator =
            compile_parameters(&schema).map_err(|e| invalid(format!("tool '{name}': {e}")))?;
        if let Some(scope) = &self.registration.scope {
            ToolName::new(scope).map_err(|e| invalid(format!("tool '{name}': 'scope' {e}")))?;
        }
        let output_schema = match self.output_schema {
            None => None,
            Some(Value::Object(schema)) => Some(
                OutputSchema::compile(schema)
                    .map_err(|e| invalid(format!("tool '{name}': {e}")))?,
            ),
            Some(other) => {
                return Err(invalid(format!(
                    "tool '{name}': 'output_schema' must be an object, got {}",
                    json_type(&other)
                )));
            }
        };
        let description = self
            .description
            .unwrap_or_else(|| default_description(&schema));
        Ok(ToolEntry {
            name,
            toolset,
            schema: schema.into(),
            validator: crate::registry::ParametersValidator::compiled(validator),
            handler: Handler::Native(self.handler),
            check_fn: None,
            description,
            dynamic_schema_overrides: None,
            output_schema,
            registration: self.registration,
            source: Source::Native,
            file: None,
            line: None,
            offline: None,
            effects: None,
        })
    }
}
