//! What the command line needs from the layers below the facade, as `Host`'s associated
//! functions: the front ends name nothing past `lib.rs`'s re-exports (tests/layers.rs), so
//! each thing they need from inside the crate has one deliberate door here.

use super::Host;

impl Host {
    /// The LuaLS definitions of the host API (`toolhost stubs`).
    pub(crate) fn lua_stubs() -> String {
        crate::lua::api::stubs::stubs()
    }

    /// The name in `known` that `given` is a plausible typo of (the same "did you mean"
    /// rule as registration fields).
    pub(crate) fn closest_name<'a>(given: &str, known: &[&'a str]) -> Option<&'a str> {
        crate::lua::register::fields::closest(given, known)
    }

    /// Checks a tool or toolset name as registration does; the error says what is wrong
    /// (to be prefixed with where the name came from).
    pub(crate) fn check_tool_name(name: &str) -> Result<(), crate::registry::Invalid> {
        crate::registry::ToolName::new(name).map(drop)
    }

    /// The store's backend (`memory`, `sqlite`, `postgres`), whether it can serve calls now
    /// and why not (no secret). Blocks up to 2 s (PostgreSQL's check): call it off the
    /// async workers.
    #[cfg(feature = "http")]
    pub(crate) fn store_health(&self) -> (&'static str, bool, Option<String>) {
        let store = &self.inner.inputs.store;
        let health = store.health();
        (store.backend_name(), health.ok, health.message)
    }

    /// The store's backend name (`memory`, `sqlite`, `postgres`).
    #[cfg(feature = "http")]
    pub(crate) fn store_backend_name(&self) -> &'static str {
        self.inner.inputs.store.backend_name()
    }

    /// Stops every MCP server of every host in this process and waits (bounded) for their
    /// children: the CLI calls it before it exits, however it exits.
    #[cfg(feature = "mcp-client")]
    pub(crate) fn end_all_mcp_servers() {
        crate::mcp_client::end_all();
    }

    /// Asks that SIGINT/SIGTERM end the process only after its MCP servers are gone (the
    /// one-shot commands, which listen for no signal themselves).
    #[cfg(feature = "mcp-client")]
    pub(crate) fn end_mcp_servers_on_signal() {
        crate::mcp_client::end_on_signal();
    }

    /// The config file the host would read (`config_file`, else `$TOOLHOST_CONFIG`, else
    /// `./toolhost.toml`, if any) and whether it names its own `tools_dirs`: what `toolhost
    /// mcp-config` needs to start the same host from a client.
    #[cfg(feature = "cli")]
    pub(crate) fn config_file_found(
        config_file: Option<&std::path::Path>,
    ) -> crate::error::Result<(Option<std::path::PathBuf>, bool)> {
        let loaded = crate::config::LoadedConfig::discover(config_file)?;
        Ok((loaded.path, loaded.config.tools_dirs.is_some()))
    }

    /// `[telemetry]` of the config file the host would read (`config_file`, else
    /// `$TOOLHOST_CONFIG`, else `./toolhost.toml`), read before the host is built: the
    /// trace exporter is set up with logging, before the first tool file loads. A file
    /// that cannot be read gives the defaults here (the host reports it when it builds).
    #[cfg(feature = "cli")]
    pub(crate) fn telemetry_config(
        config_file: Option<&std::path::Path>,
    ) -> crate::config::TelemetryConfig {
        crate::config::LoadedConfig::discover(config_file)
            .map(|loaded| loaded.config.telemetry)
            .unwrap_or_default()
    }
}
