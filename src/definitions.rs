//! Tool definitions (docs/calls.md): the model-facing list for a selection, in three formats,
//! memoised.
//!
//! Only selected and available tools appear, sorted by name. `dynamic_schema_overrides()`
//! is shallow-merged over the schema on every computation (a raise keeps the static schema
//! and logs a warning). A memo hit returns the same `Arc` list; the memo keeps at most 8
//! keys and never outlives the availability answers a list was built from.

mod strict;

use crate::config::Config;
use crate::lua::{LuaVm, VmPool};
use crate::mru::Mru;
use crate::registry::{
    AvailabilityCache, CheckRunner, Freshness, LuaFnId, Probe, ProbeFailed, ProbeOutcome,
    RegistryState, ToolEntry, ToolsetSelection,
};
use crate::search::{SearchPlan, SearchPlans};
use crate::toolsets::{Toolsets, effective};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

/// A definitions list: shared, immutable definitions (one `Arc` per tool, so that a list
/// built from already rendered tools copies no schema).
pub type Definitions = Arc<[Arc<Value>]>;

/// Most memoised lists.
pub(crate) const MEMO_CAPACITY: usize = 8;

/// The shape of each definition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// `{"type":"function","function":{...schema,"name":NAME}}` (Chat Completions).
    #[default]
    OpenAi,
    /// `{"type":"function","name":NAME,"description","parameters","strict"}` (the OpenAI
    /// Responses API's function tools).
    OpenAiResponses,
    /// `{name, description, input_schema}`.
    Anthropic,
    /// `{name, title?, description, inputSchema, outputSchema?, annotations?}`.
    Mcp,
}

impl FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(text: &str) -> Result<Self, UnknownFormat> {
        match text {
            "openai" => Ok(Self::OpenAi),
            "responses" => Ok(Self::OpenAiResponses),
            "anthropic" => Ok(Self::Anthropic),
            "mcp" => Ok(Self::Mcp),
            other => Err(UnknownFormat(other.to_string())),
        }
    }
}

/// A [`Format`] name that is not one (`openai`, `responses`, `anthropic`, `mcp`); it holds
/// the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl std::fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown format '{}' (openai, responses, anthropic, mcp)",
            self.0
        )
    }
}

impl std::error::Error for UnknownFormat {}

/// Which tools a caller wants offered, and how.
///
/// ```
/// use toolhost::{Format, Selection};
/// let selection = Selection::default().with_toolsets(["file", "web"]).with_format(Format::Anthropic);
/// assert_eq!(selection.format, Format::Anthropic);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection {
    /// The toolsets selected: enabled ones (`None` uses the config's `enabled_toolsets`,
    /// else all) minus disabled ones (added to the config's `disabled_toolsets`).
    pub toolsets: ToolsetSelection,
    /// The caller's scope overlay.
    pub scope: Option<String>,
    /// Output format.
    pub format: Format,
    /// OpenAI strict mode: every property required (the optional ones nullable),
    /// `additionalProperties: false` everywhere, unsupported keywords left out (and logged
    /// as warnings); `strict: true` in the `openai` and `responses` formats.
    pub strict: bool,
}

impl Selection {
    /// Enables only these toolsets.
    pub fn with_toolsets<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.toolsets = self.toolsets.with_enabled(toolsets);
        self
    }

    /// Subtracts these toolsets.
    pub fn with_disabled<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.toolsets = self.toolsets.with_disabled(toolsets);
        self
    }

    /// The caller's scope overlay.
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The output format.
    pub fn with_format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// OpenAI strict mode (see [`Selection::strict`]).
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// How each definition is rendered.
    fn shape(&self) -> Shape {
        Shape {
            format: self.format,
            strict: self.strict,
        }
    }
}

/// Runs schema overrides, wherever their functions live; as a [`CheckRunner`] it runs
/// `check_fn`s for [`AvailabilityCache::availability`].
pub(crate) trait ProbeRunner: CheckRunner {
    /// Runs a `dynamic_schema_overrides` function.
    fn overrides(
        &self,
        probe: &Probe<Option<Map<String, Value>>>,
    ) -> Result<Option<Map<String, Value>>, ProbeFailed>;
}

/// The pool runs a probe on the least busy VM holding its function.
impl CheckRunner for VmPool {
    fn run_check(&self, probe: &Probe<bool>) -> ProbeOutcome {
        self.lease(&lua_function(probe)).run_check(probe)
    }
}

impl ProbeRunner for VmPool {
    fn overrides(
        &self,
        probe: &Probe<Option<Map<String, Value>>>,
    ) -> Result<Option<Map<String, Value>>, ProbeFailed> {
        self.lease(&lua_function(probe)).overrides(probe)
    }
}

/// The VM function a probe needs, if it is a Lua one.
fn lua_function<T>(probe: &Probe<T>) -> Vec<LuaFnId> {
    match probe {
        Probe::Lua(id) => vec![*id],
        Probe::Native(_) => Vec::new(),
    }
}

/// A VM runs a probe itself (a call's probes run on the call's VM).
impl CheckRunner for LuaVm {
    fn run_check(&self, probe: &Probe<bool>) -> ProbeOutcome {
        match probe {
            Probe::Lua(id) => self.call_check(*id),
            Probe::Native(f) => Ok(f().into()),
        }
    }
}

impl ProbeRunner for LuaVm {
    fn overrides(
        &self,
        probe: &Probe<Option<Map<String, Value>>>,
    ) -> Result<Option<Map<String, Value>>, ProbeFailed> {
        match probe {
            Probe::Lua(id) => self
                .call_overrides(*id)
                .map_err(|failed| ProbeFailed(failed.to_string())),
            Probe::Native(f) => Ok(f()),
        }
    }
}

/// Everything a computation reads.
pub(crate) struct Inputs<'a> {
    /// The registry snapshot.
    pub state: &'a RegistryState,
    /// The configuration (composites, default enabled/disabled toolsets).
    pub config: &'a Config,
    /// `(mtime_ns, size)` of the config file.
    pub config_fingerprint: Option<(u128, u64)>,
    /// The availability cache.
    pub availability: &'a AvailabilityCache,
    /// Where probes run.
    pub probes: &'a dyn ProbeRunner,
    /// Already rendered static definitions.
    pub rendered: &'a RenderCache,
    /// Tool-search plans.
    pub search: &'a SearchPlans,
}

/// The tools a selection picks, available or not, sorted by name (no probe runs).
fn selected(inputs: &Inputs<'_>, selection: &Selection) -> Vec<Arc<ToolEntry>> {
    let scope = selection.scope.as_deref();
    let visible = inputs.state.visible(scope);
    let toolsets = Toolsets::new(&visible, &inputs.config.toolsets);
    let selected = toolsets.select(&effective(inputs.config, &selection.toolsets));
    visible
        .iter()
        .filter(|t| selected.contains(t.name.as_str()))
        .cloned()
        .collect()
}

/// The static definitions (registered schemas, no dynamic override) of the tools a
/// selection picks and that are not unavailable for a reason known without running code
/// (environment, a server down): what a reload or a server's coming and going changes,
/// computed without running any tool code, so that telling clients never waits for a
/// `check_fn`.
#[cfg(feature = "mcp")]
pub(crate) fn selected_static(inputs: &Inputs<'_>, selection: &Selection) -> Vec<Value> {
    selected(inputs, selection)
        .iter()
        .filter(|tool| {
            inputs
                .availability
                .unavailable_without_probe(tool)
                .is_none()
        })
        .map(|tool| render(tool, &tool.schema, selection.shape()))
        .collect()
}

/// The tools a selection picks that are available now, sorted by name, and how long that
/// answer stays fresh.
pub(crate) fn selected_available(
    inputs: &Inputs<'_>,
    selection: &Selection,
) -> (Vec<Arc<ToolEntry>>, Freshness) {
    let scope = selection.scope.as_deref();
    let selected = selected(inputs, selection);
    let generation = inputs.state.generation();
    let now = Instant::now();
    let mut freshness = Freshness::Always;
    let mut out = Vec::with_capacity(selected.len());
    for tool in &selected {
        let answer = inputs
            .availability
            .availability(tool, scope, generation, now, inputs.probes);
        freshness = freshness.min(answer.freshness);
        if answer.available {
            out.push(tool.clone());
        }
    }
    (out, freshness)
}

/// Rendered definitions of tools without dynamic overrides, per registry generation: a
/// tool's definition only changes when the registry does.
#[derive(Default)]
pub(crate) struct RenderCache {
    inner: Mutex<Rendered>,
}

/// Definitions rendered at one generation, by tool entry address and format.
#[derive(Default)]
struct Rendered {
    generation: u64,
    by_tool: HashMap<(usize, Shape), Arc<Value>>,
}

impl RenderCache {
    fn definition(
        &self,
        tool: &Arc<ToolEntry>,
        shape: Shape,
        generation: u64,
    ) -> Option<Arc<Value>> {
        let inner = self.inner.lock();
        if inner.generation != generation {
            return None;
        }
        inner
            .by_tool
            .get(&(Arc::as_ptr(tool) as usize, shape))
            .cloned()
    }

    fn store(&self, tool: &Arc<ToolEntry>, shape: Shape, generation: u64, rendered: Arc<Value>) {
        let mut inner = self.inner.lock();
        if inner.generation != generation {
            // Entry addresses of an old generation may be reused: start over.
            inner.by_tool.clear();
            inner.generation = generation;
        }
        inner
            .by_tool
            .insert((Arc::as_ptr(tool) as usize, shape), rendered);
    }
}

/// Computes the definition list (no memo; rendered static definitions are reused).
pub(crate) fn compute(inputs: &Inputs<'_>, selection: &Selection) -> (Definitions, Freshness) {
    let (mut tools, freshness) = selected_available(inputs, selection);
    let plan = search_plan(inputs, selection);
    let bridges = plan.active.then(|| plan.bridge_schemas(&tools));
    if plan.active {
        tools.retain(|tool| !plan.deferred.contains(tool.name.as_str()));
    }
    let generation = inputs.state.generation();
    let shape = selection.shape();
    let mut list: Vec<Arc<Value>> = tools
        .iter()
        .map(|tool| {
            if tool.dynamic_schema_overrides.is_some() {
                return Arc::new(render(tool, &effective_schema(tool, inputs.probes), shape));
            }
            if let Some(rendered) = inputs.rendered.definition(tool, shape, generation) {
                return rendered;
            }
            let rendered = Arc::new(render(tool, &tool.schema, shape));
            inputs
                .rendered
                .store(tool, shape, generation, rendered.clone());
            rendered
        })
        .collect();
    if let Some(bridges) = bridges {
        for (name, schema) in bridges {
            list.push(Arc::new(render_named(
                name,
                schema.as_object().cloned().unwrap_or_default(),
                shape,
            )));
        }
    }
    (list.into(), freshness)
}

/// The tool-search plan of a selection.
fn search_plan(inputs: &Inputs<'_>, selection: &Selection) -> Arc<SearchPlan> {
    inputs.search.plan(
        inputs.state,
        inputs.config,
        inputs.config_fingerprint,
        selection.scope.as_deref(),
        &selection.toolsets,
    )
}

/// The static schema with the tool's dynamic overrides shallow-merged over it.
fn effective_schema<'t>(
    tool: &'t ToolEntry,
    probes: &dyn ProbeRunner,
) -> std::borrow::Cow<'t, Map<String, Value>> {
    let Some(probe) = &tool.dynamic_schema_overrides else {
        return std::borrow::Cow::Borrowed(&tool.schema);
    };
    match probes.overrides(probe) {
        Ok(None) => std::borrow::Cow::Borrowed(&tool.schema),
        Ok(Some(overrides)) => {
            let mut merged = (*tool.schema).clone();
            merged.extend(overrides);
            std::borrow::Cow::Owned(merged)
        }
        Err(error) => {
            tracing::warn!(
                "dynamic_schema_overrides of '{}' failed, using the static schema: {error}",
                tool.name
            );
            std::borrow::Cow::Borrowed(&tool.schema)
        }
    }
}

/// One definition in `format`; the registered name wins over any `name` in the schema.
fn render(tool: &ToolEntry, schema: &Map<String, Value>, shape: Shape) -> Value {
    let mut rendered = render_named(tool.name.as_str(), schema.clone(), shape);
    if shape.format == Format::Mcp
        && let Value::Object(out) = &mut rendered
    {
        // What the tool declared for MCP clients: its output schema and annotations (the
        // annotations' title is the tool's title unless the schema has one).
        if let Some(output) = &tool.output_schema {
            out.insert(
                "outputSchema".into(),
                Value::Object((*output.schema).clone()),
            );
        }
        if !tool.annotations.is_empty() {
            out.insert("annotations".into(), tool.annotations.to_mcp());
            if let Some(title) = &tool.annotations.title
                && !out.contains_key("title")
            {
                out.insert("title".into(), json!(title));
            }
        }
        if let Some(task) = tool.task {
            // 2025-11-25 named a tool's task support in `execution`; the 2026-07-28 Tasks
            // extension has no per-tool field, so it also rides in `_meta` under the
            // extension's id (rmcp's `Tool` keeps `_meta`, not `execution`).
            out.insert("execution".into(), json!({ "taskSupport": task.as_str() }));
            let mut meta = Map::new();
            meta.insert(
                TASKS_EXTENSION.into(),
                json!({ "taskSupport": task.as_str() }),
            );
            out.insert("_meta".into(), Value::Object(meta));
        }
    }
    rendered
}

/// The Tasks extension's id, the key of a task tool's `_meta` entry.
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How a definition is rendered: the format, and whether in strict mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape {
    format: Format,
    strict: bool,
}

fn render_named(name: &str, mut schema: Map<String, Value>, shape: Shape) -> Value {
    if shape.strict {
        let parameters = schema
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        let strict = strict::strict_parameters(&parameters);
        for report in &strict.reports {
            tracing::warn!("tool '{name}': {report}");
        }
        schema.insert("parameters".into(), strict.schema);
    }
    let schema = &schema;
    let description = schema
        .get("description")
        .cloned()
        .unwrap_or_else(|| json!(""));
    let parameters = schema
        .get("parameters")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    match shape.format {
        Format::OpenAi => {
            let mut function = schema.clone();
            function.insert("name".into(), json!(name));
            if shape.strict {
                function.insert("strict".into(), json!(true));
            }
            json!({ "type": "function", "function": function })
        }
        Format::OpenAiResponses => json!({
            "type": "function",
            "name": name,
            "description": description,
            "parameters": parameters,
            "strict": shape.strict,
        }),
        Format::Anthropic => json!({
            "name": name,
            "description": description,
            "input_schema": parameters,
        }),
        Format::Mcp => {
            let mut out = Map::new();
            out.insert("name".into(), json!(name));
            if let Some(title) = schema.get("title") {
                out.insert("title".into(), title.clone());
            }
            out.insert("description".into(), description);
            out.insert("inputSchema".into(), parameters);
            if let Some(annotations) = schema.get("annotations") {
                out.insert("annotations".into(), annotations.clone());
            }
            Value::Object(out)
        }
    }
}

/// Everything a memoised list depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MemoKey {
    scope: Option<String>,
    toolsets: ToolsetSelection,
    generation: u64,
    config_fingerprint: Option<(u128, u64)>,
    availability_epoch: u64,
    shape: Shape,
    tool_search: bool,
}

/// The definitions memo: at most [`MEMO_CAPACITY`] lists, most recently used first, each
/// with how long the availability answers behind it stay fresh.
pub(crate) struct DefinitionsMemo {
    entries: Mru<MemoKey, (Definitions, Freshness)>,
}

impl Default for DefinitionsMemo {
    fn default() -> Self {
        Self {
            entries: Mru::new(MEMO_CAPACITY),
        }
    }
}

impl DefinitionsMemo {
    /// The list for `selection`, from the memo when every input is unchanged and the
    /// availability answers behind it are still fresh.
    pub(crate) fn get_or_compute(&self, inputs: &Inputs<'_>, selection: &Selection) -> Definitions {
        let key = MemoKey {
            tool_search: search_plan(inputs, selection).active,
            scope: selection.scope.clone(),
            toolsets: selection.toolsets.canonical(),
            generation: inputs.state.generation(),
            config_fingerprint: inputs.config_fingerprint,
            availability_epoch: inputs.availability.epoch(),
            shape: selection.shape(),
        };
        let now = Instant::now();
        if let Some((list, _)) = self
            .entries
            .get_if(&key, |(_, freshness)| freshness.is_fresh(now))
        {
            return list;
        }
        // Computed without the lock: probes may be slow (and must not stall the caller's
        // async runtime).
        let (list, freshness) = crate::blocking::off_async_worker(|| compute(inputs, selection));
        // Probing may have moved the epoch (new answers): key the entry on the epoch after.
        let key = MemoKey {
            availability_epoch: inputs.availability.epoch(),
            ..key
        };
        if freshness != Freshness::Never {
            self.entries.insert(key, (list.clone(), freshness));
        }
        list
    }
}
