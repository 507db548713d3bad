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

/// The line makes it read like `file:line`; toml's message does not always name the key
/// (a value of the wrong type), so the line's own text follows, which does.
pub(crate) fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().to_string();
    let Some(span) = error.span() else {
        return message;
    };
    let start = span.start.min(text.len());
    let line = text[..start].matches('\n').count() + 1;
    let shown: String = text
        .lines()
        .nth(line - 1)
        .unwrap_or_default()
        .trim()
        .chars()
        .take(80)
        .collect();
    match shown.is_empty() {
        true => format!("line {line}: {message}"),
        false => format!("line {line} (`{shown}`): {message}"),
    }
}
