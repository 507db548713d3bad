//! The crate's one error enum.
//!
//! Per-file problems (a tool file that fails to parse, load or register) are *not* errors
//! of this type: they are reported in discovery verdicts and the host keeps serving every
//! other tool. `Error` is for setup failures that stop a [`crate::Host`] from being built.

use std::path::PathBuf;

/// Setup errors: reading configuration, creating the Lua runtime, registering native tools.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration file could not be read (it was named explicitly, or it exists but
    /// is unreadable).
    #[error("cannot read config file {path}: {source}")]
    ConfigRead {
        /// The file that was read.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration file is not valid TOML for `toolhost.toml`, or has an unknown key.
    /// The message names the key and the line.
    #[error("invalid config file {path}: {message}")]
    ConfigInvalid {
        /// The file that was parsed.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// The Lua runtime could not be created (out of memory, broken sandbox bootstrap).
    #[error("cannot start the Lua runtime: {0}")]
    Lua(#[source] mlua::Error),
    /// The thread or async runtime a VM runs on could not be started.
    #[error("cannot start the thread of VM {index}: {source}")]
    VmThread {
        /// The VM's position in the pool.
        index: usize,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Watching the tool directories or the config file for changes could not start.
    #[cfg(feature = "watch")]
    #[error("cannot watch {} for changes: {source}", path.display())]
    Watch {
        /// What could not be watched.
        path: PathBuf,
        /// The watcher's error.
        source: notify::Error,
    },
    /// An MCP session could not start (the client's `initialize` failed or never came).
    #[cfg(feature = "mcp")]
    #[error("MCP session failed to start: {0}")]
    McpStart(#[source] Box<rmcp::service::ServerInitializeError>),
    /// An MCP session's task ended abnormally (it panicked or was aborted).
    #[cfg(feature = "mcp")]
    #[error("MCP session ended abnormally: {0}")]
    McpSession(#[source] tokio::task::JoinError),
    /// `Host::serve_mcp_http` was asked to serve a non-loopback address without a bearer
    /// token: anyone who can reach it could run the tools.
    #[cfg(feature = "http")]
    #[error(
        "refusing to serve on {addr} without a token: anyone who can reach it could run the \
         tools. Set [serve] auth_token_env = \"NAME\" (or --auth-token-env NAME) and put the \
         token in that environment variable (or add [[serve.tokens]] or [serve.oauth]), or \
         bind a loopback address such as 127.0.0.1"
    )]
    Exposed {
        /// The address that was bound.
        addr: std::net::SocketAddr,
    },
    /// The HTTP server's credentials are not usable (two tokens of one name, an unknown tool
    /// in `[serve.oauth.scopes]`, an unreadable `jwks_file`); the message names the key.
    #[cfg(feature = "http")]
    #[error("{0}")]
    HttpAuth(String),
    /// The HTTP server failed (reading the listener's address, accepting connections).
    #[cfg(feature = "http")]
    #[error("the MCP HTTP server failed: {0}")]
    Http(#[source] std::io::Error),
    /// A native tool, resource or prompt given to the builder was rejected by the
    /// registry (invalid name, schema or URI, collision without `override`); the message
    /// names it and the field.
    #[error("native registration rejected: {0}")]
    NativeTool(String),
    /// The store cannot be set up: `[store]` names a backend this build lacks, or the
    /// PostgreSQL URL is missing or invalid. The message names the key or the variable,
    /// never the URL (it holds a password).
    #[error("cannot set up the store: {0}")]
    Store(String),
}

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why one tool file (or the configuration file, on reload) did not load. The host keeps
/// serving every other tool; these are reported in [`crate::Verdict::error`],
/// [`crate::ReloadEvent::errors`] and by `toolhost check`.
///
/// Its `Display` is the one-line form the CLI prints: `FILE:LINE: MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadError {
    /// The file as shown in messages (the tool directory as configured + relative path).
    pub file: String,
    /// The line the problem is on, when known.
    pub line: Option<u32>,
    /// The registration field at fault (`name`, `schema.parameters`, …), when the problem
    /// is an invalid field.
    pub field: Option<String>,
    /// What is wrong (without the `FILE:LINE: ` prefix).
    pub message: String,
    /// The file's previous version still serves its tools (hot reload keeps the last good
    /// version of a file that now fails).
    pub kept_last_good: bool,
}

impl LoadError {
    /// A problem in `file` at `line`.
    pub(crate) fn new(file: &str, line: Option<u32>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_string(),
            line,
            field: None,
            message: message.into(),
            kept_last_good: false,
        }
    }

    /// The same problem, naming the field at fault.
    pub(crate) fn with_field(mut self, field: Option<String>) -> Self {
        self.field = field;
        self
    }

    /// An error text from Lua about `file`: Lua puts `FILE:LINE: ` in front of errors it
    /// raises at a known line, which becomes `line`.
    pub(crate) fn from_lua(file: &str, text: &str) -> Self {
        let located = text
            .strip_prefix(file)
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|rest| {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let line = rest[..digits].parse::<u32>().ok()?;
                Some((line, rest[digits..].strip_prefix(':')?.trim_start()))
            });
        match located {
            Some((line, message)) => Self::new(file, Some(line), message),
            None => {
                let message = text
                    .strip_prefix(file)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(str::trim_start)
                    .unwrap_or(text);
                Self::new(file, None, message)
            }
        }
    }
}

/// Appended to the message of a file whose last good version still serves.
const KEPT_LAST_GOOD: &str = " (still serving the last good version)";

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.message)?,
            None => write!(f, "{}: {}", self.file, self.message)?,
        }
        if self.kept_last_good {
            f.write_str(KEPT_LAST_GOOD)?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

#[cfg(test)]
mod tests {
    use super::LoadError;

    #[test]
    fn lua_locations_become_lines() {
        let located = LoadError::from_lua("t/x.lua", "t/x.lua:12: boom: at 3:4");
        assert_eq!(
            (located.line, located.message.as_str()),
            (Some(12), "boom: at 3:4")
        );
        assert_eq!(located.to_string(), "t/x.lua:12: boom: at 3:4");
        let bare = LoadError::from_lua("t/x.lua", "t/x.lua: cannot read");
        assert_eq!((bare.line, bare.message.as_str()), (None, "cannot read"));
        let other = LoadError::from_lua("t/x.lua", "out of memory");
        assert_eq!(other.to_string(), "t/x.lua: out of memory");
    }
}
