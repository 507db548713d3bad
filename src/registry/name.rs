//! Validated identifiers: tool names and toolset names share one charset.

use super::invalid::Invalid;
use std::fmt;

/// A name matching `^[A-Za-z0-9_-]{1,64}$`, checked once when it is created.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName(Box<str>);

impl ToolName {
    /// Validates `name`; the error says what is wrong (to be prefixed with the field).
    pub fn new(name: &str) -> Result<Self, Invalid> {
        if name.is_empty() || name.len() > 64 {
            return Err(Invalid::new(format!(
                "must be 1 to 64 characters of [A-Za-z0-9_-], got {} characters",
                name.chars().count()
            )));
        }
        // Checked byte by byte (every tool of every start passes here); the message names
        // the first character at fault.
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if !name.bytes().all(|b| allowed(char::from(b)))
            && let Some(bad) = name.chars().find(|c| !allowed(*c))
        {
            return Err(Invalid::new(format!(
                "must match ^[A-Za-z0-9_-]{{1,64}}$, got {name:?} (bad character {bad:?})"
            )));
        }
        Ok(Self(name.into()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::ops::Deref for ToolName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_charset_and_rejects_the_rest() {
        assert!(ToolName::new("read_file-2").is_ok());
        assert!(ToolName::new(&"a".repeat(64)).is_ok());
        assert!(ToolName::new(&"a".repeat(65)).is_err());
        assert!(ToolName::new("").is_err());
        let err = ToolName::new("read file").unwrap_err();
        assert!(err.to_string().contains("bad character ' '"), "{err}");
        assert!(ToolName::new("tool.x").is_err());
    }
}
