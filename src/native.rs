//! Rust tools registered by the embedding program (`HostBuilder::native_tool`).

use crate::registry::{
    Annotations, CallContext, Handler, NativeHandler, OutputSchema, ResultLimit, Source, ToolEntry,
    ToolName, check_function_schema, compile_parameters, default_description, json_type,
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
    emoji: String,
    requires_env: Vec<String>,
    override_existing: bool,
    scope: Option<String>,
    timeout_ms: Option<u64>,
    parallel_safe: bool,
    requires_approval: bool,
    max_result_size_chars: Option<ResultLimit>,
    output_schema: Option<Value>,
    annotations: Annotations,
}

impl NativeTool {
    /// A tool named `name` in `toolset` with the function `schema` (`{description,
    /// parameters}`) and an async handler returning text (a JSON string), an object, or an
    /// error message.
    pub fn new<F, Fut>(name: &str, toolset: &str, schema: Value, handler: F) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, String>> + Send + 'static,
    {
        Self {
            name: name.to_string(),
            toolset: toolset.to_string(),
            schema,
            handler: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
            description: None,
            emoji: String::new(),
            requires_env: Vec::new(),
            override_existing: false,
            scope: None,
            timeout_ms: None,
            parallel_safe: false,
            requires_approval: false,
            max_result_size_chars: None,
            output_schema: None,
            annotations: Annotations::default(),
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
        self.annotations = annotations;
        self
    }

    /// Registry description (defaults to `schema.description`).
    pub fn description(mut self, description: &str) -> Self {
        self.description = Some(description.to_string());
        self
    }

    /// Display emoji.
    pub fn emoji(mut self, emoji: &str) -> Self {
        self.emoji = emoji.to_string();
        self
    }

    /// Environment variables that must be set for the tool to be available.
    pub fn requires_env(mut self, names: &[&str]) -> Self {
        self.requires_env = names.iter().map(|n| n.to_string()).collect();
        self
    }

    /// Allow shadowing a tool of another toolset.
    pub fn override_existing(mut self, allow: bool) -> Self {
        self.override_existing = allow;
        self
    }

    /// Put the tool in a scope overlay.
    pub fn scope(mut self, scope: &str) -> Self {
        self.scope = Some(scope.to_string());
        self
    }

    /// Per-call deadline.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }

    /// May run beside other calls.
    pub fn parallel_safe(mut self, safe: bool) -> Self {
        self.parallel_safe = safe;
        self
    }

    /// Ask the approver before every call.
    pub fn requires_approval(mut self, required: bool) -> Self {
        self.requires_approval = required;
        self
    }

    /// Result size limit.
    pub fn max_result_size_chars(mut self, limit: ResultLimit) -> Self {
        self.max_result_size_chars = Some(limit);
        self
    }

    /// Validates the fields and builds the registry entry.
    pub(crate) fn into_entry(self) -> Result<ToolEntry, String> {
        let name = ToolName::new(&self.name).map_err(|e| format!("'name' {e}"))?;
        let toolset =
            ToolName::new(&self.toolset).map_err(|e| format!("tool '{name}': 'toolset' {e}"))?;
        let Value::Object(schema) = self.schema else {
            return Err(format!(
                "tool '{name}': 'schema' must be an object, got {}",
                json_type(&self.schema)
            ));
        };
        check_function_schema(&schema).map_err(|e| format!("tool '{name}': {e}"))?;
        let validator = compile_parameters(&schema).map_err(|e| format!("tool '{name}': {e}"))?;
        let scope = match self.scope {
            Some(scope) => Some(
                ToolName::new(&scope)
                    .map_err(|e| format!("tool '{name}': 'scope' {e}"))?
                    .to_string(),
            ),
            None => None,
        };
        let output_schema = match self.output_schema {
            None => None,
            Some(Value::Object(schema)) => {
                Some(OutputSchema::compile(schema).map_err(|e| format!("tool '{name}': {e}"))?)
            }
            Some(other) => {
                return Err(format!(
                    "tool '{name}': 'output_schema' must be an object, got {}",
                    json_type(&other)
                ));
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
            requires_env: self.requires_env,
            is_async: true,
            description,
            emoji: self.emoji,
            max_result_size_chars: self.max_result_size_chars,
            dynamic_schema_overrides: None,
            override_existing: self.override_existing,
            scope,
            timeout_ms: self.timeout_ms,
            parallel_safe: self.parallel_safe,
            requires_approval: self.requires_approval,
            output_schema,
            annotations: self.annotations,
            source: Source::Native,
            file: None,
            line: None,
            offline: None,
        })
    }
}
