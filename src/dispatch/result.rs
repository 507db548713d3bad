//! The typed outcome of a call: [`ToolResult`] and [`ToolError`]. The pipeline, MCP and the
//! CLI match on these types; the JSON a model sees is produced only at the boundary, by
//! [`ToolResult::to_json`] (nothing reads `error_type` back out of JSON).

use super::errors::{ErrorType, sanitise};
use crate::registry::Capability;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolResult {
    /// Text: a handler returned a string (or the result was spilled to a file, docs/calls.md stage 9).
    Text(String),
    /// Structured data: a handler returned a table (Lua) or an object/array (Rust). A model
    /// sees its JSON text.
    Json(Value),
    /// A multimodal envelope `{ "_multimodal": true, "content": [...], "text_summary": ... }`,
    /// passed through as an object.
    Multimodal(Value),
    /// The call failed; see [`ToolError::kind`].
    Error(ToolError),
}

impl ToolResult {
    /// The JSON a model sees (docs/lua-api.md): text and structured data as a JSON string, a multimodal envelope or
    /// an error as an object.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Text(text) => Value::String(text.clone()),
            Self::Json(value) => Value::String(json_text(value)),
            Self::Multimodal(envelope) => envelope.clone(),
            Self::Error(error) => error.to_json(),
        }
    }

    /// Like [`to_json`](Self::to_json), consuming the result (no copy of the text).
    pub fn into_json(self) -> Value {
        match self {
            Self::Text(text) => Value::String(text),
            Self::Json(value) => Value::String(json_text(&value)),
            Self::Multimodal(envelope) => envelope,
            Self::Error(error) => error.to_json(),
        }
    }

    /// The text a model reads for a successful text or structured result; `None` for a
    /// multimodal envelope or an error.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Self::Text(text) => Some(Cow::Borrowed(text)),
            Self::Json(value) => Some(Cow::Owned(json_text(value))),
            Self::Multimodal(_) | Self::Error(_) => None,
        }
    }

    /// The error, when the call failed.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Error(error) => Some(error),
            _ => None,
        }
    }

    /// True when the call failed.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error(_))
    }

    /// The kind of failure, when the call failed.
    pub fn error_type(&self) -> Option<ErrorType> {
        self.error().map(|error| error.kind)
    }
}

/// The compact JSON text of `value`, as a model reads a structured result. Written straight
/// into a buffer (`Value`'s `Display` goes through a formatter for every piece).
pub(crate) fn json_text(value: &Value) -> String {
    // Serialising a `Value` cannot fail (its keys are strings); Display is the same text.
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

/// The length in bytes of [`json_text`]`(value)`, without building it.
pub(crate) fn json_text_len(value: &Value) -> usize {
    /// Counts what is written to it.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => json_text(value).len(),
    }
}

impl From<ToolError> for ToolResult {
    fn from(error: ToolError) -> Self {
        Self::Error(error)
    }
}

/// As the CLI prints it (docs/lua-api.md): text raw, anything else as compact JSON.
impl fmt::Display for ToolResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(text) => f.write_str(text),
            Self::Json(value) | Self::Multimodal(value) => write!(f, "{value}"),
            Self::Error(error) => write!(f, "{}", error.to_json()),
        }
    }
}

/// A failed call (docs/calls.md). The message is sanitised (no framing tags, code fences or
/// CDATA) and at most 2,048 characters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolError {
    /// What went wrong.
    pub kind: ErrorType,
    /// The message a model reads (`error` in JSON).
    pub message: String,
    /// The tool, for errors that name it in their JSON (`tool_result_contract`).
    pub tool: Option<String>,
    /// The JSON path of the first invalid argument (`invalid_arguments`), or of the first
    /// mismatch with the output schema (`tool_result_contract`).
    pub path: Option<String>,
    /// The tool's parameters schema, so a model can retry (`invalid_arguments`).
    pub parameters: Option<Value>,
    /// The Lua type the handler returned (`tool_result_contract`).
    pub result_type: Option<String>,
    /// The client capabilities the tool needs and the caller's client did not declare
    /// (`missing_capability`).
    pub needs: Vec<Capability>,
    /// The `[limits]` key of the limit that refused the call (`rate_limited`), e.g.
    /// `limits.tools.search`.
    pub limit: Option<String>,
    /// When the refused call may be retried, in milliseconds (`rate_limited`).
    pub retry_after_ms: Option<u64>,
}

impl ToolError {
    /// An error of `kind` with `message` (sanitised here).
    pub fn new(kind: ErrorType, message: impl AsRef<str>) -> Self {
        Self {
            kind,
            message: sanitise(message.as_ref()),
            tool: None,
            path: None,
            parameters: None,
            result_type: None,
            needs: Vec::new(),
            limit: None,
            retry_after_ms: None,
        }
    }

    /// The `[TOOL_ERROR] Tool execution failed: {detail}` error of docs/calls.md (a handler
    /// that raised, timed out or ran out of memory, a cancelled call, a lost VM): the one
    /// place that writes the prefix.
    pub(crate) fn execution_failed(kind: ErrorType, detail: impl fmt::Display) -> Self {
        Self::new(
            kind,
            format!("[TOOL_ERROR] Tool execution failed: {detail}"),
        )
    }

    /// The same error naming `tool`.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// The same error with the failing argument's JSON path and the parameters schema.
    pub fn with_path(mut self, path: impl Into<String>, parameters: Value) -> Self {
        self.path = Some(path.into());
        self.parameters = Some(parameters);
        self
    }

    /// The same error naming the unsupported result type.
    pub fn with_result_type(mut self, result_type: impl Into<String>) -> Self {
        self.result_type = Some(result_type.into());
        self
    }

    /// The same error naming the client capabilities the caller's client lacks.
    pub fn with_needs(mut self, needs: Vec<Capability>) -> Self {
        self.needs = needs;
        self
    }

    /// The same error naming the rate limit that refused the call and when to retry.
    pub(crate) fn with_retry(mut self, limit: impl Into<String>, retry_after_ms: u64) -> Self {
        self.limit = Some(limit.into());
        self.retry_after_ms = Some(retry_after_ms);
        self
    }

    /// `{"error": message, "error_type": kind, ...}` with the optional fields that are set.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("error".into(), Value::String(self.message.clone()));
        map.insert(
            "error_type".into(),
            Value::String(self.kind.as_str().into()),
        );
        let optional = [
            ("tool", self.tool.clone().map(Value::String)),
            ("path", self.path.clone().map(Value::String)),
            ("parameters", self.parameters.clone()),
            ("result_type", self.result_type.clone().map(Value::String)),
            ("limit", self.limit.clone().map(Value::String)),
            ("retry_after_ms", self.retry_after_ms.map(Value::from)),
            (
                "needs",
                (!self.needs.is_empty()).then(|| {
                    Value::Array(
                        self.needs
                            .iter()
                            .map(|c| Value::String(c.as_str().into()))
                            .collect(),
                    )
                }),
            ),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                map.insert(key.into(), value);
            }
        }
        Value::Object(map)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_json_text_and_its_measured_length_agree_with_display() {
        for value in [
            json!(null),
            json!({"a": [1, 2.5, "é\u{1F600}"], "q\"\n": {"x": false}}),
            json!("tab\tand\\slash"),
            json!([]),
        ] {
            assert_eq!(json_text(&value), value.to_string());
            assert_eq!(json_text_len(&value), value.to_string().len());
        }
    }

    /// Every `[TOOL_ERROR] Tool execution failed: …` error comes from
    /// [`ToolError::execution_failed`]: the prefix is written once in `src/`.
    #[test]
    fn the_execution_failed_prefix_is_written_once() {
        // Split, so this test does not count itself.
        let prefix = ["Tool execution", " failed"].concat();
        let mut stack = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
        let mut writers = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    // The code, without test modules and comments.
                    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
                    let code = code.lines().filter(|l| !l.trim_start().starts_with("//"));
                    for line in code {
                        for _ in line.matches(&prefix) {
                            writers.push(path.display().to_string());
                        }
                    }
                }
            }
        }
        assert_eq!(writers.len(), 1, "written in {writers:?}");
        assert!(writers[0].ends_with("result.rs"), "{writers:?}");
        let error = ToolError::execution_failed(ErrorType::Timeout, "t timed out after 5 ms");
        assert_eq!(
            error.message,
            "[TOOL_ERROR] Tool execution failed: t timed out after 5 ms"
        );
    }

    #[test]
    fn results_serialise_to_the_spec_json() {
        assert_eq!(ToolResult::Text("hi".into()).to_json(), json!("hi"));
        assert_eq!(
            ToolResult::Json(json!({"a": [1]})).to_json(),
            json!("{\"a\":[1]}")
        );
        let envelope = json!({"_multimodal": true, "content": []});
        assert_eq!(ToolResult::Multimodal(envelope.clone()).to_json(), envelope);
        let error = ToolError::new(ErrorType::ToolResultContract, "<system>x</system>")
            .with_tool("t")
            .with_result_type("number");
        assert_eq!(
            ToolResult::from(error).to_json(),
            json!({"error": "x", "error_type": "tool_result_contract", "tool": "t", "result_type": "number"})
        );
    }
}
