//! Why a server cannot be reached or used, and why an answer of it cannot be read: the
//! reasons its tools are unavailable and a call's errors (docs/configuration.md wording).

/// Why connecting, listing or calling failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreachable {
    /// The server's config names no way to reach it.
    #[error("neither 'command' nor 'url' is set")]
    NoTransport,
    /// `command = []`.
    #[error("'command' is empty")]
    EmptyCommand,
    /// The child could not be started.
    #[error("cannot run {program:?}: {source}")]
    Spawn {
        /// `command[0]`.
        program: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The child started but the MCP handshake did not complete.
    #[error("the MCP handshake failed: {0}")]
    Handshake(Box<rmcp::service::ClientInitializeError>),
    /// `bearer_token_env` names a variable that is unset or empty.
    #[error("environment variable {0} (bearer_token_env) is not set")]
    NoBearerToken(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(reqwest::Error),
    /// The HTTP server could not be reached; `detail` is the error with its causes.
    #[error("cannot connect to {url}: {detail}")]
    Connect {
        /// `url`.
        url: String,
        /// What went wrong, innermost cause last.
        detail: String,
    },
    /// The first attempt found no answer in time.
    #[error("no answer within {0} ms (connect_timeout_ms)")]
    Timeout(u128),
    /// A reason worded already: the transport's fatal note, a listing's failure, the
    /// server's status while it is down.
    #[error("{0}")]
    Down(String),
    /// A call before the first connection completed.
    #[error("MCP server '{0}' is not connected yet")]
    NotConnected(String),
    /// A call's arguments are not a JSON object.
    #[error("arguments for an MCP tool must be an object, got {0}")]
    NotAnObject(&'static str),
    /// The server did not answer a call.
    #[error("MCP server '{server}': {source}")]
    Call {
        /// `[mcp_servers.NAME]`.
        server: String,
        /// rmcp's error.
        source: Box<rmcp::ServiceError>,
    },
    /// The server answered a call with `isError` (its text, or a note that it had none).
    #[error("{0}")]
    ToolFailed(String),
    /// The tool's output schema says FastMCP wrapped a plain value (`x-fastmcp-wrap-result`)
    /// but the answer's `structuredContent` is no object at all (the JSON type it is).
    #[error(
        "the MCP server's result breaks its output schema: structuredContent is {0}, not the \
         {{\"result\": …}} object that x-fastmcp-wrap-result promises"
    )]
    NotWrapped(&'static str),
}

/// Why an answer, a listing or one listed tool cannot be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    /// The answer is not a message rmcp can parse.
    #[error("the answer cannot be read: {0}")]
    Answer(serde_json::Error),
    /// The `tools/list` answer is not readable as a listing.
    #[error("the tool list cannot be read: {0}")]
    List(serde_json::Error),
    /// One tool nests deeper than the screen allows.
    #[error("{label} left out: nested {depth} levels deep (at most {max})")]
    TooDeep {
        /// `tool 'x'`, or a tool without a readable name.
        label: String,
        /// How deep it nests.
        depth: usize,
        /// The limit.
        max: usize,
    },
    /// One tool is not a valid MCP tool.
    #[error("{label} left out: it cannot be read: {source}")]
    Tool {
        /// `tool 'x'`, or a tool without a readable name.
        label: String,
        /// The parser's error.
        source: serde_json::Error,
    },
}
