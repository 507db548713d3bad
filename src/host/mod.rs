//! `Host`: the facade the CLI, the MCP server and embedders use. The only module that
//! knows every layer. A `Host` is a cheap handle (`Clone` shares it), so calls can run on
//! several tasks at once.
//!
//! Everything a reload replaces (configuration, tool directories, the VM pool, discovery
//! verdicts) lives in one [`World`] behind one lock, swapped together with the registry
//! contents: a call takes both at its start and finishes on them, whatever happens after.

mod batch;
mod builder;
#[cfg(test)]
mod call_tests;
mod content;
#[cfg(feature = "cli")]
mod front_end;
mod generation;
mod info;
#[cfg(feature = "mcp-client")]
mod mcp_servers;
mod nested;
mod packs;
mod reload;
mod scopes;
#[cfg(feature = "cli")]
mod store_admin;
#[cfg(test)]
mod stream_tests;
#[cfg(feature = "mcp")]
mod tasks;
#[cfg(feature = "cli")]
mod test_run;
#[cfg(feature = "cli")]
mod test_sandbox;
#[cfg(feature = "watch")]
mod watch;

pub use batch::FunctionCall;
pub use builder::HostBuilder;
pub use content::{
    CompletionTarget, ContentError, PromptInfo, PromptMessage, RenderedPrompt, ResourceContents,
    ResourceInfo,
};
pub use info::ToolInfo;
pub use reload::ReloadEvent;
#[cfg(feature = "watch")]
pub use watch::Watch;

use crate::config::LoadedConfig;
use crate::definitions::{self, Definitions, DefinitionsMemo, Inputs, RenderCache, Selection};
use crate::discovery::{ToolDir, Verdict};
use crate::dispatch::{CallEnv, CallOutcome, ErrorType, Pipeline, ToolError, ToolResult};
use crate::lua::VmPool;
use crate::registry::{AvailabilityCache, CallContext, Registry, RegistryState, ToolEntry};
use crate::search::SearchPlans;
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// The state a reload replaces as a whole.
struct World {
    config: Arc<LoadedConfig>,
    #[cfg_attr(not(any(feature = "watch", feature = "cli")), allow(dead_code))]
    dirs: Vec<ToolDir>,
    cache_dir: PathBuf,
    spill_dir: PathBuf,
    pool: VmPool,
    verdicts: Vec<Verdict>,
}

/// What the host was built from that reloads need again.
struct BuildInputs {
    tools_dir_flags: Vec<PathBuf>,
    config_path: Option<PathBuf>,
    cache_dir_flag: Option<PathBuf>,
    natives: Vec<ToolEntry>,
    /// Native resources and prompts, registered before any Lua file.
    native_content: NativeContent,
    vms: Option<usize>,
    only_files: Option<Vec<PathBuf>>,
    /// No registration cache: every registering file runs at load.
    run_every_file: bool,
    /// Judge every file before loading any, even on a cold start (tests compare both).
    judge_first: bool,
    store: Arc<crate::store::StoreInner>,
    /// The environment tools see.
    env: crate::env_vars::EnvVars,
    /// Scripted `proc.run` answers, if any.
    proc_script: Option<Arc<crate::lua::api::proc_script::ProcScript>>,
    /// The builder's word on the shipped library (over `[library] enabled`).
    library: Option<bool>,
    /// Whether the library loads when neither the builder nor the config says.
    library_by_default: bool,
}

/// Native resources and prompts (`HostBuilder::native_resource`, `native_prompt`).
#[derive(Clone, Default)]
pub(super) struct NativeContent {
    resources: Vec<crate::registry::ResourceEntry>,
    prompts: Vec<crate::registry::PromptEntry>,
}

struct HostInner {
    inputs: BuildInputs,
    world: RwLock<Arc<World>>,
    registry: Registry,
    /// The source each file last loaded from successfully: a file that breaks keeps
    /// serving this version.
    last_good: Mutex<crate::discovery::Sources>,
    /// One reload at a time.
    reloading: Mutex<()>,
    availability: AvailabilityCache,
    memo: DefinitionsMemo,
    rendered: RenderCache,
    search: SearchPlans,
    /// The `[limits]` rate limiters (kept across reloads that keep the limits).
    limiters: crate::dispatch::Limiters,
    pipeline: Pipeline,
    /// Every reload's event, for MCP sessions (`tools/list_changed`) and other listeners.
    reloads: tokio::sync::broadcast::Sender<ReloadEvent>,
    /// What runs `ctx.call` for calls on this host (one per host, set once it is built).
    caller: std::sync::OnceLock<Arc<dyn crate::registry::ToolCaller>>,
    /// The links to `[mcp_servers.*]`.
    #[cfg(feature = "mcp-client")]
    mcp: crate::mcp_client::McpClients,
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

    /// The `store` the built-in Lua tools use (namespace `builtin`), for Rust code that
    /// shares state with them. Its operations block briefly (SQLite).
    ///
    /// ```no_run
    /// # fn demo(host: toolhost::Host) -> Result<(), toolhost::StoreError> {
    /// host.store().set("greeting", &serde_json::json!("hello"))?;
    /// assert_eq!(host.store().incr("visits", 1)?, serde_json::json!(1));
    /// # Ok(()) }
    /// ```
    pub fn store(&self) -> crate::store::Store {
        crate::store::Store::new(self.inner.inputs.store.clone(), crate::store::BUILTIN)
    }

    /// Reload events from now on (whoever triggers the reload: a [`Watch`], `reload`).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn reload_events(&self) -> tokio::sync::broadcast::Receiver<ReloadEvent> {
        self.inner.reloads.subscribe()
    }

    fn from_parts(inner: HostInner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The world and the registry contents that go with it, taken together.
    fn current(&self) -> (Arc<World>, Arc<RegistryState>) {
        let world = self.inner.world.read();
        (world.clone(), self.inner.registry.snapshot())
    }

    /// The configuration in use.
    #[cfg_attr(not(any(feature = "cli", feature = "mcp")), allow(dead_code))]
    pub(crate) fn config(&self) -> Arc<LoadedConfig> {
        self.inner.world.read().config.clone()
    }

    /// The tool directories, in load order.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn tool_dirs(&self) -> Vec<ToolDir> {
        self.inner.world.read().dirs.clone()
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> PathBuf {
        self.inner.world.read().cache_dir.clone()
    }

    /// Number of Lua VMs serving calls.
    pub fn vm_count(&self) -> usize {
        self.inner.world.read().pool.len()
    }

    /// Per-file verdicts of the last discovery, sorted by path, with load errors and the
    /// tools each file registered.
    pub fn discovery(&self) -> Vec<Verdict> {
        self.inner.world.read().verdicts.clone()
    }

    /// Every tool visible to `scope`, sorted by name (available or not: see
    /// [`unavailable_reason`](Self::unavailable_reason)).
    pub fn tools(&self, scope: Option<&str>) -> Vec<ToolInfo> {
        self.entries(scope)
            .iter()
            .map(|tool| ToolInfo::from(&**tool))
            .collect()
    }

    /// The registry entries [`tools`](Self::tools) reports, shared rather than copied: for
    /// the CLI's tables and the health check, which need no schema (copying every schema,
    /// and parsing the cached ones to copy them, was half of a 1,000-tool `toolhost list`).
    pub(crate) fn entries(&self, scope: Option<&str>) -> Vec<Arc<ToolEntry>> {
        self.inner.registry.snapshot().visible(scope)
    }

    /// Why the tool `name` is unavailable to callers in `scope` (docs/calls.md), or `None` when
    /// it is available. An unknown name is unavailable too. May run the tool's `check_fn`
    /// (answers are cached for `check_ttl_secs`); on a multi-threaded tokio runtime the probe
    /// runs under `block_in_place`, so other tasks are not held up.
    pub fn unavailable_reason(&self, name: &str, scope: Option<&str>) -> Option<String> {
        let (world, state) = self.current();
        let Some(tool) = state.lookup(name, scope) else {
            return Some(format!("no tool named {name} in this scope"));
        };
        let answer = crate::blocking::off_async_worker(|| {
            self.inner.availability.availability(
                tool,
                scope,
                state.generation(),
                Instant::now(),
                &world.pool,
            )
        });
        match answer.available {
            true => None,
            false => Some(answer.reason.unwrap_or_default()),
        }
    }

    /// Whether a tool `name` is registered for `scope` (available or not).
    #[cfg_attr(not(feature = "rig"), allow(dead_code))]
    pub(crate) fn is_registered(&self, name: &str, scope: Option<&str>) -> bool {
        self.inner.registry.snapshot().lookup(name, scope).is_some()
    }

    /// The registry's generation: it grows by one with every change of the registered
    /// tools (a reload, a native tool), so a cached view can tell it is stale.
    pub fn generation(&self) -> u64 {
        self.inner.registry.generation()
    }

    /// The model-facing definitions for `selection` (docs/calls.md): selected, available tools,
    /// sorted by name. Memoised: an unchanged selection returns the same shared list. A
    /// computation may run `check_fn` probes; on a multi-threaded tokio runtime it runs under
    /// `block_in_place`, so a slow probe does not hold up the caller's other tasks.
    pub fn tool_definitions(&self, selection: &Selection) -> Definitions {
        let (world, state) = self.current();
        self.inner
            .memo
            .get_or_compute(&self.inputs(&world, &state), selection)
    }

    /// The selection's tools as registered (no availability probe, no dynamic override):
    /// what decides whether a reload is news to an MCP session, without waiting for a
    /// probe.
    #[cfg(feature = "mcp")]
    pub(crate) fn static_definitions(&self, selection: &Selection) -> Vec<serde_json::Value> {
        let (world, state) = self.current();
        definitions::selected_static(&self.inputs(&world, &state), selection)
    }

    /// Computes the definitions without the memo (for benchmarks and diagnostics).
    #[doc(hidden)] // for the benchmarks: the cost of a definitions computation
    pub fn tool_definitions_uncached(&self, selection: &Selection) -> Definitions {
        let (world, state) = self.current();
        definitions::compute(&self.inputs(&world, &state), selection).0
    }

    /// Forgets every cached `check_fn` answer; the next definitions or call probes again.
    pub fn invalidate_availability(&self) {
        self.inner.availability.invalidate();
    }

    fn inputs<'a>(&'a self, world: &'a World, state: &'a RegistryState) -> Inputs<'a> {
        Inputs {
            state,
            config: &world.config.config,
            config_fingerprint: world.config.fingerprint,
            availability: &self.inner.availability,
            probes: &world.pool,
            rendered: &self.inner.rendered,
            search: &self.inner.search,
        }
    }

    /// What one call runs against: `state` and the parts of `world` that go with it.
    fn env<'a>(&'a self, world: &'a World, state: &'a RegistryState) -> CallEnv<'a> {
        CallEnv {
            state,
            availability: &self.inner.availability,
            config: &world.config.config,
            spill_dir: &world.spill_dir,
            config_fingerprint: world.config.fingerprint,
            search: &self.inner.search,
            limits: &self.inner.limiters,
        }
    }

    /// Runs one call through the dispatch pipeline (docs/calls.md). Never panics: every failure
    /// is an error object (docs/calls.md). The call runs on the least busy VM; it finishes on
    /// the generation of tools it started on, even if a reload happens meanwhile.
    ///
    /// The whole pipeline of the call runs on the chosen VM's own thread; this future only
    /// awaits the answer (dropping it cancels the call).
    pub async fn handle_function_call(
        &self,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> ToolResult {
        self.handle_call(name, args, ctx).await.result
    }

    /// [`handle_function_call`](Self::handle_function_call), also telling whether the
    /// result is structured content (the tool declares an `output_schema`), for MCP.
    pub(crate) async fn handle_call(
        &self,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> CallOutcome {
        let cancel = ctx.cancel.clone();
        if cancel.is_cancelled() {
            return cancelled(name).into();
        }
        let (world, state) = self.current();
        let ctx = self.with_caller(ctx);
        // Stage 1 and the bridge's routing need no VM: done here, they tell which tool the
        // call reaches, and so the one VM to run it on.
        let request = self
            .inner
            .pipeline
            .prepare(&self.env(&world, &state), name, args, &ctx);
        let needs = request.needs();
        let host = self.clone();
        let on_vm = world.clone();
        // The call's span goes with the work to the VM's thread: the MCP request's own when
        // the call is one (it is the tool's execution span), else a span of its own under
        // the caller's (a `ctx.call`'s under the calling handler's).
        let request_span = crate::telemetry::in_tool_request();
        let span = match request_span {
            true => tracing::Span::current(),
            false => call_span(name),
        };
        let on_vm_span = span.clone();
        let run = world.pool.run(&needs, move |vm| {
            async move {
                let world = on_vm;
                let env = host.env(&world, &state);
                let token = ctx.cancel.clone();
                let pipeline = host.inner.pipeline.run(&env, &vm, request, &ctx);
                vm.cancellable(token, pipeline).await
            }
            .instrument(on_vm_span)
        });
        // Cancelling answers at once; dropping `run` drops the call on its VM (a Lua handler
        // stops at once, a `proc.run` child is killed), and the token stops any probe or
        // hook that is running there.
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => cancelled(name).into(),
            answer = run => answer.unwrap_or_else(|gone| {
                ToolResult::from(ToolError::execution_failed(ErrorType::HandlerError, gone.0))
                    .into()
            }),
        };
        // A cancel can reach the VM's code (a hook or handler stopped by the token, failing
        // with its own error) before this task sees the token: the caller cancelled, so the
        // answer says so whichever came first.
        let answer = if answer.result.is_error() && cancel.is_cancelled() {
            cancelled(name).into()
        } else {
            answer
        };
        // The request's own span gets its error from the MCP layer (an attribute recorded
        // twice is exported twice).
        let own_span = (!request_span).then_some(&span);
        called(own_span, name, &answer.result);
        answer
    }
}

/// The span of one call through the pipeline (`execute_tool {name}`, OpenTelemetry's
/// GenAI name); disabled (free) unless traces are exported.
fn call_span(name: &str) -> tracing::Span {
    let name = crate::telemetry::span_name(name);
    tracing::info_span!(
        target: crate::telemetry::SPAN_TARGET,
        "execute_tool",
        otel.name = %format_args!("{} {name}", crate::telemetry::EXECUTE_TOOL),
        gen_ai.operation.name = crate::telemetry::EXECUTE_TOOL,
        gen_ai.tool.name = name,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// Records how a call of `name` ended: its own span's error (when it has a span of its
/// own), the tool-call counter.
fn called(span: Option<&tracing::Span>, name: &str, result: &ToolResult) {
    let error_type = result.error_type().map(ErrorType::as_str);
    if let (Some(kind), Some(span)) = (error_type, span) {
        span.record("error.type", kind);
        span.record("otel.status_code", "error");
    }
    crate::telemetry::metric::tool_call(name, error_type);
}

/// The result of a call its caller cancelled.
fn cancelled(name: &str) -> ToolResult {
    ToolError::execution_failed(
        ErrorType::Cancelled,
        format_args!("{name} was cancelled by the caller"),
    )
    .into()
}
