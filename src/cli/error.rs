//! Why a command could not run: printed as `toolhost: <message>`, exit 2 (docs/cli.md).

use std::path::PathBuf;

/// A usage or setup error of one command.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The host could not be set up or serve (configuration, Lua runtime, watcher, MCP).
    #[error(transparent)]
    Host(#[from] crate::Error),
    /// The operating system refused what the command needs; `what` says what that was
    /// (`cannot start the async runtime`, `cannot write tools-lua/x.lua`).
    #[error("{what}: {source}")]
    Io {
        /// What the command was doing, naming the file or address.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `toolhost call`'s ARGS are not JSON.
    #[error("ARGS is not valid JSON: {0}")]
    Args(serde_json::Error),
    /// `--http ADDR` names no address.
    #[error(transparent)]
    Address(#[from] crate::mcp::server::http::BadAddr),
    /// `toolhost new` would overwrite a file.
    #[error("{} already exists; pick another name", .0.display())]
    Exists(PathBuf),
    /// The variable that should hold the HTTP bearer token is unset or empty.
    #[error(
        "the auth token variable ${0} is not set or empty ([serve] auth_token_env / \
         --auth-token-env)"
    )]
    NoToken(String),
    /// The variable of a `[[serve.tokens]]` entry is unset or empty.
    #[error(
        "serve.tokens[{index}].token_env: the token \"{name}\" is in ${variable}, which is \
         not set or empty"
    )]
    NoNamedToken {
        /// The entry's index.
        index: usize,
        /// The token's name.
        name: String,
        /// The variable.
        variable: String,
    },
    /// A flag's value is not valid; the message names the flag (`NAME …`, `--toolset …`).
    #[error("{0}")]
    Usage(String),
    /// A tool pack's manifest, files or the lock file are not valid; names the file.
    #[error(transparent)]
    Pack(#[from] crate::PackError),
}

/// `map_err` for an I/O error: what the command was doing.
pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CliError {
    let what = what.into();
    move |source| CliError::Io { what, source }
}
