//! Stage 6: validate arguments against the tool's parameters schema, with the validator
//! compiled once when the tool was registered.

use super::errors::ErrorType;
use super::result::ToolError;
use crate::registry::{ToolEntry, compile_parameters, json_path};
use serde_json::Value;

/// `Ok` when `args` satisfy the schema; otherwise the `invalid_arguments` error object of
/// SPEC §7 stage 6, naming the first failing location as a JSON path.
pub(super) fn validate(tool: &ToolEntry, args: &Value) -> Result<(), Box<ToolError>> {
    let compiled;
    let validator = match &tool.validator {
        Some(validator) => validator,
        None => match compile_parameters(&tool.schema) {
            Ok(validator) => {
                compiled = validator;
                &compiled
            }
            // Registration rejects such schemas; nothing to validate against.
            Err(_) => return Ok(()),
        },
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
