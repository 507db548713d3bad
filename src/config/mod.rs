//! `toolhost.toml`: the configuration model, its lookup and its fingerprint.
//!
//! Every section rejects unknown keys (`deny_unknown_fields`), so a typo is an error that
//! names the key and the line instead of a silently ignored setting.

mod limits;
mod mcp_servers;
mod observability;
mod serve_auth;

pub(crate) use limits::{Limits, LimitsConfig, Rate};
#[cfg_attr(not(feature = "mcp-client"), allow(unused_imports))]
pub(crate) use mcp_servers::{McpServerConfig, ToolFilterConfig};
pub(crate) use observability::{AuditConfig, TelemetryConfig};
pub(crate) use serve_auth::{OAuthConfig, TokenConfig};

use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest configuration file read.
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;
/// The most threads `[serve] http_threads` may ask for.
const MAX_HTTP_THREADS: usize = 1024;

/// The whole configuration file. Every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Built-in tool directories, in load order (default `./tools-lua`).
    pub tools_dirs: Option<Vec<PathBuf>>,
    /// Where the discovery cache and spill files live.
    pub cache_dir: Option<PathBuf>,
    /// Toolsets enabled by default (default: all).
    pub enabled_toolsets: Option<Vec<String>>,
    /// Toolsets always subtracted from the selection.
    pub disabled_toolsets: Option<Vec<String>>,
    /// Tool names the embedding agent loop must handle itself.
    pub agent_loop_tools: Option<Vec<String>>,
    /// Result size limit for tools that do not set `max_result_size_chars`.
    pub default_max_result_size_chars: Option<u64>,
    /// How long a `check_fn` result is cached, in seconds.
    pub check_ttl_secs: Option<u64>,
    /// Composite toolsets.
    #[serde(default)]
    pub toolsets: BTreeMap<String, ToolsetConfig>,
    /// Plugin tool directories, keyed by plugin id.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginConfig>,
    /// Sandbox grants.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Runtime limits.
    #[serde(default)]
    pub runtime: RuntimeConfig,
    /// Approval policy.
    #[serde(default)]
    pub approval: ApprovalConfig,
    /// Tool search.
    #[serde(default)]
    pub tool_search: ToolSearchConfig,
    /// The MCP server.
    #[serde(default)]
    pub serve: ServeConfig,
    /// The durable `store`.
    #[serde(default)]
    pub store: StoreConfig,
    /// External MCP servers whose tools join the registry.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Traces and metrics (read by the binary and the MCP server).
    #[serde(default)]
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub telemetry: TelemetryConfig,
    /// The audit log (the MCP server's).
    #[serde(default)]
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub audit: AuditConfig,
    /// Rate limits (checked when the file is read).
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The shipped tool library embedded in the binary.
    #[serde(default)]
    pub library: LibraryConfig,
}

/// `[library]`: the shipped tool library, embedded in the binary, as the `library` source.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LibraryConfig {
    /// Whether the library's tools load (default: on for the `toolhost` command, off for
    /// embedders unless `HostBuilder::library` turns it on).
    pub enabled: Option<bool>,
}

/// `[store]`: where `store` keeps its values.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreConfig {
    /// `"sqlite"` (default), `"memory"` or `"postgres"`.
    pub backend: Option<StoreBackend>,
    /// The SQLite file (default: `.toolhost/store.sqlite3` beside the config file, see
    /// [`default_store_path`]); relative to the config file.
    pub path: Option<PathBuf>,
    /// Largest value, as JSON text (default 1 MiB).
    pub max_value_bytes: Option<usize>,
    /// PostgreSQL: the environment variable holding the connection URL (default
    /// `TOOLHOST_DATABASE_URL`; the URL holds the password, so it is never in the file).
    pub url_env: Option<String>,
    /// PostgreSQL: the schema the tables live in (default `toolhost`).
    pub pg_schema: Option<String>,
    /// PostgreSQL: most connections open at once (default 8).
    pub pool_size: Option<usize>,
    /// PostgreSQL: longest wait for a new connection, in milliseconds (default 5,000).
    pub connect_timeout_ms: Option<u64>,
}

/// Default `[store] url_env`.
pub(crate) const DEFAULT_URL_ENV: &str = "TOOLHOST_DATABASE_URL";

impl StoreConfig {
    /// Checks the keys against the backend they belong to (a key the chosen backend does
    /// not read is an error, not silently ignored) and their values.
    fn check(&self) -> std::result::Result<(), String> {
        let postgres = self.backend == Some(StoreBackend::Postgres);
        let postgres_keys = [
            ("url_env", self.url_env.is_some()),
            ("pg_schema", self.pg_schema.is_some()),
            ("pool_size", self.pool_size.is_some()),
            ("connect_timeout_ms", self.connect_timeout_ms.is_some()),
        ];
        if !postgres && let Some((key, _)) = postgres_keys.iter().find(|(_, set)| *set) {
            return Err(format!(
                "store.{key}: only used with backend = \"postgres\" (the backend is {})",
                match self.backend {
                    Some(StoreBackend::Memory) => "\"memory\"",
                    _ => "\"sqlite\"",
                }
            ));
        }
        if postgres && self.path.is_some() {
            return Err(
                "store.path: the SQLite file is not used with backend = \"postgres\"".into(),
            );
        }
        if self.backend == Some(StoreBackend::Memory) && self.path.is_some() {
            return Err("store.path: no file is used with backend = \"memory\"".into());
        }
        if self.pool_size == Some(0) {
            return Err("store.pool_size: must be at least 1".into());
        }
        if self.connect_timeout_ms == Some(0) {
            return Err("store.connect_timeout_ms: must be at least 1".into());
        }
        if let Some(var) = &self.url_env
            && (var.is_empty() || var.contains('='))
        {
            return Err(format!(
                "store.url_env: '{var}' is not an environment variable name"
            ));
        }
        #[cfg(feature = "postgres")]
        if let Some(schema) = &self.pg_schema {
            crate::store::check_pg_schema(schema).map_err(|e| format!("store.pg_schema: {e}"))?;
        }
        Ok(())
    }
}

/// `[store] backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum StoreBackend {
    /// A SQLite file: durable, shared by processes.
    Sqlite,
    /// In memory: gone with the process.
    Memory,
    /// A PostgreSQL database: durable, shared by every replica.
    Postgres,
}

/// `[serve]`: the MCP server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct ServeConfig {
    /// Longest message accepted from a client, in bytes (default 4 MiB); a longer one gets
    /// an error reply (stdio) or 413 (HTTP) and the server goes on.
    pub max_request_bytes: Option<usize>,
    /// Environment variable holding the bearer token HTTP clients must send (read by the
    /// CLI; embedders pass the token in `HttpOptions`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub auth_token_env: Option<String>,
    /// Named static bearer tokens (`[[serve.tokens]]`); `auth_token_env`'s is `default`.
    #[serde(default)]
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub tokens: Vec<TokenConfig>,
    /// OAuth 2.1 access tokens (`[serve.oauth]`), besides or instead of static tokens.
    pub oauth: Option<OAuthConfig>,
    /// Browser origins allowed besides `http://localhost*` / `http://127.0.0.1*` (HTTP).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// How long shutdown lets running calls finish, in milliseconds (default 10 s).
    pub drain_ms: Option<u64>,
    /// Calls running at once over all sessions (default 64).
    pub max_calls: Option<usize>,
    /// Calls running at once in one session (default 16).
    pub max_session_calls: Option<usize>,
    /// Calls waiting for a place before new ones are refused (default 1024).
    pub max_queued_calls: Option<usize>,
    /// HTTP sessions open at once (default 1,000); an `initialize` over it gets 503 with a
    /// JSON-RPC error, and the open sessions keep working.
    pub max_sessions: Option<usize>,
    /// An HTTP session with no traffic for this long is closed, in milliseconds (default
    /// 300,000); its id then gets 404 and the client starts a new session.
    pub session_idle_ms: Option<u64>,
    /// SSE polling (SEP-1699), in milliseconds (default: off): on an HTTP session, a
    /// `tools/call` whose answer has not come this long after its stream opened gets that
    /// stream ended with a priming event (an event id and a `retry` hint); the client resumes
    /// with `GET` + `Last-Event-ID` and gets the progress and the answer. Keeps long calls
    /// alive behind proxies that cut idle or long responses.
    pub sse_poll_after_ms: Option<u64>,
    /// HTTP connections served at once (default 1,024); more wait in the kernel's accept
    /// queue until one closes.
    pub max_connections: Option<usize>,
    /// How long an HTTP client may take to send a request's headers, and then its body, in
    /// milliseconds (default 10,000); also how long a keep-alive connection may sit idle
    /// between requests. Past it the connection is closed.
    pub header_timeout_ms: Option<u64>,
    /// Threads serving HTTP connections, each with a single-threaded runtime of its own;
    /// connections are handed to them in turn and stay on one (default: the machine's
    /// cores for `toolhost serve --http`; 1 for an embedder's `Host::serve_mcp_http`,
    /// whose connections then run on the runtime it was called from).
    pub http_threads: Option<usize>,
    /// How long a 2026-07-28 client may reuse a `tools/list` answer, in milliseconds (the
    /// `ttlMs` caching hint; default 0: ask again each time, as a reload may change it).
    pub list_ttl_ms: Option<u64>,
    /// Environment variable holding the key that seals multi-round input-request state
    /// (`requestState`, HMAC-SHA256; at least 32 bytes). Unset: a random key per process,
    /// so only that process can resume a round.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub state_key_env: Option<String>,
    /// How long a sealed input-request state stays valid, in milliseconds (default
    /// 600,000); an older one is refused.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub input_request_ttl_ms: Option<u64>,
    /// How long a task (MCP Tasks extension) is kept from its creation, in milliseconds
    /// (default 3,600,000): past it `tasks/get` answers "task not found" and the record is
    /// deleted.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub task_ttl_ms: Option<u64>,
}

/// `[toolsets.NAME]`: a composite toolset.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolsetConfig {
    /// A note for whoever reads the file (the reference registry's toolsets carry one);
    /// accepted so such configs load, never interpreted.
    #[allow(dead_code)]
    pub description: Option<String>,
    /// Tool names in this toolset.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Other toolsets (tool toolsets or composites) included recursively.
    #[serde(default)]
    pub includes: Vec<String>,
}

impl Config {
    /// Whether `[plugins.ID] capabilities` lists `capability` (false for a plugin not in
    /// this configuration: nothing granted is assumed).
    pub(crate) fn plugin_granted(&self, id: &str, capability: &str) -> bool {
        self.plugins
            .get(id)
            .and_then(|plugin| plugin.capabilities.as_ref())
            .is_some_and(|granted| granted.iter().any(|c| c == capability))
    }
}

/// Host-API tables a plugin can be granted (`[plugins.ID] capabilities`).
/// `hooks` is not a Lua table: it lets the plugin's hooks see and change every call (by
/// default they see only calls of the plugin's own tools); nor is `call`: it lets the
/// plugin's tools `ctx.call` any tool (by default only the plugin's own).
pub(crate) const CAPABILITIES: &[&str] = &[
    "json", "log", "time", "env", "fs", "proc", "store", "hooks", "call",
];
/// What a plugin gets when its config grants nothing explicitly.
pub(crate) const DEFAULT_PLUGIN_CAPABILITIES: &[&str] = &["json", "log", "time"];
/// `[plugins.ID]`: a plugin tool directory.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PluginConfig {
    /// The plugin's tool directory (relative paths resolve against the config file's
    /// directory).
    pub dir: PathBuf,
    /// Operator opt-in: the plugin may override tools it does not own.
    #[serde(default)]
    pub allow_tool_override: bool,
    /// Bind every tool of the plugin to this scope overlay.
    pub scope: Option<String>,
    /// Host-API capabilities granted to the plugin (default: json, log, time).
    pub capabilities: Option<Vec<String>>,
}

/// `[sandbox]`: what tool code may reach.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SandboxConfig {
    /// Directories `fs` may touch (default: the working directory, unless that is `/` or
    /// the home directory itself); `[]` grants no fs access.
    pub fs_roots: Option<Vec<PathBuf>>,
    /// Programs `proc.run` may start.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Environment variables every tool may read with `env.get`.
    #[serde(default)]
    pub env: Vec<String>,
    /// Environment variables `proc.run` children get besides `PATH`, `HOME` and `LANG`
    /// (children never inherit the host's whole environment).
    #[serde(default)]
    pub proc_env: Vec<String>,
    /// What a tool whose annotations contradict its effects does: `"error"` (it does not
    /// load; the default) or `"warn"` (docs/effects.md).
    #[serde(default)]
    pub annotation_check: crate::discovery::AnnotationCheck,
}

/// `[runtime]`: VM pool and limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuntimeConfig {
    /// Number of Lua VMs (default: one per core).
    pub vms: Option<usize>,
    /// Default per-call deadline in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Per-VM memory limit in MiB.
    pub memory_mb: Option<u64>,
    /// Deadline for check_fn, dynamic_schema_overrides and hooks, in milliseconds.
    pub probe_timeout_ms: Option<u64>,
    /// Hot-reload debounce in milliseconds.
    #[cfg_attr(not(feature = "watch"), allow(dead_code))]
    pub reload_debounce_ms: Option<u64>,
}

/// `[approval]`: which tools need approval and what happens without a prompt.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalConfig {
    /// Tools that always need approval.
    #[serde(default)]
    pub tools: Vec<String>,
    /// `"deny"` (default) or `"allow"` when no interactive approver is available.
    pub default: Option<ApprovalDefault>,
    /// How calls from MCP clients are approved: `"ask"` (default: the client's user, by
    /// elicitation; a client without elicitation falls back to `default`), `"allow"`,
    /// `"deny"`.
    #[serde(default)]
    pub mcp: ApprovalMcp,
}

/// `[approval] mcp`: who approves a call that came from an MCP client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ApprovalMcp {
    /// Ask the client's user ("Allow TOOL with ARGS?"); without elicitation, the approver.
    #[default]
    Ask,
    /// Run the call.
    Allow,
    /// Refuse the call.
    Deny,
}

/// The answer used when nobody can be asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ApprovalDefault {
    /// Refuse the call.
    #[default]
    Deny,
    /// Run the call.
    Allow,
}

/// `[tool_search]`: deferring tools behind the search bridge.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolSearchConfig {
    /// `"auto"`, `"on"` or `"off"`.
    pub enabled: Option<ToolSearchMode>,
    /// Tools or toolsets never deferred.
    #[serde(default)]
    pub core: Vec<String>,
    /// Selected-tool count above which `auto` activates search.
    pub auto_threshold: Option<usize>,
}

/// Tool-search activation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ToolSearchMode {
    /// Active when the selection is larger than the threshold.
    #[default]
    Auto,
    /// Always active.
    On,
    /// Never active.
    Off,
}

/// A loaded configuration together with where it came from.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoadedConfig {
    /// The parsed configuration (defaults when no file was found).
    pub config: Config,
    /// The file it was read from, if any.
    pub path: Option<PathBuf>,
    /// The file's `(mtime_ns, size)` when it was read: part of every memo key.
    pub fingerprint: Option<(u128, u64)>,
}

impl LoadedConfig {
    /// Finds and parses the configuration: `explicit` (`--config`), else
    /// `$TOOLHOST_CONFIG`, else `./toolhost.toml`. An explicitly named file must exist; the
    /// implicit `./toolhost.toml` is optional.
    pub(crate) fn discover(explicit: Option<&Path>) -> Result<Self> {
        if let Some(path) = explicit {
            return Self::load(path);
        }
        if let Some(path) = std::env::var_os("TOOLHOST_CONFIG").filter(|v| !v.is_empty()) {
            return Self::load(Path::new(&path));
        }
        let implicit = Path::new("toolhost.toml");
        if implicit.is_file() {
            return Self::load(implicit);
        }
        Ok(Self::default())
    }

    /// Reads and parses one configuration file.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let bytes =
            crate::bounded_read::read_regular(path, MAX_CONFIG_BYTES).map_err(|source| {
                Error::ConfigRead {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        let text = String::from_utf8(bytes).map_err(|_| Error::ConfigInvalid {
            path: path.to_path_buf(),
            message: "not valid UTF-8".to_string(),
        })?;
        let mut config: Config = toml::from_str(&text).map_err(|e| Error::ConfigInvalid {
            path: path.to_path_buf(),
            message: describe_toml_error(&text, &e),
        })?;
        if config.serve.max_request_bytes == Some(0) {
            return Err(Error::ConfigInvalid {
                path: path.to_path_buf(),
                message: "serve.max_request_bytes: must be at least 1".to_string(),
            });
        }
        for (key, value) in [
            ("max_sessions", config.serve.max_sessions.map(|n| n as u64)),
            ("session_idle_ms", config.serve.session_idle_ms),
            // A stream ended at once would deliver nothing but its priming event.
            ("sse_poll_after_ms", config.serve.sse_poll_after_ms),
            (
                "max_connections",
                config.serve.max_connections.map(|n| n as u64),
            ),
            ("header_timeout_ms", config.serve.header_timeout_ms),
            ("http_threads", config.serve.http_threads.map(|n| n as u64)),
            ("input_request_ttl_ms", config.serve.input_request_ttl_ms),
            // A task that expired at once could not be read after its creation.
            ("task_ttl_ms", config.serve.task_ttl_ms),
        ] {
            if value == Some(0) {
                return Err(Error::ConfigInvalid {
                    path: path.to_path_buf(),
                    message: format!("serve.{key}: must be at least 1"),
                });
            }
        }
        // Each is an OS thread with a runtime of its own: a typo of a few zeros would
        // exhaust the process's threads before a single connection is served.
        if let Some(threads) = config.serve.http_threads
            && threads > MAX_HTTP_THREADS
        {
            return Err(Error::ConfigInvalid {
                path: path.to_path_buf(),
                message: format!(
                    "serve.http_threads: {threads} is more than {MAX_HTTP_THREADS}, the most \
                     threads that may serve HTTP connections"
                ),
            });
        }
        if config.runtime.memory_mb == Some(0) {
            return Err(Error::ConfigInvalid {
                path: path.to_path_buf(),
                message: "runtime.memory_mb: must be at least 1 (a VM always has a memory \
                          limit; 0 would disable it)"
                    .to_string(),
            });
        }
        if config.store.max_value_bytes == Some(0) {
            return Err(Error::ConfigInvalid {
                path: path.to_path_buf(),
                message: "store.max_value_bytes: must be at least 1".to_string(),
            });
        }
        config
            .store
            .check()
            .map_err(|message| Error::ConfigInvalid {
                path: path.to_path_buf(),
                message,
            })?;
        config
            .limits
            .resolve()
            .map_err(|message| Error::ConfigInvalid {
                path: path.to_path_buf(),
                message,
            })?;
        // Plugin directories and the store file are relative to the config file, so a config
        // works from any cwd.
        let base = path.parent().unwrap_or(Path::new(""));
        for plugin in config.plugins.values_mut() {
            if plugin.dir.is_relative() {
                plugin.dir = base.join(&plugin.dir);
            }
        }
        mcp_servers::check(&mut config.mcp_servers, base, path)?;
        serve_auth::check(
            &config.serve.tokens,
            config.serve.oauth.as_mut(),
            config.serve.auth_token_env.is_some(),
            base,
            path,
        )?;
        if let Some(store) = config.store.path.as_mut()
            && store.is_relative()
        {
            *store = base.join(&*store);
        }
        Ok(Self {
            config,
            path: Some(path.to_path_buf()),
            fingerprint: file_fingerprint(path),
        })
    }
}

/// `(mtime_ns, size)` of a file, or `None` when it cannot be read.
pub(crate) fn file_fingerprint(path: &Path) -> Option<(u128, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((mtime, meta.len()))
}

/// toml's message already names the key; prefix the line so it reads like `file:line`.
fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().to_string();
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {message}")
        }
        None => message,
    }
}

/// The project's own store file when `[store] path` is not set (docs/configuration.md):
/// `.toolhost/store.sqlite3` in the directory of the config file, or — without a config
/// file — in the directory that contains the first tool directory, so two projects on one
/// machine never share keys by accident. Made absolute (lexically: `.` and `..` are
/// resolved as written, symlinks are not followed) so a later change of the working
/// directory does not move it.
pub(crate) fn default_store_path(config_file: Option<&Path>, first_tool_dir: &Path) -> PathBuf {
    let project = match config_file {
        Some(file) => lexical_absolute(file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        None => {
            let dir = lexical_absolute(first_tool_dir);
            // The root directory has no parent: the store goes into it.
            dir.parent().map(Path::to_path_buf).unwrap_or(dir)
        }
    };
    project.join(".toolhost").join("store.sqlite3")
}

/// `path` joined to the working directory, with `.` and `..` components resolved as
/// written.
fn lexical_absolute(path: &Path) -> PathBuf {
    let joined = crate::discovery::absolutize(path);
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The default cache directory: `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`,
/// else `./.toolhost-cache`.
pub(crate) fn default_cache_dir() -> PathBuf {
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("toolhost");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home).join(".cache").join("toolhost");
    }
    PathBuf::from(".toolhost-cache")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_store_sits_beside_the_config_file_or_the_first_tool_directory() {
        let store = |config: Option<&str>, tools: &str| {
            default_store_path(config.map(Path::new), Path::new(tools))
        };
        let at = |dir: &str| PathBuf::from(dir).join(".toolhost/store.sqlite3");
        assert_eq!(
            store(Some("/p/conf/toolhost.toml"), "/x/tools"),
            at("/p/conf")
        );
        assert_eq!(store(None, "/p/tools"), at("/p"));
        assert_eq!(store(None, "/p/tools/./"), at("/p"));
        assert_eq!(store(None, "/p/a/../tools"), at("/p"));
        assert_eq!(store(None, "/"), at("/"));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            store(None, "tools-lua"),
            cwd.join(".toolhost/store.sqlite3")
        );
        assert_eq!(
            store(Some("toolhost.toml"), "elsewhere"),
            cwd.join(".toolhost/store.sqlite3")
        );
    }

    #[test]
    fn unknown_key_names_the_key_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(
            &path,
            "cache_dir = \"x\"\n[runtime]\nvms = 2\ntimeout = 5\n",
        )
        .unwrap();
        let err = LoadedConfig::load(&path).unwrap_err().to_string();
        assert!(err.contains("timeout"), "{err}");
        assert!(err.contains("line 4"), "{err}");
    }

    #[test]
    fn too_many_http_threads_is_an_error_naming_the_key_and_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "[serve]\nhttp_threads = 100000\n").unwrap();
        let err = LoadedConfig::load(&path).unwrap_err().to_string();
        assert!(err.contains("serve.http_threads"), "{err}");
        assert!(err.contains(&MAX_HTTP_THREADS.to_string()), "{err}");
        std::fs::write(
            &path,
            format!("[serve]\nhttp_threads = {MAX_HTTP_THREADS}\n"),
        )
        .unwrap();
        assert!(
            LoadedConfig::load(&path).is_ok(),
            "the bound itself is allowed"
        );
    }

    #[test]
    fn a_zero_http_bound_is_an_error_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        for key in [
            "max_sessions",
            "session_idle_ms",
            "sse_poll_after_ms",
            "max_connections",
            "header_timeout_ms",
            "http_threads",
            "input_request_ttl_ms",
            "task_ttl_ms",
        ] {
            std::fs::write(&path, format!("[serve]\n{key} = 0\n")).unwrap();
            let err = LoadedConfig::load(&path).unwrap_err().to_string();
            assert!(err.contains(&format!("serve.{key}")), "{err}");
        }
    }

    #[test]
    fn a_store_key_the_backend_would_not_read_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        for (toml, key) in [
            ("[store]\nurl_env = \"DB\"\n", "store.url_env"),
            (
                "[store]\nbackend = \"sqlite\"\npg_schema = \"x\"\n",
                "store.pg_schema",
            ),
            (
                "[store]\nbackend = \"memory\"\npool_size = 2\n",
                "store.pool_size",
            ),
            (
                "[store]\nconnect_timeout_ms = 2\n",
                "store.connect_timeout_ms",
            ),
            (
                "[store]\nbackend = \"postgres\"\npath = \"s.db\"\n",
                "store.path",
            ),
            (
                "[store]\nbackend = \"memory\"\npath = \"s.db\"\n",
                "store.path",
            ),
        ] {
            std::fs::write(&path, toml).unwrap();
            let err = LoadedConfig::load(&path).unwrap_err().to_string();
            assert!(err.contains(key), "{toml}: {err}");
        }
    }

    #[test]
    fn bad_postgres_store_values_are_errors_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        let mut cases = vec![
            ("pool_size = 0", "store.pool_size"),
            ("connect_timeout_ms = 0", "store.connect_timeout_ms"),
            ("url_env = \"\"", "store.url_env"),
        ];
        if cfg!(feature = "postgres") {
            cases.push(("pg_schema = \"Robert'); DROP\"", "store.pg_schema"));
        }
        for (line, key) in cases {
            std::fs::write(&path, format!("[store]\nbackend = \"postgres\"\n{line}\n")).unwrap();
            let err = LoadedConfig::load(&path).unwrap_err().to_string();
            assert!(err.contains(key), "{line}: {err}");
        }
        std::fs::write(&path, "[store]\nbackend = \"mysql\"\n").unwrap();
        let err = LoadedConfig::load(&path).unwrap_err().to_string();
        assert!(err.contains("mysql") && err.contains("postgres"), "{err}");
        std::fs::write(
            &path,
            "[store]\nbackend = \"postgres\"\nurl_env = \"DB_URL\"\npg_schema = \"tools_2\"\n\
             pool_size = 4\nconnect_timeout_ms = 100\n",
        )
        .unwrap();
        let store = LoadedConfig::load(&path).unwrap().config.store;
        assert_eq!(store.backend, Some(StoreBackend::Postgres));
        assert_eq!(store.url_env.as_deref(), Some("DB_URL"));
        assert_eq!(store.pool_size, Some(4));
    }

    #[test]
    fn the_example_config_parses_with_every_key_uncommented() {
        let example = include_str!("../../toolhost.toml");
        let uncommented: String = example
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if rest.starts_with('[') || rest.contains(" = ") => rest,
                _ => line,
            })
            .map(|line| format!("{line}\n"))
            .collect();
        let config: Config = toml::from_str(&uncommented).expect("example parses");
        assert_eq!(config.runtime.vms, Some(2));
        assert_eq!(config.toolsets["coding"].includes, ["file", "shell"]);
        assert!(config.plugins.contains_key("acme"));
        assert_eq!(config.approval.default, Some(ApprovalDefault::Deny));
        assert!(config.mcp_servers.contains_key("git"));
    }

    #[test]
    fn plugin_dirs_resolve_against_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "[plugins.acme]\ndir = \"acme-tools\"\n").unwrap();
        let loaded = LoadedConfig::load(&path).unwrap();
        assert_eq!(
            loaded.config.plugins["acme"].dir,
            dir.path().join("acme-tools")
        );
        assert!(loaded.fingerprint.is_some());
    }
}
