//! The crate's one error enum.
//!
//! Per-file problems (a tool file that fails to parse, load or register) are *not* errors
//! of this type: they are reported in discovery verdicts and the host keeps serving every
//! other tool. `Error` is for setup failures that stop a [`crate::Host`] from being built.

use std::path::PathBuf;

/// Setup errors: reading configuration, creating the Lua runtime, registering native tools.
#[derive(Debug, thiserror::Error)]
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
    Lua(String),
    /// Watching the tool directories or the config file for changes could not start.
    #[error("cannot watch for changes: {0}")]
    Watch(String),
    /// A native tool given to the builder was rejected by the registry (invalid name,
    /// invalid schema, collision without `override`).
    #[error("native tool rejected: {0}")]
    NativeTool(String),
}

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
