//! The one error of pack handling: a file (or folder) and what is wrong with it.

use std::path::PathBuf;

/// A problem with a pack, its manifest or the lock file, naming the file at fault.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct PackError {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// What is wrong (with the line or key when known).
    pub message: String,
}

impl PackError {
    /// A problem `message` about `path`.
    pub(crate) fn new(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// toml's message names the key; the line makes it read like `file:line`.
pub(crate) fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().to_string();
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {message}")
        }
        None => message,
    }
}
