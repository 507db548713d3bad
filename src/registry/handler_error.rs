//! How a native handler fails: with a message, which the host turns into the same
//! `[TOOL_ERROR]` result a Lua handler's `error(...)` gives.

use std::fmt;

/// A native handler's failure. The call's result is a tool error whose message is this
/// one's, exactly as if a Lua handler had raised it.
///
/// Build one from any message (`"no such file".into()`, `HandlerError::new(e)`), or let `?`
/// convert a `String` or `&str`:
/// ```
/// use toolhost::HandlerError;
/// fn read(path: &str) -> Result<String, HandlerError> {
///     std::fs::read_to_string(path).map_err(|e| HandlerError::new(format!("cannot read {path}: {e}")))
/// }
/// assert!(read("/nonexistent/x").unwrap_err().message().starts_with("cannot read"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerError {
    message: String,
}

impl HandlerError {
    /// A failure saying `message`.
    pub fn new(message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, without a copy.
    pub(crate) fn into_message(self) -> String {
        self.message
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HandlerError {}

impl From<String> for HandlerError {
    fn from(message: String) -> Self {
        Self { message }
    }
}

impl From<&str> for HandlerError {
    fn from(message: &str) -> Self {
        Self {
            message: message.to_string(),
        }
    }
}
