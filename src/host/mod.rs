//! `Host`: the facade the CLI, the MCP server and embedders use. The only module that
//! knows every layer. A `Host` is a cheap handle (`Clone` shares it), so calls can run on
//! several tasks at once.

mod batch;
mod builder;
mod generation;

pub use batch::FunctionCall;
pub use builder::{
    CAPABILITIES, DEFAULT_MEMORY_MB, DEFAULT_PLUGIN_CAPABILITIES, DEFAULT_PROBE_TIMEOUT_MS,
    HostBuilder, MAX_VMS,
};

use crate::config::LoadedConfig;
use crate::definitions::{self, Definitions, DefinitionsMemo, Inputs, RenderCache, Selection};
use crate::discovery::{ToolDir, Verdict};
use crate::dispatch::{self, CallEnv, Pipeline, ToolResult};
use crate::lua::VmPool;
use crate::registry::{
    Availability, AvailabilityCache, CallContext, Registry, RegistryState, ToolEntry,
};
use parking_lot::RwLock;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The VMs of the current generation and the discovery report that produced it.
struct Loaded {
    pool: VmPool,
    verdicts: Vec<Verdict>,
}

struct HostInner {
    config: LoadedConfig,
    dirs: Vec<ToolDir>,
    cache_dir: PathBuf,
    spill_dir: PathBuf,
    registry: Registry,
    loaded: RwLock<Arc<Loaded>>,
    availability: AvailabilityCache,
    memo: DefinitionsMemo,
    rendered: RenderCache,
    pipeline: Pipeline,
}

/// A running tool host.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

impl Host {
    /// Starts building a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    fn from_parts(inner: HostInner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The configuration in use.
    pub fn config(&self) -> &LoadedConfig {
        &self.inner.config
    }

    /// The tool directories, in load order.
    pub fn tool_dirs(&self) -> &[ToolDir] {
        &self.inner.dirs
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> &Path {
        &self.inner.cache_dir
    }

    /// Number of Lua VMs serving calls.
    pub fn vm_count(&self) -> usize {
        self.inner.loaded.read().pool.len()
    }

    /// Per-file verdicts of the last discovery, sorted by path, with load errors and the
    /// tools each file registered.
    pub fn discovery(&self) -> Vec<Verdict> {
        self.inner.loaded.read().verdicts.clone()
    }

    /// Every tool visible to `scope`, sorted by name.
    pub fn tools(&self, scope: Option<&str>) -> Vec<Arc<ToolEntry>> {
        self.inner.registry.snapshot().visible(scope)
    }

    /// The model-facing definitions for `selection` (SPEC §5): selected, available tools,
    /// sorted by name. Memoised: an unchanged selection returns the same shared list.
    pub fn tool_definitions(&self, selection: &Selection) -> Definitions {
        let state = self.inner.registry.snapshot();
        let loaded = self.inner.loaded.read().clone();
        self.inner
            .memo
            .get_or_compute(&self.inputs(&state, &loaded.pool), selection)
    }

    /// Computes the definitions without the memo (for benchmarks and diagnostics).
    pub fn tool_definitions_uncached(&self, selection: &Selection) -> Definitions {
        let state = self.inner.registry.snapshot();
        let loaded = self.inner.loaded.read().clone();
        definitions::compute(&self.inputs(&state, &loaded.pool), selection).0
    }

    /// Whether `tool` is available to callers in `scope`, and why not (SPEC §3).
    pub fn availability(&self, tool: &ToolEntry, scope: Option<&str>) -> Availability {
        let state = self.inner.registry.snapshot();
        let loaded = self.inner.loaded.read().clone();
        let vm = loaded.pool.lease(&[]);
        dispatch::availability_of(&self.inner.availability, &vm, &state, tool, scope)
    }

    /// Forgets every cached `check_fn` answer; the next definitions or call probes again.
    pub fn invalidate_availability(&self) {
        self.inner.availability.invalidate();
    }

    fn inputs<'a>(&'a self, state: &'a RegistryState, pool: &'a VmPool) -> Inputs<'a> {
        Inputs {
            state,
            config: &self.inner.config.config,
            config_fingerprint: self.inner.config.fingerprint,
            availability: &self.inner.availability,
            probes: pool,
            rendered: &self.inner.rendered,
        }
    }

    /// Runs one call through the dispatch pipeline (SPEC §7). Never panics: every failure
    /// is an error object (SPEC §7.1). The call runs on the least busy VM; it finishes on
    /// the generation of tools it started on.
    pub async fn handle_function_call(
        &self,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> ToolResult {
        let state = self.inner.registry.snapshot();
        let loaded = self.inner.loaded.read().clone();
        let env = CallEnv {
            state: &state,
            pool: &loaded.pool,
            availability: &self.inner.availability,
            config: &self.inner.config.config,
            spill_dir: &self.inner.spill_dir,
        };
        self.inner.pipeline.run(&env, name, args, ctx).await
    }
}
