//! `HostBuilder`: configuration, tool directories, native tools, Rust extensions.

use super::generation::{self, Recipe};
use super::{BuildInputs, Host, HostInner, World};
use crate::config::{
    ApprovalDefault, CAPABILITIES, Config, DEFAULT_PLUGIN_CAPABILITIES, LoadedConfig,
    default_cache_dir,
};
use crate::definitions::{DefinitionsMemo, RenderCache};
use crate::discovery::{Sources, ToolDir};
use crate::dispatch::{Approver, Hook, Middleware, Pipeline, PolicyApprover};
use crate::error::{Error, Result};
use crate::fs_roots::FsRoots;
use crate::lua::{ApiContext, VmSettings};
use crate::native::{NativePrompt, NativeResource, NativeTool};
use crate::registry::{AvailabilityCache, DEFAULT_CHECK_TTL, Registry, RegistryState, Source};
use crate::search::SearchPlans;
use crate::store::StoreInner;
use parking_lot::{Mutex, RwLock};
use std::path::PathBuf;
use std::sync::Arc;

/// Default deadline for probes and for a tool file's top-level code.
pub(crate) const DEFAULT_PROBE_TIMEOUT_MS: u64 = 5_000;
/// Default per-VM memory limit.
pub(crate) const DEFAULT_MEMORY_MB: u64 = 256;
/// Reload events a slow listener may fall behind by before it misses some.
const RELOAD_EVENTS_KEPT: usize = 16;
/// Most VMs a pool may have.
pub(crate) const MAX_VMS: usize = 64;

/// Builds a [`Host`]: configuration, tool directories, native tools.
///
/// Without [`config_file`](Self::config_file) or [`default_config`](Self::default_config),
/// [`build`](Self::build) reads `$TOOLHOST_CONFIG`, else `./toolhost.toml` if it exists,
/// like the `toolhost` command does.
#[derive(Default)]
pub struct HostBuilder {
    tools_dirs: Vec<PathBuf>,
    config_file: Option<PathBuf>,
    config: Option<LoadedConfig>,
    cache_dir: Option<PathBuf>,
    natives: Vec<NativeTool>,
    native_resources: Vec<NativeResource>,
    native_prompts: Vec<NativePrompt>,
    only_files: Option<Vec<PathBuf>>,
    run_every_file: bool,
    judge_first: bool,
    hooks: Vec<Arc<dyn Hook>>,
    middleware: Vec<Arc<dyn Middleware>>,
    approver: Option<Arc<dyn Approver>>,
    approver_factory: Option<ApproverFactory>,
    vms: Option<usize>,
    store: Option<StoreChoice>,
    fs_roots: Option<Vec<PathBuf>>,
    env: crate::env_vars::EnvVars,
    proc_script: Option<Arc<crate::lua::api::proc_script::ProcScript>>,
    /// Set by [`HostBuilder::library`]: decides over `[library] enabled`.
    library: Option<bool>,
    /// Whether the library loads when neither the builder nor the config says.
    library_by_default: bool,
}

/// Where the store lives, when the builder decides instead of `[store]`.
pub(super) enum StoreChoice {
    File(PathBuf),
    Memory,
    /// A PostgreSQL URL (the rest of the settings from `[store]`).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres(String),
}

/// Builds an approver from the configured default.
type ApproverFactory = Box<dyn FnOnce(ApprovalDefault) -> Arc<dyn Approver>>;

impl HostBuilder {
    /// Adds a built-in tool directory (repeatable; replaces the config's `tools_dirs`).
    pub fn tools_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.tools_dirs.push(dir.into());
        self
    }

    /// Reads configuration from this file (it must exist).
    /// (The last of `config_file` and `default_config` wins.)
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_file = Some(path.into());
        self.config = None;
        self
    }

    /// Uses the built-in defaults and reads no configuration file (neither
    /// `$TOOLHOST_CONFIG` nor `./toolhost.toml`): for embedders that configure everything in
    /// code, and for tests.
    pub fn default_config(mut self) -> Self {
        self.config = Some(LoadedConfig::default());
        self.config_file = None;
        self
    }

    /// Where the discovery cache lives (replaces the config's `cache_dir`).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Keeps `store` values in this SQLite file (instead of `[store]`'s choice).
    pub fn store_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.store = Some(StoreChoice::File(path.into()));
        self
    }

    /// Keeps `store` values in memory only (instead of `[store]`'s choice): they are gone
    /// when the host is.
    pub fn memory_store(mut self) -> Self {
        self.store = Some(StoreChoice::Memory);
        self
    }

    /// Keeps `store` values in the PostgreSQL database `url` names (instead of `[store]`'s
    /// choice; `pg_schema`, `pool_size` and `connect_timeout_ms` still come from `[store]`).
    /// The URL may hold a password: it is never logged or put in an error. No connection is
    /// made before a store call needs one.
    #[cfg(feature = "postgres")]
    pub fn postgres_store(mut self, url: impl Into<String>) -> Self {
        self.store = Some(StoreChoice::Postgres(url.into()));
        self
    }

    /// Confines `fs` to these roots instead of `[sandbox] fs_roots` (`toolhost test` gives
    /// each test a temp dir).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn fs_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.fs_roots = Some(roots);
        self
    }

    /// Runs tools under these environment variables, over the process's (`toolhost
    /// test`'s `t.env`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn env_overlay(mut self, vars: std::collections::HashMap<String, String>) -> Self {
        self.env = crate::env_vars::EnvVars::with_overlay(vars);
        self
    }

    /// Answers `proc.run` from this script instead of running programs (`toolhost test`'s
    /// `t.proc`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn proc_script(mut self, script: crate::lua::api::proc_script::ProcScript) -> Self {
        self.proc_script = Some(Arc::new(script));
        self
    }

    /// Loads (or not) the shipped tool library embedded in the binary as the `library`
    /// source, after the built-in tool directories: a tool of the same name from anywhere
    /// else takes a library tool's place. Decides over `[library] enabled`; without either,
    /// an embedding program gets no library (the `toolhost` command does).
    pub fn library(mut self, enabled: bool) -> Self {
        self.library = Some(enabled);
        self
    }

    /// Loads the library unless [`library`](Self::library) or `[library] enabled` says
    /// otherwise (the `toolhost` command's default).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn library_by_default(mut self) -> Self {
        self.library_by_default = true;
        self
    }

    /// Registers a Rust tool (before any Lua file loads).
    pub fn native_tool(mut self, tool: NativeTool) -> Self {
        self.natives.push(tool);
        self
    }

    /// Registers a Rust resource (before any Lua file loads: a Lua file registering the
    /// same URI from another toolset is refused, as between two files).
    pub fn native_resource(mut self, resource: NativeResource) -> Self {
        self.native_resources.push(resource);
        self
    }

    /// Registers a Rust prompt (before any Lua file loads).
    pub fn native_prompt(mut self, prompt: NativePrompt) -> Self {
        self.native_prompts.push(prompt);
        self
    }

    /// Adds a Rust hook (pre_tool_call, post_tool_call, transform_tool_result); Rust hooks
    /// run before Lua hooks, in the order added.
    pub fn hook(mut self, hook: impl Hook + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Adds an execution middleware; the first added is the outermost.
    pub fn middleware(mut self, middleware: impl Middleware + 'static) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Sets the approver (default: the config's `[approval] default`, deny unless "allow").
    pub fn approver(mut self, approver: impl Approver + 'static) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Sets an approver built around the configured `[approval] default` (known only once
    /// the configuration is read; `make` gets it as an approver), e.g. a prompt that falls
    /// back to the policy.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn approver_from_config<A: Approver + 'static>(
        mut self,
        make: impl FnOnce(Box<dyn Approver>) -> A + 'static,
    ) -> Self {
        self.approver_factory = Some(Box::new(move |default| {
            Arc::new(make(Box::new(PolicyApprover(default))))
        }));
        self
    }

    /// Loads only these files instead of scanning the tool directories (`toolhost check
    /// FILES`); they still see the tool directories' `lib/`.
    pub fn only_files(mut self, files: Vec<PathBuf>) -> Self {
        self.only_files = Some(files);
        self
    }

    /// Runs every registering file at load, as a cold start does, instead of taking
    /// unchanged files' registrations from `<cache_dir>/registrations.cache` and running them
    /// at first use (`toolhost check` does this: checking the files is its point).
    pub fn run_every_file(mut self) -> Self {
        self.run_every_file = true;
        self
    }

    /// Judges every file before the VM runs any, even where it could run each as soon as
    /// it is judged (a cold start): tests check both orders give the same host.
    #[cfg(test)]
    pub(crate) fn judge_first(mut self) -> Self {
        self.judge_first = true;
        self
    }

    /// Sets the number of Lua VMs (default: `[runtime] vms`, else one per core).
    pub fn vms(mut self, vms: usize) -> Self {
        self.vms = Some(vms);
        self
    }

    /// Reads the configuration, discovers and loads every tool file. Per-file problems are
    /// reported in [`Host::discovery`], never returned as errors.
    pub fn build(self) -> Result<Host> {
        let mut loaded_config = match self.config {
            Some(config) => config,
            None => LoadedConfig::discover(self.config_file.as_deref())?,
        };
        if let Some(roots) = self.fs_roots {
            loaded_config.config.sandbox.fs_roots = Some(roots);
        }
        let natives = self
            .natives
            .into_iter()
            .map(|native| native.into_entry().map_err(Error::from))
            .collect::<Result<Vec<_>>>()?;
        let native_content = super::NativeContent {
            resources: self
                .native_resources
                .into_iter()
                .map(|r| r.into_entry().map_err(Error::from))
                .collect::<Result<_>>()?,
            prompts: self
                .native_prompts
                .into_iter()
                .map(|p| p.into_entry().map_err(Error::from))
                .collect::<Result<_>>()?,
        };
        let store = Arc::new(make_store(
            self.store,
            &loaded_config,
            &self.tools_dirs,
            &self.env,
        )?);
        let inputs = BuildInputs {
            tools_dir_flags: self.tools_dirs,
            config_path: loaded_config.path.clone(),
            cache_dir_flag: self.cache_dir,
            natives,
            native_content,
            vms: self.vms,
            only_files: self.only_files,
            run_every_file: self.run_every_file,
            judge_first: self.judge_first,
            store,
            env: self.env,
            proc_script: self.proc_script,
            library: self.library,
            library_by_default: self.library_by_default,
        };
        let config = &loaded_config.config;
        let default = config.approval.default.unwrap_or_default();
        let approver = match (self.approver, self.approver_factory) {
            (Some(approver), _) => approver,
            (None, Some(make)) => make(default),
            (None, None) => Arc::new(PolicyApprover(default)),
        };
        let ttl = config
            .check_ttl_secs
            .map(std::time::Duration::from_secs)
            .unwrap_or(DEFAULT_CHECK_TTL);
        #[cfg(feature = "mcp-client")]
        let mcp = crate::mcp_client::McpClients::start(
            &config.mcp_servers,
            cache_dir_of(&inputs, config),
            default_timeout_ms(config),
        );
        #[cfg(feature = "mcp-client")]
        let externals = mcp.entries();
        #[cfg(not(feature = "mcp-client"))]
        let externals = Vec::new();
        let (world, state, sources) = build_world(
            &inputs,
            Arc::new(loaded_config),
            &Sources::default(),
            externals,
        )?;
        let availability = AvailabilityCache::new(ttl).with_env(inputs.env.clone());
        let limiters = crate::dispatch::Limiters::new(inputs.store.clone());
        let host = Host::from_parts(HostInner {
            inputs,
            world: RwLock::new(Arc::new(world)),
            registry: Registry::new(state),
            last_good: Mutex::new(sources),
            reloading: Mutex::new(()),
            pipeline: Pipeline::new(self.hooks, self.middleware, approver),
            availability,
            memo: DefinitionsMemo::default(),
            rendered: RenderCache::default(),
            search: SearchPlans::default(),
            limiters,
            reloads: tokio::sync::broadcast::channel(RELOAD_EVENTS_KEPT).0,
            caller: std::sync::OnceLock::new(),
            #[cfg(feature = "mcp-client")]
            mcp,
        });
        host.set_caller();
        #[cfg(feature = "mcp-client")]
        host.listen_to_mcp_servers();
        Ok(host)
    }
}

/// The cache directory: the builder's (or `--cache-dir`), else the config's, else the
/// default.
pub(super) fn cache_dir_of(inputs: &BuildInputs, config: &Config) -> PathBuf {
    inputs
        .cache_dir_flag
        .clone()
        .or_else(|| config.cache_dir.clone())
        .unwrap_or_else(default_cache_dir)
}

/// `[runtime] timeout_ms`, else the default deadline.
#[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
pub(super) fn default_timeout_ms(config: &Config) -> u64 {
    config
        .runtime
        .timeout_ms
        .unwrap_or(crate::dispatch::DEFAULT_TIMEOUT_MS)
}

/// A freshly loaded world, the registry contents that go with it, and the sources its
/// files loaded from.
pub(super) type Built = (World, RegistryState, Sources);

/// Loads a world from `config`: tool directories, VMs, verdicts, registry contents, and
/// the sources that loaded. `last_good` stands in for files that now fail. `externals`
/// (MCP servers' tools) register with the native tools, before any Lua file.
pub(super) fn build_world(
    inputs: &BuildInputs,
    config: Arc<LoadedConfig>,
    last_good: &Sources,
    externals: Vec<crate::registry::ToolEntry>,
) -> Result<Built> {
    let settings_config = &config.config;
    let cache_dir = cache_dir_of(inputs, settings_config);
    let library = inputs
        .library
        .or(settings_config.library.enabled)
        .unwrap_or(inputs.library_by_default)
        .then(|| library_dir(&cache_dir))
        .flatten();
    let dirs = tool_dirs(&inputs.tools_dir_flags, &config, library)?;
    let natives: Vec<crate::registry::ToolEntry> =
        inputs.natives.iter().cloned().chain(externals).collect();
    let settings = vm_settings(settings_config, inputs);
    let vms = inputs
        .vms
        .or(settings_config.runtime.vms)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .clamp(1, MAX_VMS);
    let recipe = Recipe {
        dirs: &dirs,
        only_files: inputs.only_files.as_deref(),
        run_every_file: inputs.run_every_file,
        cache_dir: &cache_dir,
        settings: &settings,
        natives: &natives,
        native_content: &inputs.native_content,
        plugins_allowing_override: settings_config
            .plugins
            .iter()
            .filter(|(_, plugin)| plugin.allow_tool_override)
            .map(|(id, _)| id.clone())
            .collect(),
        vms,
        last_good,
        annotation_check: settings_config.sandbox.annotation_check,
        stream_cold: !inputs.judge_first,
    };
    let generation = generation::build(&recipe)?;
    let world = World {
        config,
        dirs,
        spill_dir: cache_dir.join("spill"),
        cache_dir,
        pool: generation.pool,
        verdicts: generation.verdicts,
    };
    Ok((world, generation.state, generation.sources))
}

/// VM settings from `[sandbox]` and `[runtime]`.
pub(super) fn vm_settings(config: &Config, inputs: &BuildInputs) -> VmSettings {
    let store: Arc<StoreInner> = inputs.store.clone();
    VmSettings {
        api: ApiContext {
            env: inputs.env.clone(),
            proc_script: inputs.proc_script.clone(),
            fs_roots: Arc::new(FsRoots::new(config.sandbox.fs_roots.as_deref())),
            commands: config.sandbox.commands.clone().into(),
            proc_env: config.sandbox.proc_env.clone().into(),
            store,
        },
        sandbox_env: config.sandbox.env.clone(),
        memory_limit_bytes: Some(
            (config.runtime.memory_mb.unwrap_or(DEFAULT_MEMORY_MB) as usize)
                .saturating_mul(1024 * 1024),
        ),
        probe_timeout: std::time::Duration::from_millis(
            config
                .runtime
                .probe_timeout_ms
                .unwrap_or(DEFAULT_PROBE_TIMEOUT_MS),
        ),
    }
}

/// The built-in tool directory when neither the flags nor the config name one.
const DEFAULT_TOOLS_DIR: &str = "tools-lua";

/// The built-in tool directories: the flags, else the config's, else `./tools-lua`.
fn tool_dir_paths(flags: &[PathBuf], loaded: &LoadedConfig) -> Vec<PathBuf> {
    if !flags.is_empty() {
        flags.to_vec()
    } else if let Some(dirs) = &loaded.config.tools_dirs {
        dirs.clone()
    } else {
        vec![PathBuf::from(DEFAULT_TOOLS_DIR)]
    }
}

/// The library's folder under `cache_dir`, written out or checked; `None` (with a warning)
/// when it cannot be written: the other tools still load.
fn library_dir(cache_dir: &std::path::Path) -> Option<PathBuf> {
    crate::library::materialize(cache_dir)
        .inspect_err(|e| {
            tracing::warn!(
                "cannot write the tool library under {}: {e}; its tools are not loaded",
                cache_dir.display()
            )
        })
        .ok()
}

/// The built-in directories (flags, else config, else `./tools-lua`), the library's folder
/// when it loads, then plugins by id.
fn tool_dirs(
    flags: &[PathBuf],
    loaded: &LoadedConfig,
    library: Option<PathBuf>,
) -> Result<Vec<ToolDir>> {
    let implicit = flags.is_empty() && loaded.config.tools_dirs.is_none();
    let lock = super::packs::read_lock(loaded)?;
    let packs = super::packs::LockedPacks::new(&lock, loaded.path.as_deref());
    let mut dirs: Vec<ToolDir> = tool_dir_paths(flags, loaded)
        .into_iter()
        // With the library loaded, a missing `./tools-lua` nobody asked for is normal (an
        // installed binary run anywhere), not worth a warning on every command.
        .filter(|path| !(implicit && library.is_some() && !path.exists()))
        .map(|path| {
            let pack = super::packs::check_builtin(&path, &packs);
            ToolDir {
                refused: pack.refused,
                requires_env: pack.requires_env,
                ..ToolDir::plain(path, Source::Builtin, None)
            }
        })
        .collect();
    dirs.extend(library.map(|path| ToolDir::plain(path, Source::Library, None)));
    for (id, plugin) in &loaded.config.plugins {
        let invalid = |message: String| Error::ConfigInvalid {
            path: loaded.path.clone().unwrap_or_default(),
            message,
        };
        crate::registry::ToolName::new(id)
            .map_err(|e| invalid(format!("[plugins.{id}]: the plugin id {e}")))?;
        let capabilities = match &plugin.capabilities {
            Some(granted) => {
                if let Some(bad) = granted.iter().find(|c| !CAPABILITIES.contains(&c.as_str())) {
                    return Err(invalid(format!(
                        "plugins.{id}.capabilities: unknown capability '{bad}' (known: {})",
                        CAPABILITIES.join(", ")
                    )));
                }
                granted.clone()
            }
            None => DEFAULT_PLUGIN_CAPABILITIES
                .iter()
                .map(|c| c.to_string())
                .collect(),
        };
        let pack = super::packs::check(id, &plugin.dir, &packs);
        dirs.push(ToolDir {
            path: plugin.dir.clone(),
            source: Source::Plugin(id.clone()),
            scope: plugin.scope.clone(),
            capabilities: Some(capabilities),
            capability_hint: Some(format!(
                " to plugin '{id}'; add it to [plugins.{id}] capabilities"
            )),
            refused: pack.refused,
            requires_env: pack.requires_env,
        });
    }
    Ok(dirs)
}

/// The store the builder or `[store]` asks for (opened on first use, so a host whose tools
/// never use it creates no file and makes no connection). The default file is the
/// project's own (see [`crate::config::default_store_path`]): beside the config file, else
/// beside the first tool directory.
pub(super) fn make_store(
    choice: Option<StoreChoice>,
    loaded: &LoadedConfig,
    tools_dir_flags: &[PathBuf],
    env: &crate::env_vars::EnvVars,
) -> Result<StoreInner> {
    let config = &loaded.config;
    let limit = config
        .store
        .max_value_bytes
        .unwrap_or(crate::store::DEFAULT_MAX_VALUE_BYTES);
    let store = match choice {
        Some(StoreChoice::Memory) => StoreInner::memory(limit),
        Some(StoreChoice::File(path)) => StoreInner::sqlite(path, limit),
        Some(StoreChoice::Postgres(url)) => postgres_store(url, loaded, limit)?,
        None => match config.store.backend {
            Some(crate::config::StoreBackend::Memory) => StoreInner::memory(limit),
            Some(crate::config::StoreBackend::Postgres) => {
                let var = config
                    .store
                    .url_env
                    .as_deref()
                    .unwrap_or(crate::config::DEFAULT_URL_ENV);
                let url = env.var(var).filter(|url| !url.is_empty()).ok_or_else(|| {
                    Error::Store(format!(
                        "[store] backend = \"postgres\" reads the database URL from the \
                         environment variable {var} (store.url_env), which is not set"
                    ))
                })?;
                postgres_store(url, loaded, limit)?
            }
            Some(crate::config::StoreBackend::Sqlite) | None => StoreInner::sqlite(
                config.store.path.clone().unwrap_or_else(|| {
                    let first_tool_dir = tool_dir_paths(tools_dir_flags, loaded)
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| PathBuf::from(DEFAULT_TOOLS_DIR));
                    crate::config::default_store_path(loaded.path.as_deref(), &first_tool_dir)
                }),
                limit,
            ),
        },
    };
    Ok(store)
}

/// The PostgreSQL store for `url`, with `[store]`'s other settings.
#[cfg(feature = "postgres")]
fn postgres_store(url: String, loaded: &LoadedConfig, limit: usize) -> Result<StoreInner> {
    let store = &loaded.config.store;
    let settings = crate::store::PostgresSettings {
        url,
        schema: store
            .pg_schema
            .clone()
            .unwrap_or_else(|| crate::store::DEFAULT_SCHEMA.to_string()),
        pool_size: store.pool_size.unwrap_or(crate::store::DEFAULT_POOL_SIZE),
        connect_timeout: store
            .connect_timeout_ms
            .map(std::time::Duration::from_millis)
            .unwrap_or(crate::store::DEFAULT_CONNECT_TIMEOUT),
    };
    StoreInner::postgres(&settings, limit).map_err(Error::Store)
}

/// Without the `postgres` feature, asking for it is a setup error.
#[cfg(not(feature = "postgres"))]
fn postgres_store(_url: String, _loaded: &LoadedConfig, _limit: usize) -> Result<StoreInner> {
    Err(Error::Store(
        "[store] backend = \"postgres\": this toolhost was built without the postgres \
         feature"
            .to_string(),
    ))
}
