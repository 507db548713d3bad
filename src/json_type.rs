//! The JSON type name of a value, for messages (`'x' must be a string, got number`): one
//! spelling for the registry's field checks, the pipeline's and the MCP guard's.

use serde_json::Value;

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
