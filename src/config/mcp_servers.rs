//! `[mcp_servers.NAME]`: external MCP servers whose tools join the registry (docs/configuration.md).
//! Parsed and checked here whatever features are built, so a config file means the same to
//! every build; the client itself is the `mcp-client` feature.

use crate::error::Error;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One external MCP server: a stdio child (`command`) or a streamable-HTTP endpoint (`url`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
pub(crate) struct McpServerConfig {
    /// Program and arguments of a stdio server.
    pub command: Option<Vec<String>>,
    /// Endpoint of a streamable-HTTP server.
    pub url: Option<String>,
    /// Variables added to the child's (otherwise clean) environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The child's working directory (relative to the config file).
    pub cwd: Option<PathBuf>,
    /// Per-call deadline in milliseconds (default `[runtime] timeout_ms`).
    pub timeout_ms: Option<u64>,
    /// How long starting (spawn + initialize + first listing) may take (default 10 s).
    pub connect_timeout_ms: Option<u64>,
    /// Most tools one listing may bring (default 1,000); more marks the server down.
    pub max_tools: Option<usize>,
    /// Most bytes one listing may take, all pages together (default 8 MiB); more marks the
    /// server down.
    pub max_list_bytes: Option<u64>,
    /// How long one listing (all pages) may take in milliseconds (default 30 s).
    pub list_timeout_ms: Option<u64>,
    /// Which of the server's tools to register (globs over the server's own tool names).
    #[serde(default)]
    pub tools: ToolFilterConfig,
    /// Environment variable holding the bearer token sent to an HTTP server.
    pub bearer_token_env: Option<String>,
    /// `false` leaves the server out (default true).
    pub enabled: Option<bool>,
}

/// `[mcp_servers.NAME] tools = { include, exclude }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
pub(crate) struct ToolFilterConfig {
    /// Only tools matching one of these globs (default: every tool).
    #[serde(default)]
    pub include: Vec<String>,
    /// Never tools matching one of these globs.
    #[serde(default)]
    pub exclude: Vec<String>,
}

impl McpServerConfig {
    /// Whether the server is to be started.
    #[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
}

/// Checks every server section of the config file `path`; the error names the key.
/// Relative `cwd`s are resolved against `base` (the config file's directory).
pub(crate) fn check(
    servers: &mut BTreeMap<String, McpServerConfig>,
    base: &Path,
    path: &Path,
) -> Result<(), Error> {
    let invalid = |message: String| Error::ConfigInvalid {
        path: path.to_path_buf(),
        message,
    };
    for (name, server) in servers.iter_mut() {
        let key = format!("mcp_servers.{name}");
        // The name becomes part of tool names (`mcp__NAME__TOOL`) and the toolset `mcp-NAME`.
        crate::registry::ToolName::new(&format!("mcp-{name}"))
            .map_err(|e| invalid(format!("{key}: the server name {e}")))?;
        if name.contains("__") {
            return Err(invalid(format!(
                "{key}: the server name may not contain '__' (it separates server and tool in \
                 mcp__SERVER__TOOL)"
            )));
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) => {
                return Err(invalid(format!(
                    "{key}: give either 'command' (a stdio server) or 'url' (streamable HTTP), \
                     not both"
                )));
            }
            (None, None) => {
                return Err(invalid(format!(
                    "{key}: missing 'command' (a stdio server) or 'url' (streamable HTTP)"
                )));
            }
            (Some(command), None) if command.first().is_none_or(|p| p.is_empty()) => {
                return Err(invalid(format!("{key}.command: must name a program")));
            }
            (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                return Err(invalid(format!(
                    "{key}.url: must start with http:// or https://, got {url:?}"
                )));
            }
            _ => {}
        }
        if server.url.is_some() {
            for (field, set) in [
                ("env", !server.env.is_empty()),
                ("cwd", server.cwd.is_some()),
            ] {
                if set {
                    return Err(invalid(format!(
                        "{key}.{field}: only applies to a stdio server ('command')"
                    )));
                }
            }
        } else if server.bearer_token_env.is_some() {
            return Err(invalid(format!(
                "{key}.bearer_token_env: only applies to an HTTP server ('url')"
            )));
        }
        for (field, value) in [
            ("timeout_ms", server.timeout_ms),
            ("connect_timeout_ms", server.connect_timeout_ms),
            ("max_tools", server.max_tools.map(|n| n as u64)),
            ("max_list_bytes", server.max_list_bytes),
            ("list_timeout_ms", server.list_timeout_ms),
        ] {
            if value == Some(0) {
                return Err(invalid(format!("{key}.{field}: must be at least 1")));
            }
        }
        for (field, globs) in [
            ("include", &server.tools.include),
            ("exclude", &server.tools.exclude),
        ] {
            for glob in globs {
                if let Some(problem) = glob_problem(glob) {
                    return Err(invalid(format!("{key}.tools.{field}: {glob:?}: {problem}")));
                }
            }
        }
        if let Some(cwd) = server.cwd.as_mut()
            && cwd.is_relative()
        {
            *cwd = base.join(&*cwd);
        }
    }
    Ok(())
}

/// What is wrong with `glob`, if anything (unchecked without the MCP client, which is
/// what reads the globs).
#[cfg(feature = "mcp-client")]
fn glob_problem(glob: &str) -> Option<String> {
    globset::Glob::new(glob).err().map(|e| e.kind().to_string())
}

#[cfg(not(feature = "mcp-client"))]
fn glob_problem(_glob: &str) -> Option<String> {
    None
}
