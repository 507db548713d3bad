//! Stage 6: validate arguments against the tool's parameters schema, with the validator
//! compiled once per tool (at registration, or at its first call when start-up knew the
//! schema compiles).

use super::errors::ErrorType;
use super::result::ToolError;
use crate::registry::{ToolEntry, json_path};
use serde_json::Value;

/// `Ok` when `args` satisfy the schema; otherwise the `invalid_arguments` error object of
/// docs/calls.md stage 6, naming the first failing location as a JSON path.
pub(super) fn validate(tool: &ToolEntry, args: &Value) -> Result<(), Box<ToolError>> {
    // Registration rejects schemas that do not compile; for one that stopped compiling
    // there is nothing to validate against.
    let Some(validator) = tool.validator.get(&tool.schema) else {
        return Ok(());
    };
    let Some(error) = validator.iter_errors(args).next() else {
        return Ok(());
    };
    let path = json_path(&error.instance_path().to_string());
    let parameters = tool
        .schema
        .get("parameters")
        .cloned()
        .unwrap_or(Value::Null);
    Err(Box::new(
        ToolError::new(
            ErrorType::InvalidArguments,
            format!("Invalid arguments for {}: {path}: {error}", tool.name),
        )
        .with_path(path, parameters),
    ))
}
