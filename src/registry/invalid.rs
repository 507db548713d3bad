//! The registry's one error: something a registration gave is invalid (a name, a schema,
//! an output schema, a collision the policy refuses). The message says what is wrong and
//! names the field where it can; callers put the tool or the key in front.

use std::fmt;

/// Something a registration gave is invalid; the message says what and, where it can,
/// names the field (`'schema.parameters' must be …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(String);

impl Invalid {
    /// The problem `message` describes.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// The message, without a copy.
    pub(crate) fn into_message(self) -> String {
        self.0
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}
